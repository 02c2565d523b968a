package readout

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// Serve reads the request's items from the volume mounted at root and
// writes them, framed, to out. An item that cannot be read is written as
// its error; only a request that is malformed, or output that cannot be
// written, is an error of Serve's. Files are opened through an os.Root, so
// that a symbolic link on the volume cannot lead the reader out of it.
func Serve(ctx context.Context, root string, req Request, out io.Writer) error {
	if err := req.Validate(); err != nil {
		return err
	}
	vol, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer vol.Close()
	w, err := NewWriter(out)
	if err != nil {
		return err
	}
	for _, it := range req.Items {
		data, err := read(ctx, vol, root, it)
		if err != nil {
			err = w.Fail(it.Name, err, errors.Is(err, fs.ErrNotExist))
		} else {
			err = w.Add(it.Name, data)
		}
		if err != nil {
			return err
		}
	}
	return w.Close()
}

func read(ctx context.Context, vol *os.Root, root string, it Item) ([]byte, error) {
	switch {
	case it.File != "":
		// Training writes its log on the volume: a named pipe in its
		// place would hold the reader until its deadline, a huge file
		// fill its memory.
		return workspace.ReadRegularFileIn(vol, filepath.FromSlash(it.File), maxItemBytes)
	case it.List != "":
		f, err := vol.Open(filepath.FromSlash(it.List))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		names, err := f.Readdirnames(-1)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		for _, n := range names {
			b.WriteString(n + "\n")
		}
		return []byte(b.String()), nil
	case it.Diff != nil:
		d := it.Diff
		repo := &workspace.Repository{GitDir: filepath.Join(root, filepath.FromSlash(d.GitDir))}
		out, err := repo.Diff(ctx, d.Subdir, d.Files, d.From, d.To)
		return []byte(out), err
	case it.Bundle != nil:
		return bundle(ctx, root, it.Bundle)
	}
	return nil, errors.New("the item reads nothing")
}

// bundle writes the bundle to a temporary file, since git writes bundles
// through a lock file beside them, and returns its bytes.
func bundle(ctx context.Context, root string, b *Bundle) ([]byte, error) {
	repo := &workspace.Repository{GitDir: filepath.Join(root, filepath.FromSlash(b.GitDir))}
	dir, err := os.MkdirTemp("", "autoresearch-bundle-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	file := filepath.Join(dir, "experiment.bundle")
	if _, err := repo.Bundle(ctx, b.Experiment, file, b.Candidates); err != nil {
		return nil, err
	}
	return os.ReadFile(file)
}
