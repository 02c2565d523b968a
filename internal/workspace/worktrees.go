package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// worktree is one entry of `git worktree list --porcelain`.
type worktree struct {
	path     string
	head     string
	branch   string // full ref; "" when detached
	prunable bool   // its directory is gone
}

// describeHead says in words what the worktree has checked out.
func (t worktree) describeHead() string {
	if t.branch != "" {
		return "branch " + strings.TrimPrefix(t.branch, "refs/heads/")
	}
	return "a detached HEAD at " + text.ShortCommit(t.head)
}

func listWorktrees(ctx context.Context, repo string) ([]worktree, error) {
	// Without -z, which needs git 2.36: a worktree path with a newline in it
	// is not worth giving up older git for.
	out, err := git(ctx, repo, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, fmt.Errorf("listing worktrees of %s: %w", repo, err)
	}
	var trees []worktree
	for _, line := range strings.Split(out, "\n") {
		key, value, _ := strings.Cut(line, " ")
		if key == "worktree" {
			trees = append(trees, worktree{path: value})
			continue
		}
		if len(trees) == 0 {
			continue
		}
		t := &trees[len(trees)-1]
		switch key {
		case "HEAD":
			t.head = value
		case "branch":
			t.branch = value
		case "prunable":
			t.prunable = true
		}
	}
	for i := range trees {
		// Older git does not say "prunable"; a missing directory means the same.
		if _, err := os.Stat(trees[i].path); errors.Is(err, fs.ErrNotExist) {
			trees[i].prunable = true
		}
	}
	return trees, nil
}
