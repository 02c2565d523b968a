// Package torchtest finds the Python interpreter with PyTorch that tests of
// Python code run.
package torchtest

import (
	"os"
	"os/exec"
	"testing"
)

// Python returns an interpreter that imports torch: /usr/bin/python3 (CI
// installs Debian's python3-torch), or the python3 on PATH. Without one
// the test skips locally but fails in CI, where torch is part of the setup.
func Python(t testing.TB) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, python := range candidates {
		if exec.Command(python, "-c", "import torch").Run() == nil {
			return python
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no python3 with torch among %v: install python3-torch (apt-get install python3-torch)", candidates)
	}
	t.Skipf("no python3 with torch among %v; install python3-torch to run this test", candidates)
	return ""
}
