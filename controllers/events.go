package controllers

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
)

// Event reasons of the operator's own, besides the verdicts (in CamelCase),
// the phases and the API's condition reasons.
const (
	reasonStepStarted   = "StepStarted"
	reasonStepRetried   = "StepRetried"
	reasonChildConflict = "ChildConflict"
	reasonQueued        = "Queued"
	reasonStepBlocked   = "StepBlocked"
	reasonCreateRefused = "CreateRefused"
	reasonClaimRetained = "WorkspaceClaimRetained"
)

// Event actions: what the operator did, as events.k8s.io/v1 records it.
const (
	actionJudge   = "Judge"
	actionStart   = "Start"
	actionRetry   = "Retry"
	actionCreate  = "Create"
	actionAdvance = "Advance"
	actionWarn    = "Warn"
	actionWait    = "Wait"
)

// announce tells the human on the loop what changed, once the new status is
// stored: an event for every step that started, every verdict and every
// phase change, and the Prometheus metrics.
func (r *AutoResearchReconciler) announce(ar *v1alpha1.AutoResearch, old *v1alpha1.AutoResearchStatus, actions []round.Action) {
	cur := &ar.Status
	for _, a := range actions {
		switch a.Type {
		case round.ActionReportRound:
			rec := *a.Record
			r.recorder.Eventf(ar, nil, verdictEventType(rec.Verdict), verdictReason(rec.Verdict), actionJudge, "%s", roundMessage(ar, rec))
			recordRoundMetrics(rec)
		case round.ActionWarn:
			r.recorder.Eventf(ar, nil, corev1.EventTypeWarning, a.Reason, actionWarn, "%s", a.Message)
		}
	}
	if cr := cur.CurrentRound; cr != nil && cr.StepState == v1alpha1.StepStateRunning {
		if p := old.CurrentRound; p == nil || p.Number != cr.Number || p.Step != cr.Step || p.StepState != cr.StepState {
			r.recorder.Eventf(ar, nil, corev1.EventTypeNormal, reasonStepStarted, actionStart, "%s", round.Task(cr.Tasks, cr.Step))
		}
	}
	if cur.Phase != old.Phase {
		eventType := corev1.EventTypeNormal
		if cur.Phase == v1alpha1.PhaseFailed {
			eventType = corev1.EventTypeWarning
		}
		r.recorder.Eventf(ar, nil, eventType, string(cur.Phase), actionAdvance, "%s", cur.Message)
	}
	recordExperimentMetrics(ar)
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
	case v1alpha1.VerdictImproved, v1alpha1.VerdictBaseline, v1alpha1.VerdictNotImproved, v1alpha1.VerdictWithinNoise, v1alpha1.VerdictNoChange:
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
