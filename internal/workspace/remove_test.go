package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveAllOpensUpWhatItsOwnerMayNotOpen removes a tree that training
// left with a directory of mode 000, which os.RemoveAll cannot open unless
// the process is root.
func TestRemoveAllOpensUpWhatItsOwnerMayNotOpen(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root opens a directory of mode 000 anyway")
	}
	top := filepath.Join(t.TempDir(), "run")
	locked := filepath.Join(top, "junk", "inner")
	if err := os.MkdirAll(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(locked, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	if os.RemoveAll(top) == nil {
		t.Fatal("os.RemoveAll removed the locked tree: the test shows nothing here")
	}
	if err := RemoveAll(top); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(top); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", top, err)
	}
}
