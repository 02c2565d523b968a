package version

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnstampedIsDevel(t *testing.T) {
	if got := String(); got != Devel {
		t.Errorf("String() = %q in an unstamped test binary, want %q", got, Devel)
	}
}

// TestStamp links a program with the -X flag the Makefile and
// hack/image.sh pass, so that a renamed variable or package fails here
// rather than in a release that says "devel".
func TestStamp(t *testing.T) {
	if testing.Short() {
		t.Skip("links a program")
	}
	dir := t.TempDir()
	const want = "v1.2.3-4-gabcdef0-dirty"
	bin := filepath.Join(dir, "stamped")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X github.com/autoresearch-dev/autoresearch-operator/internal/version.version="+want, "./testdata/stamped")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, out)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("stamped program says %q, want %q", got, want)
	}
}
