package round

import (
	"fmt"

	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// Pipelining (spec.pipeline): once the current round's candidates are
// checked and go to the GPUs (the baseline's at once), the next round's
// Researchers start, from the best code known then, in status.nextRound.
// That round researches and is checked meanwhile, then waits until the
// current round is done; when the current round committed a new best, each
// of its checked candidates is checked again, carried onto the new best by
// a three-way merge, and one that conflicts is stale.

// withNext runs f on the round started early, which e.st.CurrentRound
// holds meanwhile, so that the steps' code serves both rounds.
func (e *engine) withNext(f func()) {
	cur := e.st.CurrentRound
	e.st.CurrentRound, e.st.NextRound, e.early = e.st.NextRound, nil, true
	defer func() {
		e.st.NextRound, e.st.CurrentRound, e.early = e.st.CurrentRound, cur, false
	}()
	f()
}

// onRound runs f, which handles an observation of round n, on that round:
// the current one or the one started early. A current round that is done
// waits for the checks of the round started early, which then takes its
// place.
func (e *engine) onRound(n int32, f func()) {
	next := e.st.NextRound
	if next == nil || next.Number != n {
		f()
		return
	}
	e.withNext(f)
	if e.st.CurrentRound == nil && e.st.Phase != v1alpha1.PhaseFailed {
		e.nextRound()
	}
}

// startEarly starts the next round's Researchers once the current round's
// candidates are checked, when spec.pipeline asks for it and a next round
// is due. The baseline, whose training starts at once, has round 1 (or, when
// it is measured again, the next round) research while it trains.
func (e *engine) startEarly() {
	cr := e.st.CurrentRound
	if e.early || !ptr.Deref(e.spec.Pipeline, false) || ptr.Deref(e.spec.Suspend, false) || e.st.NextRound != nil ||
		cr == nil || stepOrder(cr.Step) < stepOrder(v1alpha1.StepTrain) ||
		(e.st.Phase != v1alpha1.PhaseRunning && e.st.Phase != v1alpha1.PhaseBaseline) {
		return
	}
	n := cr.Number + 1
	if cr.Number == 0 {
		n = e.st.CompletedRounds + 1
	}
	if n > e.spec.MaxRounds || e.terminationReason() != "" {
		return
	}
	next := e.newRound(n)
	for i := range next.Candidates {
		next.Candidates[i].Base = next.BaseCommit
	}
	e.st.NextRound = next
	e.withNext(e.startStep)
}

// promote makes the round started early the current one, once its running
// checks are done. When the best moved on since its Researchers started,
// its checked candidates are checked again, carried onto the new best.
func (e *engine) promote() {
	next := e.st.NextRound
	if reason := e.terminationReason(); reason != "" {
		e.st.NextRound = nil
		e.emit(Action{Type: ActionWarn, Round: next.Number, Reason: v1alpha1.ReasonRoundRestarted,
			Message: fmt.Sprintf("round %d, started early, is dropped: the experiment is done (%s)", next.Number, reason)})
		e.finish(reason)
		return
	}
	if next.Step == v1alpha1.StepCompliance && next.StepState == v1alpha1.StepStateRunning {
		for _, c := range next.Candidates {
			if c.Step == "" && c.Verdict == "" {
				e.st.Message = fmt.Sprintf("R%d is done; R%d, started early, finishes its checks", e.st.CompletedRounds, next.Number)
				return
			}
		}
	}
	e.st.NextRound = nil
	e.st.CurrentRound = next
	e.st.Round = next.Number
	e.st.LedgerCommit = ""
	if base := BestCommit(&e.st); base != next.BaseCommit {
		next.BaseCommit = base
		for i := range next.Candidates {
			c := &next.Candidates[i]
			if c.Verdict == "" && c.Commit != "" {
				*c = v1alpha1.CandidateStatus{
					Index: c.Index, Base: c.Base, Strategy: c.Strategy, Durations: c.Durations, Usage: c.Usage,
					Step: v1alpha1.StepCompliance,
				}
			}
		}
	}
	if next.StepState == v1alpha1.StepStatePending {
		regroup(next)
		e.startStep()
	} else {
		e.st.Phase = e.activePhase()
		e.st.Message = fmt.Sprintf("R%d, started early, is the current round", next.Number)
	}
	e.startEarly()
}

// regroup puts a held round in the earliest step one of its candidates
// waits for.
func regroup(cr *v1alpha1.RoundStatus) {
	at := func(c v1alpha1.CandidateStatus) v1alpha1.Step {
		if c.Step != "" {
			return c.Step
		}
		return cr.Step
	}
	first := at(cr.Candidates[0])
	for _, c := range cr.Candidates {
		if stepOrder(at(c)) < stepOrder(first) {
			first = at(c)
		}
	}
	for i := range cr.Candidates {
		c := &cr.Candidates[i]
		if s := at(*c); s == first {
			c.Step = ""
		} else {
			c.Step = s
		}
	}
	cr.Step = first
}
