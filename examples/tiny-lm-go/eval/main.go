// Command eval is the fixed evaluation: it loads ckpt/model.bin and prints
// the model's bits per byte on data/val.txt as `val_bpb: <value>`.
//
// -text scores another text instead, such as a holdout set, and -metric
// names the value another way.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"

	"tinylm/lm"
)

const (
	checkpointPath = "ckpt/model.bin"
	defaultValPath = "data/val.txt"
)

// valPath is the text to score; -text sets it.
var valPath = defaultValPath

func main() {
	flag.StringVar(&valPath, "text", defaultValPath, "the text to score")
	metric := flag.String("metric", "val_bpb", "the name to print the value under")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "eval: unexpected arguments %q\n", flag.Args())
		os.Exit(1)
	}
	bpb, err := evaluate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %.6f\n", *metric, bpb)
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
		if valPath == defaultValPath {
			return 0, fmt.Errorf("read validation text (run `go run ./prepare` first): %w", err)
		}
		return 0, fmt.Errorf("read the text to score: %w", err)
	}
	return model.BitsPerByte(text)
}
