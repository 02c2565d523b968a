package tamper

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
)

// TestHomeAttacks runs the attacks in attacks-home/, each a Researcher
// that writes the user's home, where what it writes outlives the run: the
// user's shells, git and Go, and the next run, read it. The Researcher's
// HOME is its own and the user's is read-only to it, so nothing of the
// user's home changes; where the user gives it the user's home
// (Options.ResearcherHome), the same attack writes it.
func TestHomeAttacks(t *testing.T) {
	for _, a := range attacks(t, "attacks-home") {
		name, script := a.name, a.script
		for _, given := range []bool{false, true} {
			sub := name
			if given {
				sub += "/the-users-home-given"
			}
			t.Run(sub, func(t *testing.T) {
				if !runner.ReadOnlyMounts() {
					t.Skip("steps get no read-only mounts here")
				}
				home := userHome(t)
				opts := runner.Options{}
				if given {
					opts.ResearcherHome = home
				}
				// The Researcher also keeps state in its HOME, as agents do.
				// Its command names the attack, which a Researcher sees,
				// read-only, where it lies in /tmp: a clone of this
				// repository there.
				researcher := filepath.Join(t.TempDir(), "researcher.sh")
				if err := os.WriteFile(researcher, []byte("sh \"$1\"\necho state > \"$HOME/agent-state\"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				files := maps.Clone(PyToy)
				files["experiment.yaml"] = pyToyExperiment("home", "{runs: 1}", "python3", researcher+" "+script)
				x, _, log := runRepoWith(t, filepath.Join(t.TempDir(), "repo"), files, opts)
				own := filepath.Join(x.StateDir(), "researcher-home")
				if given {
					own = home
				}
				if _, err := os.Stat(filepath.Join(own, "agent-state")); err != nil {
					t.Errorf("the Researcher kept no state in its home %s: %v\n%s", own, err, log)
				}
				written := filesIn(t, home)
				if given && len(written) < 2 {
					t.Errorf("with the user's home given, the attack wrote nothing there: it no longer attacks\n%s", log)
				}
				if !given && len(written) > 0 {
					t.Errorf("the Researcher wrote %q in the user's home\n%s", written, log)
				}
			})
		}
	}
}

// TestUserCredentialsAreHidden runs the attacks in attacks-credentials/,
// each a Researcher that reads the user's keys and tokens, and has its
// training read them: the machine is read-only to every step, and the
// credentials in the user's home are out of sight as well. The round
// improves honestly (20, not the 99 of training that read them), and the
// experiment branch, which the supervisor pushes, holds none of them.
func TestUserCredentialsAreHidden(t *testing.T) {
	for _, a := range attacks(t, "attacks-credentials") {
		script := a.script
		t.Run(a.name, func(t *testing.T) {
			if !runner.ReadOnlyMounts() {
				t.Skip("steps get no read-only mounts here")
			}
			home := userHome(t)
			secrets := map[string]string{".ssh/id_ed25519": "SECRET-SSH-KEY", ".netrc": "machine example.com password SECRET-NETRC"}
			for rel, secret := range secrets {
				p := filepath.Join(home, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			files := maps.Clone(PyToy)
			files["experiment.yaml"] = pyToyExperiment("credentials", `{value: "10"}`, "python3", script)
			repo := filepath.Join(t.TempDir(), "repo")
			_, st, log := runRepoWith(t, repo, files, runner.Options{})
			if st.Best == nil || st.Best.Value != "20" {
				t.Errorf("best %+v, want the honest 20: training read the credentials, or the round did not improve\n%s", st.Best, log)
			}
			kept := gittest.Git(t, repo, "show", "refs/heads/autoresearch/credentials:train.sh")
			for _, secret := range secrets {
				if strings.Contains(kept, secret) {
					t.Errorf("the experiment branch holds %q:\n%s", secret, kept)
				}
			}
		})
	}
}

// userHome is an empty home for the test's user, $HOME and $USER_HOME, in
// the real user's cache directory: outside the temporary directories,
// which every Researcher writes.
func userHome(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("no user cache directory: %v", err)
	}
	if cache, err = filepath.EvalSymlinks(cache); err != nil {
		t.Skipf("no user cache directory: %v", err)
	}
	for _, tmp := range []string{"/tmp", "/var/tmp"} {
		if strings.HasPrefix(cache+"/", tmp+"/") {
			t.Skipf("the user cache directory %s lies in %s, which every Researcher writes", cache, tmp)
		}
	}
	dir, err := os.MkdirTemp(cache, "autoresearch-test-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	t.Setenv("HOME", dir)
	t.Setenv("USER_HOME", dir)
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "GOENV"} {
		t.Setenv(k, "")
		if err := os.Unsetenv(k); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// filesIn lists the files under the home dir, but Go's telemetry counters,
// which the runner's own go writes there.
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == filepath.Join(dir, ".config", "go", "telemetry") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestMoveAttacks runs the attacks in attacks-move/, each a Researcher
// that moves aside a directory holding what it may not write — the
// repository, the worktree, the supervisor's state — where that directory
// lies in one it writes, as an experiment in /tmp does. Every directory
// between one it writes and a mount of its is a mount point it cannot
// move: nothing is moved, and the best stays the baseline's.
func TestMoveAttacks(t *testing.T) {
	for _, a := range attacks(t, "attacks-move") {
		script := a.script
		t.Run(a.name, func(t *testing.T) {
			if !runner.ReadOnlyMounts() {
				t.Skip("steps get no read-only mounts here")
			}
			top := t.TempDir()
			files := maps.Clone(PyToy)
			files["experiment.yaml"] = pyToyExperiment("move", "{runs: 1}", "python3", script)
			st, log := runRepo(t, filepath.Join(top, "repo"), files)
			if _, err := os.Stat(top + ".aside"); err == nil {
				t.Errorf("the Researcher moved %s aside\n%s", top, log)
			}
			if st.Best == nil || st.Best.Value != "10" {
				t.Errorf("best %+v, want the baseline's 10\n%s", st.Best, log)
			}
		})
	}
}
