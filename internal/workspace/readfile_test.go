package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadRegularFile: what a Researcher puts where the supervisor reads
// its files — a named pipe nobody writes, a link to an endless device, a
// link to a file, a directory, a file over the limit — is an error, at
// once, and a regular file is read.
func TestReadRegularFile(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("| 1 | x |\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	linked := filepath.Join(dir, "linked")
	for link, target := range map[string]string{zero: "/dev/zero", linked: regular} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		path  string
		limit int64
		want  string
	}{
		"a named pipe":       {pipe, MaxLedgerBytes, "not a regular file but a named pipe"},
		"a link to a device": {zero, MaxLedgerBytes, "too many levels of symbolic links"},
		"a link to a file":   {linked, MaxLedgerBytes, "too many levels of symbolic links"},
		"a device":           {"/dev/zero", MaxLedgerBytes, "not a regular file but a device"},
		"a directory":        {dir, MaxLedgerBytes, "not a regular file but a directory"},
		"a file too large":   {regular, 4, "holds more than 4 bytes"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := ReadRegularFile(tc.path, tc.limit)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("got %v, want an error saying %q", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the read still waits after 10 s")
			}
		})
	}
	if data, err := ReadRegularFile(regular, MaxLedgerBytes); err != nil || string(data) != "| 1 | x |\n" {
		t.Errorf("a regular file read %q, %v", data, err)
	}
	if _, err := ReadRegularFile(filepath.Join(dir, "missing"), MaxLedgerBytes); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}
