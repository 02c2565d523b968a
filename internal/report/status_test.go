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
