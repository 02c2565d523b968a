package round

import (
	"fmt"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// Headline is the seed's progress line for a finished round, "Round
// 3/10: val_bpb=0.99 — improved (committed abc1234)", or the baseline's
// "Baseline: val_bpb=1.02 (unmodified code)".
func Headline(metric string, maxRounds int32, rec v1alpha1.RoundRecord) string {
	result := "no " + metric
	if rec.Value != "" {
		result = metric + "=" + rec.Value
	}
	if rec.Round == 0 {
		return fmt.Sprintf("Baseline: %s (%s)", result, rec.Insight)
	}
	git := "rolled back"
	if rec.Commit != "" {
		git = "committed " + text.ShortCommit(rec.Commit)
	}
	return fmt.Sprintf("Round %s/%d: %s — %s (%s)", CandidateLabel(rec.Round, rec.Candidate), maxRounds, result, rec.Verdict, git)
}
