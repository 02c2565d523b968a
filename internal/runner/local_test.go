package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

const improvePlan = `rounds:
  - strategy: "raise SCORE to 20"
    edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=20"}]
  - strategy: "lower SCORE to 5"
    edits: [{file: train.sh, old: "SCORE=20", new: "SCORE=5"}]
  - strategy: "raise SCORE to 30"
    edits: [{file: train.sh, old: "SCORE=20", new: "SCORE=30"}]
`

func TestRunCommitsImprovementsAndRollsBackTheRest(t *testing.T) {
	repo := newRepo(t, toyFiles(improvePlan, ""))
	x := load(t, repo)

	st, out := run(t, x, Options{})

	if st.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s (%s), want Succeeded\n%s", st.Phase, st.Message, out)
	}
	want := []string{"0:baseline", "1:improved", "2:not_improved", "3:improved"}
	if diff := cmp.Diff(want, verdicts(ledger(t, x))); diff != "" {
		t.Errorf("ledger verdicts (-want +got):\n%s", diff)
	}
	if st.Best.Value != "30" || st.Best.Round != 3 {
		t.Errorf("best = %+v, want 30 from round 3", st.Best)
	}
	wt := x.Worktree
	if got := readFile(t, filepath.Join(wt, "train.sh")); !strings.Contains(got, "SCORE=30") {
		t.Errorf("worktree train.sh = %q, want the round 3 version", got)
	}
	log := git(t, wt, "log", "--format=%s")
	for _, msg := range []string{
		"autoresearch: round 1 — score=20 (improved)",
		"autoresearch: round 3 — score=30 (improved)",
		"autoresearch: ledger after round 3 (completed)",
	} {
		if !strings.Contains(log, msg) {
			t.Errorf("git log lacks %q:\n%s", msg, log)
		}
	}
	if strings.Contains(log, "round 2") {
		t.Errorf("the rolled-back round 2 was committed:\n%s", log)
	}
	if s := git(t, wt, "status", "--porcelain"); s != "" {
		t.Errorf("worktree not clean after the run:\n%s", s)
	}
	results := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(wt, "results.tsv"))), "\n")
	if len(results) != 5 || results[0] != "commit\tscore\tmemory_gb\tstatus\tdescription" {
		t.Errorf("results.tsv = %q, want a header and 4 rows", results)
	}
	if !strings.Contains(results[3], "\tdiscard\t") {
		t.Errorf("round 2 in results.tsv = %q, want discard", results[3])
	}
	for _, line := range []string{
		"Round 1/3: score=20 — improved",
		"Best so far: score=20 (Round 1)",
		"Round 2/3: score=5 — not_improved (rolled back)",
		"# Autoresearch Complete",
		"- Termination: MaxRoundsReached",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
	prompt := readFile(t, filepath.Join(x.StateDir(), "round-2", "prompt.md"))
	if !strings.Contains(prompt, "This is Round 2 of 3.") || !strings.Contains(prompt, "raise SCORE to 20") {
		t.Errorf("round 2 prompt lacks its round or the experience of round 1:\n%s", prompt)
	}
}

