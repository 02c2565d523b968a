package tamper

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// holdoutRunsTheModel is the hidden holdout of the toy: the candidate's
// predictor (predict.sh, a variable file) runs on the hidden rows, as a
// holdout that scores the candidate's model does.
const holdoutRunsTheModel = `#!/bin/sh
read rows < "$AUTORESEARCH_HOLDOUT_DIR/data.txt"
echo "holdout_score: $(./predict.sh "$rows")"
`

// TestHoldoutStateAttacks runs the attacks in attacks-holdout/: two rounds
// of the toy with a hidden holdout that runs the candidate's predictor.
// Round 2's candidate improves the evaluation but, run anew, not the
// holdout: it must end overfit, and the best stay round 1's 20.
func TestHoldoutStateAttacks(t *testing.T) {
	for _, a := range attacks(t, "attacks-holdout") {
		t.Run(a.name, func(t *testing.T) {
			hidden := filepath.Join(t.TempDir(), "holdout")
			if err := os.MkdirAll(hidden, 0o755); err != nil {
				t.Fatal(err)
			}
			for n, c := range map[string]string{"holdout.sh": holdoutRunsTheModel, "data.txt": "ROWS\n"} {
				if err := os.WriteFile(filepath.Join(hidden, n), []byte(c), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			files := maps.Clone(Toy)
			files["predict.sh"] = "#!/bin/sh\ncat out.txt\n"
			// The experiment file names the holdout: out of git.
			files[".gitignore"] = "out.txt\ngo.work\nexperiment.yaml\n"
			files["experiment.yaml"] = toyExperiment(a.script, 2, "train.sh, predict.sh", `  holdout:
    command: 'sh "$AUTORESEARCH_HOLDOUT_DIR/holdout.sh"'
    metric: holdout_score
    dir: `+hidden+"\n")
			repo := filepath.Join(t.TempDir(), "repo")
			st, log := runRepo(t, repo, files)
			roundVerdict(t, st.History, 2, v1alpha1.VerdictOverfit, log)
			if st.Holdout != nil {
				for _, r := range st.Holdout.Readings {
					t.Logf("holdout round %d: %s %s", r.Round, r.Value, r.Verdict)
				}
			}
			if st.Best == nil || st.Best.Value != "20" {
				t.Errorf("best %+v; want round 1's 20", st.Best)
			}
		})
	}
}
