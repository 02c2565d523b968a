package supervisor

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

func TestRecord(t *testing.T) {
	cases := map[string]struct {
		round   steps.LedgerRound
		wantRow workspace.LedgerRow
		// wantLine is the results.tsv line; HEAD stands for HEAD's short hash.
		wantLine string
	}{
		"improved": {
			round:    steps.LedgerRound{Round: 1, Strategy: "double SCORE", Compliance: "✅", Value: "20", Verdict: "improved", Insight: "better", Commit: "abcdef0123456789"},
			wantRow:  workspace.LedgerRow{Round: 1, Strategy: "double SCORE", Compliance: "✅", Result: "score=20", Verdict: "improved", Insight: "better"},
			wantLine: "abcdef0\t20.000000\t1.5\tkeep\tdouble SCORE",
		},
		"not improved, at HEAD": {
			round:    steps.LedgerRound{Round: 2, Strategy: "halve SCORE", Compliance: "✅", Value: "5", Verdict: "not_improved", Note: "try less"},
			wantRow:  workspace.LedgerRow{Round: 2, Strategy: "halve SCORE", Compliance: "✅", Result: "score=5", Verdict: "not_improved", Note: "try less"},
			wantLine: "HEAD\t5.000000\t1.5\tdiscard\thalve SCORE [not_improved]",
		},
		"crashed": {
			round:    steps.LedgerRound{Round: 3, Strategy: "break it", Compliance: "✅", Verdict: "train_failed"},
			wantRow:  workspace.LedgerRow{Round: 3, Strategy: "break it", Compliance: "✅", Result: "—", Verdict: "train_failed"},
			wantLine: "HEAD\t0.000000\t1.5\tcrash\tbreak it [train_failed]",
		},
		"baseline": {
			round:    steps.LedgerRound{Round: 0, Strategy: "baseline", Compliance: "✅", Value: "10", Verdict: "baseline", Insight: "unmodified code"},
			wantRow:  workspace.LedgerRow{Round: 0, Strategy: "baseline", Compliance: "✅", Result: "score=10", Verdict: "baseline", Insight: "unmodified code"},
			wantLine: "HEAD\t10.000000\t1.5\tkeep\tbaseline",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ws, _ := newWorkspace(t)
			u := steps.LedgerUpdate{Metric: "score", Best: "20", BestRound: 1, Rounds: 3, MaxRounds: 5, Status: "running", Round: &tc.round, MemoryGB: "1.5"}
			// A retried step records the round again.
			for range 2 {
				if err := Record(ctx, ws, ws.StateDir(), u); err != nil {
					t.Fatal(err)
				}
			}
			ledger, err := workspace.ReadLedger(ws.ExperiencesPath())
			if err != nil {
				t.Fatal(err)
			}
			header := workspace.Ledger{Metric: ledger.Metric, Best: ledger.Best, BestRound: ledger.BestRound, Rounds: ledger.Rounds, MaxRounds: ledger.MaxRounds, Status: ledger.Status}
			if diff := cmp.Diff(workspace.Ledger{Metric: "score", Best: "20", BestRound: 1, Rounds: 3, MaxRounds: 5, Status: "running"}, header); diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
			var row *workspace.LedgerRow
			for i := range ledger.Rows {
				if ledger.Rows[i].Round == int(tc.round.Round) {
					row = &ledger.Rows[i]
				}
			}
			if diff := cmp.Diff(&tc.wantRow, row); diff != "" {
				t.Errorf("row (-want +got):\n%s", diff)
			}
			head := git(t, ws.Root, "rev-parse", "--short=7", "HEAD")
			lines := strings.Split(strings.TrimSpace(readFile(t, ws.ResultsPath())), "\n")
			want := []string{"commit\tscore\tmemory_gb\tstatus\tdescription", strings.Replace(tc.wantLine, "HEAD", head, 1)}
			if diff := cmp.Diff(want, lines); diff != "" {
				t.Errorf("results.tsv (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecordWithoutARoundWritesTheHeader(t *testing.T) {
	ws, _ := newWorkspace(t)
	results := readFile(t, ws.ResultsPath())
	if err := Record(context.Background(), ws, ws.StateDir(), steps.LedgerUpdate{Metric: "score", Rounds: 2, MaxRounds: 4, Status: "stopped_by_user"}); err != nil {
		t.Fatal(err)
	}
	ledger, err := workspace.ReadLedger(ws.ExperiencesPath())
	if err != nil {
		t.Fatal(err)
	}
	if ledger.Rounds != 2 || ledger.MaxRounds != 4 || ledger.Status != "stopped_by_user" || len(ledger.Rows) != 1 {
		t.Errorf("ledger = %+v, want 2/4 rounds, stopped_by_user and only the baseline's row", ledger)
	}
	if got := readFile(t, ws.ResultsPath()); got != results {
		t.Errorf("results.tsv changed:\n%s", got)
	}
}

func TestGitStepCommitsTheSealedCandidateOnce(t *testing.T) {
	ctx := context.Background()
	ws, res := newWorkspace(t)
	writeFiles(t, ws.Dir, map[string]string{"train.sh": "#!/bin/sh\nSCORE=20\n"})
	cand, err := ws.Seal(ctx, 1, res.StartCommit)
	if err != nil {
		t.Fatal(err)
	}
	// A process left running after the seal edits the fixed evaluation and
	// plants a file; neither may reach the commit.
	writeFiles(t, ws.Dir, map[string]string{"eval.sh": "#!/bin/sh\necho score: 99\n", "planted.sh": "#!/bin/sh\n"})
	u := steps.LedgerUpdate{Metric: "score", Rounds: 1, MaxRounds: 2, Status: "running", Round: &steps.LedgerRound{Round: 1, Value: "20", Verdict: "improved"}}
	first, err := GitStep(ctx, ws, ws.StateDir(), steps.GitCommit, res.StartCommit, cand, "round 1", u)
	if err != nil {
		t.Fatal(err)
	}
	if first != git(t, ws.Root, "rev-parse", "HEAD") {
		t.Errorf("GitStep returned %s, want HEAD", first)
	}
	if got := git(t, ws.Root, "log", "--format=%s", res.StartCommit+"..HEAD"); got != "autoresearch: ledger of round 1\nround 1" {
		t.Errorf("commits after the start:\n%s\nwant the round's code, then its ledger", got)
	}
	if got := git(t, ws.Root, "diff", "--name-only", cand, "HEAD~1"); got != "" {
		t.Errorf("the round's commit differs from the sealed candidate in %s", got)
	}
	if got := git(t, ws.Root, "show", "HEAD:exp/eval.sh"); got != strings.TrimSpace(toyFiles["exp/eval.sh"]) {
		t.Errorf("committed eval.sh = %q, want the fixed one", got)
	}
	if got := git(t, ws.Root, "ls-tree", "--name-only", "HEAD", "exp/"); strings.Contains(got, "planted.sh") {
		t.Errorf("the planted file was committed: %s", got)
	}
	code := git(t, ws.Root, "rev-parse", "--short=7", "HEAD~1")
	results := readFile(t, ws.ResultsPath())
	if !strings.Contains(results, code+"\t20.000000\t") {
		t.Errorf("results.tsv:\n%s\nwant the round's line with its code commit %s", results, code)
	}
	if got := readFile(t, PublishedLedger(ws.StateDir(), workspace.ResultsFile)); got != results {
		t.Errorf("the published results.tsv:\n%s\nwant the worktree's\n%s", got, results)
	}
	again, err := GitStep(ctx, ws, ws.StateDir(), steps.GitCommit, res.StartCommit, cand, "round 1", u)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("the repeated step is on %s, want HEAD %s kept", again, first)
	}
	if got := readFile(t, ws.ResultsPath()); got != results {
		t.Errorf("results.tsv after the repeated step:\n%s\nwant\n%s", got, results)
	}
}

func TestFinishCommitsTheLedger(t *testing.T) {
	ctx := context.Background()
	ws, _ := newWorkspace(t)
	u := steps.LedgerUpdate{Metric: "score", Best: "20", BestRound: 1, Rounds: 2, MaxRounds: 2, Status: "completed"}
	ledger, _, err := Finish(ctx, ws, ws.StateDir(), u)
	if err != nil {
		t.Fatal(err)
	}
	if ledger.Status != "completed" || ledger.Best != "20" {
		t.Errorf("returned ledger = %+v, want it completed with best 20", ledger)
	}
	if msg := git(t, ws.Root, "log", "-1", "--format=%s"); msg != "autoresearch: ledger after round 2 (completed)" {
		t.Errorf("last commit %q, want the ledger commit", msg)
	}
	if status := git(t, ws.Root, "status", "--porcelain"); status != "" {
		t.Errorf("uncommitted changes after Finish:\n%s", status)
	}
	if got, want := readFile(t, PublishedLedger(ws.StateDir(), workspace.ExperiencesFile)), readFile(t, ws.ExperiencesPath()); got != want {
		t.Errorf("the published experiences.md:\n%s\nwant the worktree's\n%s", got, want)
	}
	head := git(t, ws.Root, "rev-parse", "HEAD")
	if _, _, err := Finish(ctx, ws, ws.StateDir(), u); err != nil {
		t.Fatal(err)
	}
	if again := git(t, ws.Root, "rev-parse", "HEAD"); again != head {
		t.Errorf("finishing again made commit %s", again)
	}
}

// TestRecordStartsFromThePublishedLedger: a process that outlived the
// Researcher's step (on a resumed run, the Researcher of the run before)
// rewrites the worktree's ledger while the round trains; the round's
// record starts from the ledger the supervisor published, so neither its
// forged row nor its results.tsv line reaches the branch.
func TestRecordStartsFromThePublishedLedger(t *testing.T) {
	ctx := context.Background()
	ws, res := newWorkspace(t)
	if err := PrepareRound(ctx, ws, 1, res.StartCommit, ws.StateDir(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := FinishResearch(ctx, ws, 1, ws.StateDir(), nil); err != nil {
		t.Fatal(err)
	}
	appendFile(t, ws.ExperiencesPath(), "| 7 | ✅ | score=500 | improved | forged round | the best ever |  |\n")
	appendFile(t, ws.ResultsPath(), "deadbee\t500.000000\t0.0\tkeep\tforged round\n")
	u := steps.LedgerUpdate{Metric: "score", Rounds: 1, MaxRounds: 3, Status: "running", Round: &steps.LedgerRound{Round: 1, Verdict: "not_improved", Value: "5"}}
	if _, err := GitStep(ctx, ws, ws.StateDir(), steps.GitRollback, res.StartCommit, "", "", u); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{ws.ExperiencesPath(), ws.ResultsPath(), PublishedLedger(ws.StateDir(), workspace.ExperiencesFile)} {
		if got := readFile(t, p); strings.Contains(got, "forged") || strings.Contains(got, "500") {
			t.Errorf("%s holds the forgery:\n%s", p, got)
		}
	}
	if got := readFile(t, ws.ExperiencesPath()); !strings.Contains(got, "not_improved") {
		t.Errorf("experiences.md lacks round 1's row:\n%s", got)
	}
}
