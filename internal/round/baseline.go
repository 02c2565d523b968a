package round

import (
	"fmt"
	"math"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// workspaceReady starts round 0 on the unmodified code: it is measured
// spec.baseline.runs times, or, when the protocol gives the baseline, run
// once as a preflight, so that a broken train or eval command fails the
// run before round 1 instead of every round.
func (e *engine) workspaceReady(w WorkspaceResult) {
	e.st.Workspace = &v1alpha1.WorkspaceStatus{
		Path:            w.Path,
		ClaimName:       w.ClaimName,
		Branch:          w.Branch,
		StartCommit:     w.StartCommit,
		FixedFileHashes: w.FixedHashes,
		FixedRegions:    w.FixedRegions,
	}
	e.measureBaseline(w.StartCommit, "")
}

// rebaseline accepts a changed measure (what lists the parts of the
// protocol that changed): the baseline is measured again, under the new
// measure, on the best code so far, and the rounds to come are judged
// against that. The rounds already done keep their verdicts; a round in
// progress is dropped and starts again after the measurement.
func (e *engine) rebaseline(what []string) {
	if e.st.Workspace == nil {
		// Nothing was measured yet.
		e.tick(true)
		return
	}
	if cr := e.st.CurrentRound; cr != nil && cr.Number > 0 &&
		(cr.Step != v1alpha1.StepResearcher || cr.StepState != v1alpha1.StepStatePending) {
		e.emit(Action{Type: ActionWarn, Round: cr.Number, Reason: v1alpha1.ReasonRoundRestarted,
			Message: fmt.Sprintf("round %d was dropped before its verdict because the measure changed; it starts again after the baseline is measured again", cr.Number)})
	}
	if next := e.st.NextRound; next != nil {
		// Started early on the old measure, before the round that starts
		// again: it starts again early itself, after that one.
		e.emit(Action{Type: ActionWarn, Round: next.Number, Reason: v1alpha1.ReasonRoundRestarted,
			Message: fmt.Sprintf("round %d, started early, was dropped because the measure changed; it starts again after round %d", next.Number, next.Number-1)})
		e.st.NextRound = nil
	}
	e.st.LedgerCommit = ""
	if h := e.st.Holdout; h != nil {
		// The holdout's values so far are on the old measure's scale: the
		// baseline measured again starts them afresh.
		h.Best, h.BestRound, h.Peak = "", 0, ""
	}
	e.measureBaseline(BestCommit(&e.st), "measure changed ("+strings.Join(what, ", ")+"); baseline measured again")
}

// BestCommit is the commit of the best code so far: the next round starts
// from it, and a changed measure measures the baseline again on it.
func BestCommit(st *v1alpha1.AutoResearchStatus) string {
	if st.Best != nil && st.Best.Commit != "" {
		return st.Best.Commit
	}
	if st.Workspace != nil {
		return st.Workspace.StartCommit
	}
	return ""
}

// measureBaseline starts round 0 on commit. note, when not empty, says why
// a baseline that was already known is measured again.
func (e *engine) measureBaseline(commit, note string) {
	e.st.Baseline = &v1alpha1.BaselineResult{}
	e.st.Round = 0
	e.st.CurrentRound = &v1alpha1.RoundStatus{
		Number:     0,
		Step:       v1alpha1.StepTrain,
		StepState:  v1alpha1.StepStatePending,
		BaseCommit: commit,
		StartTime:  e.now.DeepCopy(),
		Note:       note,
		Tasks:      e.baselineTasks(note != ""),
		Candidates: []v1alpha1.CandidateStatus{{Index: 0, Strategy: "baseline", Compliance: v1alpha1.CompliancePassed}},
	}
	switch {
	case note != "":
		e.st.Message = "measuring the baseline again: " + note
	case e.givenBaseline() != "":
		e.st.Message = "preflight: running the unmodified code once (the baseline is given)"
	default:
		e.st.Message = "measuring the baseline"
	}
	e.startStep()
	e.startEarly()
}

// baselineSample keeps one baseline measurement; after the last one the
// baseline is their mean and its noise their standard deviation. A given
// baseline stays the one judged against: its one preflight run is kept
// beside it.
func (e *engine) baselineSample(raw string) {
	b := e.st.Baseline
	b.Values = append(b.Values, raw)
	e.setTask(v1alpha1.StepEval, "baseline run %d/%d: %s=%s", len(b.Values), e.baselineRuns(), e.spec.Eval.Metric, raw)
	if int32(len(b.Values)) < e.baselineRuns() {
		e.advance(v1alpha1.StepTrain)
		return
	}
	mean, stddev := meanStddev(b.Values)
	b.Value, b.Stddev, b.Samples = decimal(mean), decimal(stddev), int32(len(b.Values))
	if e.spec.Holdout != nil {
		// The holdout's value of the baseline starts the peak that
		// candidates are held to.
		e.advance(v1alpha1.StepHoldout)
		return
	}
	e.baselineMeasured()
}

// baselineMeasured records round 0 once its runs, and its holdout, are
// measured, and starts round 1.
func (e *engine) baselineMeasured() {
	cr, b := e.st.CurrentRound, e.st.Baseline
	mean, _ := meanStddev(b.Values)
	measured := decimal(mean)
	insight := "unmodified code"
	if b.Samples > 1 {
		insight = fmt.Sprintf("unmodified code, %d runs: mean %s, stddev %s", b.Samples, b.Value, b.Stddev)
	}
	best := measured
	if given := e.givenBaseline(); given != "" {
		b.Value, b.Stddev, b.Samples = given, "", 0
		insight = fmt.Sprintf("baseline given in the protocol; the preflight of the unmodified code measured %s=%s; judging against the given %s",
			e.spec.Eval.Metric, measured, given)
		if cr.BaseCommit == e.st.Workspace.StartCommit {
			best = given
		}
	}
	bestRound := int32(0)
	if prev := e.st.Best; prev != nil && prev.Commit == cr.BaseCommit {
		bestRound = prev.Round
	}
	if cr.Note != "" {
		insight = e.rebaselineInsight(bestRound, measured, best)
	}
	e.st.Best = &v1alpha1.BestResult{Round: bestRound, Value: best, Commit: cr.BaseCommit}
	c := e.candidate()
	e.recordRound(v1alpha1.RoundRecord{
		Round: 0, Strategy: "baseline", Compliance: v1alpha1.CompliancePassed, Value: b.Value,
		Verdict: v1alpha1.VerdictBaseline, Insight: insight, Note: cr.Note, Commit: cr.BaseCommit,
		Durations: c.Durations,
	}, false)
	e.baselineMessage()
	e.st.CurrentRound = nil
	e.nextRound()
}

// rebaselineInsight explains a baseline measured again on the code of
// round bestRound, with best the value the next rounds are judged against.
func (e *engine) rebaselineInsight(bestRound int32, measured, best string) string {
	cr, b := e.st.CurrentRound, e.st.Baseline
	code := "the unmodified code"
	if bestRound > 0 {
		code = fmt.Sprintf("the best code so far (R%d, %s)", bestRound, text.ShortCommit(cr.BaseCommit))
	}
	s := fmt.Sprintf("measured again under the changed measure on %s: %s=%s", code, e.spec.Eval.Metric, measured)
	if len(b.Values) > 1 {
		s += fmt.Sprintf(" (mean of %d runs, stddev %s)", len(b.Values), b.Stddev)
	}
	if best != measured {
		s += "; judging against the given " + best
	}
	return s + "; earlier rounds keep their verdicts"
}

// baselineFailed fails the run because round 0 could not measure the code:
// what says how ("failed to train"), insight why.
func (e *engine) baselineFailed(what, insight string) {
	cr := e.st.CurrentRound
	msg := fmt.Sprintf("the unmodified code %s, so there is no baseline: %s", what, insight)
	switch {
	case cr.Note != "":
		msg = fmt.Sprintf("measuring the baseline again under the changed measure: the code at %s %s: %s", text.ShortCommit(cr.BaseCommit), what, insight)
	case e.givenBaseline() != "":
		msg = fmt.Sprintf("preflight failed before round 1 (the baseline is given, but training and evaluation must work): the unmodified code %s: %s", what, insight)
	}
	e.fail(v1alpha1.ReasonBaselineFailed, msg)
}

func (e *engine) baselineMessage() {
	e.st.Message = fmt.Sprintf("R0: %s=%s — %s", e.spec.Eval.Metric, e.st.Baseline.Value, v1alpha1.VerdictBaseline)
}

// givenBaseline is the baseline the protocol gives, "" when round 0
// measures it.
func (e *engine) givenBaseline() string {
	if b := e.spec.Baseline; b != nil {
		return string(b.Value)
	}
	return ""
}

// baselineRuns is how many times round 0 trains and evaluates: once for a
// given baseline's preflight, otherwise spec.baseline.runs.
func (e *engine) baselineRuns() int32 {
	if b := e.spec.Baseline; b != nil && b.Value == "" {
		return b.Runs
	}
	return 1
}

func meanStddev(values []string) (float64, float64) {
	var sum float64
	xs := make([]float64, 0, len(values))
	for _, v := range values {
		x, _ := metric.ParseDecimal(v)
		xs = append(xs, x)
		sum += x
	}
	mean := sum / float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}
