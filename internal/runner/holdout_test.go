package runner

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// hiddenHoldout fills dir with the holdout's command, holdoutScript, and
// its data.
func hiddenHoldout(t *testing.T, dir string) {
	t.Helper()
	for name, content := range map[string]string{"holdout.sh": holdoutScript, "data.txt": "HOLDOUT-ROWS-5b2e\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// oneHoldoutRound loads the toy experiment for one round of plan, with a
// holdout in dir that runs command, and the experiment file out of git.
func oneHoldoutRound(t *testing.T, plan, command, dir string) *Experiment {
	t.Helper()
	files := toyFiles(plan, `  holdout:
    command: '`+command+`'
    metric: holdout_score
    dir: `+dir+`
`)
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"], "maxRounds: 3", "maxRounds: 1", 1)
	files[".gitignore"] = "out.txt\nexperiment.yaml\n"
	return load(t, newRepo(t, files))
}

// TestHoldoutCatchesAnOverfitCandidate: a candidate that improves the
// evaluation but not the hidden holdout is overfit and rolled back, the
// user sees the holdout's trend, and nothing a Researcher can read — its
// environment, its worktree, the supervisor's state, the logs, the
// experiment file — holds the holdout's values, data or command, nor, but
// for the mount table, where the empty directory bound over it shows, its
// directory.
func TestHoldoutCatchesAnOverfitCandidate(t *testing.T) {
	hidden := filepath.Join(t.TempDir(), "hidden-holdout-q9")
	if err := os.MkdirAll(hidden, 0o755); err != nil {
		t.Fatal(err)
	}
	hiddenHoldout(t, hidden)
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
	secrets := []string{"918273", "HOLDOUT-ROWS-5b2e", "holdout.sh", "scoring"}
	// The worktree holds the supervisor's state, the ledger, the logs, the
	// steps' checkouts and what the Researcher wrote.
	if scanned := gittest.ScanForSecrets(t, x.Worktree, secrets); scanned < 20 {
		t.Errorf("scanned only %d files", scanned)
	}
	// The holdout's directory is a mount point, empty, where a step looks:
	// the mount table names it, and nothing else does.
	err = filepath.WalkDir(x.Worktree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if strings.Contains(string(data), "hidden-holdout-q9") && (!ReadOnlyMounts() || d.Name() != "mountinfo.txt") {
			t.Errorf("%s names the holdout's directory", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Without read-only mounts, a step can read the user's experiment file
	// by path: docs/security.md says so.
	if ReadOnlyMounts() {
		if got := readFile(t, filepath.Join(round, "experiment-copy.txt")); got != "" {
			t.Errorf("the Researcher read the experiment file:\n%s", got)
		}
	}
	// The holdout's log and checkout are in its own directory.
	if log := readFile(t, filepath.Join(x.HoldoutStateDir(), "logs", "r2.log")); !strings.Contains(log, "holdout_score: 1.918273") {
		t.Errorf("the holdout's log %q", log)
	}
}

// hidingPlan is an attack on the holdout by a Researcher that found where
// it lies (HOLDOUT_PROBE): it lists the holdout's directory and rewrites
// its command to print a fine value whatever the model, and its training
// does the same.
const hidingPlan = `rounds:
  - strategy: "raise SCORE to 30 and make the holdout agree"
    run:
      - |-
        ls -A "$HOLDOUT_PROBE" > "$AUTORESEARCH_LOG_DIR/holdout-listing.txt" 2>&1 || true
        printf 'echo "holdout_score: 99"\n' > "$HOLDOUT_PROBE/holdout.sh" || true
    edits:
      - file: train.sh
        old: "SCORE=10"
        new: |-
          SCORE=30
          echo "holdout entries: $(ls -A "$HOLDOUT_PROBE" 2>/dev/null | wc -l)"
          printf 'echo "holdout_score: 99"\n' > "$HOLDOUT_PROBE/holdout.sh" || true
`

// TestHoldoutIsOutOfTheStepsSight: with read-only mounts, neither the
// Researcher nor training sees or changes spec.holdout.dir, even when it
// knows the path; the overfit candidate stays overfit.
func TestHoldoutIsOutOfTheStepsSight(t *testing.T) {
	if !ReadOnlyMounts() {
		t.Skip("hiding the holdout's directory takes read-only mounts, which this machine does not allow")
	}
	hidden := t.TempDir()
	hiddenHoldout(t, hidden)
	t.Setenv("HOLDOUT_PROBE", hidden)
	x := oneHoldoutRound(t, hidingPlan, `sh "$AUTORESEARCH_HOLDOUT_DIR/holdout.sh"`, hidden)

	st, out := run(t, x, Options{})

	if diff := cmp.Diff([]string{"0:baseline", "1:overfit"}, verdicts(ledger(t, x))); diff != "" {
		t.Errorf("ledger verdicts (-want +got):\n%s\n%s", diff, out)
	}
	if got := readFile(t, filepath.Join(hidden, "holdout.sh")); got != holdoutScript {
		t.Errorf("a step rewrote the holdout's command:\n%s", got)
	}
	// Its directory is empty to the Researcher, or, in its own /tmp, not
	// there at all.
	if got := readFile(t, filepath.Join(x.StateDir(), "round-1", "holdout-listing.txt")); strings.Contains(got, "holdout.sh") || strings.Contains(got, "data.txt") {
		t.Errorf("the Researcher listed the holdout's directory:\n%s", got)
	}
	if log := readFile(t, filepath.Join(x.StateDir(), "round-1", "train.log")); !strings.Contains(log, "holdout entries: 0\n") {
		t.Errorf("training saw the holdout's directory:\n%s", log)
	}
	if st.Holdout == nil || len(st.Holdout.Readings) != 2 || st.Holdout.Readings[1].Value != "1.918273" {
		t.Errorf("status.holdout %+v, want round 1 measured by the holdout's own command", st.Holdout)
	}
}

// TestTheHoldoutCannotSendItsDataOut: the holdout runs candidate code —
// here the candidate's train.sh, to predict — which sends the holdout's
// data over the network, to a service on the machine's loopback and to an
// abstract Unix socket, and copies it into the directory that --writable
// gives the steps, where a Researcher of a later round (or one working
// beside it, with spec.pipeline) would collect it to fit the holdout too.
// Offline, the holdout's step reaches neither listener, the directory is
// read-only to it, and what it tried is in its log.
func TestTheHoldoutCannotSendItsDataOut(t *testing.T) {
	if !OfflineSteps() || !ReadOnlyMounts() {
		t.Skip("this machine gives steps no network namespace or no read-only mounts")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on PATH")
	}
	send := filepath.Join(t.TempDir(), "send.py")
	if err := os.WriteFile(send, []byte(sendScript), 0o644); err != nil {
		t.Fatal(err)
	}
	port, abstract, received := drop(t)
	writable, hidden := t.TempDir(), t.TempDir()
	hiddenHoldout(t, hidden)
	plan := fmt.Sprintf(`rounds:
  - strategy: "raise SCORE to 20, and keep a copy of what the holdout scores"
    edits:
      - file: train.sh
        old: "SCORE=10"
        new: |-
          SCORE=20
          [ "$1" != predict ] || python3 %s %s %s < "$AUTORESEARCH_HOLDOUT_DIR/data.txt"
          [ "$1" != predict ] || cp "$AUTORESEARCH_HOLDOUT_DIR/data.txt" %s/ || echo "copy failed"
`, send, port, abstract, writable)
	x := oneHoldoutRound(t, plan, `sh ./train.sh predict && sh "$AUTORESEARCH_HOLDOUT_DIR/holdout.sh"`, hidden)

	st, out := run(t, x, Options{Writable: []string{writable}})

	if diff := cmp.Diff([]string{"0:baseline", "1:improved"}, verdicts(ledger(t, x))); diff != "" {
		t.Errorf("ledger verdicts (-want +got):\n%s\n%s", diff, out)
	}
	log := readFile(t, filepath.Join(x.HoldoutStateDir(), "logs", "r1.log"))
	for _, want := range []string{"tcp failed", "abstract failed", "copy failed"} {
		if !strings.Contains(log, want) {
			t.Errorf("the holdout's log lacks %q: the attack did not run as planned\n%s", want, log)
		}
	}
	if got := received(); len(got) > 0 {
		t.Errorf("the holdout's data left its step: %q", got)
	}
	if _, err := os.Stat(filepath.Join(writable, "data.txt")); err == nil {
		t.Error("the holdout's data was copied into the steps' writable directory")
	}
	if st.Holdout == nil || len(st.Holdout.Readings) != 2 || st.Holdout.Readings[1].Value != "20.918273" {
		t.Errorf("status.holdout %+v, want round 1 measured", st.Holdout)
	}
}

// TestHoldoutDirMustStandApart: the holdout's directory, which every step
// but the holdout's finds empty, may neither hold nor lie in the
// repository or the worktree, and must exist.
func TestHoldoutDirMustStandApart(t *testing.T) {
	top := t.TempDir()
	x := &Experiment{Repo: filepath.Join(top, "repo"), Worktree: filepath.Join(top, "worktree")}
	apart := filepath.Join(top, "holdout")
	for _, d := range []string{x.Repo, x.Worktree, apart, filepath.Join(x.Repo, "holdout")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for dir, want := range map[string]string{
		apart:                            "",
		filepath.Join(top, "missing"):    "is not a directory",
		filepath.Join(x.Repo, "holdout"): "repository",
		top:                              "repository",
		x.Worktree:                       "worktree",
	} {
		err := x.checkHoldoutDir(dir)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("holdout dir %s: %v, want an error naming %q", dir, err, want)
		}
	}
}

// TestRemoveOtherRounds: a holdout step keeps of the earlier checkouts
// only those of its own round's other candidates, which measure theirs at
// once; what candidate code left in an earlier round's, with the holdout's
// data at hand, a later round's holdout would read.
func TestRemoveOtherRounds(t *testing.T) {
	base := t.TempDir()
	for _, n := range []string{"r1a", "r1a.tmp", "r1", "r2a", "r2a.tmp", "r2a.cache", "r2b", "r2b.tmp", "r20a", "r0-s1"} {
		if err := os.MkdirAll(filepath.Join(base, n, "left"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeOtherRounds(base, "r2", filepath.Join(base, "r2b")); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{"r2a", "r2a.cache", "r2a.tmp"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}
