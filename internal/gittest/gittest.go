// Package gittest makes the real git repositories that tests work on.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Isolate hides the machine's git configuration from the process, so that
// tests cannot pass only because of a developer's settings. Call it from
// TestMain.
func Isolate() {
	if err := os.Setenv("GIT_CONFIG_GLOBAL", os.DevNull); err != nil {
		panic(err)
	}
	if err := os.Setenv("GIT_CONFIG_NOSYSTEM", "1"); err != nil {
		panic(err)
	}
}

// Git runs git in dir and returns its trimmed output.
func Git(t testing.TB, dir string, args ...string) string {
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

// WriteFiles writes files below dir; a file that starts with #! is
// executable.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// NewRepo commits files into a fresh repository on the branch main and
// returns its path. The repository's own config names a test user, so that
// tests can commit in it too.
func NewRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	WriteFiles(t, repo, files)
	Git(t, repo, "init", "-q", "-b", "main")
	Git(t, repo, "config", "user.name", "test")
	Git(t, repo, "config", "user.email", "test@localhost")
	Git(t, repo, "add", "-A")
	Git(t, repo, "commit", "-q", "-m", "baseline")
	return repo
}

// ReadFile returns the file's content.
func ReadFile(t testing.TB, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
