// Command train trains the character model on data/train.txt and saves it to
// ckpt/model.bin.
//
// This is the experiment's variable file: the hyperparameters below and the
// training loop may change from round to round; the model (lm), the data
// (prepare) and the evaluation (eval) may not.
package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"tinylm/lm"
)

// Hyperparameters.
const (
	// contextLen is how many preceding characters the model sees.
	contextLen = 3
	// embedDim is the width of each character's embedding.
	embedDim = 8
	// hiddenSize is the number of tanh units.
	hiddenSize = 64
	// learningRate is the SGD step size.
	learningRate = 0.05
	// steps is the number of SGD updates.
	steps = 1500
	// batchSize is the number of predictions averaged per update.
	batchSize = 32
	// autoresearch:fixed-begin: the seed is part of the protocol.
	// seed fixes initialisation and batch sampling, so that runs repeat exactly.
	seed = 1
	// autoresearch:fixed-end
)

const (
	trainPath      = "data/train.txt"
	checkpointPath = "ckpt/model.bin"
	logEvery       = 100
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}

func run() error {
	deadline, err := deadline(time.Now())
	if err != nil {
		return err
	}
	text, err := os.ReadFile(trainPath)
	if err != nil {
		return fmt.Errorf("read training text (run `go run ./prepare` first): %w", err)
	}
	ids, err := lm.Encode(text)
	if err != nil {
		return fmt.Errorf("%s: %w", trainPath, err)
	}
	model, err := lm.New(lm.Config{Context: contextLen, Embed: embedDim, Hidden: hiddenSize}, seed)
	if err != nil {
		return err
	}
	grad := model.ZeroLike()
	rng := rand.New(rand.NewPCG(seed, 1))
	positions := make([]int, batchSize)

	start := time.Now()
	var windowLoss float64
	done := 0
	for step := 1; step <= steps; step++ {
		if !deadline.IsZero() && time.Now().After(deadline) {
			fmt.Printf("time budget reached after %d steps; stopping early\n", done)
			break
		}
		for i := range positions {
			positions[i] = rng.IntN(len(ids))
		}
		loss := model.Gradient(ids, positions, grad)
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return fmt.Errorf("loss is %v at step %d", loss, step)
		}
		lr := learningRate
		for i, p := range model.Params() {
			g := grad.Params()[i]
			for j := range p {
				p[j] -= lr * g[j]
			}
		}
		done = step
		windowLoss += loss
		if step%logEvery == 0 {
			fmt.Printf("step %d loss=%.4f\n", step, windowLoss/logEvery)
			windowLoss = 0
		}
	}
	if err := model.Save(checkpointPath); err != nil {
		return err
	}
	fmt.Printf("trained %d steps in %s; saved %s\n", done, time.Since(start).Round(time.Millisecond), checkpointPath)
	return nil
}

// autoresearch:fixed-begin: training keeps to the protocol's time limit.

// deadline is when training stops so that the checkpoint is saved within
// AUTORESEARCH_TIME_LIMIT. A fifth of the limit is kept back for compiling,
// preparing data and saving. The zero time means no limit.
func deadline(now time.Time) (time.Time, error) {
	v := os.Getenv("AUTORESEARCH_TIME_LIMIT")
	if v == "" {
		return time.Time{}, nil
	}
	limit, err := time.ParseDuration(v)
	if err != nil || limit <= 0 {
		return time.Time{}, fmt.Errorf("AUTORESEARCH_TIME_LIMIT=%q is not a positive Go duration", v)
	}
	return now.Add(limit * 4 / 5), nil
}

// autoresearch:fixed-end
