package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The steps' tool environment. Go and Python read settings from files in
// the user's home that a Researcher can write (go env -w, pip install
// --user), and the fixed evaluation would then run under them. The
// Researcher gets a Go environment file of the experiment's own; training
// and evaluation read none, and get the settings the user's file held when
// the run started, as variables.

// researcherToolEnv points the Researcher's go env -w at a file in the
// supervisor's state directory instead of the user's.
func researcherToolEnv(stateDir string) []string {
	return []string{"GOENV=" + researcherGoEnv(stateDir)}
}

// researcherGoEnv is the Researcher's Go environment file.
func researcherGoEnv(stateDir string) string { return filepath.Join(stateDir, "researcher-go.env") }

// measuredToolEnv is the tool environment of training and evaluation. It
// runs Go as installed (GOTOOLCHAIN=local): a toolchain that a setting
// names is never downloaded and run, neither by the runner nor by a step.
func measuredToolEnv(ctx context.Context) []string {
	env := []string{"GOENV=off", "PYTHONNOUSERSITE=1", "PYTHONSTARTUP=", localToolchain}
	cmd := exec.CommandContext(ctx, "go", "env", "GOENV")
	cmd.Env = append(os.Environ(), localToolchain)
	out, err := cmd.Output()
	if err != nil {
		// No Go toolchain: no Go settings to carry over.
		return env
	}
	data, err := os.ReadFile(strings.TrimSpace(string(out)))
	if err != nil {
		return env
	}
	for _, line := range strings.Split(string(data), "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || key == "" || strings.HasPrefix(key, "#") || key == "GOTOOLCHAIN" {
			continue
		}
		// As in go itself, a variable the user set wins over the file.
		if _, set := os.LookupEnv(key); !set {
			env = append(env, key+"="+value)
		}
	}
	return env
}

// localToolchain has go run the toolchain it is, whatever GOTOOLCHAIN the
// environment or a Go environment file names: with another, go downloads
// that toolchain, from the GOPROXY a setting names, and runs it.
const localToolchain = "GOTOOLCHAIN=local"

// checkoutToolEnv pins what tools would otherwise look for in the parents
// of a step's checkout, which lies inside the Researcher's worktree: Go's
// workspace file is the checkout's own, the first go.work between the
// experiment directory dir and the checkout's root, or none.
func checkoutToolEnv(dir, root string) []string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return []string{"GOWORK=" + filepath.Join(d, "go.work")}
		}
		if d == root || d == filepath.Dir(d) {
			return []string{"GOWORK=off"}
		}
	}
}
