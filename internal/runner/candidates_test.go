package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
)

// candidatesPlan is the toy's plan for rounds of three candidates. In round
// 1, a and b each change SCORE only once they have seen the other's mark,
// so the change is made only when their Researchers run at once; c edits
// the fixed eval.sh. In round 2, a's SCORE loses to round 1's best and b
// crashes; c plays the round's own step, which changes nothing.
func candidatesPlan(marks string) string {
	wait := func(mine, other, score string) string {
		return fmt.Sprintf(`touch %[1]s/%[2]s; i=0; while [ ! -f %[1]s/%[3]s ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; `+
			`test -f %[1]s/%[3]s && sed -i s/SCORE=10/SCORE=%[4]s/ train.sh`, marks, mine, other, score)
	}
	return fmt.Sprintf(`rounds:
  - strategy: "unused"
    candidates:
      - strategy: "raise SCORE to 20"
        run: [%q]
      - strategy: "raise SCORE to 40"
        run: [%q]
      - strategy: "score every model 99"
        edits: [{file: eval.sh, old: "score: $(cat out.txt)", new: "score: 99"}]
  - strategy: "leave everything as it is"
    candidates:
      - strategy: "raise SCORE to 30"
        edits: [{file: train.sh, old: "SCORE=40", new: "SCORE=30"}]
      - strategy: "crash"
        exitCode: 3
`, wait("a", "b", "20"), wait("b", "a", "40"))
}

func TestRoundsOfSeveralCandidates(t *testing.T) {
	// The Researchers share their home, and nothing else they write.
	files := toyFiles(candidatesPlan("$HOME"), "")
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"], "maxRounds: 3", "maxRounds: 2\n  candidates: 3", 1)
	repo := newRepo(t, files)
	x := load(t, repo)

	st, out := run(t, x, Options{})

	if st.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s (%s), want Succeeded\n%s", st.Phase, st.Message, out)
	}
	want := []string{"0:baseline", "1a:superseded", "1b:improved", "1c:compliance_failed", "2a:not_improved", "2b:researcher_failed", "2c:no_change"}
	var got []string
	for _, r := range ledger(t, x).Rows {
		got = append(got, fmt.Sprintf("%d%s:%s", r.Round, r.Candidate, r.Verdict))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ledger rows (-want +got):\n%s\n%s", diff, out)
	}
	if st.Best.Value != "40" || st.Best.Round != 1 {
		t.Errorf("best %+v, want 40 from round 1", st.Best)
	}
	wt := x.Worktree
	if got := readFile(t, filepath.Join(wt, "train.sh")); !strings.Contains(got, "SCORE=40") {
		t.Errorf("worktree train.sh = %q, want candidate 1b's", got)
	}
	if got := readFile(t, filepath.Join(wt, "eval.sh")); strings.Contains(got, "99") {
		t.Errorf("candidate 1c's eval.sh reached the worktree: %q", got)
	}
	log := git(t, wt, "log", "--format=%s")
	if !strings.Contains(log, "autoresearch: round 1b — score=40 (improved)") || strings.Contains(log, "autoresearch: round 2") {
		t.Errorf("git log: want round 1b committed and nothing of round 2:\n%s", log)
	}
	for _, ref := range []string{"r1a", "r1b", "r1c", "r2a", "r2c"} {
		git(t, wt, "rev-parse", "--verify", "refs/autoresearch/candidates/toy/"+ref)
	}
	if superseded := git(t, wt, "show", "refs/autoresearch/candidates/toy/r1a:train.sh"); !strings.Contains(superseded, "SCORE=20") {
		t.Errorf("candidate 1a's ref holds train.sh %q, want its SCORE=20", superseded)
	}
	results := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(wt, "results.tsv"))), "\n")
	if len(results) != 8 {
		t.Errorf("results.tsv has %d lines, want a header, the baseline and one per candidate:\n%s", len(results), strings.Join(results, "\n"))
	}
	for _, name := range []string{"a", "b"} {
		if log := readFile(t, filepath.Join(x.StateDir(), "round-1", name, "train.log")); !strings.Contains(log, "step 1 loss") {
			t.Errorf("candidate %s's train.log = %q, want its training's output", name, log)
		}
	}
	prompt := readFile(t, filepath.Join(x.StateDir(), "round-1", "b", "prompt.md"))
	if !strings.Contains(prompt, "you are candidate b") || !strings.Contains(prompt, "**(yours)**") {
		t.Errorf("candidate b's prompt does not tell it which candidate and direction it is:\n%s", prompt)
	}
	if !strings.Contains(out, "Round 1b/2: score=40 — improved") {
		t.Errorf("output lacks candidate 1b's headline:\n%s", out)
	}
}

