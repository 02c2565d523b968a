package supervisor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

func TestMain(m *testing.M) {
	// The supervisor must not depend on anyone's git configuration.
	os.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	os.Exit(m.Run())
}

// toyFiles is an experiment in the directory exp of its repository.
var toyFiles = map[string]string{
	"exp/train.sh":  "#!/bin/sh\nSCORE=10\n",
	"exp/eval.sh":   "#!/bin/sh\necho score: 10\n",
	"exp/notes.txt": "notes\n",
	"README.md":     "a toy\n",
}

// newRepo commits files into a fresh repository and returns its path.
func newRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	writeFiles(t, repo, files)
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", "-A")
	git(t, repo, "-c", "user.name=test", "-c", "user.email=test@localhost", "commit", "-q", "-m", "baseline")
	return repo
}

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

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
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
