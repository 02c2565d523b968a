package round

import (
	"fmt"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/prompt"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// Ledger statuses of experiences.md.
const (
	ledgerRunning       = "running"
	ledgerCompleted     = "completed"
	ledgerTargetReached = "target_reached"
)

// CurrentAction is the action whose result the loop waits for, as the
// engine emitted it, rebuilt from the status alone: an adapter uses it to
// find the step's child and to read its result, and never re-derives what
// the engine decided. It reports false when nothing is in progress. spec
// is defaulted.
func CurrentAction(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus) (Action, bool) {
	switch st.Phase {
	case v1alpha1.PhaseInitializing:
		if st.Workspace == nil {
			return Action{Type: ActionPrepareWorkspace}, true
		}
	case v1alpha1.PhaseSucceeded:
		return finishAction(spec, st)
	}
	cr := st.CurrentRound
	if cr == nil || cr.StepState != v1alpha1.StepStateRunning || len(cr.Candidates) == 0 {
		return Action{}, false
	}
	a := Action{Round: cr.Number, BaseCommit: cr.BaseCommit}
	switch cr.Step {
	case v1alpha1.StepResearcher:
		a.Type = ActionRunResearcher
		a.Prompt = promptData(spec, st, cr.Number)
		if cr.Number == 1 {
			a.Ledger = baselineLedger(spec, st)
		}
	case v1alpha1.StepCompliance:
		a.Type = ActionCheckCompliance
	case v1alpha1.StepTrain:
		a.Type = ActionRunTrain
		a.Sample = sample(st)
	case v1alpha1.StepEval:
		a.Type = ActionRunEval
		a.Sample = sample(st)
	case v1alpha1.StepGit:
		c := &cr.Candidates[0]
		a.Type = ActionRollback
		if c.Verdict == v1alpha1.VerdictImproved {
			a.Type = ActionCommit
			a.Message = fmt.Sprintf("autoresearch: round %d — %s=%s (improved)", cr.Number, spec.Eval.Metric, c.Value)
		}
		a.Ledger = roundLedger(spec, st, c)
	default:
		return Action{}, false
	}
	return a, true
}

// sample is the number of the baseline run in progress, from 1.
func sample(st *v1alpha1.AutoResearchStatus) int32 {
	if st.CurrentRound.Number != 0 || st.Baseline == nil {
		return 0
	}
	return int32(len(st.Baseline.Values)) + 1
}

// finishAction writes the final ledger of a finished run until its commit
// is known.
func finishAction(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus) (Action, bool) {
	reason := terminationReason(spec, st)
	if st.LedgerCommit != "" || reason == "" {
		return Action{}, false
	}
	status := ledgerCompleted
	if reason == v1alpha1.ReasonTargetReached {
		status = ledgerTargetReached
	}
	return Action{
		Type: ActionFinish, Round: st.CompletedRounds, Reason: reason, Message: st.Message,
		Ledger: ledgerUpdate(spec, st, status, nil, ""),
	}, true
}

// roundRecord is the finished round's entry for the history and the ledger.
func roundRecord(cr *v1alpha1.RoundStatus, c *v1alpha1.CandidateStatus) v1alpha1.RoundRecord {
	return v1alpha1.RoundRecord{
		Round: cr.Number, Strategy: c.Strategy, Compliance: c.Compliance, Value: c.Value,
		Verdict: c.Verdict, Insight: c.Insight, Note: cr.Note, Durations: c.Durations,
	}
}

// roundLedger is the row of the round whose git step is starting, with the
// header as it will stand after the round. The row's commit is left empty:
// the git step fills in the commit HEAD is on after it.
func roundLedger(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus, c *v1alpha1.CandidateStatus) *steps.LedgerUpdate {
	cr := st.CurrentRound
	after := st.DeepCopy()
	after.CompletedRounds = cr.Number
	if c.Verdict == v1alpha1.VerdictImproved {
		after.Best = &v1alpha1.BestResult{Round: cr.Number, Value: c.Value}
	}
	rec := roundRecord(cr, c)
	return ledgerUpdate(spec, after, ledgerRunning, &rec, c.MemoryGB)
}

// baselineLedger is the baseline's row 0, which the first round's
// preparation writes: round 0 has no git step of its own to do it.
func baselineLedger(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus) *steps.LedgerUpdate {
	for _, h := range st.History {
		if h.Round == 0 {
			return ledgerUpdate(spec, st, ledgerRunning, &h, "")
		}
	}
	return nil
}

// ledgerUpdate is the ledger header as st has it, with the experiences.md
// status ledgerStatus, and rec, when not nil, as a row with the peak memory
// training reported.
func ledgerUpdate(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus, ledgerStatus string, rec *v1alpha1.RoundRecord, memoryGB string) *steps.LedgerUpdate {
	u := &steps.LedgerUpdate{
		Metric: spec.Eval.Metric, Rounds: st.CompletedRounds, MaxRounds: spec.MaxRounds,
		Status: ledgerStatus, MemoryGB: memoryGB,
	}
	if b := st.Best; b != nil {
		u.Best, u.BestRound = b.Value, b.Round
	}
	if rec != nil {
		u.Round = &steps.LedgerRound{
			Round: rec.Round, Strategy: rec.Strategy, Compliance: rec.Compliance, Value: rec.Value,
			Verdict: string(rec.Verdict), Insight: rec.Insight, Note: rec.Note, Commit: rec.Commit,
		}
	}
	return u
}

// promptData is what round n's Researcher prompt is made from. Its
// experience snippet comes from status.history, which holds the baseline
// and more rounds than the prompt shows, so no adapter reads the ledger
// file for it.
func promptData(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus, n int32) *prompt.Data {
	ledger := workspace.Ledger{
		Metric: spec.Eval.Metric, Rounds: int(st.CompletedRounds), MaxRounds: int(spec.MaxRounds), Status: ledgerRunning,
	}
	if b := st.Best; b != nil {
		ledger.Best, ledger.BestRound = b.Value, int(b.Round)
	}
	for _, h := range st.History {
		ledger.Upsert(workspace.NewLedgerRow(spec.Eval.Metric, steps.LedgerRound{
			Round: h.Round, Strategy: h.Strategy, Compliance: h.Compliance, Value: h.Value,
			Verdict: string(h.Verdict), Insight: h.Insight, Note: h.Note,
		}))
	}
	profile := ""
	if spec.Profile != nil {
		profile = spec.Profile.Command
	}
	return &prompt.Data{
		Metric:           spec.Eval.Metric,
		Direction:        string(spec.Eval.Direction),
		Round:            n,
		MaxRounds:        max(spec.MaxRounds, n),
		ResearchQuestion: spec.ResearchQuestion,
		FixedFiles:       spec.Fixed.Files,
		VariableFiles:    spec.Variable.Files,
		VariableRange:    spec.Variable.Range,
		TimeLimit:        spec.Fixed.TimeLimit.Duration.String(),
		EpochLimit:       spec.Fixed.EpochLimit,
		ProfileCommand:   profile,
		RecentRounds:     prompt.RecentRounds,
		Experiences:      ledger.Snippet(prompt.RecentRounds),
		ExperiencesPath:  workspace.ExperiencesFile,
		Guidance:         append([]string(nil), spec.Guidance...),
	}
}
