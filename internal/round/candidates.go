package round

import (
	"fmt"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
)

// Rounds of several candidates (spec.candidates): every candidate goes
// through the round's steps on its own, the round moves to a step once no
// candidate is left in the one before, and its git step commits the winner.

// CandidateName names candidate index of a round of several: a, b, …
func CandidateName(index int32) string {
	return string(rune('a' + index))
}

// CandidateLabel is how the ledger, the report and the task lines name a
// candidate: "3b" in a round of several, "3" in a round of one.
func CandidateLabel(round int32, candidate string) string {
	return fmt.Sprint(round) + candidate
}

// Winner is the round's candidate that the git step commits, nil when
// none improved.
func Winner(cr *v1alpha1.RoundStatus) *v1alpha1.CandidateStatus {
	for i := range cr.Candidates {
		if cr.Candidates[i].Verdict == v1alpha1.VerdictImproved {
			return &cr.Candidates[i]
		}
	}
	return nil
}

// researchDirections are the directions the Researchers of a round of
// several are given, one each in turn, so that the candidates are different
// ideas rather than one idea several times.
var researchDirections = []string{
	"the optimiser: learning rate, its schedule and warmup, the optimiser and its settings",
	"the architecture: width, depth, attention, normalisation, activations",
	"the data path and batch: batch size, sequence length, what the model sees per step within the time limit",
	"regularisation and initialisation: dropout, weight decay, init scales, tied weights",
	"efficiency: more useful steps in the same time limit (precision, fused operations, less overhead)",
	"a bold idea: a change none of the others would try",
}

// directions is one direction for each of n candidates.
func directions(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = researchDirections[i%len(researchDirections)]
	}
	return out
}

// maxCandidates is the most candidates a round holds, as the API
// validates it.
const maxCandidates = 16

// combine adds to the round, when spec.combine asks for it and two or more
// of its candidates improved, the candidate that applies their changes
// together, and takes the round back to its check for that one alone; the
// others wait for the git step. It reports whether it did.
func (e *engine) combine() bool {
	cr := e.st.CurrentRound
	if !ptr.Deref(e.spec.Combine, false) || cr.Number == 0 || len(cr.Candidates) >= maxCandidates {
		return false
	}
	var improved []int32
	for _, c := range cr.Candidates {
		if len(c.Combines) > 0 {
			return false
		}
		if c.Verdict == v1alpha1.VerdictImproved {
			improved = append(improved, c.Index)
		}
	}
	if len(improved) < 2 {
		return false
	}
	for i := range cr.Candidates {
		cr.Candidates[i].Step = v1alpha1.StepGit
	}
	c := v1alpha1.CandidateStatus{Index: int32(len(cr.Candidates)), Combines: improved}
	c.Strategy = combinedLabels(cr, &c) + " together"
	cr.Candidates = append(cr.Candidates, c)
	cr.Step = v1alpha1.StepCompliance
	cr.StepState = v1alpha1.StepStatePending
	e.startStep()
	return true
}

// Queueable reports whether candidate k of cr, whose Job for the round's
// training or evaluation step waits in a queue, is to be recorded queued
// now: every other candidate has left the step, one of them after running
// it, so the round would wait for the queue alone. The combination
// spec.combine adds, which runs once the others are done, waits.
func Queueable(cr *v1alpha1.RoundStatus, k int32) bool {
	if len(cr.Candidates) < 2 || (cr.Step != v1alpha1.StepTrain && cr.Step != v1alpha1.StepEval) ||
		k < 0 || int(k) >= len(cr.Candidates) || len(cr.Candidates[k].Combines) > 0 {
		return false
	}
	ran := false
	for _, c := range cr.Candidates {
		if c.Index == k {
			continue
		}
		if c.Step == "" && c.Verdict == "" {
			return false
		}
		d := c.Durations.Train
		if cr.Step == v1alpha1.StepEval {
			d = c.Durations.Eval
		}
		ran = ran || d != nil
	}
	return ran
}

// combinedLabels names the candidates c applies together: "3a + 3b".
func combinedLabels(cr *v1alpha1.RoundStatus, c *v1alpha1.CandidateStatus) string {
	labels := make([]string, len(c.Combines))
	for i, k := range c.Combines {
		labels[i] = CandidateLabel(cr.Number, CandidateName(k))
	}
	return strings.Join(labels, " + ")
}

// rankCandidates picks the round's winner once every candidate has its
// verdict: of the candidates that improved, the best value, the first on a
// tie. The others that improved are superseded by it. With a hidden
// holdout, the winner's holdout value becomes the best code's.
func (e *engine) rankCandidates() {
	cr := e.st.CurrentRound
	if len(cr.Candidates) < 2 {
		return
	}
	var win *v1alpha1.CandidateStatus
	for i := range cr.Candidates {
		c := &cr.Candidates[i]
		if c.Verdict != v1alpha1.VerdictImproved {
			continue
		}
		if win == nil || e.beats(c.Value, win.Value) {
			win = c
		}
	}
	if win == nil {
		return
	}
	for i := range cr.Candidates {
		c := &cr.Candidates[i]
		if c == win || c.Verdict != v1alpha1.VerdictImproved {
			continue
		}
		c.Verdict = v1alpha1.VerdictSuperseded
		c.Insight = fmt.Sprintf("%s=%s beat the best too, but candidate %s beat it more (%s=%s); not committed, kept on its candidate ref",
			e.spec.Eval.Metric, c.Value, CandidateLabel(cr.Number, CandidateName(win.Index)), e.spec.Eval.Metric, win.Value)
	}
	if h := e.st.Holdout; h != nil {
		name := CandidateName(win.Index)
		for i := range h.Readings {
			r := &h.Readings[i]
			switch {
			case r.Round != cr.Number || r.Verdict != v1alpha1.VerdictImproved:
			case r.Candidate == name:
				e.keepHoldout(h, r.Value, cr.Number)
			default:
				r.Verdict = v1alpha1.VerdictSuperseded
			}
		}
	}
}

// beats reports whether metric value a is better than b in the
// experiment's direction.
func (e *engine) beats(a, b string) bool {
	x, errA := metric.ParseDecimal(a)
	y, errB := metric.ParseDecimal(b)
	if errA != nil || errB != nil {
		return false
	}
	if e.spec.Eval.Direction == v1alpha1.DirectionMaximize {
		return x > y
	}
	return x < y
}
