package round

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// Input is everything Next decides from. Spec carries the defaults of the
// CRD's markers, as the API server stores it (schema.DefaultSpec does the
// same without one): the engine never looks for a default itself.
type Input struct {
	Spec        *v1alpha1.AutoResearchSpec
	Status      v1alpha1.AutoResearchStatus
	Generation  int64
	Observation Observation
	Now         time.Time
	// Unsupported lists what of the spec this adapter cannot run (the
	// operator: spec.holdout without a volume); an experiment that needs
	// it fails before anything runs.
	Unsupported field.ErrorList
}

// Output is the new status and the actions to perform, in order.
type Output struct {
	Status  v1alpha1.AutoResearchStatus
	Actions []Action
}

// Next advances the loop by one observation. It is pure: the same input
// always gives the same output.
func Next(in Input) Output {
	e := &engine{
		spec:        in.Spec,
		st:          *in.Status.DeepCopy(),
		now:         metav1.NewTime(in.Now),
		unsupported: in.Unsupported,
	}
	e.handle(in.Observation)
	e.fitStatus()
	e.refitActions()
	e.st.GPUs = gpusInUse(e.spec, &e.st)
	e.st.Usage.Budget = budgetLines(e.spec, &e.st)
	e.st.ObservedGeneration = in.Generation
	e.refreshConditions(in.Generation)
	return Output{Status: e.st, Actions: e.actions}
}

type engine struct {
	spec    *v1alpha1.AutoResearchSpec
	st      v1alpha1.AutoResearchStatus
	now     metav1.Time
	actions []Action
	// cand is the candidate the observation reports on.
	cand int32
	// early says that the engine works on the round spec.pipeline started
	// early, which e.st.CurrentRound holds meanwhile (withNext).
	early bool
	// unsupported is Input.Unsupported.
	unsupported field.ErrorList
}

func (e *engine) emit(a Action) { e.actions = append(e.actions, a) }

// refitActions builds the actions the loop waits for again from the
// status once fitStatus has cut and cleaned the texts it holds: the engine
// emitted them as it decided, with a ledger row that quoted a violation or
// a strategy whole, and an adapter that lost one rebuilds it from the
// status (CurrentActions), which must give the same. The records that
// rounds report are fitted as the history's are. The actions the loop
// waits for then go last, in their order, as Action says (a failed push's
// warning came after the next round's Researcher).
func (e *engine) refitActions() {
	current := CurrentActions(e.spec, &e.st)
	for i, a := range e.actions {
		if a.Record != nil {
			fitRecord(a.Record)
		}
		for _, c := range current {
			if c.Type == a.Type && c.Round == a.Round && c.Candidate == a.Candidate && c.Sample == a.Sample {
				e.actions[i] = c
			}
		}
	}
	slices.SortStableFunc(e.actions, func(a, b Action) int { return cmp.Compare(waitedFor(a), waitedFor(b)) })
}

// waitedFor is 1 for an action whose result the loop waits for, 0 for one
// that only tells the human.
func waitedFor(a Action) int {
	if a.Type == ActionReportRound || a.Type == ActionWarn {
		return 0
	}
	return 1
}

func (e *engine) handle(obs Observation) {
	switch obs.Kind {
	case ObserveTick:
		e.tick(false)
		e.waiting(obs.Waiting)
	case ObserveResumed:
		e.tick(true)
	case ObserveWorkspaceReady, ObserveWorkspaceFailed:
		e.workspaceObserved(obs)
	case ObserveResearcherFinished:
		e.onRound(obs.Round, func() {
			if e.expect(obs, v1alpha1.StepResearcher) && obs.Researcher != nil {
				e.researcherFinished(*obs.Researcher)
			}
		})
	case ObserveComplianceChecked:
		e.onRound(obs.Round, func() {
			if e.expect(obs, v1alpha1.StepCompliance) && obs.Compliance != nil {
				e.complianceChecked(*obs.Compliance)
			}
		})
	case ObserveTrainFinished:
		if e.expect(obs, v1alpha1.StepTrain) && obs.Train != nil {
			e.trainFinished(*obs.Train)
		}
	case ObserveEvalFinished:
		if e.expect(obs, v1alpha1.StepEval) && obs.Eval != nil {
			e.evalFinished(*obs.Eval)
		}
	case ObserveHoldoutFinished:
		if e.expect(obs, v1alpha1.StepHoldout) && obs.Holdout != nil {
			e.holdoutFinished(*obs.Holdout)
		}
	case ObserveQueued:
		e.queued(obs)
	case ObserveCommitted, ObserveRolledBack:
		// A commit answers only an improved round, a rollback only the others.
		if e.expect(obs, v1alpha1.StepGit) && (obs.Kind == ObserveCommitted) == (Winner(e.st.CurrentRound) != nil) {
			e.gitDone(obs.Commit)
			e.pushed(obs.Round, obs.Push)
		}
	case ObserveFinished:
		e.finished(obs)
		if e.st.Phase == v1alpha1.PhaseSucceeded && e.st.LedgerCommit != "" {
			// The spec may have changed with it: a raised maxRounds or
			// budget goes on at once, as no other change would wake the
			// loop.
			e.tickFinished()
		}
	case ObserveRebaseline:
		e.rebaseline(obs.Changed)
	}
}

