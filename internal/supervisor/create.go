package supervisor

import (
	"context"
	"fmt"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
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
	// Fixed are the fixed patterns, relative to the experiment directory;
	// the evaluation verifies the hashes of the files they match.
	Fixed []string
}

// CreateWorkspace creates the experiment's worktree, or reuses the one an
// earlier call made, writes the start of the ledger, hashes the fixed
// files and finds the fixed regions. The warnings are for the user whether
// or not it fails.
func CreateWorkspace(ctx context.Context, o WorkspaceOptions) (*workspace.Workspace, steps.WorkspaceResult, []string, error) {
	ws, warnings, err := workspace.Create(ctx, o.Repo, o.Subdir, o.Worktree, o.Name)
	if err != nil {
		return nil, steps.WorkspaceResult{}, nil, err
	}
	ledger := workspace.Ledger{Metric: o.Metric, MaxRounds: int(o.MaxRounds), Status: "not_started"}
	if err := ws.Init(ctx, ledger, o.Metric, nil); err != nil {
		return nil, steps.WorkspaceResult{}, warnings, err
	}
	head, err := ws.Head(ctx)
	if err != nil {
		return nil, steps.WorkspaceResult{}, warnings, err
	}
	hashes, regions, err := FixedAtStart(ctx, ws, head, o.Fixed)
	if err != nil {
		return nil, steps.WorkspaceResult{}, warnings, err
	}
	return ws, steps.WorkspaceResult{Branch: ws.Branch, StartCommit: head, FixedHashes: hashes, FixedRegions: regions}, warnings, nil
}

// The status lists at most maxRegions fixed regions, each with at most
// maxRegionBegin bytes of its begin marker's line; compliance guards them all.
const (
	maxRegions     = 64
	maxRegionBegin = 120
)

// FixedAtStart hashes the files that the fixed patterns match in the start
// commit, as the worktree holds them, and lists the fixed regions of the
// other files for the status. Markers that do not pair up are an error of the protocol.
func FixedAtStart(ctx context.Context, ws *workspace.Workspace, start string, fixed []string) (map[string]string, []v1alpha1.FixedRegion, error) {
	files, err := ws.ExpandFixed(ctx, start, fixed)
	if err != nil {
		return nil, nil, fmt.Errorf("fixed files: %w", err)
	}
	hashes, err := ws.HashFiles(files)
	if err != nil {
		return nil, nil, fmt.Errorf("fixed files: %w", err)
	}
	found, err := ws.FixedRegions(ctx, start, fixed)
	if err != nil {
		return nil, nil, err
	}
	var regions []v1alpha1.FixedRegion
	for _, r := range found[:min(len(found), maxRegions)] {
		regions = append(regions, v1alpha1.FixedRegion{Path: r.Path, Lines: r.Lines(), Begin: text.Truncate(r.Begin, maxRegionBegin)})
	}
	return hashes, regions, nil
}
