package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/internal/supervisor"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// researcherMounts keep the user's repository and the supervisor's state
// directory read-only for the Researcher of round n, and the git directory,
// as its pod has it on a cluster: git is the supervisor's, and a Researcher
// reads history but writes no object, ref, hook or configuration. It writes
// its worktree, the round's directory, where it writes its result file and
// transcripts, and its Go environment file. The ledger backup in the
// round's directory is read-only again. What it changes of the worktree's
// own git file is restored and fails compliance (supervisor.FinishResearch).
func (l *Local) researcherMounts(ctx context.Context, n int32) ([]Mount, error) {
	common, err := l.gitCommonDir(ctx)
	if err != nil {
		return nil, err
	}
	goEnv, err := l.researcherGoEnvFile()
	if err != nil {
		return nil, err
	}
	return l.hiding([]Mount{
		{Path: l.x.Repo, ReadOnly: true},
		{Path: common, ReadOnly: true},
		{Path: l.ws.Root},
		{Path: l.ws.StateDir(), ReadOnly: true},
		{Path: l.roundDir(n)},
		{Path: supervisor.BackupDir(l.ws.StateDir(), n), ReadOnly: true},
		{Path: goEnv},
	})
}

// researcherGoEnvFile is the Researchers' Go environment file, created
// empty when missing: a file is mounted only where it exists.
func (l *Local) researcherGoEnvFile() (string, error) {
	goEnv := researcherGoEnv(l.ws.StateDir())
	f, err := os.OpenFile(goEnv, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", err
	}
	return goEnv, f.Close()
}

// stepMounts keep everything of the experiment read-only for training and
// evaluation — the user's repository, its git directory, the worktree with
// the supervisor's state, the ledger and the logs — but run, the step's own
// checkout; and hide the holdout (hiding).
func (l *Local) stepMounts(ctx context.Context, run string) ([]Mount, error) {
	mounts, err := l.experimentMounts(ctx, run)
	if err != nil {
		return nil, err
	}
	return l.hiding(mounts)
}

// experimentMounts are stepMounts without the holdout hidden, with run
// last.
func (l *Local) experimentMounts(ctx context.Context, run string) ([]Mount, error) {
	common, err := l.gitCommonDir(ctx)
	if err != nil {
		return nil, err
	}
	return []Mount{
		{Path: l.x.Repo, ReadOnly: true},
		{Path: common, ReadOnly: true},
		{Path: l.ws.Root, ReadOnly: true},
		{Path: run},
	}, nil
}

// hiding adds to mounts, when the experiment has a hidden holdout, which
// no step but the holdout's may read or write, an empty file bound over
// the experiment file, which names it, and an empty directory bound over
// spec.holdout.dir, which holds its command, data, state and logs.
func (l *Local) hiding(mounts []Mount) ([]Mount, error) {
	if l.spec.Holdout == nil {
		return mounts, nil
	}
	empty := filepath.Join(l.ws.StateDir(), "hidden")
	if err := os.WriteFile(empty, nil, 0o444); err != nil && !errors.Is(err, os.ErrPermission) {
		return nil, err
	}
	emptyDir := filepath.Join(l.ws.StateDir(), "hidden-dir")
	if err := os.MkdirAll(emptyDir, 0o555); err != nil {
		return nil, err
	}
	return append(mounts, Mount{Path: l.x.File, Hide: empty}, Mount{Path: l.spec.Holdout.Dir, Hide: emptyDir}), nil
}

// gitCommonDir is the repository's git directory, which need not be in the
// repository's working tree.
func (l *Local) gitCommonDir(ctx context.Context) (string, error) {
	out, err := workspace.Git(ctx, l.ws.Root, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
	return strings.TrimSpace(out), err
}
