package round

import (
	"slices"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// Ledger statuses of experiences.md.
const (
	ledgerRunning       = "running"
	ledgerCompleted     = "completed"
	ledgerTargetReached = "target_reached"
)

// roundRecord is the finished candidate's entry for the history and the
// ledger; in a round of several candidates it names the candidate.
func roundRecord(cr *v1alpha1.RoundStatus, c *v1alpha1.CandidateStatus) v1alpha1.RoundRecord {
	rec := v1alpha1.RoundRecord{
		Round: cr.Number, Strategy: c.Strategy, Compliance: c.Compliance, ComplianceMessage: c.ComplianceMessage,
		Value: c.Value, Verdict: c.Verdict, Readings: c.Readings, Insight: c.Insight, Note: cr.Note, Durations: c.Durations,
	}
	if len(cr.Candidates) > 1 {
		rec.Candidate = CandidateName(c.Index)
	}
	return rec
}

// roundLedger is the rows of the round whose git step is starting, one per
// candidate, with the header as it will stand after the round. A row's
// commit is its sealed candidate, which its candidate ref keeps; the
// winner's is left empty: the git step fills in the commit it makes. The
// winner's row, or the first candidate's, is the update's Round; the
// others are its Others, with the baseline's row when the round's
// Researchers started, with spec.pipeline, before the baseline was
// measured, so that no preparation of theirs could write it.
func roundLedger(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus) *steps.LedgerUpdate {
	cr := st.CurrentRound
	after := st.DeepCopy()
	after.CompletedRounds = cr.Number
	w := Winner(cr)
	memory := cr.Candidates[0].MemoryGB
	if w != nil {
		after.Best = &v1alpha1.BestResult{Round: cr.Number, Value: w.Value}
		memory = w.MemoryGB
	}
	u := ledgerUpdate(spec, after, ledgerRunning, nil, memory)
	for i := range cr.Candidates {
		c := &cr.Candidates[i]
		r := LedgerRound(roundRecord(cr, c))
		if c != w {
			r.Commit = c.Commit
		}
		if c == w || (w == nil && i == 0) {
			u.Round = &r
		} else {
			u.Others = append(u.Others, r)
		}
	}
	early := slices.ContainsFunc(cr.Candidates, func(c v1alpha1.CandidateStatus) bool { return c.Base != "" })
	for _, h := range st.History {
		// Times in the status are whole seconds: a round started in the
		// second the baseline was measured may have started before it.
		if early && h.Round == 0 && h.CompletionTime != nil && cr.StartTime != nil && !h.CompletionTime.Before(cr.StartTime) {
			u.Others = append(u.Others, LedgerRound(h))
		}
	}
	return u
}

// baselineLedger is the baseline's row 0, which the preparation of the
// round that starts once the baseline is measured writes: round 0 has no
// git step of its own to do it. That is round 1, or the round after a
// baseline measured again, which started the moment the baseline's record
// was completed.
func baselineLedger(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus, cr *v1alpha1.RoundStatus) *steps.LedgerUpdate {
	for _, h := range st.History {
		if h.Round != 0 {
			continue
		}
		if cr.Number == 1 || (h.CompletionTime != nil && cr.StartTime != nil && h.CompletionTime.Equal(cr.StartTime)) {
			return ledgerUpdate(spec, st, ledgerRunning, &h, "")
		}
	}
	return nil
}

// ledgerUpdate is the ledger header as st has it, with the experiences.md
// status ledgerStatus, and rec, when not nil, as a row with the peak memory
// training reported.
func ledgerUpdate(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus, ledgerStatus string, rec *v1alpha1.RoundRecord, memoryGB string) *steps.LedgerUpdate {
	u := &steps.LedgerUpdate{
		Metric: spec.Eval.Metric, Rounds: st.CompletedRounds, MaxRounds: spec.MaxRounds,
		Status: ledgerStatus, MemoryGB: memoryGB,
	}
	if b := st.Best; b != nil {
		u.Best, u.BestRound = b.Value, b.Round
	}
	if rec != nil {
		r := LedgerRound(*rec)
		u.Round = &r
	}
	return u
}

// LedgerRound is a round's ledger row; its insight ends with the readings
// spec.eval.constraints limit.
func LedgerRound(rec v1alpha1.RoundRecord) steps.LedgerRound {
	insight := rec.Insight
	if rec.Readings != "" && rec.Verdict != v1alpha1.VerdictConstraintFailed {
		insight = strings.TrimSpace(insight + " (readings: " + rec.Readings + ")")
	}
	return steps.LedgerRound{
		Round: rec.Round, Candidate: rec.Candidate, Strategy: rec.Strategy, Compliance: ComplianceCell(rec.Compliance, rec.ComplianceMessage),
		Value: rec.Value, Verdict: string(rec.Verdict), Insight: insight, Note: rec.Note, Commit: rec.Commit,
	}
}

// Compliance cells of experiences.md, as the seed writes them.
const (
	cellPassed = "✅"
	cellFiles  = "❌ files: "
	cellParity = "❌ parity: "
)

// ComplianceCell is a compliance result as its ledger cell: "✅", or "❌
// files: " or "❌ parity: " and what was broken.
func ComplianceCell(r v1alpha1.ComplianceResult, message string) string {
	switch r {
	case v1alpha1.CompliancePassed:
		return cellPassed
	case v1alpha1.ComplianceFilesViolated:
		return cellFiles + message
	case v1alpha1.ComplianceParityFailed:
		return cellParity + message
	}
	return ""
}

// ParseComplianceCell reads a ledger cell back into a compliance result
// and its message; a cell it does not know reads as no result.
func ParseComplianceCell(cell string) (v1alpha1.ComplianceResult, string) {
	switch {
	case cell == cellPassed:
		return v1alpha1.CompliancePassed, ""
	case strings.HasPrefix(cell, cellFiles):
		return v1alpha1.ComplianceFilesViolated, strings.TrimPrefix(cell, cellFiles)
	case strings.HasPrefix(cell, cellParity):
		return v1alpha1.ComplianceParityFailed, strings.TrimPrefix(cell, cellParity)
	}
	return "", ""
}