func TestTamperingIsCaughtAndUndone(t *testing.T) {
	// Every round would raise the score if it got through, and every round
	// breaks a rule in another way. The Researcher writes git as it can
	// where the machine gives no read-only mounts; with them its git writes
	// fail (TestStepsCannotWriteWhatIsNotTheirs).
	defer WithoutMounts()()
	plan := `rounds:
  - strategy: "edit a fixed file"
    edits:
      - {file: train.sh, old: "SCORE=10", new: "SCORE=99"}
      - {file: prepare.sh, old: "echo ready", new: "echo tampered"}
  - strategy: "edit the eval code"
    edits:
      - {file: train.sh, old: "SCORE=10", new: "SCORE=99"}
      - {file: eval.sh, old: "cat out.txt", new: "echo 1000"}
  - strategy: "add an eval-like script"
    edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=99"}]
    write: [{file: my_eval.py, content: "print('score: 1000')\n"}]
  - strategy: "commit my own change"
    edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=99"}]
    run: ["git -c user.name=r -c user.email=r@x commit -qam mine"]
  - strategy: "reset the history"
    edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=99"}]
    run: ["git reset -q --hard HEAD~1 && git show HEAD@{1}:experiences.md > experiences.md"]
  - strategy: "delete a tracked file"
    edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=99"}]
    delete: [README.md]
`
	files := toyFiles(plan, "")
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"], "maxRounds: 3", "maxRounds: 6", 1)
	repo := newRepo(t, files)
	x := load(t, repo)

	st, out := run(t, x, Options{})

	if got := st.VerdictCounts[v1alpha1.VerdictComplianceFailed]; got != 6 {
		t.Fatalf("compliance_failed rounds = %d, want 6; ledger %v\n%s", got, verdicts(ledger(t, x)), out)
	}
	insights := map[int]string{}
	for _, r := range ledger(t, x).Rows {
		insights[r.Round] = r.Insight
	}
	for round, want := range map[int]string{
		1: "prepare.sh", 2: "eval.sh", 3: "my_eval.py", 4: "git history changed", 5: "git history changed", 6: "README.md",
	} {
		if !strings.Contains(insights[round], want) {
			t.Errorf("round %d insight %q does not name %q", round, insights[round], want)
		}
	}
	wt := x.Worktree
	start := st.Workspace.StartCommit
	if got := git(t, wt, "log", "--format=%s", start+"..HEAD"); got != "autoresearch: ledger after round 6 (completed)" {
		t.Errorf("commits since the start: %q; only the final ledger commit may be there", got)
	}
	if diff := git(t, wt, "diff", "--stat", start, "--", ".", ":!experiences.md", ":!results.tsv"); diff != "" {
		t.Errorf("the worktree differs from the start:\n%s", diff)
	}
	if s := git(t, wt, "status", "--porcelain"); s != "" {
		t.Errorf("left-overs in the worktree:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(wt, "my_eval.py")); !os.IsNotExist(err) {
		t.Errorf("my_eval.py survived: %v", err)
	}
}

func TestProcessFailuresBecomeVerdicts(t *testing.T) {
	cases := map[string]struct {
		step    string
		verdict v1alpha1.Verdict
		insight string
		// researcherTimeout replaces the toy's 20s where the case is
		// about it: under a loaded machine's test run a short one would
		// time out a Researcher that only edits.
		researcherTimeout string
	}{
		"researcher crash": {
			step:    `{strategy: "crash", exitCode: 3}`,
			verdict: v1alpha1.VerdictResearcherFailed, insight: "exited with code 3",
		},
		"researcher timeout": {
			step:    `{strategy: "think forever", sleep: 30s}`,
			verdict: v1alpha1.VerdictResearcherFailed, insight: "timeout", researcherTimeout: "2s",
		},
		"training crash": {
			step:    `{strategy: "break training", edits: [{file: train.sh, old: "SCORE=10", new: "exit 7"}]}`,
			verdict: v1alpha1.VerdictTrainFailed, insight: "code 7",
		},
		"training diverges": {
			step:    `{strategy: "diverge", edits: [{file: train.sh, old: "loss=0.5", new: "loss=nan"}]}`,
			verdict: v1alpha1.VerdictTrainFailed, insight: "diverged",
		},
		"training timeout": {
			step:    `{strategy: "train too long", edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=10; sleep 60"}]}`,
			verdict: v1alpha1.VerdictTrainTimeout, insight: "time limit",
		},
		"eval finds no metric": {
			step:    `{strategy: "no model", edits: [{file: train.sh, old: "echo $SCORE > out.txt", new: "rm -f out.txt"}]}`,
			verdict: v1alpha1.VerdictEvalFailed, insight: "never used",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			files := toyFiles("rounds:\n  - "+tc.step+"\n", "")
			researcherTimeout := "20s"
			if tc.researcherTimeout != "" {
				researcherTimeout = tc.researcherTimeout
			}
			files["experiment.yaml"] = strings.NewReplacer(
				"maxRounds: 3", "maxRounds: 1", "timeLimit: 10s", "timeLimit: 1s", "timeout: 20s", "timeout: "+researcherTimeout,
			).Replace(files["experiment.yaml"])
			repo := newRepo(t, files)
			x := load(t, repo)

			st, out := run(t, x, Options{Grace: 500 * time.Millisecond, KillGrace: 500 * time.Millisecond})

			if len(st.History) != 2 {
				t.Fatalf("history %+v, want baseline and round 1\n%s", st.History, out)
			}
			got := st.History[1]
			if got.Verdict != tc.verdict || !strings.Contains(got.Insight, tc.insight) {
				t.Errorf("round 1: %s (%q), want %s with %q\n%s", got.Verdict, got.Insight, tc.verdict, tc.insight, out)
			}
			if s := git(t, x.Worktree, "status", "--porcelain"); s != "" {
				t.Errorf("worktree not restored:\n%s", s)
			}
		})
	}
}

