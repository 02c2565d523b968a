package supervisor

import (
	"context"
	"fmt"

	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// WorkspaceOptions say where an experiment's worktree goes and how its
// ledger starts.
type WorkspaceOptions struct {
	// Repo is the repository holding the experiment, and Subdir the
	// experiment directory relative to its top level.
	Repo   string
	Subdir string
	// Worktree is where the worktree goes.
	Worktree string
	// Name is the experiment's; its branch is autoresearch/<name>.
	Name      string
	Metric    string
	MaxRounds int32
	// Fixed are the fixed files, relative to the experiment directory, whose
	// hashes the evaluation verifies.
	Fixed []string
}

// CreateWorkspace creates the experiment's worktree, or reuses the one an
// earlier call made, writes the start of the ledger and hashes the fixed
// files. The warnings are for the user whether or not it fails.
func CreateWorkspace(ctx context.Context, o WorkspaceOptions) (*workspace.Workspace, steps.WorkspaceResult, []string, error) {
	ws, warnings, err := workspace.Create(ctx, o.Repo, o.Subdir, o.Worktree, o.Name)
	if err != nil {
		return nil, steps.WorkspaceResult{}, nil, err
	}
	ledger := workspace.Ledger{Metric: o.Metric, MaxRounds: int(o.MaxRounds), Status: "not_started"}
	if err := ws.Init(ctx, ledger, o.Metric, nil); err != nil {
		return nil, steps.WorkspaceResult{}, warnings, err
	}
	hashes, err := ws.HashFiles(o.Fixed)
	if err != nil {
		return nil, steps.WorkspaceResult{}, warnings, fmt.Errorf("fixed files: %w", err)
	}
	head, err := ws.Head(ctx)
	if err != nil {
		return nil, steps.WorkspaceResult{}, warnings, err
	}
	return ws, steps.WorkspaceResult{Branch: ws.Branch, StartCommit: head, FixedHashes: hashes}, warnings, nil
}
