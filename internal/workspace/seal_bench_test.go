package workspace

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkSealAndCheckout is what sealing costs a round: the seal of the
// candidate, and the fresh checkouts that training and evaluation run in.
// It runs on the two examples and on a generated repository of 10,000
// files.
func BenchmarkSealAndCheckout(b *testing.B) {
	for _, name := range []string{"tiny-lm-go", "nanogpt-torch"} {
		b.Run(name, func(b *testing.B) {
			files := exampleFiles(b, filepath.Join("..", "..", "examples", name))
			benchmarkSeal(b, files, variableOf(name))
		})
	}
	b.Run("10000-files", func(b *testing.B) {
		files := map[string]string{"train.py": "lr = 0.1\n"}
		for i := range 10000 {
			files[fmt.Sprintf("pkg%03d/mod%02d.py", i/100, i%100)] = strings.Repeat(fmt.Sprintf("x%d = %d\n", i, i), 40)
		}
		benchmarkSeal(b, files, "train.py")
	})
}

func variableOf(example string) string {
	if example == "tiny-lm-go" {
		return "train/main.go"
	}
	return "train.py"
}

func benchmarkSeal(b *testing.B, files map[string]string, variable string) {
	ctx := context.Background()
	src := newRepo(b, files)
	w, _, err := Create(ctx, src, ".", filepath.Join(b.TempDir(), "wt"), "bench")
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Init(ctx, Ledger{}, "val_bpb", nil); err != nil {
		b.Fatal(err)
	}
	base, err := w.Head(ctx)
	if err != nil {
		b.Fatal(err)
	}
	runs := b.TempDir()
	b.ResetTimer()
	for i := range b.N {
		writeFiles(b, w.Dir, map[string]string{variable: files[variable] + fmt.Sprintf("\n// round %d\n", i)})
		cand, err := w.Seal(ctx, 1, base)
		if err != nil {
			b.Fatal(err)
		}
		for _, step := range []string{"train", "eval"} {
			if err := w.Checkout(ctx, cand, filepath.Join(runs, step)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// exampleFiles reads the source files of an example directory, without
// what running it leaves behind.
func exampleFiles(b *testing.B, dir string) map[string]string {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "data" || name == "ckpt" || name == "__pycache__" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return files
}
