package round

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// The seed's termination rules: the loop ends only when the target is
// reached or maxRounds rounds are done; a plateau only warns.

func (e *engine) terminationReason() string { return terminationReason(e.spec, &e.st, e.now.Time) }

func terminationReason(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus, now time.Time) string {
	if targetReached(spec, st) {
		return v1alpha1.ReasonTargetReached
	}
	if st.CompletedRounds >= spec.MaxRounds {
		return v1alpha1.ReasonMaxRoundsReached
	}
	if p := spec.PlateauOrDefault(); p.Action == v1alpha1.PlateauStop && st.ConsecutiveNonImprovements >= p.Rounds {
		return v1alpha1.ReasonPlateau
	}
	if budgetExhausted(spec, st, now) != "" {
		return v1alpha1.ReasonBudgetExhausted
	}
	return ""
}

// finish ends the loop and asks for the final ledger.
func (e *engine) finish(reason string) {
	e.st.Phase = v1alpha1.PhaseSucceeded
	e.st.CurrentRound = nil
	e.st.LedgerCommit = ""
	msg := fmt.Sprintf("done: %d/%d rounds", e.st.CompletedRounds, e.spec.MaxRounds)
	if e.st.CompletedRounds > e.spec.MaxRounds {
		// maxRounds was lowered below the rounds already done.
		msg = fmt.Sprintf("done: %d rounds, maxRounds lowered to %d", e.st.CompletedRounds, e.spec.MaxRounds)
	}
	switch reason {
	case v1alpha1.ReasonTargetReached:
		msg = fmt.Sprintf("done: target %s reached in round %d", e.spec.Target, e.st.Best.Round)
	case v1alpha1.ReasonPlateau:
		msg = fmt.Sprintf("done: plateau, no improvement in the last %d rounds (plateau.action is Stop) after %d/%d rounds",
			e.st.ConsecutiveNonImprovements, e.st.CompletedRounds, e.spec.MaxRounds)
	case v1alpha1.ReasonBudgetExhausted:
		msg = fmt.Sprintf("done: %s, after %d/%d rounds", budgetExhausted(e.spec, &e.st, e.now.Time), e.st.CompletedRounds, e.spec.MaxRounds)
	}
	if e.st.Best != nil {
		msg += fmt.Sprintf("; best %s=%s (R%d)", e.spec.Eval.Metric, e.st.Best.Value, e.st.Best.Round)
	}
	e.st.Message = msg
	e.setCondition(v1alpha1.ConditionSucceeded, metav1.ConditionTrue, reason, msg)
	e.emitCurrent()
}

// tickFinished continues a finished loop whose maxRounds was raised, and
// otherwise repeats the final ledger step until its commit is known.
func (e *engine) tickFinished() {
	if e.terminationReason() == "" {
		// The final ledger was committed on the best code: the rounds to
		// come start from that commit, which has the same code, so that
		// the branch keeps it.
		if e.st.LedgerCommit != "" && e.st.Best != nil {
			e.st.Best.Commit = e.st.LedgerCommit
		}
		e.st.Message = fmt.Sprintf("continuing: maxRounds is now %d", e.spec.MaxRounds)
		e.nextRound()
		return
	}
	e.emitCurrent()
}

// finished records the commit that holds the final ledger.
func (e *engine) finished(obs Observation) {
	if a, ok := CurrentAction(e.spec, &e.st); ok && a.Type == ActionFinish && a.Round == obs.Round {
		e.st.LedgerCommit = obs.Commit
		e.pushed(obs.Round, obs.Push)
	}
}

func (e *engine) fail(reason, msg string) {
	e.st.Phase = v1alpha1.PhaseFailed
	// A failed experiment runs nothing more: the round spec.pipeline
	// started early goes with it.
	e.st.NextRound = nil
	// The message quotes process output, which the Researcher's code
	// wrote: it reaches terminals (events, describe, the report) without
	// escape sequences; the API caps status.message.
	msg = text.Printable(msg)
	e.st.Message = text.Truncate(msg, maxMessageLength)
	e.setCondition(v1alpha1.ConditionFailed, metav1.ConditionTrue, reason, msg)
}

// plateauWarning warns every spec.plateau.rounds rounds without
// improvement; a plateau that stops the loop is its final message instead.
func (e *engine) plateauWarning() {
	p := e.spec.PlateauOrDefault()
	n := p.Rounds
	k := e.st.ConsecutiveNonImprovements
	if k == 0 || k%n != 0 || p.Action == v1alpha1.PlateauStop {
		return
	}
	counts := map[v1alpha1.Verdict]int{}
	var order []v1alpha1.Verdict
	h := e.st.History
	for i := max(0, len(h)-int(k)); i < len(h); i++ {
		if h[i].Round == 0 {
			continue
		}
		if counts[h[i].Verdict] == 0 {
			order = append(order, h[i].Verdict)
		}
		counts[h[i].Verdict]++
	}
	var parts []string
	for _, v := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[v], v))
	}
	first := e.st.CompletedRounds - k + 1
	e.emit(Action{
		Type:   ActionWarn,
		Round:  e.st.CompletedRounds,
		Reason: v1alpha1.ReasonPlateau,
		Message: fmt.Sprintf("plateau: no improvement in %d consecutive rounds (R%d–R%d: %s); the variable space may be exhausted or strategies may be repeating — the loop continues",
			k, first, e.st.CompletedRounds, strings.Join(parts, ", ")),
	})
}
