// Package report turns what a local run keeps (its status, its ledger and
// the kept commits) into a research report: a progress plot, report.md, a
// self-contained report.html and results.json.
package report

import (
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// Input is what a report is made from.
type Input struct {
	Name   string
	Spec   v1alpha1.AutoResearchSpec
	Status v1alpha1.AutoResearchStatus
	Ledger workspace.Ledger
	// Notes are the guidance notes added to the running experiment.
	Notes []string
	// Diffs are the kept rounds' changes to the variable files, by round.
	Diffs map[int32]string
}

// Report is the research as results.json holds it.
type Report struct {
	Experiment       string             `json:"experiment"`
	ResearchQuestion string             `json:"researchQuestion"`
	Metric           string             `json:"metric"`
	Direction        v1alpha1.Direction `json:"direction"`
	Target           string             `json:"target,omitempty"`
	Phase            v1alpha1.Phase     `json:"phase,omitempty"`
	// StopReason is why a finished run stopped, such as MaxRoundsReached.
	StopReason      string                     `json:"stopReason,omitempty"`
	Message         string                     `json:"message,omitempty"`
	CompletedRounds int32                      `json:"completedRounds"`
	MaxRounds       int32                      `json:"maxRounds"`
	Baseline        *v1alpha1.BaselineResult   `json:"baseline,omitempty"`
	Best            *v1alpha1.BestResult       `json:"best,omitempty"`
	Improvement     string                     `json:"improvement,omitempty"`
	VerdictCounts   map[v1alpha1.Verdict]int32 `json:"verdictCounts,omitempty"`
	Usage           v1alpha1.Usage             `json:"usage"`
	Guidance        []string                   `json:"guidance,omitempty"`
	Rounds          []Round                    `json:"rounds"`
	CurrentRound    *v1alpha1.RoundStatus      `json:"currentRound,omitempty"`
	// HoldoutMetric names the hidden holdout's value, and Holdout is its
	// trend, for the user only; both are empty without a holdout.
	HoldoutMetric string                  `json:"holdoutMetric,omitempty"`
	Holdout       *v1alpha1.HoldoutStatus `json:"holdout,omitempty"`
}

// Round is one finished round: its ledger row, and what the status
// history adds while it still holds the round.
type Round struct {
	Round int32 `json:"round"`
	// Candidate names the candidate of a round of several: a, b, …
	Candidate  string `json:"candidate,omitempty"`
	Verdict    string `json:"verdict"`
	Compliance string `json:"compliance,omitempty"`
	// Value is the metric as a decimal string; empty when the round had none.
	Value string `json:"value,omitempty"`
	// Kept says the round improved on the best and was committed.
	Kept bool `json:"kept"`
	// BestSoFar is the best value after the round.
	BestSoFar      string                  `json:"bestSoFar,omitempty"`
	Strategy       string                  `json:"strategy,omitempty"`
	Insight        string                  `json:"insight,omitempty"`
	Note           string                  `json:"note,omitempty"`
	Commit         string                  `json:"commit,omitempty"`
	Durations      *v1alpha1.StepDurations `json:"durations,omitempty"`
	StartTime      *metav1.Time            `json:"startTime,omitempty"`
	CompletionTime *metav1.Time            `json:"completionTime,omitempty"`
	// Timeline says when each of the round's steps started.
	Timeline []v1alpha1.StepStart `json:"timeline,omitempty"`
	// Diff is a kept round's change to the variable files.
	Diff string `json:"diff,omitempty"`
	// Holdout is the hidden holdout's value of the round, where it was
	// measured and status.holdout still holds it.
	Holdout string `json:"holdout,omitempty"`
}

// Build assembles the report from its input.
func Build(in Input) Report {
	s, st := in.Spec, in.Status
	r := Report{
		Experiment:       in.Name,
		ResearchQuestion: strings.TrimSpace(s.ResearchQuestion),
		Metric:           s.Eval.Metric,
		Direction:        s.Eval.Direction,
		Target:           string(s.Target),
		Phase:            st.Phase,
		Message:          text.Printable(st.Message),
		CompletedRounds:  st.CompletedRounds,
		MaxRounds:        s.MaxRounds,
		Baseline:         st.Baseline,
		Best:             st.Best,
		VerdictCounts:    st.VerdictCounts,
		Usage:            st.Usage,
		Guidance:         append(append([]string(nil), s.Guidance...), in.Notes...),
		CurrentRound:     st.CurrentRound,
		Rounds:           []Round{},
	}
	for _, t := range []string{v1alpha1.ConditionSucceeded, v1alpha1.ConditionFailed} {
		if c := meta.FindStatusCondition(st.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			r.StopReason = c.Reason
		}
	}
	if st.Baseline != nil && st.Best != nil {
		r.Improvement = metric.Improvement(st.Baseline.Value, st.Best.Value)
	}
	holdout := map[string]string{}
	if st.Holdout != nil && s.Holdout != nil {
		r.HoldoutMetric, r.Holdout = s.HoldoutMetric(), st.Holdout
		for _, h := range st.Holdout.Readings {
			holdout[round.CandidateLabel(h.Round, h.Candidate)] = h.Value
		}
	}
	history := map[string]v1alpha1.RoundRecord{}
	for _, h := range st.History {
		history[round.CandidateLabel(h.Round, h.Candidate)] = h
	}
	best := ""
	if st.Baseline != nil {
		best = st.Baseline.Value
	}
	for _, row := range in.Ledger.Rows {
		n := int32(row.Round)
		label := round.CandidateLabel(n, row.Candidate)
		rd := Round{
			Round: n, Candidate: row.Candidate, Verdict: row.Verdict, Compliance: row.Compliance, Value: resultValue(row.Result),
			Strategy: row.Strategy, Insight: row.Insight, Note: row.Note, Holdout: holdout[label],
		}
		if h, ok := history[label]; ok {
			if h.Value != "" {
				rd.Value = h.Value
			}
			rd.Commit = h.Commit
			if h.Durations != (v1alpha1.StepDurations{}) {
				rd.Durations = &h.Durations
			}
			rd.StartTime, rd.CompletionTime, rd.Timeline = h.StartTime, h.CompletionTime, h.Timeline
		}
		switch v1alpha1.Verdict(rd.Verdict) {
		case v1alpha1.VerdictBaseline:
			if best == "" {
				best = rd.Value
			}
		case v1alpha1.VerdictImproved:
			rd.Kept = true
			best = rd.Value
			// The Researcher's text: shown, its escape sequences and
			// bidirectional controls written out, in every format.
			rd.Diff = text.Visible(in.Diffs[n])
		}
		rd.BestSoFar = best
		r.Rounds = append(r.Rounds, rd)
	}
	return r
}

// Label is how the report names the round: "3", or "3b" for a candidate
// of a round of several.
func (rd Round) Label() string { return round.CandidateLabel(rd.Round, rd.Candidate) }

// resultValue reads the value of a ledger result cell, "metric=value".
func resultValue(result string) string {
	_, v, ok := strings.Cut(result, "=")
	if !ok {
		return ""
	}
	v = strings.TrimSpace(v)
	if _, err := metric.ParseDecimal(v); err != nil {
		return ""
	}
	return v
}

// number parses a decimal string; ok is false for an empty, malformed or
// non-finite one.
func number(s string) (float64, bool) {
	v, err := metric.ParseDecimal(s)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}
