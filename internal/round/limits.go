package round

import (
	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// The lengths the API allows the status's texts that steps' output fills
// (api/v1alpha1). A longer one would make the whole status unwritable, and
// a Researcher could stop the experiment by writing a long Strategy or by
// causing a long compliance message.
const (
	maxTaskLength        = 1024
	maxStrategyLength    = 4096
	maxComplianceMessage = 2048
	maxInsightLength     = 4096
)

// fitStatus cuts the current round's and the history's texts to what the
// API allows.
func (e *engine) fitStatus() {
	for _, cr := range []*v1alpha1.RoundStatus{e.st.CurrentRound, e.st.NextRound} {
		if cr == nil {
			continue
		}
		for i := range cr.Tasks {
			cr.Tasks[i] = fit(cr.Tasks[i], maxTaskLength)
		}
		for i := range cr.Candidates {
			c := &cr.Candidates[i]
			c.Strategy = fit(c.Strategy, maxStrategyLength)
			c.ComplianceMessage = fit(c.ComplianceMessage, maxComplianceMessage)
			c.Insight = fit(c.Insight, maxInsightLength)
		}
	}
	for i := range e.st.History {
		fitRecord(&e.st.History[i])
	}
}

func fitRecord(r *v1alpha1.RoundRecord) {
	r.Strategy = fit(r.Strategy, maxStrategyLength)
	r.ComplianceMessage = fit(r.ComplianceMessage, maxComplianceMessage)
	r.Insight = fit(r.Insight, maxInsightLength)
}

// fit is s, which a step's output filled, printable and cut to n bytes.
func fit(s string, n int) string {
	return text.Truncate(text.Printable(s), n)
}
