package round

import (
	"fmt"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// Budgets: a round starts only when what is used plus what a round has used
// on average stays within every budget spec.budget sets.

// budgetUse is one budget: what is used of it, what the next round is
// expected to add, and its cap.
type budgetUse struct {
	name                 string
	used, perRound, capv float64
	unit                 string
}

// budgetUses lists the budgets spec.budget sets, in a fixed order.
func budgetUses(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus) []budgetUse {
	b := spec.Budget
	if b == nil {
		return nil
	}
	// The baseline trains and evaluates too; only rounds run a Researcher.
	gpuRounds := float64(st.CompletedRounds + 1)
	researchRounds := float64(max(st.CompletedRounds, 1))
	gpuHours := float64(st.Usage.GPUSeconds) / 3600
	var uses []budgetUse
	if b.GPUHours != "" {
		uses = append(uses, budgetUse{"gpuHours", gpuHours, gpuHours / gpuRounds, decimalOrZero(string(b.GPUHours)), "GPU-hours"})
	}
	if b.ResearcherTokens > 0 {
		tokens := float64(st.Usage.InputTokens + st.Usage.OutputTokens)
		uses = append(uses, budgetUse{"researcherTokens", tokens, tokens / researchRounds, float64(b.ResearcherTokens), "tokens"})
	}
	if b.Cost != "" {
		price := decimalOrZero(string(b.GPUHourPrice))
		researcher := decimalOrZero(st.Usage.Cost)
		uses = append(uses, budgetUse{"cost", researcher + gpuHours*price,
			researcher/researchRounds + gpuHours*price/gpuRounds, decimalOrZero(string(b.Cost)), "US dollars"})
	}
	return uses
}

// budgetLines says what is used of each budget, for the status.
func budgetLines(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus) []string {
	var lines []string
	for _, u := range budgetUses(spec, st) {
		lines = append(lines, fmt.Sprintf("%s: %s of %s %s used", u.name, roundedTo(u.used, 4), roundedTo(u.capv, 6), u.unit))
	}
	if b := spec.Budget; b != nil && b.Deadline != nil {
		lines = append(lines, "deadline: "+b.Deadline.UTC().Format(time.RFC3339))
	}
	return lines
}

// budgetExhausted says which budget the next round would go past, "" when
// none would.
func budgetExhausted(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus, now time.Time) string {
	for _, u := range budgetUses(spec, st) {
		// A total that is no number, as a state written before reports
		// were checked may hold, stops the loop too.
		if !(u.used < u.capv) || u.used+u.perRound > u.capv {
			return fmt.Sprintf("budget %s exhausted: %s of %s %s used, and a round uses %s on average",
				u.name, roundedTo(u.used, 4), roundedTo(u.capv, 6), u.unit, roundedTo(u.perRound, 4))
		}
	}
	b := spec.Budget
	if b == nil || b.Deadline == nil {
		return ""
	}
	round := meanRoundTime(st.History)
	if !now.Add(round).Before(b.Deadline.Time) {
		return fmt.Sprintf("budget deadline reached: a round takes %s on average, and the deadline %s is %s away",
			round.Round(time.Second), b.Deadline.UTC().Format(time.RFC3339), max(0, b.Deadline.Sub(now)).Round(time.Second))
	}
	return ""
}

// meanRoundTime is the mean time between the verdicts the history holds;
// zero with fewer than two.
func meanRoundTime(h []v1alpha1.RoundRecord) time.Duration {
	var first, last time.Time
	n := 0
	for _, r := range h {
		if r.CompletionTime == nil {
			continue
		}
		if n == 0 {
			first = r.CompletionTime.Time
		}
		last = r.CompletionTime.Time
		n++
	}
	if n < 2 {
		return 0
	}
	return last.Sub(first) / time.Duration(n-1)
}
