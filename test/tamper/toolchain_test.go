package tamper

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
)

// TestToolchainAttacks runs the attacks in attacks-toolchain/, which change
// no file of the experiment but the interpreter that the fixed evaluation
// runs: a virtual environment of the user's, first on the PATH, whose
// site-packages its user may write. Where steps get read-only mounts, the
// machine is read-only to training, and the interpreter to the
// Researcher: the attack plants nothing and the best stays the baseline's.
// Without mounts the same attack gets its 99, which is why the runner
// warns there.
func TestToolchainAttacks(t *testing.T) {
	runAttacks(t, "attacks-toolchain", "99", false)
}

// TestPathAttacks runs the attacks in attacks-path/, which change where
// the evaluation's python3 is found on the PATH: a directory on it that
// does not exist, a link on it. The steps' PATH is fixed, resolved, when
// the run starts, so that none gets its 99, with mounts or without; without
// them, the attack does change the PATH's directories.
func TestPathAttacks(t *testing.T) {
	runAttacks(t, "attacks-path", "10", true)
}

// runAttacks runs each attack script in dir as the Researcher of one round,
// with read-only mounts where this machine has them, where the best must
// stay the baseline's 10, and without, where it must be withoutMounts and,
// where changesThePath, the attack must have changed a directory of the
// PATH.
func runAttacks(t *testing.T, dir, withoutMounts string, changesThePath bool) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	for _, a := range attacks(t, dir) {
		name, script := a.name, a.script
		t.Run(name, func(t *testing.T) {
			if !runner.ReadOnlyMounts() {
				t.Skip("steps get no read-only mounts here")
			}
			runToolchainAttack(t, python, script, "10")
		})
		t.Run(name+"/without-mounts", func(t *testing.T) {
			defer runner.WithoutMounts()()
			changed := runToolchainAttack(t, python, script, withoutMounts)
			if changesThePath && !changed {
				t.Error("without mounts the attack changed no directory of the PATH: it no longer attacks")
			}
		})
	}
}

// runToolchainAttack runs the attack script as the Researcher of one round
// against PyToy, evaluated by `python3` from a fresh virtual environment,
// and checks that the best value is want. The environment lies in a
// directory of tools, as in a home, which also holds two entries of the
// PATH before it: $ABSENT, which does not exist, and $LINK, a link to the
// environment's bin directory, through which the PATH reaches it.
// $EVAL_PYTHON is the interpreter. It returns whether, after the run,
// $ABSENT holds a python3 or $LINK points elsewhere.
func runToolchainAttack(t *testing.T, python, script, want string) bool {
	keepCorePattern(t)
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	venv := filepath.Join(tools, "venv")
	if out, err := exec.Command(python, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("python3 -m venv: %v\n%s", err, out)
	}
	absent, link := filepath.Join(tools, "absent", "bin"), filepath.Join(tools, "link")
	if err := os.Symlink(filepath.Join(venv, "bin"), link); err != nil {
		t.Fatal(err)
	}
	path := strings.Join([]string{absent, link, os.Getenv("PATH")}, string(os.PathListSeparator))
	t.Setenv("PATH", path)
	t.Setenv("ABSENT", absent)
	t.Setenv("LINK", link)
	t.Setenv("EVAL_PYTHON", filepath.Join(venv, "bin", "python3"))
	repo := filepath.Join(dir, "repo")
	files := map[string]string{"experiment.yaml": pyToyExperiment("toolchain", "{runs: 1}", "python3", script)}
	for k, v := range PyToy {
		files[k] = v
	}
	st, log := runRepo(t, repo, files)
	if st.Phase != v1alpha1.PhaseSucceeded || st.Best == nil || st.Best.Value != want {
		t.Errorf("phase %s, best %+v; want the best %s\n%s", st.Phase, st.Best, want, log)
	}
	planted, err := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages", "zz-tuned.pth"))
	if err != nil {
		t.Fatal(err)
	}
	if len(planted) > 0 && want != "99" {
		t.Errorf("planted %v; want a .pth file in the interpreter only where the attack got its 99", planted)
	}
	_, err = os.Lstat(filepath.Join(absent, "python3"))
	target, _ := os.Readlink(link)
	return err == nil || target != filepath.Join(venv, "bin")
}

// keepCorePattern puts the kernel's core pattern back after the test, if
// an attack that got around the mounts changed it and left it changed.
func keepCorePattern(t *testing.T) {
	const file = "/proc/sys/kernel/core_pattern"
	orig, err := os.ReadFile(file)
	if err != nil {
		return
	}
	t.Cleanup(func() {
		if now, err := os.ReadFile(file); err == nil && string(now) != string(orig) {
			t.Errorf("the kernel's core pattern was changed to %q", now)
			_ = os.WriteFile(file, orig, 0o644)
		}
	})
}
