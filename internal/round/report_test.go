package round

import (
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

func TestHeadline(t *testing.T) {
	cases := map[string]struct {
		rec  v1alpha1.RoundRecord
		want string
	}{
		"baseline":  {v1alpha1.RoundRecord{Round: 0, Value: "1.02", Insight: "unmodified code"}, "Baseline: val_bpb=1.02 (unmodified code)"},
		"committed": {v1alpha1.RoundRecord{Round: 3, Value: "0.99", Verdict: v1alpha1.VerdictImproved, Commit: startCommit}, "Round 3/10: val_bpb=0.99 — improved (committed 5a5a5a5)"},
		"no value":  {v1alpha1.RoundRecord{Round: 4, Verdict: v1alpha1.VerdictTrainFailed}, "Round 4/10: no val_bpb — train_failed (rolled back)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Headline("val_bpb", 10, tc.rec); got != tc.want {
				t.Errorf("Headline = %q, want %q", got, tc.want)
			}
		})
	}
}
