package tamper

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
)

// TestCooperatingCandidatesAttacks runs the attacks in attacks-combine/,
// each the two Researchers of a round of two, which are the same agent,
// working together, where the steps get no read-only mounts and training
// can write the repository's git directory: what training runs after the
// round's first runs — the candidate spec.combine makes, the runs that
// confirm an improvement — changes must be put back before the
// evaluations after it, and no command it planted may run.
func TestCooperatingCandidatesAttacks(t *testing.T) {
	for name, spec := range map[string]string{
		"merged-training-plants-filter": "  candidates: 2\n  combine: true\n",
		"confirming-run-plants-filter":  "  candidates: 2\n  acceptance: {confirmRuns: 1}\n",
	} {
		t.Run(name, func(t *testing.T) {
			defer runner.WithoutMounts()()
			script, err := filepath.Abs(filepath.Join("attacks-combine", name+".sh"))
			if err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(t.TempDir(), "planted-command-ran")
			t.Setenv("MARKER", marker)
			files := maps.Clone(Toy)
			files["experiment.yaml"] = toyExperiment(script, 1, "train.sh", spec)
			st, log := runRepo(t, filepath.Join(t.TempDir(), "repo"), files)
			for _, h := range st.History {
				t.Logf("round %d%s: %s %s (%s)", h.Round, h.Candidate, h.Value, h.Verdict, h.Insight)
			}
			if _, err := os.Lstat(marker); err == nil {
				t.Error("the supervisor ran a command that training planted in git")
			}
			// Honest work, a's 20, b's 15 or both, or nothing kept.
			if st.Best == nil || !slices.Contains([]string{"10", "15", "20", "25"}, st.Best.Value) {
				t.Errorf("best %+v, want 10, 15, 20 or 25\n%s", st.Best, log)
			}
		})
	}
}
