package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// researcher edits train.sh and writes into the ledger what a Researcher
// may (its Strategy row) and what it may not (a verdict, a results line).
func researcher(t *testing.T, dir, strategy string) {
	t.Helper()
	writeFiles(t, dir, map[string]string{"train.sh": "#!/bin/sh\nSCORE=20\n"})
	appendFile(t, filepath.Join(dir, "experiences.md"), "| 1 |  |  | improved | "+strategy+" |  |  |\n")
	appendFile(t, filepath.Join(dir, "results.tsv"), "abcdefg\t99\t0.0\tkeep\tforged\n")
}

func TestFinishResearchTakesTheStrategyAndRestoresTheLedger(t *testing.T) {
	ctx := context.Background()
	ws, res := newWorkspace(t)
	state := t.TempDir()
	experiences, results := readFile(t, ws.ExperiencesPath()), readFile(t, ws.ResultsPath())
	if err := PrepareRound(ctx, ws, 1, res.StartCommit, state, nil); err != nil {
		t.Fatal(err)
	}
	researcher(t, ws.Dir, "double SCORE")

	for attempt := 1; attempt <= 2; attempt++ {
		strategy, err := FinishResearch(ctx, ws, 1, state, nil)
		if err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		if strategy != "double SCORE" {
			t.Errorf("attempt %d: strategy = %q, want %q", attempt, strategy, "double SCORE")
		}
		if got := readFile(t, ws.ExperiencesPath()); got != experiences {
			t.Errorf("attempt %d: experiences.md not restored:\n%s", attempt, got)
		}
		if got := readFile(t, ws.ResultsPath()); got != results {
			t.Errorf("attempt %d: results.tsv not restored:\n%s", attempt, got)
		}
	}
	if got := readFile(t, filepath.Join(ws.Dir, "train.sh")); !strings.Contains(got, "SCORE=20") {
		t.Errorf("the candidate's change is gone: %q", got)
	}
}

func TestPrepareRoundAgainUndoesTheFailedAttempt(t *testing.T) {
	ctx := context.Background()
	ws, res := newWorkspace(t)
	state := t.TempDir()
	experiences := readFile(t, ws.ExperiencesPath())
	if err := PrepareRound(ctx, ws, 1, res.StartCommit, state, nil); err != nil {
		t.Fatal(err)
	}
	researcher(t, ws.Dir, "first attempt")
	if _, err := FinishResearch(ctx, ws, 1, state, nil); err != nil {
		t.Fatal(err)
	}
	// The round restarts after an interruption, and its Researcher runs again.
	researcher(t, ws.Dir, "stray edit")
	if err := PrepareRound(ctx, ws, 1, res.StartCommit, state, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, ws.ExperiencesPath()); got != experiences {
		t.Errorf("experiences.md after the restart:\n%s\nwant it as the first attempt found it:\n%s", got, experiences)
	}
	if got := readFile(t, filepath.Join(ws.Dir, "train.sh")); strings.Contains(got, "SCORE=20") {
		t.Errorf("the worktree is not back on base: train.sh = %q", got)
	}
	researcher(t, ws.Dir, "second attempt")
	strategy, err := FinishResearch(ctx, ws, 1, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strategy != "second attempt" {
		t.Errorf("strategy = %q, want the second attempt's", strategy)
	}
}

func TestPrepareRoundAtAnotherBaseTakesANewBackup(t *testing.T) {
	ctx := context.Background()
	ws, res := newWorkspace(t)
	state := t.TempDir()
	if err := PrepareRound(ctx, ws, 1, res.StartCommit, state, nil); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, ws.Dir, map[string]string{"train.sh": "#!/bin/sh\nSCORE=30\n"})
	base := keep(t, ws, 1, res.StartCommit, "another start")
	appendFile(t, ws.ResultsPath(), "1234567\t30\t0.0\tkeep\tsupervisor's row\n")
	// Published, as every write of the supervisor's is.
	if err := publish(ws, state); err != nil {
		t.Fatal(err)
	}
	results := readFile(t, ws.ResultsPath())

	if err := PrepareRound(ctx, ws, 1, base, state, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := FinishResearch(ctx, ws, 1, state, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, ws.ResultsPath()); got != results {
		t.Errorf("results.tsv = %q, want the ledger as it was at the new base, %q", got, results)
	}
}

func TestFinishResearchNeedsAPreparedRound(t *testing.T) {
	ws, _ := newWorkspace(t)
	_, err := FinishResearch(context.Background(), ws, 1, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "the round was not prepared") {
		t.Errorf("error = %v, want one saying the round was not prepared", err)
	}
	if _, err := os.Stat(ws.ExperiencesPath()); err != nil {
		t.Errorf("the ledger is gone: %v", err)
	}
}

func TestFinishResearchRestoresAForgedBackupFromTheCallersCopy(t *testing.T) {
	ctx := context.Background()
	ws, res := newWorkspace(t)
	state := t.TempDir()
	experiences, results := readFile(t, ws.ExperiencesPath()), readFile(t, ws.ResultsPath())
	if err := PrepareRound(ctx, ws, 1, res.StartCommit, state, nil); err != nil {
		t.Fatal(err)
	}
	saved, err := ReadBackup(state, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The Researcher forges the ledger and the backup alike, so that the
	// two agree, and plants a Strategy for the check to take.
	researcher(t, ws.Dir, "double SCORE")
	dir := backupDir(state, 1)
	for _, name := range []string{"experiences.md", "results.tsv"} {
		writeFiles(t, dir, map[string]string{name: readFile(t, filepath.Join(ws.Dir, name))})
	}
	writeFiles(t, dir, map[string]string{strategyFile: "a planted strategy"})

	strategy, err := FinishResearch(ctx, ws, 1, state, saved)
	if err != nil {
		t.Fatal(err)
	}
	if strategy != "double SCORE" {
		t.Errorf("strategy = %q, want the one in the Researcher's row", strategy)
	}
	if got := readFile(t, ws.ExperiencesPath()); got != experiences {
		t.Errorf("experiences.md restored from the forged backup:\n%s", got)
	}
	if got := readFile(t, ws.ResultsPath()); got != results {
		t.Errorf("results.tsv restored from the forged backup:\n%s", got)
	}
	got, err := tampering(state, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := "the Researcher changed the supervisor's ledger backup (restored): experiences.md, results.tsv, strategy"; !strings.Contains(got, want) {
		t.Errorf("tampering = %q, want it to say %q", got, want)
	}
}
