package workspace

import (
	"context"
	"strings"
)

// Bundle writes the experiment branch, and with candidates every round's
// sealed candidate of this experiment, to the git bundle file, and returns
// the refs it holds. git writes the bundle through a lock file and renames
// it, so that a failed export leaves no half-written bundle behind.
func (w *Workspace) Bundle(ctx context.Context, file string, candidates bool) ([]string, error) {
	refs := []string{"refs/heads/" + w.Branch}
	if candidates {
		list, err := Git(ctx, w.Root, nil, "for-each-ref", "--format=%(refname)", w.CandidatesPrefix())
		if err != nil {
			return nil, err
		}
		refs = append(refs, strings.Fields(list)...)
	}
	if _, err := Git(ctx, w.Root, nil, append([]string{"bundle", "create", "--quiet", file}, refs...)...); err != nil {
		return nil, err
	}
	return refs, nil
}
