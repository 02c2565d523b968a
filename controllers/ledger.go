package controllers

import (
	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/prompt"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// recentRounds is how many rounds the prompt shows, as in the seed.
const recentRounds = 5

// renderPrompt is the seed's Researcher prompt for a round. Its experience
// snippet comes from status.history, which holds more than the prompt shows,
// so the operator never needs to read the workspace volume.
func renderPrompt(ar *v1alpha1.AutoResearch, a round.Action) (string, error) {
	s, st := ar.Spec, ar.Status
	ledger := workspace.Ledger{
		Metric: s.Eval.Metric, Rounds: int(st.CompletedRounds), MaxRounds: int(s.MaxRounds), Status: "running",
	}
	if b := st.Best; b != nil {
		ledger.Best, ledger.BestRound = b.Value, int(b.Round)
	}
	for _, h := range st.History {
		ledger.Upsert(ledgerRow(s.Eval.Metric, h))
	}
	profile := ""
	if s.Profile != nil {
		profile = s.Profile.Command
	}
	return prompt.Render(prompt.Data{
		Metric:           s.Eval.Metric,
		Direction:        string(s.Eval.Direction),
		Round:            a.Round,
		MaxRounds:        max(s.MaxRounds, a.Round),
		ResearchQuestion: s.ResearchQuestion,
		FixedFiles:       s.Fixed.Files,
		VariableFiles:    s.Variable.Files,
		VariableRange:    s.Variable.Range,
		TimeLimit:        s.Fixed.TimeLimit.Duration.String(),
		EpochLimit:       s.Fixed.EpochLimit,
		ProfileCommand:   profile,
		RecentRounds:     recentRounds,
		Experiences:      ledger.Snippet(recentRounds),
		ExperiencesPath:  "experiences.md",
		Guidance:         a.Guidance,
	})
}

func ledgerRow(metric string, h v1alpha1.RoundRecord) workspace.LedgerRow {
	result := "—"
	if h.Value != "" {
		result = metric + "=" + h.Value
	}
	return workspace.LedgerRow{
		Round: int(h.Round), Compliance: h.Compliance, Result: result, Verdict: string(h.Verdict),
		Strategy: h.Strategy, Insight: h.Insight, Note: h.Note,
	}
}

// baselineLedger is the baseline's row 0, which the first round's prepare
// step writes: round 0 has no git step of its own to do it.
func baselineLedger(ar *v1alpha1.AutoResearch, n int32) *steps.LedgerUpdate {
	if n != 1 {
		return nil
	}
	for _, h := range ar.Status.History {
		if h.Round == 0 {
			u := steps.NewLedgerUpdate(&ar.Spec, &ar.Status, "running", &h, "")
			return &u
		}
	}
	return nil
}

// roundLedger is the row of the round whose git step is starting, with the
// header as it will stand after the round: the git pod writes both.
func roundLedger(ar *v1alpha1.AutoResearch) steps.LedgerUpdate {
	cr := ar.Status.CurrentRound
	c := cr.Candidates[0]
	after := ar.Status.DeepCopy()
	after.CompletedRounds = cr.Number
	if c.Verdict == v1alpha1.VerdictImproved {
		after.Best = &v1alpha1.BestResult{Round: cr.Number, Value: c.Value}
	}
	rec := v1alpha1.RoundRecord{
		Round: cr.Number, Strategy: c.Strategy, Compliance: c.Compliance, Value: c.Value,
		Verdict: c.Verdict, Insight: c.Insight, Note: cr.Note,
	}
	return steps.NewLedgerUpdate(&ar.Spec, after, "running", &rec, c.MemoryGB)
}

func finishLedger(ar *v1alpha1.AutoResearch, a round.Action) steps.LedgerUpdate {
	return steps.NewLedgerUpdate(&ar.Spec, &ar.Status, a.LedgerStatus, nil, "")
}
