package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
)

// copyExample commits a copy of an example directory into a fresh
// repository, leaving out what its preparation and training produce.
func copyExample(t *testing.T, name string) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..", "..", "examples", name)
	files := map[string]string{}
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			switch d.Name() {
			case "data", "ckpt", "__pycache__":
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(p)
		text := string(data)
		if rel == "experiment.yaml" {
			// A busy machine must not turn the plan's verdicts into timeouts:
			// the examples train a fixed number of steps well within this.
			text = strings.Replace(text, "timeLimit: 60s", "timeLimit: 10m", 1)
		}
		files[filepath.ToSlash(rel)] = text
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return newRepo(t, files)
}

func TestTinyLMGoExample(t *testing.T) {
	if testing.Short() {
		t.Skip("trains six rounds")
	}
	repo := copyExample(t, "tiny-lm-go")
	x := load(t, repo)

	st, out := run(t, x, Options{})

	if st.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s: %s\n%s", st.Phase, st.Message, out)
	}
	want := []string{"0:baseline", "1:improved", "2:not_improved", "3:train_failed", "4:compliance_failed", "5:improved", "6:improved"}
	if diff := cmp.Diff(want, verdicts(ledger(t, x))); diff != "" {
		t.Errorf("ledger verdicts (-want +got):\n%s\n%s", diff, out)
	}
	base, _ := metric.ParseDecimal(st.Baseline.Value)
	best, _ := metric.ParseDecimal(st.Best.Value)
	if best >= base || st.Best.Round != 6 {
		t.Errorf("best val_bpb %s (round %d) does not beat the baseline %s", st.Best.Value, st.Best.Round, st.Baseline.Value)
	}
	if got := git(t, x.Worktree, "diff", st.Workspace.StartCommit, "--", "eval", "lm", "prepare"); got != "" {
		t.Errorf("fixed files changed on the experiment branch:\n%s", got)
	}
}

func TestNanoGPTTorchExample(t *testing.T) {
	if testing.Short() {
		t.Skip("trains PyTorch models")
	}
	usePythonWithTorch(t)
	repo := copyExample(t, "nanogpt-torch")
	x := load(t, repo)

	st, out := run(t, x, Options{})

	if st.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s: %s\n%s", st.Phase, st.Message, out)
	}
	want := []string{"0:baseline", "1:improved", "2:not_improved", "3:parity_failed"}
	if diff := cmp.Diff(want, verdicts(ledger(t, x))); diff != "" {
		t.Errorf("ledger verdicts (-want +got):\n%s\n%s", diff, out)
	}
	if last := st.History[len(st.History)-1]; !strings.Contains(last.Insight, "PARITY_FAIL target=rmsnorm kind=numerical") {
		t.Errorf("round 3 insight %q lacks the PARITY_FAIL line", last.Insight)
	}
}

// usePythonWithTorch puts a python3 that imports torch first on PATH: the
// example's commands and the parity check call python3. CI installs
// Debian's python3-torch for /usr/bin/python3; elsewhere the test skips.
func usePythonWithTorch(t *testing.T) {
	t.Helper()
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(py)
		if err != nil || exec.Command(path, "-c", "import torch").Run() != nil {
			continue
		}
		bin := t.TempDir()
		if err := os.Symlink(path, filepath.Join(bin, "python3")); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no python3 with torch: install Debian's python3-torch (make test does)")
	}
	t.Skip("no python3 with torch; install python3-torch to run this test")
}
