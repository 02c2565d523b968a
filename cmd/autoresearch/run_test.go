package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
)

// `autoresearch run` pushes to spec.output.git with the token of
// AUTORESEARCH_OUTPUT_TOKEN, which no step inherits.
func TestRunPushesWithTheTokenOfTheEnvironment(t *testing.T) {
	remote := gittest.NewHTTPRemote(t, "t0ken-from-env")
	repo := toyRepoWith(t, "env > $AUTORESEARCH_LOG_DIR/researcher.env && sed -i s/SCORE=10/SCORE=20/ train.sh", `  output:
    git: {url: "`+remote.URL+`"}
`)
	t.Setenv(envOutputToken, "t0ken-from-env")
	out, err := execute(t, "run", "-f", filepath.Join(repo, "experiment.yaml"), "--worktree", filepath.Join(filepath.Dir(repo), "wt"))
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if got, want := testGit(t, remote.Dir, "rev-parse", "autoresearch/toy"), testGit(t, filepath.Join(filepath.Dir(repo), "wt"), "rev-parse", "HEAD"); got != want {
		t.Errorf("the remote's branch is %s, want the ledger commit %s\n%s", got, want, out)
	}
	env, err := os.ReadFile(filepath.Join(filepath.Dir(repo), "wt", ".autoresearch", "round-1", "researcher.env"))
	if err != nil {
		t.Fatalf("the Researcher did not run: %v\n%s", err, out)
	}
	if strings.Contains(string(env), "t0ken-from-env") {
		t.Errorf("the Researcher's environment holds the push token:\n%s", env)
	}
}

// `autoresearch run --require-isolation` refuses, before it makes anything,
// a machine whose steps would run without read-only mounts, and runs where
// they get them.
func TestRunRequiresIsolation(t *testing.T) {
	if !runner.ReadOnlyMounts() {
		t.Skip("steps get no read-only mounts here")
	}
	t.Run("without mounts", func(t *testing.T) {
		defer runner.WithoutMounts()()
		repo := toyRepo(t, "")
		wt := filepath.Join(filepath.Dir(repo), "wt")
		_, err := execute(t, "run", "-f", filepath.Join(repo, "experiment.yaml"), "--worktree", wt, "--require-isolation")
		if err == nil || !strings.Contains(err.Error(), "isolation required, and this machine gives the steps no read-only mounts") {
			t.Fatalf("got %v, want the run refused for its missing mounts", err)
		}
		if _, err := os.Lstat(wt); err == nil {
			t.Error("the refused run made its worktree")
		}
	})
	t.Run("with mounts", func(t *testing.T) {
		repo := toyRepo(t, "")
		out, err := execute(t, "run", "-f", filepath.Join(repo, "experiment.yaml"), "--worktree", filepath.Join(filepath.Dir(repo), "wt"), "--require-isolation")
		if err != nil || !strings.Contains(out, "Best: score = 20") {
			t.Fatalf("run: %v\n%s", err, out)
		}
	})
}