func TestStopAfterStepThenResume(t *testing.T) {
	// Training may write the marker's directory only.
	signals := t.TempDir()
	marker := filepath.Join(signals, "training-round-2")
	files := toyFiles(improvePlan, "")
	files["train.sh"] = "#!/bin/sh\nSCORE=10\n[ \"$AUTORESEARCH_ROUND\" = 2 ] && touch " + marker + " && sleep 1\necho $SCORE > out.txt\n"
	repo := newRepo(t, files)
	x := load(t, repo)

	stop := make(chan struct{})
	go func() {
		for {
			if _, err := os.Stat(marker); err == nil {
				close(stop)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	st, out := run(t, x, Options{Stop: stop, Writable: []string{signals}})
	if st.Phase != v1alpha1.PhaseSuspended || st.CurrentRound == nil || st.CurrentRound.Number != 2 ||
		st.CurrentRound.Step != v1alpha1.StepEval || st.CurrentRound.StepState != v1alpha1.StepStatePending {
		t.Fatalf("after the stop: phase %s, round %+v; want round 2 waiting to evaluate\n%s", st.Phase, st.CurrentRound, out)
	}
	if !strings.Contains(out, "Run the same command again to resume") {
		t.Errorf("the stop is not explained:\n%s", out)
	}
	if got := readFile(t, filepath.Join(x.Worktree, "train.sh")); !strings.Contains(got, "SCORE=5") {
		t.Errorf("the trained candidate was not kept for the resumed run: %q", got)
	}

	st, out = run(t, load(t, repo), Options{})
	if st.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("resumed run ended %s: %s\n%s", st.Phase, st.Message, out)
	}
	want := []string{"0:baseline", "1:improved", "2:not_improved", "3:improved"}
	if diff := cmp.Diff(want, verdicts(ledger(t, x))); diff != "" {
		t.Errorf("ledger verdicts (-want +got):\n%s", diff)
	}
	if n := strings.Count(readFile(t, filepath.Join(x.Worktree, "results.tsv")), "\n"); n != 5 {
		t.Errorf("results.tsv has %d lines, want a header and 4 rows", n)
	}
}

func TestAbortMidRoundRestartsTheRound(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "training-round-2")
	files := toyFiles(improvePlan, "")
	files["train.sh"] = "#!/bin/sh\nSCORE=10\n[ \"$AUTORESEARCH_ROUND\" = 2 ] && [ ! -f " + marker + " ] && touch " + marker + " && sleep 30\necho $SCORE > out.txt\n"
	// The Researchers write their home, which outlives their steps.
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"],
		`command: "autoresearch researcher scripted --plan plan.yaml"`,
		`command: "echo $AUTORESEARCH_ROUND >> $HOME/researcher-runs && autoresearch researcher scripted --plan plan.yaml"`, 1)
	repo := newRepo(t, files)
	x := load(t, repo)
	runs := filepath.Join(x.StateDir(), "researcher-home", "researcher-runs")

	ctx, abort := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := os.Stat(marker); err == nil {
				abort()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	// Training may write the marker's directory only.
	if _, err := Run(ctx, x, Options{Grace: time.Second, KillGrace: time.Second, Writable: []string{dir}}); err == nil {
		t.Fatal("an aborted run returned no error")
	}

	st, out := run(t, load(t, repo), Options{})
	if st.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("resumed run ended %s: %s\n%s", st.Phase, st.Message, out)
	}
	if !strings.Contains(out, "round 2 was interrupted before its verdict; rolled back and restarted") {
		t.Errorf("the restart is not explained:\n%s", out)
	}
	if got := strings.Fields(readFile(t, runs)); !cmp.Equal(got, []string{"1", "2", "2", "3"}) {
		t.Errorf("researcher runs by round = %v, want round 2 twice", got)
	}
	want := []string{"0:baseline", "1:improved", "2:not_improved", "3:improved"}
	if diff := cmp.Diff(want, verdicts(ledger(t, x))); diff != "" {
		t.Errorf("ledger verdicts (-want +got):\n%s", diff)
	}
}

