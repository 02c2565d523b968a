package gittest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ScanForSecrets reports every file under root whose path or content holds
// one of secrets, and returns how many files it read.
func ScanForSecrets(t *testing.T, root string, secrets []string) int {
	t.Helper()
	var scanned int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if strings.Contains(path, s) {
				t.Errorf("the path %s names the holdout (%q)", path, s)
			}
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned++
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds %q", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return scanned
}
