package controllers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// TestEveryRoundHasItsVerdictEvent plays fifty rounds with the same verdict
// in quick succession, as a Researcher that changes nothing would. An event
// recorder with a spam filter (the core API's stops after about 25 events
// of one object) or one that folds look-alike events into a series would
// lose some; every round's verdict and step events must be there, the
// fiftieth included, each with its own message.
func TestEveryRoundHasItsVerdictEvent(t *testing.T) {
	const rounds = 50
	ns := newNamespace(t)
	startManager(t)
	createNamed(t, ns, experiment, func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = rounds })
	for n := 1; n <= rounds; n++ {
		finishPod(t, ns, podName(n, stepResearcher), 0, "")
		finishPod(t, ns, podName(n, stepCompliance), 0, result(t, steps.ComplianceResult{NoChange: true}))
		finishPod(t, ns, podName(n, stepGit), 0, result(t, steps.GitResult{}))
	}
	finishPod(t, ns, podName(rounds, stepFinish), 0, result(t, steps.GitResult{Commit: "f1"}))
	waitStatus(t, ns, experiment, "the end", func(s v1alpha1.AutoResearchStatus) bool { return s.Phase == v1alpha1.PhaseSucceeded })

	for n := 1; n <= rounds; n++ {
		verdict := fmt.Sprintf("Round %d/%d: no val_bpb — no_change", n, rounds)
		if !hasEvent(t, ns, experiment, "NoChange", verdict) {
			t.Errorf("no verdict event for round %d", n)
		}
		if !hasEvent(t, ns, experiment, reasonStepStarted, fmt.Sprintf("R%d S2: Compliance", n)) {
			t.Errorf("no event for round %d's compliance step", n)
		}
	}
	if !hasEvent(t, ns, experiment, string(v1alpha1.PhaseSucceeded), "") {
		t.Error("no Succeeded event")
	}
	var folded []string
	for _, e := range experimentEvents(t, ns, experiment) {
		if e.Count > 1 || e.Series != nil && e.Series.Count > 1 {
			folded = append(folded, e.Reason+": "+e.Message)
		}
	}
	if len(folded) > 0 {
		t.Errorf("events folded into a series, their later messages lost:\n%s", strings.Join(folded, "\n"))
	}
}
