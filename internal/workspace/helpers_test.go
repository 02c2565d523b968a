package workspace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	// The package must work without any git config on the machine; tests
	// see none, so that they cannot pass only because of a developer's.
	os.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	if _, err := exec.LookPath("git"); err != nil {
		fmt.Fprintln(os.Stderr, "the workspace tests need git on PATH")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// experimentFiles is a repository with an experiment in examples/x and a
// library outside it.
var experimentFiles = map[string]string{
	"README.md":                      "# repo\n",
	"lib/common.py":                  "SHARED = 1\n",
	"examples/x/experiment.yaml":     "name: x\n",
	"examples/x/prepare.py":          "def prepare(): pass\n",
	"examples/x/evaluate.py":         "def evaluate(): return 1.0\n",
	"examples/x/train.py":            "lr = 0.1\n",
	"examples/x/notes.md":            "notes\n",
	"examples/x/configs/default.cfg": "steps = 10\n",
}

var (
	fixedFiles    = []string{"prepare.py", "evaluate.py"}
	variableFiles = []string{"train.py"}
)

// gitT runs git in dir as the test's own user and returns its trimmed output.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a repository with files committed by a test user.
func newRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "init", "-q", "-b", "main")
	gitT(t, dir, "config", "user.name", "Test User")
	gitT(t, dir, "config", "user.email", "test@example.com")
	writeFiles(t, dir, files)
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// newExperiment creates and initializes the worktree of experiment x and
// returns it with the commit a round starts from.
func newExperiment(t *testing.T) (*Workspace, string) {
	t.Helper()
	ctx := context.Background()
	src := newRepo(t, experimentFiles)
	w, _, err := Create(ctx, src, "examples/x", filepath.Join(filepath.Dir(src), "autoresearch-x"), "x")
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	l := Ledger{MaxRounds: 10, Status: "running"}
	if err := w.Init(ctx, l, "val_bpb", []string{"data/", "*.ckpt"}); err != nil {
		t.Fatalf("Init: %v", err)
	}
	base, err := w.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return w, base
}

// inDir is the path of rel inside the experiment directory.
func inDir(w *Workspace, rel string) string { return filepath.Join(w.Dir, filepath.FromSlash(rel)) }
