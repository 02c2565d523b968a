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

// CurrentActions are the actions whose results the loop waits for, as the
// engine emitted them, rebuilt from the status alone: an adapter uses them
// to find the steps' children and to read their results, and never
// re-derives what the engine decided. There is one per candidate in the
// current round's step, or one for its git step or the final ledger, and
// one per candidate in the step of the round spec.pipeline started early;
// none when nothing is in progress, nor once the experiment failed. spec
// is defaulted.
func CurrentActions(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus) []Action {
	if st.Phase == v1alpha1.PhaseFailed {
		return nil
	}
	actions := roundActions(spec, st, st.CurrentRound)
	if st.Phase != v1alpha1.PhaseSucceeded && st.Phase != v1alpha1.PhaseInitializing {
		actions = append(actions, roundActions(spec, st, st.NextRound)...)
	}
	return actions
}

// roundActions are the actions of cr's step in progress, or those of the
// workspace or the final ledger.
func roundActions(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus, cr *v1alpha1.RoundStatus) []Action {
	switch st.Phase {
	case v1alpha1.PhaseInitializing:
		if st.Workspace == nil {
			return []Action{{Type: ActionPrepareWorkspace}}
		}
	case v1alpha1.PhaseSucceeded:
		if a, ok := finishAction(spec, st); ok {
			return []Action{a}
		}
		return nil
	}
	if cr == nil || cr.StepState != v1alpha1.StepStateRunning || len(cr.Candidates) == 0 {
		return nil
	}
	if cr.Step == v1alpha1.StepGit {
		return []Action{gitAction(spec, st)}
	}
	var actions []Action
	for i := range cr.Candidates {
		if a, ok := candidateAction(spec, st, cr, &cr.Candidates[i]); ok {
			actions = append(actions, a)
		}
	}
	return actions
}

// CurrentAction is the first of CurrentActions, for an adapter that looks
// at the round as a whole: the workspace, the git step, the final ledger.
func CurrentAction(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus) (Action, bool) {
	actions := CurrentActions(spec, st)
	if len(actions) == 0 {
		return Action{}, false
	}
	return actions[0], true
}

// candidateAction is c's action in the step of its round cr, unless c
// waits for a later step.
func candidateAction(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus, cr *v1alpha1.RoundStatus, c *v1alpha1.CandidateStatus) (Action, bool) {
	if c.Step != "" {
		return Action{}, false
	}
	a := Action{Round: cr.Number, Candidate: c.Index, Candidates: several(cr), BaseCommit: cr.BaseCommit, Early: c.Base != ""}
	switch cr.Step {
	case v1alpha1.StepResearcher:
		a.Type = ActionRunResearcher
		a.Prompt = promptData(spec, st, cr.Number)
		if len(cr.Candidates) > 1 {
			a.Prompt.Candidate = CandidateName(c.Index)
			a.Prompt.Candidates = int32(len(cr.Candidates))
			a.Prompt.Directions = directions(len(cr.Candidates))
		}
		a.Ledger = baselineLedger(spec, st, cr)
	case v1alpha1.StepCompliance:
		a.Type = ActionCheckCompliance
		if c.Base != "" && c.Base != cr.BaseCommit {
			a.SealBase = c.Base
		}
		for _, k := range c.Combines {
			a.Combine = append(a.Combine, cr.Candidates[k].Commit)
		}
	case v1alpha1.StepTrain:
		a.Type = ActionRunTrain
		a.Sample = sample(st, cr, c)
		a.Code = cmp.Or(c.Commit, cr.BaseCommit)
	case v1alpha1.StepEval:
		a.Type = ActionRunEval
		a.Sample = sample(st, cr, c)
		a.Code = cmp.Or(c.Commit, cr.BaseCommit)
	case v1alpha1.StepHoldout:
		// The holdout runs on the outputs of the training run the
		// evaluation just measured: the baseline's last one.
		a.Type = ActionRunHoldout
		if cr.Number == 0 && st.Baseline != nil {
			a.Sample = int32(len(st.Baseline.Values))
		}
		a.Code = cmp.Or(c.Commit, cr.BaseCommit)
	default:
		return Action{}, false
	}
	return a, true
}

// several is the number of the round's candidates when there are several,
// 0 for one.
func several(cr *v1alpha1.RoundStatus) int32 {
	if n := len(cr.Candidates); n > 1 {
		return int32(n)
	}
	return 0
}

// gitAction commits the round's winner, or rolls the round back, and
// writes every candidate's ledger row.
func gitAction(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus) Action {
	cr := st.CurrentRound
	a := Action{Type: ActionRollback, Round: cr.Number, Candidates: several(cr), BaseCommit: cr.BaseCommit}
	if w := Winner(cr); w != nil {
		a.Type = ActionCommit
		a.Candidate = w.Index
		a.Code = cmp.Or(w.Commit, cr.BaseCommit)
		a.Message = fmt.Sprintf("autoresearch: round %d — %s=%s (improved)", cr.Number, spec.Eval.Metric, w.Value)
		if len(cr.Candidates) > 1 {
			a.Message = fmt.Sprintf("autoresearch: round %d%s — %s=%s (improved)", cr.Number, CandidateName(w.Index), spec.Eval.Metric, w.Value)
		}
	}
	a.Ledger = roundLedger(spec, st)
	return a
}

// sample is the run of c's code that its step measures: the baseline's
// runs count from 1; a candidate's first run is 0, and the runs that
// confirm its improvement (spec.acceptance.confirmRuns) count from 2.
func sample(st *v1alpha1.AutoResearchStatus, cr *v1alpha1.RoundStatus, c *v1alpha1.CandidateStatus) int32 {
	if cr.Number == 0 {
		if st.Baseline == nil {
			return 0
		}
		return int32(len(st.Baseline.Values)) + 1
	}
	if n := len(c.Values); n > 0 {
		return int32(n) + 1
	}
	return 0
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
