package round

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/prompt"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		a.Ledger = baselineLedger(spec, st)
	case v1alpha1.StepCompliance:
		a.Type = ActionCheckCompliance
	case v1alpha1.StepTrain:
		a.Type = ActionRunTrain
		a.Sample = sample(st)
		a.Code = cmp.Or(cr.Candidates[0].Commit, cr.BaseCommit)
	case v1alpha1.StepEval:
		a.Type = ActionRunEval
		a.Sample = sample(st)
		a.Code = cmp.Or(cr.Candidates[0].Commit, cr.BaseCommit)
	case v1alpha1.StepHoldout:
		// The holdout runs on the outputs of the training run the
		// evaluation just measured: the baseline's last one.
		a.Type = ActionRunHoldout
		if cr.Number == 0 && st.Baseline != nil {
			a.Sample = int32(len(st.Baseline.Values))
		}
		a.Code = cmp.Or(cr.Candidates[0].Commit, cr.BaseCommit)
	case v1alpha1.StepGit:
		c := &cr.Candidates[0]
		a.Type = ActionRollback
		if c.Verdict == v1alpha1.VerdictImproved {
			a.Type = ActionCommit
			a.Code = cmp.Or(c.Commit, cr.BaseCommit)
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
	done := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSucceeded)
	if st.LedgerCommit != "" || done == nil || done.Status != metav1.ConditionTrue {
		return Action{}, false
	}
	reason := done.Reason
	status := ledgerCompleted
	if reason == v1alpha1.ReasonTargetReached {
		status = ledgerTargetReached
	}
	return Action{
		Type: ActionFinish, Round: st.CompletedRounds, Reason: reason, Message: st.Message,
		Ledger: ledgerUpdate(spec, st, status, nil, ""),
	}, true
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
		ledger.Upsert(workspace.NewLedgerRow(spec.Eval.Metric, LedgerRound(h)))
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
		FixedFiles:       v1alpha1.Strings(spec.Fixed.Files),
		VariableFiles:    v1alpha1.Strings(spec.Variable.Files),
		FixedRegions:     regionLines(st.Workspace),
		Constraints:      append(append([]string(nil), spec.Fixed.Constraints...), constraintLines(spec.Eval.Constraints)...),
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

// regionLines are the fixed regions of the workspace as the prompt lists them.
func regionLines(ws *v1alpha1.WorkspaceStatus) []string {
	if ws == nil {
		return nil
	}
	lines := make([]string, 0, len(ws.FixedRegions))
	for _, r := range ws.FixedRegions {
		word := "lines"
		if !strings.Contains(r.Lines, "-") {
			word = "line"
		}
		line := fmt.Sprintf("%s %s %s", r.Path, word, r.Lines)
		if r.Begin != "" {
			line += ": `" + strings.ReplaceAll(r.Begin, "`", "'") + "`"
		}
		lines = append(lines, line)
	}
	return lines
}

// constraintLines are spec.eval.constraints as the prompt's fixed
// conditions.
func constraintLines(constraints []v1alpha1.EvalConstraint) []string {
	var lines []string
	for _, c := range constraints {
		var limit []string
		if c.Min != "" {
			limit = append(limit, "at least "+string(c.Min))
		}
		if c.Max != "" {
			limit = append(limit, "at most "+string(c.Max))
		}
		lines = append(lines, fmt.Sprintf("The evaluation's %s reading must be %s, or the round fails as constraint_failed whatever its metric", c.Metric, strings.Join(limit, " and ")))
	}
	return lines
}
