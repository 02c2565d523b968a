package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

func TestMain(m *testing.M) {
	// The supervisor must not depend on anyone's git configuration.
	gittest.Isolate()
	os.Exit(m.Run())
}

// toyFiles is an experiment in the directory exp of its repository.
var toyFiles = map[string]string{
	"exp/train.sh":  "#!/bin/sh\nSCORE=10\n",
	"exp/eval.sh":   "#!/bin/sh\necho score: 10\n",
	"exp/notes.txt": "notes\n",
	"README.md":     "a toy\n",
}

var (
	newRepo    = gittest.NewRepo
	writeFiles = gittest.WriteFiles
	git        = gittest.Git
	readFile   = gittest.ReadFile
)

// newWorkspace creates the worktree of the experiment "toy" in exp/.
func newWorkspace(t *testing.T) (*workspace.Workspace, steps.WorkspaceResult) {
	t.Helper()
	repo := newRepo(t, toyFiles)
	ws, res, _, err := CreateWorkspace(context.Background(), WorkspaceOptions{
		Repo: repo, Subdir: "exp", Worktree: filepath.Join(filepath.Dir(repo), "worktree"), Name: "toy",
		Metric: "score", MaxRounds: 3, Fixed: []string{"eval.sh"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ws, res
}

// appendFile adds text to the end of the file at p.
func appendFile(t *testing.T, p, text string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// keep seals the worktree as round's candidate on base and commits it, as
// a kept round does, and returns the commit.
func keep(t *testing.T, ws *workspace.Workspace, round int32, base, message string) string {
	t.Helper()
	ctx := context.Background()
	cand, err := ws.Seal(ctx, round, base)
	if err != nil {
		t.Fatal(err)
	}
	commit, err := ws.CommitCandidate(ctx, base, cand, message)
	if err != nil {
		t.Fatal(err)
	}
	return commit
}
