package tamper

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
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
	scripts, err := filepath.Glob("attacks-holdout/*.sh")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no attacks: %v", err)
	}
	for _, s := range scripts {
		name := strings.TrimSuffix(filepath.Base(s), ".sh")
		t.Run(name, func(t *testing.T) {
			script, err := filepath.Abs(s)
			if err != nil {
				t.Fatal(err)
			}
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
			files["experiment.yaml"] = `apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata:
  name: toy
spec:
  researchQuestion: "Does a higher SCORE help?"
  maxRounds: 2
  baseline: {value: "10"}
  fixed: {files: [eval.sh, check/main.go, golden/], timeLimit: 30s}
  variable: {files: [train.sh, predict.sh]}
  train: {command: "./train.sh", outputs: [out.txt]}
  eval: {metric: score, direction: maximize, command: "./eval.sh"}
  researcher: {command: "sh ` + script + `"}
  holdout:
    command: 'sh "$AUTORESEARCH_HOLDOUT_DIR/holdout.sh"'
    metric: holdout_score
    dir: ` + hidden + `
`
			repo := filepath.Join(t.TempDir(), "repo")
			st, log := runRepo(t, repo, files)
			var second v1alpha1.Verdict
			for _, h := range st.History {
				t.Logf("round %d%s: %s %s (%s)", h.Round, h.Candidate, h.Verdict, h.Value, h.Insight)
				if h.Round == 2 {
					second = h.Verdict
				}
			}
			if st.Holdout != nil {
				for _, r := range st.Holdout.Readings {
					t.Logf("holdout round %d: %s %s", r.Round, r.Value, r.Verdict)
				}
			}
			if second != v1alpha1.VerdictOverfit {
				t.Errorf("round 2: %q, want %q\n%s", second, v1alpha1.VerdictOverfit, log)
			}
			if st.Best == nil || st.Best.Value != "20" {
				t.Errorf("best %+v; want round 1's 20", st.Best)
			}
		})
	}
}