func TestRebuildsStateFromTheLedger(t *testing.T) {
	files := toyFiles(improvePlan, "")
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"], "maxRounds: 3", "maxRounds: 1", 1)
	repo := newRepo(t, files)
	x := load(t, repo)
	run(t, x, Options{})
	if err := os.Remove(filepath.Join(x.StateDir(), stateFile)); err != nil {
		t.Fatal(err)
	}
	// What a Researcher of a run killed meanwhile may have left: rounds
	// the rebuilt state must not count.
	experiences := filepath.Join(x.Worktree, workspace.ExperiencesFile)
	forged := strings.Replace(readFile(t, experiences), "| 1 |", "| 5 | ✅ | score=99 | improved | forged |  |  |\n| 1 |", 1)
	if err := os.WriteFile(experiences, []byte(forged+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	raise(t, repo, "maxRounds: 1", "maxRounds: 2")

	st, out := run(t, load(t, repo), Options{})

	if !strings.Contains(out, "rebuilt from") || st.Phase != v1alpha1.PhaseSucceeded || st.CompletedRounds != 2 {
		t.Fatalf("phase %s after %d rounds, want a rebuilt run to finish round 2\n%s", st.Phase, st.CompletedRounds, out)
	}
	want := []string{"0:baseline", "1:improved", "2:not_improved"}
	if diff := cmp.Diff(want, verdicts(ledger(t, x))); diff != "" {
		t.Errorf("ledger verdicts (-want +got):\n%s", diff)
	}
}

func TestRaisingMaxRoundsContinuesAndNotesReachTheNextRound(t *testing.T) {
	files := toyFiles(improvePlan, "")
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"], "maxRounds: 3", "maxRounds: 1", 1)
	repo := newRepo(t, files)
	x := load(t, repo)
	first, _ := run(t, x, Options{})
	if first.Phase != v1alpha1.PhaseSucceeded || first.CompletedRounds != 1 || first.LedgerCommit == "" {
		t.Fatalf("first run: %s after %d rounds, final ledger %q", first.Phase, first.CompletedRounds, first.LedgerCommit)
	}
	if err := x.AddNote("try a cosine schedule"); err != nil {
		t.Fatal(err)
	}
	raise(t, repo, "maxRounds: 1", "maxRounds: 2")

	x = load(t, repo)
	st, out := run(t, x, Options{})

	if st.Phase != v1alpha1.PhaseSucceeded || st.CompletedRounds != 2 {
		t.Fatalf("second run: %s after %d rounds\n%s", st.Phase, st.CompletedRounds, out)
	}
	prompt := readFile(t, filepath.Join(x.StateDir(), "round-2", "prompt.md"))
	if !strings.Contains(prompt, "try a cosine schedule") {
		t.Errorf("round 2 prompt lacks the note:\n%s", prompt)
	}
	rows := ledger(t, x).Rows
	if rows[2].Note != "try a cosine schedule" || rows[1].Note != "" {
		t.Errorf("Note column = %q, %q; want the note on round 2 only", rows[1].Note, rows[2].Note)
	}
	if got := ledger(t, x).Status; got != "completed" {
		t.Errorf("ledger status %q, want completed", got)
	}
	// The first run's final ledger stays on the branch.
	if out := git(t, repo, "branch", "--contains", first.LedgerCommit, "--format=%(refname:short)"); !strings.Contains(out, st.Workspace.Branch) {
		t.Errorf("the first run's final ledger commit %s is no longer on %s (branches containing it: %q)", first.LedgerCommit, st.Workspace.Branch, out)
	}
}

// TestRefusesAChangedMeasure: an experiment cannot go on under another
// evaluation than the one its baseline and verdicts were measured under.
func TestRefusesAChangedMeasure(t *testing.T) {
	files := toyFiles(improvePlan, "")
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"], "maxRounds: 3", "maxRounds: 1", 1)
	repo := newRepo(t, files)
	x := load(t, repo)
	run(t, x, Options{})
	raise(t, repo, "maxRounds: 1", "maxRounds: 2")
	raise(t, repo, "direction: maximize", "direction: minimize")

	_, err := Run(context.Background(), load(t, repo), Options{})

	if err == nil || !strings.Contains(err.Error(), "spec.eval.direction changed since the experiment started") {
		t.Fatalf("error %v, want the changed direction refused", err)
	}
	raise(t, repo, "direction: minimize", "direction: maximize")
	if st, out := run(t, load(t, repo), Options{}); st.CompletedRounds != 2 {
		t.Errorf("with the measure put back, %d rounds, want 2\n%s", st.CompletedRounds, out)
	}
}

// TestRebaselineAcceptsAChangedMeasure: --rebaseline takes the changed
// evaluation as the one in force and measures the baseline again on the
// best code; the rounds done keep their verdicts, the next are judged
// against the new measurement.
func TestRebaselineAcceptsAChangedMeasure(t *testing.T) {
	files := toyFiles(improvePlan, "")
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"], "maxRounds: 3", "maxRounds: 1", 1)
	repo := newRepo(t, files)
	x := load(t, repo)
	if st, out := run(t, x, Options{}); st.Best == nil || st.Best.Value != "20" {
		t.Fatalf("first run: best %+v, want 20\n%s", st.Best, out)
	}
	raise(t, repo, "maxRounds: 1", "maxRounds: 2")
	// The new evaluation prints 120 for a SCORE of 20.
	raise(t, repo, `command: "./eval.sh"`, `command: "./eval.sh | sed 's/score: /score: 1/'"`)

	_, err := Run(context.Background(), load(t, repo), Options{})
	if err == nil || !strings.Contains(err.Error(), "spec.eval.command changed") || !strings.Contains(err.Error(), "--rebaseline") {
		t.Fatalf("error %v, want the changed command refused with --rebaseline offered", err)
	}

	st, out := run(t, load(t, repo), Options{Rebaseline: true})

	if st.Phase != v1alpha1.PhaseSucceeded || st.CompletedRounds != 2 {
		t.Fatalf("rebaselined run: %s after %d rounds (%s)\n%s", st.Phase, st.CompletedRounds, st.Message, out)
	}
	if !strings.Contains(out, "measuring the baseline again on the best code") {
		t.Errorf("the rebaseline is not explained:\n%s", out)
	}
	if st.Baseline.Value != "120" || st.Best.Value != "120" || st.Best.Round != 1 {
		t.Errorf("baseline %+v, best %+v; want 120 measured again on round 1's code", st.Baseline, st.Best)
	}
	want := []string{"0:baseline", "1:improved", "2:not_improved"}
	if diff := cmp.Diff(want, verdicts(ledger(t, x))); diff != "" {
		t.Errorf("ledger verdicts (-want +got):\n%s", diff)
	}
	rows := ledger(t, x).Rows
	if rows[0].Result != "score=120" || !strings.Contains(rows[0].Note, "measure changed (spec.eval.command)") ||
		!strings.Contains(rows[0].Insight, "best code so far (R1") {
		t.Errorf("row 0 = %+v, want the new measurement explained", rows[0])
	}
	if rows[1].Result != "score=20" || rows[2].Result != "score=15" {
		t.Errorf("rounds 1 and 2 = %q, %q; want round 1 as measured then and round 2 under the new measure", rows[1].Result, rows[2].Result)
	}

	// The new measure is now the one in force: going on needs no flag.
	raise(t, repo, "maxRounds: 2", "maxRounds: 3")
	st, out = run(t, load(t, repo), Options{})
	if st.CompletedRounds != 3 || st.Best.Value != "130" || st.Best.Round != 3 {
		t.Errorf("third run: %d rounds, best %+v; want round 3 improved to 130\n%s", st.CompletedRounds, st.Best, out)
	}
}

// TestGivenBaselineStillRunsAPreflight: a given baseline is judged
// against, but the unmodified code still trains and evaluates once, so a
// broken command fails before any round.
func TestGivenBaselineStillRunsAPreflight(t *testing.T) {
	t.Run("working commands", func(t *testing.T) {
		repo := newRepo(t, toyFiles(improvePlan, "  baseline: {value: \"15\"}\n"))
		x := load(t, repo)

		st, out := run(t, x, Options{})

		if st.Phase != v1alpha1.PhaseSucceeded {
			t.Fatalf("phase %s (%s)\n%s", st.Phase, st.Message, out)
		}
		if diff := cmp.Diff(&v1alpha1.BaselineResult{Value: "15", Values: []string{"10"}}, st.Baseline); diff != "" {
			t.Errorf("baseline (-want +got):\n%s", diff)
		}
		row := ledger(t, x).Rows[0]
		if row.Result != "score=15" || !strings.Contains(row.Insight, "preflight of the unmodified code measured score=10; judging against the given 15") {
			t.Errorf("row 0 = %+v, want the given value and the preflight's", row)
		}
		if !strings.Contains(out, "preflight of the unmodified code measured score=10") {
			t.Errorf("the preflight is not reported:\n%s", out)
		}
	})
	t.Run("broken training", func(t *testing.T) {
		files := toyFiles(improvePlan, "  baseline: {value: \"15\"}\n")
		files["experiment.yaml"] = strings.Replace(files["experiment.yaml"], `command: "./prepare.sh && ./train.sh"`, `command: "./prepare.sh && ./missing.sh"`, 1)
		repo := newRepo(t, files)
		x := load(t, repo)

		st, out := run(t, x, Options{})

		if st.Phase != v1alpha1.PhaseFailed || !strings.Contains(st.Message, "preflight failed before round 1") {
			t.Fatalf("phase %s (%s), want a failed preflight\n%s", st.Phase, st.Message, out)
		}
		if _, err := os.Stat(filepath.Join(x.StateDir(), "round-1")); !os.IsNotExist(err) {
			t.Errorf("round 1 ran after a failed preflight: %v", err)
		}
	})
}

func TestSuspendedSpecRunsNothing(t *testing.T) {
	repo := newRepo(t, toyFiles(improvePlan, "  suspend: true\n"))
	x := load(t, repo)

	st, out := run(t, x, Options{})

	if st.Phase != v1alpha1.PhaseSuspended || !strings.Contains(out, "Suspended (spec.suspend is true)") {
		t.Fatalf("phase %s, want Suspended\n%s", st.Phase, out)
	}
	if _, err := os.Stat(x.Worktree); !os.IsNotExist(err) {
		t.Errorf("a suspended experiment created its worktree: %v", err)
	}
}

// raise edits the committed experiment file, as a user raising maxRounds would.
func raise(t *testing.T, repo, old, new string) {
	t.Helper()
	p := filepath.Join(repo, "experiment.yaml")
	if err := os.WriteFile(p, []byte(strings.Replace(readFile(t, p), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestStepsCannotWriteWhatIsNotTheirs(t *testing.T) {
	if !ReadOnlyMounts() {
		t.Skip("steps get no read-only mounts here: " + MountsWarning())
	}
	// The Researcher and training try to write everything that is not
	// theirs, and what is.
	plan := `rounds:
  - strategy: "write everywhere"
    edits:
      - {file: train.sh, old: "SCORE=10", new: "SCORE=20\nexport MARK=train\n. ./writes.sh"}
    write:
      - file: writes.sh
        content: |
          w=${PWD%%/.autoresearch/*}
          gd=$(dirname "$w")/repo/.git
          state=$w/.autoresearch
          echo "$MARK writes the git directory $gd and the state directory $state"
          echo "$MARK" > "$gd/forged-by-$MARK"
          echo "$MARK" > "$(dirname "$gd")/forged-by-$MARK"
          echo "$MARK" > "$state/forged-by-$MARK"
          echo "$MARK" >> "$state/protocol.json"
          echo "$MARK" > "$state/round-1/ledger-backup/forged-by-$MARK"
          echo "$MARK" > "$(dirname "$state")/forged-by-$MARK"
    run:
      - "MARK=researcher . ./writes.sh"
      - "echo ok > \"$AUTORESEARCH_LOG_DIR/written-by-researcher\""
      - "go env -w GOFLAGS=-tags=researcher"
`
	files := toyFiles(plan, "")
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"], "maxRounds: 3", "maxRounds: 1", 1)
	// The evaluation prepares data in its checkout.
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"], `command: "./eval.sh"`, `command: "echo prepared > prepared.txt && ./eval.sh"`, 1)
	repo := newRepo(t, files)
	x := load(t, repo)

	st, out := run(t, x, Options{})
	if got := st.VerdictCounts[v1alpha1.VerdictImproved]; got != 1 {
		t.Errorf("verdicts %v, want the round improved\n%s", verdicts(ledger(t, x)), out)
	}
	state := x.StateDir()
	gitDir := filepath.Join(repo, ".git")
	log := readFile(t, filepath.Join(state, "round-1", "train.log"))
	// Training named what it writes, by the test's layout (the worktree
	// beside the repository): the checks below fail where a write was
	// tried, not where its targets were empty.
	if want := "train writes the git directory " + gitDir + " and the state directory " + state + "\n"; !strings.Contains(log, want) {
		t.Errorf("training's log has no %q:\n%s", want, log)
	}
	if !strings.Contains(log, "Read-only file system") {
		t.Errorf("training's writes did not fail as read-only:\n%s", log)
	}
	// The Researcher may write its worktree and its round's directory.
	for _, f := range []string{filepath.Join(x.Worktree, "forged-by-researcher"), filepath.Join(state, "round-1", "written-by-researcher")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the Researcher could not write %s: %v", f, err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(state, "researcher-go.env")); err != nil || !strings.Contains(string(data), "researcher") {
		t.Errorf("the Researcher's go env -w wrote %q (%v)", data, err)
	}
	for _, f := range []string{
		filepath.Join(repo, "forged-by-researcher"), filepath.Join(gitDir, "forged-by-researcher"), filepath.Join(state, "forged-by-researcher"),
		filepath.Join(state, "round-1", "ledger-backup", "forged-by-researcher"),
		filepath.Join(repo, "forged-by-train"), filepath.Join(gitDir, "forged-by-train"), filepath.Join(x.Worktree, "forged-by-train"),
		filepath.Join(state, "forged-by-train"), filepath.Join(state, "round-1", "ledger-backup", "forged-by-train"),
	} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("a step wrote %s", f)
		}
	}
	if data := readFile(t, filepath.Join(state, "protocol.json")); strings.HasSuffix(data, "researcher\n") || strings.HasSuffix(data, "train\n") {
		t.Errorf("a step wrote protocol.json: %q", data)
	}
}

// TestAResearcherDiesWithTheRunner kills the runner while its Researcher
// runs, at once (SIGKILL) and by a hangup (SIGHUP, the terminal gone): the
// Researcher, which would otherwise go on writing the worktree beside the
// next run, stops with it, a process it put in the background too, and
// the next run is not refused as a second runner. (A Researcher that
// outlives a failing test ends within a minute.)
func TestAResearcherDiesWithTheRunner(t *testing.T) {
	if !chosen().namespaced() {
		t.Skip("steps run in no PID namespace here: only a step's first process dies with the runner")
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			files := toyFiles(improvePlan, "")
			files["experiment.yaml"] = strings.Replace(files["experiment.yaml"],
				`command: "autoresearch researcher scripted --plan plan.yaml"`,
				`command: "(for i in $(seq 1200); do date +%s%N > alive; sleep 0.05; done) & wait"`, 1)
			repo := newRepo(t, files)
			x := load(t, repo)
			runner := exec.Command("autoresearch", "run", "-f", x.File, "--worktree", x.Worktree)
			var out bytes.Buffer
			runner.Stdout, runner.Stderr = &out, &out
			// A hangup the tests ignore (run under nohup) would be ignored
			// by the runner too: caught here, it is the runner's default.
			hangups := make(chan os.Signal, 1)
			signal.Notify(hangups, syscall.SIGHUP)
			err := runner.Start()
			signal.Stop(hangups)
			if err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- runner.Wait() }()
			alive := filepath.Join(x.Worktree, "alive")
			deadline := time.Now().Add(time.Minute)
			for !fileExists(alive) {
				if time.Now().After(deadline) {
					_ = runner.Process.Kill()
					t.Fatalf("the Researcher never ran:\n%s", out.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err := runner.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				t.Logf("the runner ended after %s: %v", sig, err)
			case <-time.After(30 * time.Second):
				_ = runner.Process.Kill()
				t.Fatalf("the runner did not end after %s:\n%s", sig, out.String())
			}
			time.Sleep(time.Second)
			before := readFile(t, alive)
			time.Sleep(time.Second)
			if after := readFile(t, alive); after != before {
				t.Fatalf("the Researcher still runs after the runner's %s:\n%s", sig, out.String())
			}
			unlock, err := lockExperiment(x)
			if err != nil {
				t.Fatalf("after the runner's %s: %v", sig, err)
			}
			unlock()
		})
	}
}

// TestANohupRunGoesOnAfterAHangup: under nohup, which ignores the hangup,
// the runner and its Researcher go on.
func TestANohupRunGoesOnAfterAHangup(t *testing.T) {
	nohup, err := exec.LookPath("nohup")
	if err != nil {
		t.Skip("no nohup")
	}
	files := toyFiles(improvePlan, "")
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"],
		`command: "autoresearch researcher scripted --plan plan.yaml"`,
		`command: "for i in $(seq 1200); do date +%s%N > alive; sleep 0.05; done"`, 1)
	x := load(t, newRepo(t, files))
	runner := exec.Command(nohup, "autoresearch", "run", "-f", x.File, "--worktree", x.Worktree)
	var out bytes.Buffer
	runner.Stdout, runner.Stderr = &out, &out
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = runner.Process.Kill()
		_ = runner.Wait()
	}()
	alive := filepath.Join(x.Worktree, "alive")
	for deadline := time.Now().Add(time.Minute); !fileExists(alive); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the Researcher never ran:\n%s", out.String())
		}
	}
	if err := runner.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	before := readFile(t, alive)
	time.Sleep(time.Second)
	if after := readFile(t, alive); after == before {
		t.Fatalf("the Researcher stopped after a hangup under nohup:\n%s", out.String())
	}
}

