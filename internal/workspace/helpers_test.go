package workspace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
)

func TestMain(m *testing.M) {
	// The package must work without any git config on the machine; tests
	// see none, so that they cannot pass only because of a developer's.
	gittest.Isolate()
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

var (
	gitT       = gittest.Git
	newRepo    = gittest.NewRepo
	writeFiles = gittest.WriteFiles
	readFile   = gittest.ReadFile
)

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

// sealAndCheck seals the worktree as round 1's candidate on base and checks
// its compliance, as the supervisor does.
func sealAndCheck(ctx context.Context, t *testing.T, w *Workspace, base string, fixed, variable []string) (ComplianceReport, error) {
	t.Helper()
	cand, err := w.Seal(ctx, 1, base)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return w.CheckCompliance(ctx, base, cand, fixed, variable)
}
