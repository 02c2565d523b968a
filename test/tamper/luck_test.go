package tamper

import (
	"maps"
	"path/filepath"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// TestLuckAttacks runs the attacks of a candidate whose first run is
// luckier than its code, under spec.acceptance.confirmRuns of 2: the round
// is judged on the mean of its three runs, against a margin that their
// spread widens, and rolled back.
func TestLuckAttacks(t *testing.T) {
	for _, a := range attacks(t, "attacks-luck") {
		t.Run(a.name, func(t *testing.T) {
			files := maps.Clone(Toy)
			files["experiment.yaml"] = toyExperiment(a.script, 1, "train.sh", "  acceptance: {confirmRuns: 2}\n")
			st, log := runRepo(t, filepath.Join(t.TempDir(), "repo"), files)
			roundVerdict(t, st.History, 1, v1alpha1.VerdictWithinNoise, log)
			if st.Best == nil || st.Best.Value != "10" {
				t.Errorf("best %+v; want the baseline's 10\n%s", st.Best, log)
			}
			if r := st.History[len(st.History)-1]; r.Value != "33" {
				t.Errorf("round 1 recorded score=%s, want the mean of its runs, 33\n%s", r.Value, log)
			}
		})
	}
}