// TestRunRefusesASecondRunner: while one runner holds the experiment, a
// second one says so and runs nothing, also after an editor saved the
// experiment file by renaming a new one over it.
func TestRunRefusesASecondRunner(t *testing.T) {
	repo := newRepo(t, toyFiles(improvePlan, ""))
	x := load(t, repo)
	unlock, err := lockExperiment(x)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	saved := x.File + ".new"
	if err := os.WriteFile(saved, []byte(readFile(t, x.File)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(saved, x.File); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), x, Options{}); err == nil || !strings.Contains(err.Error(), "another `autoresearch run` is running toy") {
		t.Fatalf("a second runner: %v, want it refused", err)
	}
	if fileExists(x.Worktree) {
		t.Error("the refused runner made the worktree")
	}
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestAnExperimentOnAFileSystemOfItsOwnUnderTmp runs an experiment kept on
// a file system mounted under /tmp (a tmpfs), which the Researcher writes
// as a whole: its writable /tmp comes with the mounts below it, or the
// experiment would be missing from it, and every Researcher failed to
// mount it. The repository stays read-only to the Researcher there.
func TestAnExperimentOnAFileSystemOfItsOwnUnderTmp(t *testing.T) {
	if !ReadOnlyMounts() {
		t.Skip("steps get no read-only mounts here: " + MountsWarning())
	}
	tmp, err := os.MkdirTemp("/tmp", "autoresearch-fs-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.Remove(tmp) }()
	if err := syscall.Mount("tmpfs", tmp, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	defer func() {
		if err := syscall.Unmount(tmp, syscall.MNT_DETACH); err != nil {
			t.Error(err)
		}
	}()
	files := toyFiles(improvePlan, "")
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"], "maxRounds: 3", "maxRounds: 1", 1)
	files["experiment.yaml"] = strings.Replace(files["experiment.yaml"],
		`command: "autoresearch researcher scripted --plan plan.yaml"`,
		`command: "echo forged >> $(git rev-parse --path-format=absolute --git-common-dir)/../README.md; autoresearch researcher scripted --plan plan.yaml"`, 1)
	repo := filepath.Join(tmp, "repo")
	gittest.WriteFiles(t, repo, files)
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", "-A")
	git(t, repo, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "-m", "start")
	st, out := run(t, load(t, repo), Options{})
	if v := verdicts(ledger(t, load(t, repo))); !cmp.Equal(v, []string{"0:baseline", "1:improved"}) {
		t.Errorf("verdicts %v, want round 1 improved:\n%s", v, out)
	}
	if st.Phase != v1alpha1.PhaseSucceeded {
		t.Errorf("phase %s: %s", st.Phase, st.Message)
	}
	if got := readFile(t, filepath.Join(repo, "README.md")); strings.Contains(got, "forged") {
		t.Errorf("the Researcher wrote the repository: %q", got)
	}
}
