package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// HashFiles returns the SHA-256 of each file, named relative to the
// experiment directory, as lower-case hex. A file that cannot be read is an
// error that names it.
func (w *Workspace) HashFiles(files []string) (map[string]string, error) {
	sums := make(map[string]string, len(files))
	for _, f := range files {
		sum, err := hashFile(filepath.Join(w.Dir, filepath.FromSlash(f)))
		if err != nil {
			return nil, fmt.Errorf("hashing %s: %w", f, err)
		}
		sums[f] = sum
	}
	return sums, nil
}

// VerifyHashes returns, sorted, the files whose content no longer has the
// wanted hash or that are gone. Other read failures are errors.
func (w *Workspace) VerifyHashes(want map[string]string) ([]string, error) {
	var changed []string
	for f, sum := range want {
		got, err := hashFile(filepath.Join(w.Dir, filepath.FromSlash(f)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			changed = append(changed, f)
		case err != nil:
			return nil, fmt.Errorf("hashing %s: %w", f, err)
		case got != sum:
			changed = append(changed, f)
		}
	}
	sort.Strings(changed)
	return changed, nil
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
