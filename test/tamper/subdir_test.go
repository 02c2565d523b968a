package tamper

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
)

// TestSubdirAttacks runs the attacks in attacks-subdir/ on the toy kept in
// a subdirectory (exp/) of its repository, where the supervisor's state
// lies in exp/.autoresearch of the worktree. With read-only mounts the
// best must stay the baseline's 10, which every candidate's code gives when
// run anew; without them, where the Researcher writes the state directory,
// one it moved stops the run.
func TestSubdirAttacks(t *testing.T) {
	for _, a := range attacks(t, "attacks-subdir") {
		name, script := a.name, a.script
		t.Run(name, func(t *testing.T) {
			if !runner.ReadOnlyMounts() {
				t.Skip("steps get no read-only mounts here: " + runner.MountsWarning())
			}
			repo, st, log, err := runSubdir(t, script)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, log)
			}
			roundVerdict(t, st.History, 1, v1alpha1.VerdictNotImproved, log)
			if st.Best == nil || st.Best.Value != "10" {
				t.Errorf("best %+v; want the baseline's 10\n%s", st.Best, log)
				t.Logf("kept branch:\n%s", gittest.Git(t, repo, "diff", st.Workspace.StartCommit, "refs/heads/autoresearch/toy", "--", ".", ":!exp/experiences.md", ":!exp/results.tsv"))
			}
		})
		t.Run(name+" without mounts", func(t *testing.T) {
			defer runner.WithoutMounts()()
			_, _, log, err := runSubdir(t, script)
			if err == nil || !strings.Contains(err.Error(), "state directory") {
				t.Errorf("run: %v, want it stopped for the moved state directory\n%s", err, log)
			}
		})
	}
}

// runSubdir runs the toy from exp/ of its repository with script as the
// Researcher, for one round.
func runSubdir(t *testing.T, script string) (string, v1alpha1.AutoResearchStatus, string, error) {
	t.Helper()
	files := map[string]string{}
	for k, v := range Toy {
		files["exp/"+k] = v
	}
	files["exp/experiment.yaml"] = toyExperiment(script, 1, "train.sh", "")
	// The repository and the worktree beside it lie outside the temporary
	// directories, as a user's projects do: every directory between a
	// temporary directory, which the Researcher writes, and a mount is
	// pinned anyway.
	repo := filepath.Join(outsideTheTemporaryDirectories(t), "repo")
	gittest.WriteFiles(t, repo, files)
	gittest.Git(t, repo, "init", "-q", "-b", "main")
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "-m", "start")
	x, err := runner.LoadExperiment(context.Background(), filepath.Join(repo, "exp", "experiment.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	st, err := runner.Run(context.Background(), x, runner.Options{Out: &log})
	return repo, st, log.String(), err
}

// outsideTheTemporaryDirectories is a new directory in the user's cache
// directory, removed when the test ends.
func outsideTheTemporaryDirectories(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(cache, "autoresearch-tamper-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}
