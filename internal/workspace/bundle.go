package workspace

import (
	"context"
	"errors"
	"path"
	"strings"
)

// Repository reads an experiment's branch and candidate refs from the
// repository's own git directory, never through a worktree: a worktree's
// .git file is the Researcher's to rewrite while its step runs, and git
// would follow it to a repository of the Researcher's making, with the
// branch and the configuration (a diff.external command, say) it chose.
// The git directory is the repository's common one, which no step writes.
type Repository struct {
	// GitDir is the absolute path of the repository's git directory.
	GitDir string
}

// RepositoryOf is the repository whose top level or git directory is at
// dir: the common git directory that dir's own .git names.
func RepositoryOf(ctx context.Context, dir string) (*Repository, error) {
	out, err := Git(ctx, dir, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return nil, err
	}
	return &Repository{GitDir: out}, nil
}

// git runs git on the repository alone, with no work tree.
func (r *Repository) git(ctx context.Context, args ...string) (string, error) {
	return Git(ctx, r.GitDir, []string{"GIT_DIR=" + r.GitDir}, args...)
}

// HasBranch reports whether experiment's branch exists.
func (r *Repository) HasBranch(ctx context.Context, experiment string) (bool, error) {
	_, err := r.git(ctx, "show-ref", "--verify", "--quiet", "refs/heads/"+BranchPrefix+experiment)
	var exitErr interface{ ExitCode() int }
	if errors.As(err, &exitErr) && exitErr.ExitCode() == 1 {
		return false, nil
	}
	return err == nil, err
}

// Bundle writes experiment's branch, and with candidates every round's
// sealed candidate of the experiment, to the git bundle file, and returns
// the refs it holds. git writes the bundle through a lock file and renames
// it, so that a failed export leaves no half-written bundle behind.
func (r *Repository) Bundle(ctx context.Context, experiment, file string, candidates bool) ([]string, error) {
	refs := []string{"refs/heads/" + BranchPrefix + experiment}
	if candidates {
		list, err := r.git(ctx, "for-each-ref", "--format=%(refname)", CandidateRefPrefix+experiment+"/")
		if err != nil {
			return nil, err
		}
		refs = append(refs, strings.Fields(list)...)
	}
	if _, err := r.git(ctx, append([]string{"bundle", "create", "--quiet", file}, refs...)...); err != nil {
		return nil, err
	}
	return refs, nil
}

// Diff is the git diff from one commit to another of the files given,
// relative to subdir, the experiment directory; of every file when none is
// given. No diff driver, external command or text conversion runs: the
// repository's attributes and configuration say nothing about how it
// looks.
func (r *Repository) Diff(ctx context.Context, subdir string, files []string, from, to string) (string, error) {
	sub, err := cleanSubdir(subdir)
	if err != nil {
		return "", err
	}
	args := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--end-of-options", from, to, "--"}
	for _, f := range files {
		args = append(args, path.Join(sub, f))
	}
	return r.git(ctx, args...)
}
