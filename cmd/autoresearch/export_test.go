package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// TestExportWritesABundleThatClones runs the toy experiment, exports it and
// clones the bundle: the clone holds the branch's head, with the ledger,
// and, with --candidates, every round's candidate.
func TestExportWritesABundleThatClones(t *testing.T) {
	repo := toyRepo(t, "")
	file := filepath.Join(repo, "experiment.yaml")
	wt := filepath.Join(filepath.Dir(repo), "wt")
	bundle := filepath.Join(t.TempDir(), "toy.bundle")

	if out, err := execute(t, "export", "-f", file, "--worktree", wt, "-o", bundle); err == nil || !strings.Contains(err.Error(), "autoresearch run") {
		t.Errorf("export before the run: %v, want it to say to run first\n%s", err, out)
	}
	if out, err := execute(t, "run", "-f", file, "--worktree", wt); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	out, err := execute(t, "export", "-f", file, "--worktree", wt, "-o", bundle)
	if err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	if want := "git clone -b autoresearch/toy " + bundle; !strings.Contains(out, want) {
		t.Errorf("export output lacks %q:\n%s", want, out)
	}

	head := testGit(t, wt, "rev-parse", "refs/heads/autoresearch/toy")
	clone := filepath.Join(t.TempDir(), "clone")
	testGit(t, filepath.Dir(clone), "clone", "-q", "-b", "autoresearch/toy", bundle, clone)
	if got := testGit(t, clone, "rev-parse", "HEAD"); got != head {
		t.Errorf("the clone's head is %s, want the branch's %s", got, head)
	}
	for _, f := range []string{workspace.ResultsFile, workspace.ExperiencesFile} {
		if _, err := os.Stat(filepath.Join(clone, f)); err != nil {
			t.Errorf("the clone lacks the ledger file %s: %v", f, err)
		}
	}
	if !strings.Contains(gittest.ReadFile(t, filepath.Join(clone, "train.sh")), "SCORE=20") {
		t.Error("the clone lacks the kept change of round 1")
	}
	if refs := testGit(t, "", "bundle", "list-heads", bundle); strings.Contains(refs, workspace.CandidateRefPrefix) {
		t.Errorf("the bundle holds candidates without --candidates:\n%s", refs)
	}

	out, err = execute(t, "export", "-f", file, "--worktree", wt, "-o", bundle, "--candidates")
	if err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("export over an existing file: %v, want it refused\n%s", err, out)
	}
	if out, err = execute(t, "export", "-f", file, "--worktree", wt, "-o", bundle, "--candidates", "--force"); err != nil {
		t.Fatalf("export --candidates --force: %v\n%s", err, out)
	}
	testGit(t, clone, "fetch", "-q", bundle, workspace.CandidateRefPrefix+"*:"+workspace.CandidateRefPrefix+"*")
	if got := testGit(t, clone, "rev-parse", workspace.CandidateRefPrefix+"toy/r1"); got != testGit(t, wt, "rev-parse", workspace.CandidateRefPrefix+"toy/r1") {
		t.Errorf("candidate r1 in the clone is %s, not the worktree's", got)
	}
}

// TestResultsWhileAResearcherRuns runs status, report and export on the
// experiment as a running Researcher can leave its worktree: the .git file
// pointing at a git directory of the Researcher's, with a forged branch and
// a diff command of its choosing, and a forged row in experiences.md. None
// of them follows the .git file, runs the command, or shows the forgery.
func TestResultsWhileAResearcherRuns(t *testing.T) {
	repo := toyRepo(t, "")
	file := filepath.Join(repo, "experiment.yaml")
	wt := filepath.Join(filepath.Dir(repo), "wt")
	if out, err := execute(t, "run", "-f", file, "--worktree", wt); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	head := testGit(t, repo, "rev-parse", "refs/heads/autoresearch/toy")

	planted := gittest.RedirectWorktree(t, wt, "autoresearch/toy", "train.sh", "#!/bin/sh\nSCORE=99\necho $SCORE > out.txt\n")
	const forged = "| 7 | ✅ | score=99 | improved | forged: SCORE=99 | huge win |  |"
	f, err := os.OpenFile(filepath.Join(wt, workspace.ExperiencesFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(forged + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	out, err := execute(t, "status", "-f", file, "--worktree", wt)
	if err != nil || strings.Contains(out, "forged") || !strings.Contains(out, "double SCORE") {
		t.Errorf("status: %v; want the supervisor's ledger, without the forged row:\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "report")
	if out, err := execute(t, "report", "-f", file, "--worktree", wt, "-o", dir); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	md := gittest.ReadFile(t, filepath.Join(dir, "report.md"))
	if strings.Contains(md, "forged") || strings.Contains(md, "SCORE=99") || !strings.Contains(md, "+SCORE=20") {
		t.Errorf("report.md shows the forgery, or lacks round 1's change:\n%s", md)
	}
	bundle := filepath.Join(t.TempDir(), "toy.bundle")
	if out, err := execute(t, "export", "-f", file, "--worktree", wt, "-o", bundle); err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	if heads := testGit(t, "", "bundle", "list-heads", bundle); !strings.Contains(heads, head) || strings.Contains(heads, planted.Forged) {
		t.Errorf("the bundle holds %s, want the branch at %s (the forged commit is %s)", heads, head, planted.Forged)
	}
	if _, err := os.Stat(planted.Ran); err == nil {
		t.Error("a command planted in the worktree's git directory ran")
	}
}
