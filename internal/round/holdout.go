package round

import (
	"fmt"
	"math"
	"strconv"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
)

// maxHoldoutReadings bounds status.holdout.readings.
const maxHoldoutReadings = 50

// overfitInsight is all an overfit candidate's record says: the Researcher
// reads the record, and must learn nothing of the holdout but the verdict.
const overfitInsight = "overfit: the hidden holdout evaluation disagrees with the improvement; rolled back"

// holdoutFinished judges the hidden holdout of the baseline or of a
// candidate the evaluation judged improved. Nothing it printed, and not its
// value, goes into the candidate, the task list or the message: only into
// status.holdout, which is the user's.
func (e *engine) holdoutFinished(r HoldoutResult) {
	cr, c := e.st.CurrentRound, e.candidate()
	e.addGPUTime(r.Exit.Duration)
	value, err := metric.ParseDecimal(r.Value)
	failed := r.Exit.Failed() || !r.Found || err != nil || math.IsNaN(value) || math.IsInf(value, 0)
	if cr.Number == 0 {
		if failed {
			e.baselineFailed("could not be measured by the hidden holdout evaluation", holdoutFailure(r, e.spec.HoldoutMetric()))
			return
		}
		e.holdoutReading(0, r.Value, v1alpha1.VerdictBaseline, true)
		e.baselineMeasured()
		return
	}
	if failed {
		// The candidate is judged by what both evaluations say; the
		// holdout's output stays the user's.
		e.holdoutReading(cr.Number, "", v1alpha1.VerdictEvalFailed, false)
		e.decide(v1alpha1.VerdictEvalFailed, "the hidden holdout evaluation of the candidate failed, so the improvement cannot be confirmed; rolled back")
		return
	}
	if peak, ok := e.holdoutPeak(); ok && holdoutWorse(value, peak, decimalOrZero(string(e.spec.Holdout.Tolerance)), e.spec.Eval.Direction) {
		e.holdoutReading(cr.Number, r.Value, v1alpha1.VerdictOverfit, false)
		e.decide(v1alpha1.VerdictOverfit, overfitInsight)
		return
	}
	// In a round of several, the winner's reading becomes the best code's
	// once the round is ranked.
	e.holdoutReading(cr.Number, r.Value, v1alpha1.VerdictImproved, len(cr.Candidates) == 1)
	e.decide(e.judgeCandidate(c))
}

// holdoutPeak is the best holdout value that kept code has measured, if
// one was: the best code's where the status has no peak yet.
func (e *engine) holdoutPeak() (float64, bool) {
	h := e.st.Holdout
	if h == nil {
		return 0, false
	}
	s := h.Peak
	if s == "" {
		s = h.Best
	}
	v, err := metric.ParseDecimal(s)
	return v, s != "" && err == nil
}

// keepHoldout makes value, round's holdout reading, the best code's, and
// the peak when it is better than the peak.
func (e *engine) keepHoldout(h *v1alpha1.HoldoutStatus, value string, round int32) {
	if h.Peak == "" {
		// A status from before the peak: the best so far is its peak.
		h.Peak = h.Best
	}
	peak, ok := e.holdoutPeak()
	h.Best, h.BestRound = value, round
	if v, err := metric.ParseDecimal(value); err == nil && (!ok || holdoutWorse(peak, v, 0, e.spec.Eval.Direction)) {
		h.Peak = value
	}
}

// holdoutWorse reports whether value is worse than best by more than
// tolerance, in direction's sense of better.
func holdoutWorse(value, best, tolerance float64, direction v1alpha1.Direction) bool {
	worse := value - best
	if direction == v1alpha1.DirectionMaximize {
		worse = best - value
	}
	// Decimal inputs must not differ by float residue.
	worse, _ = strconv.ParseFloat(strconv.FormatFloat(worse, 'g', 12, 64), 64)
	return worse > tolerance
}

// holdoutReading keeps a holdout measurement in the user's trend; best
// makes it the best code's.
func (e *engine) holdoutReading(round int32, value string, verdict v1alpha1.Verdict, best bool) {
	h := e.st.Holdout
	if h == nil {
		h = &v1alpha1.HoldoutStatus{}
		e.st.Holdout = h
	}
	if best {
		e.keepHoldout(h, value, round)
	}
	if value == "" {
		value = "—"
	}
	reading := v1alpha1.HoldoutReading{Round: round, Value: value, Verdict: verdict}
	if cr := e.st.CurrentRound; cr != nil && len(cr.Candidates) > 1 {
		reading.Candidate = CandidateName(e.cand)
	}
	h.Readings = append(h.Readings, reading)
	if over := len(h.Readings) - maxHoldoutReadings; over > 0 {
		h.Readings = append([]v1alpha1.HoldoutReading(nil), h.Readings[over:]...)
	}
}

// holdoutFailure says why the holdout gave no value, for the user: the
// exit, never the output.
func holdoutFailure(r HoldoutResult, name string) string {
	switch {
	case r.Exit.TimedOut:
		return fmt.Sprintf("the hidden holdout evaluation timed out after %s", r.Exit.Duration)
	case r.Exit.ExitCode != 0:
		return fmt.Sprintf("the hidden holdout evaluation exited with code %d (its log is in spec.holdout.dir, or on a cluster the holdout pod's)", r.Exit.ExitCode)
	case !r.Found:
		return fmt.Sprintf("the hidden holdout evaluation printed no %s (its log is in spec.holdout.dir, or on a cluster the holdout pod's)", name)
	default:
		return fmt.Sprintf("the hidden holdout evaluation printed %s=%s, which is not a finite number", name, r.Value)
	}
}
