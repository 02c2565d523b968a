package controllers

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
)

// announce tells the human on the loop what changed, once the new status is
// stored: an event for every step that started, every verdict and every
// phase change, and the Prometheus metrics.
func (r *AutoResearchReconciler) announce(ar *v1alpha1.AutoResearch, old *v1alpha1.AutoResearchStatus, actions []round.Action) {
	cur := &ar.Status
	for _, rec := range round.Finished(old, cur) {
		r.Recorder.Event(ar, verdictEventType(rec.Verdict), verdictReason(rec.Verdict), roundMessage(ar, rec))
		recordRoundMetrics(ar, rec)
	}
	if cr := cur.CurrentRound; cr != nil && cr.StepState == v1alpha1.StepRunning {
		if p := old.CurrentRound; p == nil || p.Number != cr.Number || p.Step != cr.Step || p.StepState != cr.StepState {
			r.Recorder.Event(ar, corev1.EventTypeNormal, "StepStarted", cr.Tasks[stepIndex(cr.Step)])
		}
	}
	if cur.Phase != old.Phase {
		eventType := corev1.EventTypeNormal
		if cur.Phase == v1alpha1.PhaseFailed {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Event(ar, eventType, string(cur.Phase), cur.Message)
	}
	for _, a := range actions {
		if a.Type == round.ActionWarn {
			r.Recorder.Event(ar, corev1.EventTypeWarning, a.Reason, a.Message)
		}
	}
	recordExperimentMetrics(ar, old)
}

func roundMessage(ar *v1alpha1.AutoResearch, rec v1alpha1.RoundRecord) string {
	m := ar.Spec.Eval.Metric
	msg := round.Headline(m, ar.Spec.MaxRounds, rec)
	if rec.Round == 0 {
		return msg
	}
	if b := ar.Status.Best; b != nil {
		msg += fmt.Sprintf("; best so far %s=%s (round %d)", m, b.Value, b.Round)
	}
	if rec.Insight != "" {
		msg += ". " + rec.Insight
	}
	return msg
}

func verdictEventType(v v1alpha1.Verdict) string {
	switch v {
	case v1alpha1.VerdictImproved, v1alpha1.VerdictBaseline, v1alpha1.VerdictNotImproved, v1alpha1.VerdictWithinNoise:
		return corev1.EventTypeNormal
	}
	return corev1.EventTypeWarning
}

// verdictReason is a verdict in CamelCase: not_improved → NotImproved.
func verdictReason(v v1alpha1.Verdict) string {
	var b strings.Builder
	for _, part := range strings.Split(string(v), "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

func stepIndex(s v1alpha1.Step) int {
	for i, step := range []v1alpha1.Step{v1alpha1.StepResearcher, v1alpha1.StepCompliance, v1alpha1.StepTrain, v1alpha1.StepEval, v1alpha1.StepGit, v1alpha1.StepTermination} {
		if step == s {
			return i
		}
	}
	return 0
}