// TestCandidatesGetTheirOwnGPU checks that each candidate's training and
// evaluation see the GPU Options.GPUs gives it.
func TestCandidatesGetTheirOwnGPU(t *testing.T) {
	files := toyFiles(`rounds:
  - strategy: "raise SCORE"
    candidates:
      - strategy: "raise SCORE to 20"
        edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=20"}]
      - strategy: "raise SCORE to 30"
        edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=30"}]
`, "")
	files["train.sh"] = "#!/bin/sh\nSCORE=10\necho \"gpu=$CUDA_VISIBLE_DEVICES\"\necho $SCORE > out.txt\n"
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"], "maxRounds: 3", "maxRounds: 1\n  candidates: 2", 1)
	repo := newRepo(t, files)
	x := load(t, repo)

	st, out := run(t, x, Options{GPUs: []string{"3", "5"}})

	if st.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s (%s), want Succeeded\n%s", st.Phase, st.Message, out)
	}
	for name, gpu := range map[string]string{"a": "3", "b": "5"} {
		if log := readFile(t, filepath.Join(x.StateDir(), "round-1", name, "train.log")); !strings.Contains(log, "gpu="+gpu+"\n") {
			t.Errorf("candidate %s's training saw %q, want gpu=%s", name, log, gpu)
		}
	}
}

// TestTinyLMGoWithTwoCandidates runs the Go example with two candidates a
// round: the learning rate and the context are tried at once, and the
// better one is kept.
func TestTinyLMGoWithTwoCandidates(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two rounds of two candidates")
	}
	repo := copyExample(t, "tiny-lm-go")
	plan := `rounds:
  - strategy: "unused"
    candidates:
      - strategy: "raise the learning rate from 0.05 to 0.5"
        edits: [{file: train/main.go, old: "learningRate = 0.05", new: "learningRate = 0.5"}]
      - strategy: "widen the context from 3 to 6 characters"
        edits: [{file: train/main.go, old: "contextLen = 3", new: "contextLen = 6"}]
  - strategy: "unused"
    candidates:
      - strategy: "widen the embeddings from 8 to 16"
        edits: [{file: train/main.go, old: "embedDim = 8", new: "embedDim = 16"}]
      - strategy: "score the model on the training text"
        edits: [{file: eval/main.go, old: "os.ReadFile(valPath)", new: "os.ReadFile(\"data/train.txt\")"}]
`
	if err := os.WriteFile(filepath.Join(repo, "scripted-researcher.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := readFile(t, filepath.Join(repo, "experiment.yaml"))
	spec = strings.Replace(spec, "maxRounds: 6", "maxRounds: 2\n  candidates: 2", 1)
	if err := os.WriteFile(filepath.Join(repo, "experiment.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "commit", "-qam", "two candidates a round")
	x := load(t, repo)

	st, out := run(t, x, Options{})

	if st.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s: %s\n%s", st.Phase, st.Message, out)
	}
	got := map[string]string{}
	for _, r := range ledger(t, x).Rows {
		got[fmt.Sprintf("%d%s", r.Round, r.Candidate)] = r.Verdict
	}
	if got["2b"] != string(v1alpha1.VerdictComplianceFailed) || got["2a"] != string(v1alpha1.VerdictImproved) {
		t.Errorf("round 2 verdicts %v: want 2a improved and 2b compliance_failed\n%s", got, out)
	}
	if round1 := []string{got["1a"], got["1b"]}; !slices.Contains(round1, "improved") || !slices.Contains(round1, "superseded") {
		t.Errorf("round 1 verdicts %q: want one improved and the other superseded\n%s", round1, out)
	}
	base, _ := metric.ParseDecimal(st.Baseline.Value)
	best, _ := metric.ParseDecimal(st.Best.Value)
	if best >= base || st.Best.Round != 2 {
		t.Errorf("best val_bpb %s (round %d) does not beat the baseline %s", st.Best.Value, st.Best.Round, st.Baseline.Value)
	}
	if got := git(t, x.Worktree, "diff", st.Workspace.StartCommit, "--", "eval", "lm", "prepare"); got != "" {
		t.Errorf("fixed files changed on the experiment branch:\n%s", got)
	}
}

// TestPipelinedRounds runs rounds with spec.pipeline: each round's
// Researcher works while the round before trains (round 1's while the
// baseline does; round 1's training
// waits for round 2's Researcher's mark, and scores 0 without it), and is
// carried onto the best that round commits: a change to another line
// merges, one to the same line is stale.
func TestPipelinedRounds(t *testing.T) {
	if !ReadOnlyMounts() {
		t.Skip("spec.pipeline needs read-only mounts, which this machine does not allow")
	}
	// Round 2's Researcher marks its home, which no training sees: the
	// test passes the mark on to round 1's.
	mark := filepath.Join(t.TempDir(), "round-2-researches")
	files := toyFiles(`rounds:
  - strategy: "raise SCORE to 20"
    edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=20"}]
  - strategy: "add a BONUS of 5"
    run: ["touch $HOME/round-2-researches"]
    edits: [{file: train.sh, old: "BONUS=0", new: "BONUS=5"}]
  - strategy: "raise SCORE to 30"
    edits: [{file: train.sh, old: "SCORE=20", new: "SCORE=30"}]
  - strategy: "raise SCORE to 40"
    edits: [{file: train.sh, old: "SCORE=20", new: "SCORE=40"}]
`, "")
	files["train.sh"] = "#!/bin/sh\nSCORE=10\ni=0\nif [ $SCORE = 20 ]; then\n" +
		"  while [ ! -f " + mark + " ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n  test -f " + mark + " || SCORE=0\nfi\n" +
		"echo \"step 1 loss=0.5\"\nBONUS=0\necho $((SCORE+BONUS)) > out.txt\n"
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"], "maxRounds: 3", "maxRounds: 4\n  pipeline: true", 1)
	repo := newRepo(t, files)
	x := load(t, repo)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := os.Stat(filepath.Join(x.StateDir(), "researcher-home", "round-2-researches")); err == nil {
				_ = os.WriteFile(mark, nil, 0o644)
				return
			}
		}
	}()

	st, out := run(t, x, Options{})

	if st.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s (%s), want Succeeded\n%s", st.Phase, st.Message, out)
	}
	want := []string{"0:baseline", "1:improved", "2:improved", "3:improved", "4:stale"}
	if diff := cmp.Diff(want, verdicts(ledger(t, x))); diff != "" {
		t.Errorf("ledger verdicts (-want +got):\n%s\n%s", diff, out)
	}
	// Round 1 researched while the baseline trained; its git step wrote
	// the baseline's row, before its own.
	results := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(x.Worktree, "results.tsv"))), "\n")
	if len(results) != 6 || !strings.HasSuffix(results[1], "\tbaseline") || !strings.HasSuffix(results[2], "\traise SCORE to 20") {
		t.Errorf("results.tsv = %q, want a header, the baseline, round 1 and a line per later round", results)
	}
	if st.Best.Value != "35" || st.Best.Round != 3 {
		t.Errorf("best %+v, want 35 from round 3: SCORE=30 with round 2's BONUS=5", st.Best)
	}
	train := readFile(t, filepath.Join(x.Worktree, "train.sh"))
	if !strings.Contains(train, "SCORE=30\n") || !strings.Contains(train, "BONUS=5\n") {
		t.Errorf("worktree train.sh = %q, want round 3's SCORE on round 2's BONUS", train)
	}
	if st.NextRound != nil || st.CurrentRound != nil {
		t.Errorf("finished with rounds in progress: current %v, next %v", st.CurrentRound, st.NextRound)
	}
}

