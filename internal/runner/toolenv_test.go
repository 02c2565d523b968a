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
