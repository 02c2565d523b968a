package report

import (
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

func TestStatusTableAlignsWideCharacters(t *testing.T) {
	out := &strings.Builder{}
	writeTable(out, [][]string{{"ROUND", "COMPLIANCE", "RESULT"}, {"0", "✅", "x=1"}, {"1", "❌ files", "—"}})
	want := "ROUND  COMPLIANCE  RESULT\n" +
		"0      ✅          x=1\n" +
		"1      ❌ files    —\n"
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out, want)
	}
	for s, w := range map[string]int{"abc": 3, "✅": 2, "❌ x": 4, "—": 1, "☑️": 1} {
		if got := displayWidth(s); got != w {
			t.Errorf("displayWidth(%q) = %d, want %d", s, got, w)
		}
	}
}

func TestStatusTextFromHistory(t *testing.T) {
	spec := v1alpha1.AutoResearchSpec{MaxRounds: 3, Eval: v1alpha1.EvalSpec{Metric: "val_bpb"}, Guidance: []string{"try a cosine schedule"}}
	st := v1alpha1.AutoResearchStatus{
		Phase: v1alpha1.PhaseRunning, CompletedRounds: 1,
		History: []v1alpha1.RoundRecord{
			{Round: 0, Verdict: v1alpha1.VerdictBaseline, Value: "1.5"},
			{Round: 1, Verdict: v1alpha1.VerdictImproved, Value: "1.25", Strategy: "halve the learning rate", Compliance: "✅"},
		},
	}
	got := StatusText(StatusView{
		Name: "tiny", WhereLabel: "Workspace", Where: "claim tiny-workspace",
		Spec: spec, Status: st, Rows: HistoryRows(spec, st), Footer: "(every round: kubectl autoresearch report)",
	})
	for _, want := range []string{
		"Workspace:  claim tiny-workspace (branch autoresearch/tiny)\n",
		"  - try a cosine schedule\n",
		"val_bpb=1.25", "halve the learning rate", "improved",
		"(every round: kubectl autoresearch report)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}
}

// TestStatusTextShowsCandidatesAndTheRoundStartedEarly checks that the
// status names each candidate's step, or verdict, and the round
// spec.pipeline started early, and that history rows name candidates.
func TestStatusTextShowsCandidatesAndTheRoundStartedEarly(t *testing.T) {
	spec := v1alpha1.AutoResearchSpec{MaxRounds: 3, Candidates: 2, Eval: v1alpha1.EvalSpec{Metric: "val_bpb"}}
	st := v1alpha1.AutoResearchStatus{
		Phase: v1alpha1.PhaseRunning, CompletedRounds: 1,
		History: []v1alpha1.RoundRecord{
			{Round: 0, Verdict: v1alpha1.VerdictBaseline, Value: "1.5"},
			{Round: 1, Candidate: "a", Verdict: v1alpha1.VerdictSuperseded, Value: "1.3"},
			{Round: 1, Candidate: "b", Verdict: v1alpha1.VerdictImproved, Value: "1.25"},
		},
		CurrentRound: &v1alpha1.RoundStatus{Number: 2, Step: v1alpha1.StepTrain, StepState: v1alpha1.StepStateRunning, Candidates: []v1alpha1.CandidateStatus{
			{Index: 0, Strategy: "cosine schedule"},
			{Index: 1, Verdict: v1alpha1.VerdictComplianceFailed, Step: v1alpha1.StepGit},
		}},
		NextRound: &v1alpha1.RoundStatus{Number: 3, Step: v1alpha1.StepResearcher, StepState: v1alpha1.StepStateRunning, Candidates: []v1alpha1.CandidateStatus{
			{Index: 0}, {Index: 1, Step: v1alpha1.StepCompliance},
		}},
	}
	got := StatusText(StatusView{Name: "tiny", Spec: spec, Status: st, Rows: HistoryRows(spec, st)})
	for _, want := range []string{
		"  2a: Train — cosine schedule\n", "  2b: compliance_failed\n",
		"Next round 3, started early (Researcher, Running):\n", "  3a: Researcher\n", "  3b: Compliance\n",
		"1a ", "1b ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}
}
