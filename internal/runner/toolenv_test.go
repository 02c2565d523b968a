package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMeasuredToolEnvCarriesTheUserSettings: training and evaluation read
// no Go environment file, yet keep what the user's held at the start,
// except where a variable already says otherwise.
func TestMeasuredToolEnvCarriesTheUserSettings(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	file := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(file, []byte("GOPRIVATE=example.com/private\nGOPROXY=https://proxy.example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOENV", file)
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOPRIVATE", "")
	if err := os.Unsetenv("GOPRIVATE"); err != nil {
		t.Fatal(err)
	}

	env := measuredToolEnv(context.Background())

	for _, want := range []string{"GOENV=off", "PYTHONNOUSERSITE=1", "GOPRIVATE=example.com/private"} {
		if !slices.Contains(env, want) {
			t.Errorf("env %q lacks %s", env, want)
		}
	}
	if slices.Contains(env, "GOPROXY=https://proxy.example") {
		t.Errorf("env %q overrides the GOPROXY the user set", env)
	}
}

func TestCheckoutToolEnvPinsTheGoWorkspace(t *testing.T) {
	// A go.work above the checkout, where the Researcher can write, is
	// never the one a step uses.
	top := t.TempDir()
	root := filepath.Join(top, "runs", "r1", "train")
	dir := filepath.Join(root, "exp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, "go.work"), []byte("go 1.26\nuse ./evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := checkoutToolEnv(dir, root); !slices.Equal(got, []string{"GOWORK=off"}) {
		t.Errorf("without a go.work of its own: %q, want GOWORK=off", got)
	}
	if err := os.WriteFile(filepath.Join(root, "go.work"), []byte("go 1.26\nuse ./exp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := checkoutToolEnv(dir, root); !slices.Equal(got, []string{"GOWORK=" + filepath.Join(root, "go.work")}) {
		t.Errorf("with the repository's go.work: %q, want it", got)
	}
}

// TestMeasuredToolEnvRunsNoToolchainASettingNames plants what a Researcher
// that writes the user's Go environment file could: a toolchain to switch
// to, and where to download it. The runner's go, run before any step and
// outside them, must not download it, and neither may the steps'; the
// file's other settings are still carried.
func TestMeasuredToolEnvRunsNoToolchainASettingNames(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	file := filepath.Join(t.TempDir(), "env")
	planted := "GOTOOLCHAIN=go1.99.0\nGOPROXY=file:///nonexistent\nGOSUMDB=off\nGOPRIVATE=example.com/private\n"
	if err := os.WriteFile(file, []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOENV", file)
	for _, k := range []string{"GOTOOLCHAIN", "GOPROXY", "GOSUMDB", "GOPRIVATE"} {
		t.Setenv(k, "")
		if err := os.Unsetenv(k); err != nil {
			t.Fatal(err)
		}
	}

	env := measuredToolEnv(context.Background())

	if !slices.Contains(env, "GOPRIVATE=example.com/private") {
		t.Errorf("env %q lacks the file's GOPRIVATE: the runner's go could not read it", env)
	}
	var toolchains []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == "GOTOOLCHAIN" {
			toolchains = append(toolchains, kv)
		}
	}
	if !slices.Equal(toolchains, []string{localToolchain}) {
		t.Errorf("env %q: GOTOOLCHAIN %q, want only %s", env, toolchains, localToolchain)
	}
}

// TestVersionPinsAreWhatTheManagersChoseAtTheStart: the managers run in
// the experiment directory, found on the steps' PATH (pyenv also beside
// its shims), and what they print becomes the pin; a pin the user set
// stays the user's, and a manager that fails pins nothing.
func TestVersionPinsAreWhatTheManagersChoseAtTheStart(t *testing.T) {
	t.Setenv("PYENV_VERSION", "")
	t.Setenv("RUSTUP_TOOLCHAIN", "")
	for _, k := range []string{"PYENV_VERSION", "RUSTUP_TOOLCHAIN"} {
		if err := os.Unsetenv(k); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	exp := filepath.Join(root, "exp")
	shims := filepath.Join(root, "pyenv", "shims")
	bin := filepath.Join(root, "bin")
	for _, d := range []string{exp, shims, filepath.Join(root, "pyenv", "libexec"), bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Each prints what the experiment directory's file says, where the
	// runner must run it; the PATH has nothing else.
	write := func(p, script string) {
		t.Helper()
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "pyenv", "libexec", "pyenv"), `[ "$1" = version-name ] && exec /bin/cat .python-version`+"\n")
	write(filepath.Join(bin, "rustup"), `[ "$1 $2" = "show active-toolchain" ] && [ "$RUSTUP_AUTO_INSTALL" = 0 ] && t=$(/bin/cat rust-toolchain) && echo "$t (overridden by '$PWD/rust-toolchain')"`+"\n")
	for f, v := range map[string]string{".python-version": "3.12.1\n", "rust-toolchain": "1.90.0"} {
		if err := os.WriteFile(filepath.Join(exp, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := []string{shims, bin}
	t.Setenv("RUSTUP_HOME", root)

	if got, want := versionPins(context.Background(), path, exp), []string{"PYENV_VERSION=3.12.1", "RUSTUP_TOOLCHAIN=1.90.0"}; !slices.Equal(got, want) {
		t.Errorf("pins %q, want %q", got, want)
	}
	t.Setenv("PYENV_VERSION", "3.9.18")
	if got, want := versionPins(context.Background(), path, exp), []string{"RUSTUP_TOOLCHAIN=1.90.0"}; !slices.Equal(got, want) {
		t.Errorf("with the user's PYENV_VERSION: pins %q, want %q", got, want)
	}
	if err := os.Remove(filepath.Join(exp, "rust-toolchain")); err != nil {
		t.Fatal(err)
	}
	if got := versionPins(context.Background(), path, exp); len(got) != 0 {
		t.Errorf("with rustup failing: pins %q, want none", got)
	}
	if got := versionPins(context.Background(), []string{filepath.Join(root, "none")}, exp); len(got) != 0 {
		t.Errorf("without managers: pins %q, want none", got)
	}
}

// TestPlantedToolchainsAboveTheCheckouts: a toolchain file that appears,
// changes or goes above the state directory after the start is named;
// those that stay as they were are not.
func TestPlantedToolchainsAboveTheCheckouts(t *testing.T) {
	top := t.TempDir()
	state := filepath.Join(top, "worktree", ".autoresearch")
	for _, d := range []string{state, filepath.Join(top, ".cargo")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	kept := filepath.Join(top, ".tool-versions")
	if err := os.WriteFile(kept, []byte("python 3.11.7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := toolchainFilesAbove(state)
	if got := plantedToolchains(state, start); got != "" {
		t.Fatalf("nothing changed, yet: %s", got)
	}
	cargo := filepath.Join(top, ".cargo", "config.toml")
	planted := filepath.Join(top, "worktree", ".python-version")
	for _, p := range []string{cargo, planted} {
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := plantedToolchains(state, start)
	for _, p := range []string{cargo, planted} {
		if !strings.Contains(got, p) {
			t.Errorf("%q does not name %s", got, p)
		}
	}
	if strings.Contains(got, kept) {
		t.Errorf("%q names %s, which did not change", got, kept)
	}
	if err := os.Remove(kept); err != nil {
		t.Fatal(err)
	}
	if got := plantedToolchains(state, start); !strings.Contains(got, kept) {
		t.Errorf("%q does not name the removed %s", got, kept)
	}
}
