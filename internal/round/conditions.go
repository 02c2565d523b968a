package round

import (
	"cmp"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// maxConditionMessage is the API's limit on a condition's message.
const maxConditionMessage = 1024

// refreshConditions sets every condition from the phase and the counters,
// each stamped with the generation the status reflects.
func (e *engine) refreshConditions(gen int64) {
	phase := e.st.Phase
	ready := metav1.ConditionFalse
	readyReason, readyMsg := v1alpha1.ReasonInitializing, "the workspace is not ready yet"
	if e.st.Workspace != nil && phase != v1alpha1.PhaseFailed {
		ready, readyReason, readyMsg = metav1.ConditionTrue, v1alpha1.ReasonWorkspaceReady, "the workspace is ready"
	}
	if phase == v1alpha1.PhaseFailed {
		readyReason, readyMsg = string(v1alpha1.PhaseFailed), e.st.Message
	}
	e.setCondition(v1alpha1.ConditionReady, ready, readyReason, readyMsg)

	switch phase {
	case v1alpha1.PhaseInitializing, v1alpha1.PhaseBaseline, v1alpha1.PhaseRunning:
		msg := e.st.Message
		cr := e.st.CurrentRound
		if cr != nil && cr.Waiting != "" {
			e.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonStepWaiting,
				fmt.Sprintf("R%d %s waits: %s", cr.Number, cr.Step, cr.Waiting))
			break
		}
		if cr != nil {
			msg = fmt.Sprintf("R%d %s", cr.Number, cr.Step)
		}
		e.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonRoundInProgress, msg)
	default:
		e.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionFalse, string(cmp.Or(phase, v1alpha1.PhasePending)), e.st.Message)
	}

	if phase == v1alpha1.PhaseSuspended {
		e.setCondition(v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspendedByUser, e.st.Message)
	} else {
		e.setCondition(v1alpha1.ConditionSuspended, metav1.ConditionFalse, v1alpha1.ReasonNotSuspended, "spec.suspend is false")
	}
	if phase != v1alpha1.PhaseSucceeded {
		e.setCondition(v1alpha1.ConditionSucceeded, metav1.ConditionFalse, v1alpha1.ReasonNotFinished, "the loop has not finished")
	}
	if phase != v1alpha1.PhaseFailed {
		e.setCondition(v1alpha1.ConditionFailed, metav1.ConditionFalse, v1alpha1.ReasonNoFailure, "the loop has not failed")
	}
	if p, k := e.spec.PlateauOrDefault(), e.st.ConsecutiveNonImprovements; k >= p.Rounds {
		next := "the loop continues"
		if p.Action == v1alpha1.PlateauStop {
			next = "plateau.action is Stop"
		}
		e.setCondition(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonPlateau,
			fmt.Sprintf("no improvement in %d consecutive rounds; %s", k, next))
	} else {
		e.setCondition(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonImproving, "improving or within the plateau window")
	}
	for i := range e.st.Conditions {
		e.st.Conditions[i].ObservedGeneration = gen
	}
}

func (e *engine) setCondition(t string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&e.st.Conditions, metav1.Condition{
		Type: t, Status: s, Reason: reason, Message: text.Truncate(text.Printable(msg), maxConditionMessage), LastTransitionTime: e.now,
	})
}
