package supervisor

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// Steps that run in a fresh checkout of the code they measure or check.
const (
	RunTrain  = "train"
	RunEval   = "eval"
	RunParity = "parity"
)

// RunDir is where step (RunTrain, RunEval or RunParity) of round checks out its code,
// in stateDir: runs/r<round>/<step>, or runs/r0-s<sample>/<step> for a
// baseline run.
func RunDir(stateDir string, round, sample int32, step string) string {
	name := fmt.Sprintf("r%d", round)
	if sample > 0 {
		name = fmt.Sprintf("r%d-s%d", round, sample)
	}
	return filepath.Join(stateDir, "runs", name, step)
}

// CandidateStep is the name of step in RunDir for candidate (a, b, …) of a
// round of several; step itself for a round of one.
func CandidateStep(step, candidate string) string {
	if candidate == "" {
		return step
	}
	return step + "-" + candidate
}

// PrepareRun makes the fresh checkout that a training or evaluation step
// runs in: the files of commit, and nothing else, in root. For an
// evaluation, trained is the training checkout, and the training outputs
// are copied from its experiment directory: they are all that passes from
// training to evaluation. It returns the experiment directory in root.
func PrepareRun(ctx context.Context, ws *workspace.Workspace, commit, root, trained string, outputs []string) (string, error) {
	if err := ws.Checkout(ctx, commit, root); err != nil {
		return "", err
	}
	dir := filepath.Join(root, filepath.FromSlash(ws.Subdir))
	if trained == "" {
		return dir, nil
	}
	return dir, workspace.CopyOutputs(trained, ws.Subdir, dir, outputs)
}

// removeRuns deletes every checkout of earlier rounds.
func removeRuns(stateDir string) error {
	return workspace.RemoveAll(filepath.Join(stateDir, "runs"))
}
