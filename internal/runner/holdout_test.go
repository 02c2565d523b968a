package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
)

// overfitPlan improves the score twice; the second time only by fitting
// the evaluation, which the hidden holdout sees. Every round the Researcher
// also looks around: its environment, its mounts, the state directory, and
// the experiment file in the user's repository.
const overfitPlan = `rounds:
  - strategy: "raise SCORE to 20"
    edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=20"}]
    run: &look
      - env > "$AUTORESEARCH_LOG_DIR/env.txt"
      - cat /proc/self/mountinfo > "$AUTORESEARCH_LOG_DIR/mountinfo.txt" || true
      - ls -laR .autoresearch > "$AUTORESEARCH_LOG_DIR/listing.txt" 2>&1 || true
      - cat "$(git rev-parse --path-format=absolute --git-common-dir)/../experiment.yaml" > "$AUTORESEARCH_LOG_DIR/experiment-copy.txt" 2>&1 || true
  - strategy: "raise SCORE to 30, fitted to the evaluation"
    edits: [{file: train.sh, old: "SCORE=20", new: "SCORE=30"}]
    run: *look
  - strategy: "raise SCORE to 25"
    edits: [{file: train.sh, old: "SCORE=20", new: "SCORE=25"}]
    run: *look
`

// holdoutScript scores the trained model on the hidden data: as the
// evaluation does up to SCORE 25, and badly beyond, where the model only
// fits the evaluation. Its values end in 918273, which nothing else prints.
const holdoutScript = `#!/bin/sh
read rows < "$AUTORESEARCH_HOLDOUT_DIR/data.txt"
s=$(cat out.txt)
if [ "$s" -gt 25 ]; then s=1; fi
echo "scoring $rows"
echo "holdout_score: $s.918273"
`

// TestHoldoutCatchesAnOverfitCandidate: a candidate that improves the
// evaluation but not the hidden holdout is overfit and rolled back, the
// user sees the holdout's trend, and nothing a Researcher can read — its
// environment, its worktree, the supervisor's state, the logs, the
// experiment file — holds the holdout's values, data, command or directory.
func TestHoldoutCatchesAnOverfitCandidate(t *testing.T) {
	hidden := filepath.Join(t.TempDir(), "hidden-holdout-q9")
	if err := os.MkdirAll(hidden, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"holdout.sh": holdoutScript, "data.txt": "HOLDOUT-ROWS-5b2e\n"} {
		if err := os.WriteFile(filepath.Join(hidden, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	command := `sh "$AUTORESEARCH_HOLDOUT_DIR/holdout.sh"`
	repo := newRepo(t, toyFiles(overfitPlan, `  holdout:
    command: '`+command+`'
    metric: holdout_score
    tolerance: "0.5"
    dir: `+hidden+`
    volume:
      configMap:
        name: holdout-files
`))
	// The experiment file names the holdout: it stays out of git.
	git(t, repo, "rm", "-q", "--cached", "experiment.yaml")
	if err := os.WriteFile(filepath.Join(repo, ".gitignore"), []byte("out.txt\nexperiment.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "commit", "-qam", "untrack the experiment")
	x := load(t, repo)

	st, out := run(t, x, Options{})

	if st.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s (%s), want Succeeded\n%s", st.Phase, st.Message, out)
	}
	// The cluster's volume means nothing here, and the runner says so.
	if !strings.Contains(out, "the local runner ignores it and reads them from holdout.dir") {
		t.Errorf("the run does not say that it ignores holdout.volume:\n%s", out)
	}
	want := []string{"0:baseline", "1:improved", "2:overfit", "3:improved"}
	if diff := cmp.Diff(want, verdicts(ledger(t, x))); diff != "" {
		t.Errorf("ledger verdicts (-want +got):\n%s", diff)
	}
	if st.Best.Value != "25" || st.Best.Round != 3 {
		t.Errorf("best %+v, want 25 from round 3", st.Best)
	}
	wantTrend := []v1alpha1.HoldoutReading{
		{Round: 0, Value: "10.918273", Verdict: v1alpha1.VerdictBaseline},
		{Round: 1, Value: "20.918273", Verdict: v1alpha1.VerdictImproved},
		{Round: 2, Value: "1.918273", Verdict: v1alpha1.VerdictOverfit},
		{Round: 3, Value: "25.918273", Verdict: v1alpha1.VerdictImproved},
	}
	if st.Holdout == nil || st.Holdout.Best != "25.918273" {
		t.Fatalf("status.holdout %+v, want the best 25.918273", st.Holdout)
	}
	if diff := cmp.Diff(wantTrend, st.Holdout.Readings); diff != "" {
		t.Errorf("holdout trend (-want +got):\n%s", diff)
	}
	// The user sees the trend.
	saved, ok, err := x.LoadSaved()
	if err != nil || !ok || saved.Status.Holdout == nil || len(saved.Status.Holdout.Readings) != 4 {
		t.Errorf("the saved status %+v (%v, %v), want the holdout's trend", saved.Status.Holdout, ok, err)
	}

	// What a Researcher can read, and what it saw.
	round := filepath.Join(x.StateDir(), "round-2")
	for _, f := range []string{"env.txt", "listing.txt", "experiment-copy.txt"} {
		if _, err := os.Stat(filepath.Join(round, f)); err != nil {
			t.Fatalf("the Researcher did not look around: %v", err)
		}
	}
	secrets := []string{"918273", "HOLDOUT-ROWS-5b2e", "hidden-holdout-q9", "holdout.sh", "scoring"}
	// The worktree holds the supervisor's state, the ledger, the logs, the
	// steps' checkouts and what the Researcher wrote.
	if scanned := gittest.ScanForSecrets(t, x.Worktree, secrets); scanned < 20 {
		t.Errorf("scanned only %d files", scanned)
	}
	// Without read-only mounts, a step can read the user's experiment file
	// by path: docs/security.md says so.
	if ReadOnlyMounts() {
		if got := readFile(t, filepath.Join(round, "experiment-copy.txt")); got != "" {
			t.Errorf("the Researcher read the experiment file:\n%s", got)
		}
	}
	// The holdout's log and checkout are in its own directory.
	if log := readFile(t, filepath.Join(x.HoldoutStateDir(), "r2.log")); !strings.Contains(log, "holdout_score: 1.918273") {
		t.Errorf("the holdout's log %q", log)
	}
}
