package round

import (
	"fmt"
	"math"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
)

// workspaceReady starts round 0: the baseline given in the protocol is
// recorded at once, otherwise the unmodified code is measured
// spec.baseline.runs times.
func (e *engine) workspaceReady(w WorkspaceResult) {
	e.st.Workspace = &v1alpha1.WorkspaceStatus{
		Path:            w.Path,
		Branch:          w.Branch,
		StartCommit:     w.StartCommit,
		FixedFileHashes: w.FixedHashes,
		FixedRegions:    w.FixedRegions,
	}
	if b := e.spec.Baseline; b != nil && b.Value != "" {
		value := string(b.Value)
		e.st.Baseline = &v1alpha1.BaselineResult{Value: value}
		e.st.Best = &v1alpha1.BestResult{Round: 0, Value: value, Commit: w.StartCommit}
		e.recordRound(v1alpha1.RoundRecord{
			Round: 0, Strategy: "baseline", Compliance: v1alpha1.CompliancePassed, Value: value,
			Verdict: v1alpha1.VerdictBaseline, Insight: "baseline given in the protocol",
			Commit: w.StartCommit, CompletionTime: e.now.DeepCopy(),
		}, false)
		e.baselineMessage()
		e.nextRound()
		return
	}
	e.st.Baseline = &v1alpha1.BaselineResult{}
	e.st.Round = 0
	e.st.CurrentRound = &v1alpha1.RoundStatus{
		Number:     0,
		Step:       v1alpha1.StepTrain,
		StepState:  v1alpha1.StepStatePending,
		BaseCommit: w.StartCommit,
		StartTime:  e.now.DeepCopy(),
		Tasks:      e.baselineTasks(),
		Candidates: []v1alpha1.CandidateStatus{{Index: 0, Strategy: "baseline", Compliance: v1alpha1.CompliancePassed}},
	}
	e.st.Message = "measuring the baseline"
	e.startStep()
}

// baselineSample keeps one baseline measurement; after the last one the
// baseline is their mean and its noise their standard deviation.
func (e *engine) baselineSample(raw string) {
	b := e.st.Baseline
	b.Values = append(b.Values, raw)
	e.setTask(v1alpha1.StepEval, "baseline run %d/%d: %s=%s", len(b.Values), e.baselineRuns(), e.spec.Eval.Metric, raw)
	if int32(len(b.Values)) < e.baselineRuns() {
		e.advance(v1alpha1.StepTrain)
		return
	}
	mean, stddev := meanStddev(b.Values)
	b.Value = decimal(mean)
	b.Stddev = decimal(stddev)
	b.Samples = int32(len(b.Values))
	e.st.Best = &v1alpha1.BestResult{Round: 0, Value: b.Value, Commit: e.st.Workspace.StartCommit}
	insight := "unmodified code"
	if b.Samples > 1 {
		insight = fmt.Sprintf("unmodified code, %d runs: mean %s, stddev %s", b.Samples, b.Value, b.Stddev)
	}
	c := e.candidate()
	e.recordRound(v1alpha1.RoundRecord{
		Round: 0, Strategy: "baseline", Compliance: v1alpha1.CompliancePassed, Value: b.Value,
		Verdict: v1alpha1.VerdictBaseline, Insight: insight, Commit: e.st.Workspace.StartCommit,
		Durations: c.Durations, CompletionTime: e.now.DeepCopy(),
	}, false)
	e.baselineMessage()
	e.st.CurrentRound = nil
	e.nextRound()
}

func (e *engine) baselineMessage() {
	e.st.Message = fmt.Sprintf("R0: %s=%s — %s", e.spec.Eval.Metric, e.st.Baseline.Value, v1alpha1.VerdictBaseline)
}

// baselineRuns is how many times the unmodified code is measured.
func (e *engine) baselineRuns() int32 {
	if b := e.spec.Baseline; b != nil {
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