// workspaceObserved takes the preparation of the workspace's outcome.
func (e *engine) workspaceObserved(obs Observation) {
	switch {
	case e.st.Phase != v1alpha1.PhaseInitializing:
	case obs.Kind == ObserveWorkspaceFailed:
		e.fail(v1alpha1.ReasonWorkspaceFailed, "preparing the workspace failed: "+obs.Error)
	case obs.Workspace != nil:
		e.workspaceReady(*obs.Workspace)
	}
}

// queued records the candidate obs reports on queued, when Queueable
// holds.
func (e *engine) queued(obs Observation) {
	cr := e.st.CurrentRound
	if cr == nil || !e.expect(obs, cr.Step) || !Queueable(cr, obs.Candidate) {
		return
	}
	e.setTask(cr.Step, "queued")
	e.decide(v1alpha1.VerdictQueued, fmt.Sprintf("its %s Job waited in queue %s for admission while the round's other candidates had theirs; the round went on without it",
		strings.ToLower(string(cr.Step)), e.spec.QueueName))
}

// expect reports whether obs answers the step that is running now, and
// selects the candidate it reports on; results of steps that are no longer
// current are stale and ignored.
func (e *engine) expect(obs Observation, step v1alpha1.Step) bool {
	cr := e.st.CurrentRound
	if cr == nil || cr.Number != obs.Round || cr.Step != step || cr.StepState != v1alpha1.StepStateRunning ||
		obs.Candidate < 0 || int(obs.Candidate) >= len(cr.Candidates) || cr.Candidates[obs.Candidate].Step != "" {
		return false
	}
	e.cand = obs.Candidate
	return true
}

func (e *engine) candidate() *v1alpha1.CandidateStatus {
	return &e.st.CurrentRound.Candidates[e.cand]
}

func (e *engine) tick(resumed bool) {
	switch e.st.Phase {
	case v1alpha1.PhaseFailed:
		return
	case v1alpha1.PhaseSucceeded:
		e.tickFinished()
		return
	}
	if e.st.Workspace == nil {
		// A rule no schema can state (a pattern without a capture group) is
		// found here, before anything runs, rather than by every step.
		if errs := append(e.spec.Validate(), e.unsupported...); len(errs) > 0 {
			e.fail(v1alpha1.ReasonInvalidSpec, "the spec is invalid; fix it in a new experiment: "+errs.ToAggregate().Error())
			return
		}
		e.prepareWorkspace(resumed)
		return
	}
	cr := e.st.CurrentRound
	if cr == nil {
		e.nextRound()
		return
	}
	if resumed && e.st.NextRound != nil {
		// Nothing of its steps survived either: it starts again early
		// once the round before it trains again.
		e.emit(Action{Type: ActionWarn, Round: e.st.NextRound.Number, Reason: v1alpha1.ReasonRoundRestarted,
			Message: fmt.Sprintf("round %d, started early, was interrupted; it starts again", e.st.NextRound.Number)})
		e.st.NextRound = nil
	}
	if resumed && cr.StepState == v1alpha1.StepStateRunning {
		e.restartInterrupted(cr)
	}
	if cr.StepState == v1alpha1.StepStatePending {
		e.startStep()
	} else {
		e.emitCurrent()
	}
	if e.st.NextRound != nil && e.st.NextRound.StepState == v1alpha1.StepStateRunning {
		e.withNext(e.emitCurrent)
	}
	e.startEarly()
}

func (e *engine) prepareWorkspace(resumed bool) {
	// Like any running step, a preparation already under way finishes;
	// after an interruption nothing of it is left to finish.
	if ptr.Deref(e.spec.Suspend, false) && (resumed || e.st.Phase != v1alpha1.PhaseInitializing) {
		e.st.Phase = v1alpha1.PhaseSuspended
		e.st.Message = "suspended before the workspace was prepared"
		return
	}
	e.st.Phase = v1alpha1.PhaseInitializing
	e.st.Message = "preparing the workspace"
	e.emitCurrent()
}

func (e *engine) activePhase() v1alpha1.Phase {
	if e.st.CurrentRound != nil && e.st.CurrentRound.Number == 0 {
		return v1alpha1.PhaseBaseline
	}
	return v1alpha1.PhaseRunning
}

