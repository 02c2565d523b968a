// Command eval is the fixed evaluation: it loads ckpt/model.bin and prints
// the model's bits per byte on data/val.txt as `val_bpb: <value>`.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"tinylm/lm"
)

const (
	checkpointPath = "ckpt/model.bin"
	valPath        = "data/val.txt"
)

func main() {
	bpb, err := evaluate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(1)
	}
	fmt.Printf("val_bpb: %.6f\n", bpb)
}

func evaluate() (float64, error) {
	model, err := lm.Load(checkpointPath)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("no checkpoint at %s: run `go run ./train` first", checkpointPath)
	}
	if err != nil {
		return 0, err
	}
	text, err := os.ReadFile(valPath)
	if err != nil {
		return 0, fmt.Errorf("read validation text (run `go run ./prepare` first): %w", err)
	}
	return model.BitsPerByte(text)
}
