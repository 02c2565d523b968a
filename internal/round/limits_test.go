package round

import (
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// TestLongTextsFitTheStatus feeds a Strategy and a compliance message
// longer than the API allows, as a Researcher can make them: the status
// keeps them cut to size, in the round and in its history, so that it can
// still be written.
func TestLongTextsFitTheStatus(t *testing.T) {
	d := newDriver(t, givenBaseline)
	d.start()
	long := strings.Repeat("created fixed file golden/override.txt, ", 200)
	d.next(researched(1, long))
	d.next(compliance(1, ComplianceResult{Violation: long, Strategy: long}))
	check := func(where, field, s string, limit int) {
		t.Helper()
		if len(s) > limit {
			t.Errorf("%s: %s has %d bytes, the API allows %d", where, field, len(s), limit)
		}
		if s == "" {
			t.Errorf("%s: %s is empty, want it cut, not dropped", where, field)
		}
	}
	cr := d.st.CurrentRound
	for _, task := range cr.Tasks[:2] {
		check("the round", "a task", task, maxTaskLength)
	}
	c := cr.Candidates[0]
	check("the round", "the strategy", c.Strategy, maxStrategyLength)
	check("the round", "the compliance message", c.ComplianceMessage, maxComplianceMessage)
	check("the round", "the insight", c.Insight, maxInsightLength)
	d.next(rolledBack(1))
	h := d.st.History[len(d.st.History)-1]
	if h.Round != 1 || h.Verdict != v1alpha1.VerdictComplianceFailed {
		t.Fatalf("the last record is round %d, %s; want round 1, compliance_failed", h.Round, h.Verdict)
	}
	check("the history", "the strategy", h.Strategy, maxStrategyLength)
	check("the history", "the compliance message", h.ComplianceMessage, maxComplianceMessage)
	check("the history", "the insight", h.Insight, maxInsightLength)
}