// advance moves the candidate the observation reported on to step. The
// round follows once no candidate is left in its step, to the earliest step
// a candidate waits for; the candidates that wait for a later one sit that
// step out.
func (e *engine) advance(step v1alpha1.Step) {
	cr := e.st.CurrentRound
	cr.Candidates[e.cand].Step = step
	var next v1alpha1.Step
	for _, c := range cr.Candidates {
		if c.Step == "" {
			return
		}
		if next == "" || stepOrder(c.Step) < stepOrder(next) {
			next = c.Step
		}
	}
	for i := range cr.Candidates {
		if cr.Candidates[i].Step == next {
			cr.Candidates[i].Step = ""
		}
	}
	if next == v1alpha1.StepGit {
		if e.combine() {
			return
		}
		e.rankCandidates()
	}
	cr.Step = next
	cr.StepState = v1alpha1.StepStatePending
	if e.early && stepOrder(next) >= stepOrder(v1alpha1.StepTrain) {
		// A round started early trains once the round before it is done.
		return
	}
	e.startStep()
	e.startEarly()
}

// stepOrder is the position of step in a round.
func stepOrder(step v1alpha1.Step) int {
	return slices.Index([]v1alpha1.Step{
		v1alpha1.StepResearcher, v1alpha1.StepCompliance, v1alpha1.StepTrain,
		v1alpha1.StepEval, v1alpha1.StepHoldout, v1alpha1.StepGit,
	}, step)
}

// emitCurrent emits the actions of the current round's step in progress,
// as CurrentActions rebuilds them from the status.
func (e *engine) emitCurrent() {
	for _, a := range roundActions(e.spec, &e.st, e.st.CurrentRound) {
		e.emit(a)
	}
}

// newCandidates are the candidates of a round that starts.
func (e *engine) newCandidates() []v1alpha1.CandidateStatus {
	cs := make([]v1alpha1.CandidateStatus, max(1, e.spec.Candidates))
	for i := range cs {
		cs[i].Index = int32(i)
	}
	return cs
}

// nextRound starts the next round, or the one spec.pipeline started early,
// or finishes when a termination rule holds.
func (e *engine) nextRound() {
	if e.st.NextRound != nil {
		e.promote()
		return
	}
	if reason := e.terminationReason(); reason != "" {
		e.finish(reason)
		return
	}
	n := e.st.CompletedRounds + 1
	e.st.Round = n
	e.st.LedgerCommit = ""
	e.st.CurrentRound = e.newRound(n)
	e.cand = 0
	e.startStep()
}

// newRound is round n, pending its Researchers, on the best code.
func (e *engine) newRound(n int32) *v1alpha1.RoundStatus {
	seen := min(int(e.st.GuidanceSeen), len(e.spec.Guidance))
	e.st.GuidanceSeen = int32(len(e.spec.Guidance))
	return &v1alpha1.RoundStatus{
		Number:     n,
		Step:       v1alpha1.StepResearcher,
		StepState:  v1alpha1.StepStatePending,
		BaseCommit: BestCommit(&e.st),
		StartTime:  e.now.DeepCopy(),
		Note:       strings.Join(e.spec.Guidance[seen:], "; "),
		Tasks:      e.roundTasks(n),
		Candidates: e.newCandidates(),
	}
}

// recordRound keeps the round in the bounded history, counts its verdict and
// reports it to the adapter. The baseline's record stays first in the
// history beside the last spec.historyLimit rounds, since every prompt
// shows it; a baseline measured again replaces it.
func (e *engine) recordRound(rec v1alpha1.RoundRecord, count bool) {
	rec.CompletionTime = e.now.DeepCopy()
	if cr := e.st.CurrentRound; cr != nil && cr.Number == rec.Round {
		rec.StartTime = cr.StartTime
		rec.Timeline = cr.Timeline
	}
	h := append([]v1alpha1.RoundRecord(nil), e.st.History...)
	var baseline []v1alpha1.RoundRecord
	if len(h) > 0 && h[0].Round == 0 {
		baseline, h = h[:1], h[1:]
	}
	if rec.Round == 0 {
		baseline = []v1alpha1.RoundRecord{rec}
	} else {
		h = append(h, rec)
	}
	if over := len(h) - int(e.spec.HistoryLimit); over > 0 {
		h = h[over:]
	}
	e.st.History = append(append([]v1alpha1.RoundRecord(nil), baseline...), h...)
	if count {
		if e.st.VerdictCounts == nil {
			e.st.VerdictCounts = map[v1alpha1.Verdict]int32{}
		}
		e.st.VerdictCounts[rec.Verdict]++
	}
	r := rec
	a := Action{Type: ActionReportRound, Round: rec.Round, Record: &r}
	if cr := e.st.CurrentRound; cr != nil {
		a.Tasks = append([]string(nil), cr.Tasks...)
	}
	e.emit(a)
}
