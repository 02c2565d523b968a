package report

import (
	"context"
	"fmt"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// KeptRange is a kept round's commit and the one kept before it.
type KeptRange struct {
	Round    int32
	From, To string
}

// KeptRanges are the kept rounds of the status history with the commit
// kept before each. Rolled-back rounds leave no commit, so that range is
// the round's change alone. A kept round whose predecessor the history no
// longer holds has none.
func KeptRanges(st v1alpha1.AutoResearchStatus) []KeptRange {
	var ranges []KeptRange
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
			ranges = append(ranges, KeptRange{Round: h.Round, From: prev, To: h.Commit})
		}
		prev = h.Commit
	}
	return ranges
}

// KeptDiffs returns each kept round's change to the variable files, by
// round: the diff of its KeptRange in repo, whose experiment directory is
// subdir.
func KeptDiffs(ctx context.Context, repo *workspace.Repository, subdir string, files []v1alpha1.RelativePath, st v1alpha1.AutoResearchStatus) (map[int32]string, error) {
	diffs := map[int32]string{}
	if len(files) == 0 {
		return diffs, nil
	}
	for _, r := range KeptRanges(st) {
		out, err := repo.Diff(ctx, subdir, v1alpha1.Strings(files), r.From, r.To)
		if err != nil {
			return nil, fmt.Errorf("diff of round %d: %w", r.Round, err)
		}
		diffs[r.Round] = out
	}
	return diffs, nil
}
