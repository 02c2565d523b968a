package round

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// BenchmarkRound drives whole rounds through Next, as an adapter does, and
// reports the size of the status after them: it must stay small however
// long an experiment runs, since the full ledger lives in git.
func BenchmarkRound(b *testing.B) {
	spec := testSpec()
	spec.MaxRounds = 100000
	spec.Baseline = &v1alpha1.BaselineSpec{Value: "1.0"}
	spec.Guidance = []string{"try a cosine schedule", "keep the model small"}
	now := t0
	st := Next(Input{Spec: spec, Observation: Observation{Kind: ObserveTick}, Now: now}).Status
	st = Next(Input{Spec: spec, Status: st, Observation: Observation{Kind: ObserveWorkspaceReady, Workspace: &WorkspaceResult{StartCommit: startCommit}}, Now: now}).Status
	exit := ProcessExit{Duration: time.Minute}
	step := func(obs Observation) {
		now = now.Add(time.Second)
		obs.Round = st.CurrentRound.Number
		st = Next(Input{Spec: spec, Status: st, Generation: 1, Observation: obs, Now: now}).Status
	}
	values := []string{"0.99", "1.5", "0.98"}
	b.ResetTimer()
	for i := range b.N {
		step(Observation{Kind: ObserveResearcherFinished, Researcher: &ResearcherResult{Exit: exit, Strategy: "a strategy of a typical length for a round"}})
		step(Observation{Kind: ObserveComplianceChecked, Compliance: &ComplianceResult{}})
		step(Observation{Kind: ObserveTrainFinished, Train: &TrainResult{Exit: exit}})
		step(Observation{Kind: ObserveEvalFinished, Eval: &EvalResult{Exit: exit, Found: true, Value: values[i%len(values)]}})
		if st.CurrentRound.Candidates[0].Verdict == v1alpha1.VerdictImproved {
			step(Observation{Kind: ObserveCommitted, Commit: startCommit})
		} else {
			step(Observation{Kind: ObserveRolledBack})
		}
	}
	b.StopTimer()
	data, err := json.Marshal(st)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(data)), "status-bytes")
	b.ReportMetric(float64(st.CompletedRounds), "rounds")
}
