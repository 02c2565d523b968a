package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// installTools copies this binary into dir, where a pod that runs a user's
// image finds the step wrapper: an init container of the operator's image
// does it on the way, before its own step.
func installTools(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(self)
	if err != nil {
		return err
	}
	defer src.Close()
	out, err := os.OpenFile(filepath.Join(dir, "autoresearch"), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, src); err != nil {
		return errors.Join(err, out.Close())
	}
	return out.Close()
}
