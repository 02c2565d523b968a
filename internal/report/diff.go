package report

import (
	"context"
	"fmt"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// KeptDiffs returns each kept round's change to the variable files, by
// round: the git diff, run in the experiment directory dir, from the commit
// kept before the round to the round's own. Rolled-back rounds leave no
// commit, so that diff is the round's change alone. A kept round whose
// predecessor the status history no longer holds gets no diff.
func KeptDiffs(ctx context.Context, dir string, files []v1alpha1.RelativePath, st v1alpha1.AutoResearchStatus) (map[int32]string, error) {
	diffs := map[int32]string{}
	if len(files) == 0 {
		return diffs, nil
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = string(f)
	}
	prev, next := "", int32(0)
	if st.Workspace != nil {
		prev = st.Workspace.StartCommit
	}
	for _, h := range st.History {
		if h.Round != next {
			// Rounds the history dropped may have kept a commit.
			prev = ""
		}
		next = h.Round + 1
		if h.Commit == "" {
			continue
		}
		if h.Verdict == v1alpha1.VerdictImproved && prev != "" {
			out, err := workspace.Git(ctx, dir, nil, append([]string{"diff", "--no-color", prev, h.Commit, "--"}, paths...)...)
			if err != nil {
				return nil, fmt.Errorf("diff of round %d: %w", h.Round, err)
			}
			diffs[h.Round] = out
		}
		prev = h.Commit
	}
	return diffs, nil
}