// TestCombinedCandidates runs spec.combine on the toy: in round 1 a raises
// SCORE and b adds a BONUS on another line, both improve, and their
// combination, which has both, beats them; in round 2 both change SCORE,
// so their combination conflicts and the better alone is committed.
func TestCombinedCandidates(t *testing.T) {
	files := toyFiles(`rounds:
  - strategy: "unused"
    candidates:
      - strategy: "raise SCORE to 20"
        edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=20"}]
      - strategy: "add a BONUS of 5"
        edits: [{file: train.sh, old: "BONUS=0", new: "BONUS=5"}]
  - strategy: "unused"
    candidates:
      - strategy: "raise SCORE to 30"
        edits: [{file: train.sh, old: "SCORE=20", new: "SCORE=30"}]
      - strategy: "raise SCORE to 40"
        edits: [{file: train.sh, old: "SCORE=20", new: "SCORE=40"}]
`, "")
	files["train.sh"] = "#!/bin/sh\nSCORE=10\necho \"step 1 loss=0.5\"\n\n\nBONUS=0\necho $((SCORE+BONUS)) > out.txt\n"
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"], "maxRounds: 3", "maxRounds: 2\n  candidates: 2\n  combine: true", 1)
	repo := newRepo(t, files)
	x := load(t, repo)

	st, out := run(t, x, Options{})

	if st.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s (%s), want Succeeded\n%s", st.Phase, st.Message, out)
	}
	want := []string{"0:baseline", "1a:superseded", "1b:superseded", "1c:improved", "2a:superseded", "2b:improved", "2c:conflict"}
	var got []string
	for _, r := range ledger(t, x).Rows {
		got = append(got, fmt.Sprintf("%d%s:%s", r.Round, r.Candidate, r.Verdict))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ledger rows (-want +got):\n%s\n%s", diff, out)
	}
	if st.Best.Value != "45" || st.Best.Round != 2 {
		t.Errorf("best %+v, want 45 from round 2: SCORE=40 on round 1's combination's BONUS=5", st.Best)
	}
	combined := git(t, x.Worktree, "show", "refs/autoresearch/candidates/toy/r1c:train.sh")
	if !strings.Contains(combined, "SCORE=20\n") || !strings.Contains(combined, "BONUS=5\n") {
		t.Errorf("candidate 1c's train.sh = %q, want 1a's SCORE and 1b's BONUS", combined)
	}
	if parent, base := git(t, x.Worktree, "rev-parse", "refs/autoresearch/candidates/toy/r1c^"), git(t, x.Worktree, "rev-parse", "refs/autoresearch/candidates/toy/r1a^"); parent != base {
		t.Errorf("candidate 1c is on %s, want the round's base %s", parent, base)
	}
	if !strings.Contains(out, "1a + 1b together") {
		t.Errorf("output does not name the combination:\n%s", out)
	}
}
