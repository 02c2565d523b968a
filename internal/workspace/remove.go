package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// RemoveAll removes path and everything below it, as os.RemoveAll does,
// also where a step left directories their owner may not read or write
// (mode 000), which os.RemoveAll cannot open: then it gives the owner
// every permission on the directories below path, and tries again. A
// checkout or a worktree that training or a Researcher left so must not
// stop every round after it.
func RemoveAll(path string) error {
	err := os.RemoveAll(path)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	openUp(path)
	return os.RemoveAll(path)
}

// openUp gives the owner read, write and search permission on dir and on
// every directory below it that it reaches, ignoring what it cannot change.
func openUp(dir string) {
	info, err := os.Lstat(dir)
	if err != nil || !info.IsDir() {
		return
	}
	_ = os.Chmod(dir, info.Mode().Perm()|0o700)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			openUp(filepath.Join(dir, e.Name()))
		}
	}
}
