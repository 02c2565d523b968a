package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/width"
	"sigs.k8s.io/yaml"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// StatusView is what the status table is made from, locally and on a
// cluster.
type StatusView struct {
	Name string
	// WhereLabel and Where say where the experiment lives: its worktree
	// locally, its workspace claim on a cluster.
	WhereLabel, Where string
	Spec              v1alpha1.AutoResearchSpec
	Status            v1alpha1.AutoResearchStatus
	// Notes are guidance notes added beside spec.guidance (local runs).
	Notes []string
	// Rows are the rounds of the table: the whole ledger locally, the
	// status history on a cluster.
	Rows []workspace.LedgerRow
	// Footer, when set, ends the table, such as which rounds it leaves out.
	Footer string
}

// HistoryRows are the rounds of the status history as ledger rows, for
// the status table where the ledger is out of reach.
func HistoryRows(spec v1alpha1.AutoResearchSpec, st v1alpha1.AutoResearchStatus) []workspace.LedgerRow {
	rows := make([]workspace.LedgerRow, 0, len(st.History))
	for _, h := range st.History {
		rows = append(rows, workspace.NewLedgerRow(spec.Eval.Metric, round.LedgerRound(h)))
	}
	return rows
}

// StatusText renders the status report: a summary, then the rounds as a
// table.
func StatusText(v StatusView) string {
	out := &strings.Builder{}
	s, st := v.Spec, v.Status
	m := s.Eval.Metric
	fmt.Fprintf(out, "Experiment: %s\n", v.Name)
	fmt.Fprintf(out, "%-11s %s (branch autoresearch/%s)\n", v.WhereLabel+":", v.Where, v.Name)
	fmt.Fprintf(out, "Phase:      %s — %s\n", st.Phase, st.Message)
	fmt.Fprintf(out, "Round:      %s done\n", workspace.RoundsDone(int(st.CompletedRounds), int(s.MaxRounds)))
	if b := st.Best; b != nil {
		fmt.Fprintf(out, "Best:       %s=%s (round %d, commit %.7s)\n", m, b.Value, b.Round, b.Commit)
	}
	if b := st.Baseline; b != nil && b.Value != "" {
		noise := ""
		switch {
		case b.Samples > 1:
			noise = fmt.Sprintf(" ± %s over %d runs", b.Stddev, b.Samples)
		case b.Samples == 0 && len(b.Values) > 0:
			noise = fmt.Sprintf(" (given; the preflight measured %s)", b.Values[0])
		}
		fmt.Fprintf(out, "Baseline:   %s=%s%s\n", m, b.Value, noise)
	}
	if len(st.VerdictCounts) > 0 {
		var parts []string
		for _, v := range []v1alpha1.Verdict{
			v1alpha1.VerdictImproved, v1alpha1.VerdictSuperseded, v1alpha1.VerdictNotImproved, v1alpha1.VerdictWithinNoise,
			v1alpha1.VerdictNoChange, v1alpha1.VerdictStale, v1alpha1.VerdictConflict, v1alpha1.VerdictQueued,
			v1alpha1.VerdictComplianceFailed, v1alpha1.VerdictParityFailed, v1alpha1.VerdictTrainFailed,
			v1alpha1.VerdictTrainTimeout, v1alpha1.VerdictEvalFailed, v1alpha1.VerdictConstraintFailed, v1alpha1.VerdictOverfit, v1alpha1.VerdictResearcherFailed,
		} {
			if n := st.VerdictCounts[v]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", v, n))
			}
		}
		fmt.Fprintf(out, "Verdicts:   %s\n", strings.Join(parts, ", "))
	}
	if h := st.Holdout; h != nil {
		// The user's view only: the Researcher never sees these.
		var trend []string
		for _, r := range h.Readings {
			trend = append(trend, fmt.Sprintf("R%s %s (%s)", round.CandidateLabel(r.Round, r.Candidate), r.Value, r.Verdict))
		}
		fmt.Fprintf(out, "Holdout:    %s=%s (best, round %d; hidden from the Researcher)\n", s.HoldoutMetric(), h.Best, h.BestRound)
		if len(trend) > 0 {
			fmt.Fprintf(out, "            trend: %s\n", strings.Join(trend, ", "))
		}
	}
	u := st.Usage
	fmt.Fprintf(out, "Usage:      researcher %ds, GPU %ds", u.ResearcherSeconds, u.GPUSeconds)
	if u.InputTokens+u.OutputTokens > 0 {
		fmt.Fprintf(out, ", tokens %d in / %d out", u.InputTokens, u.OutputTokens)
	}
	if u.Cost != "" {
		fmt.Fprintf(out, ", cost $%s", u.Cost)
	}
	fmt.Fprintln(out)
	if len(v.Notes)+len(s.Guidance) > 0 {
		fmt.Fprintln(out, "Guidance:")
		for _, n := range append(append([]string(nil), s.Guidance...), v.Notes...) {
			fmt.Fprintf(out, "  - %s\n", n)
		}
	}
	if cr := st.CurrentRound; cr != nil {
		fmt.Fprintf(out, "\nCurrent round %d (%s, %s):\n", cr.Number, cr.Step, cr.StepState)
		for _, t := range cr.Tasks {
			fmt.Fprintf(out, "  %s\n", t)
		}
		candidateSteps(out, cr)
	}
	if nr := st.NextRound; nr != nil {
		fmt.Fprintf(out, "\nNext round %d, started early (%s, %s):\n", nr.Number, nr.Step, nr.StepState)
		candidateSteps(out, nr)
	}
	fmt.Fprintln(out)
	table := [][]string{{"ROUND", "COMPLIANCE", "RESULT", "VERDICT", "STRATEGY", "INSIGHT", "NOTE"}}
	for _, r := range v.Rows {
		table = append(table, []string{strconv.Itoa(r.Round) + r.Candidate, tableCell(r.Compliance, 30), tableCell(r.Result, 24), tableCell(r.Verdict, 18), tableCell(r.Strategy, 40), tableCell(r.Insight, 60), tableCell(r.Note, 30)})
	}
	writeTable(out, table)
	if v.Footer != "" {
		fmt.Fprintln(out, v.Footer)
	}
	// The texts come from Researchers, and from states written before
	// the engine kept them printable.
	return text.Printable(out.String())
}

// writeTable writes rows in columns two spaces apart, padded by the width
// a terminal gives each cell, so that ✅ and ❌, two columns wide, keep the
// columns after them aligned. text/tabwriter counts them as one.
func writeTable(out *strings.Builder, rows [][]string) {
	var widths []int
	for _, row := range rows {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], displayWidth(c))
		}
	}
	for _, row := range rows {
		for i, c := range row {
			out.WriteString(c)
			if i < len(row)-1 {
				out.WriteString(strings.Repeat(" ", widths[i]-displayWidth(c)+2))
			}
		}
		out.WriteString("\n")
	}
}

// displayWidth is how many terminal columns s takes: two for East Asian
// wide and full-width characters (emoji among them), none for combining
// marks and format characters such as the emoji variation selector.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		case width.LookupRune(r).Kind() == width.EastAsianWide, width.LookupRune(r).Kind() == width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}

// tableCell shortens a table cell to n characters.
func tableCell(s string, n int) string {
	if s == "" {
		return "-"
	}
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// CheckOutput refuses an -o that neither StatusOutput format names.
func CheckOutput(output string) error {
	if output != "" && output != "json" && output != "yaml" {
		return fmt.Errorf("unknown output format %q: use -o json or -o yaml, or leave -o out for the table", output)
	}
	return nil
}

// StatusOutput is st as `status -o json|yaml` prints it, or table() where
// output is "".
func StatusOutput(st *v1alpha1.AutoResearchStatus, output string, table func() string) ([]byte, error) {
	switch output {
	case "json":
		out, err := json.MarshalIndent(st, "", "  ")
		return append(out, '\n'), err
	case "yaml":
		return yaml.Marshal(st)
	case "":
		return []byte(table()), nil
	}
	return nil, CheckOutput(output)
}

// candidateSteps lists the candidates of a round of several: the step each
// is in or waits for, and its verdict once known.
func candidateSteps(out *strings.Builder, cr *v1alpha1.RoundStatus) {
	if len(cr.Candidates) < 2 {
		return
	}
	for _, c := range cr.Candidates {
		step := string(cmp.Or(c.Step, cr.Step))
		if c.Verdict != "" {
			step = string(c.Verdict)
		}
		fmt.Fprintf(out, "  %s: %s", round.CandidateLabel(cr.Number, round.CandidateName(c.Index)), step)
		if c.Strategy != "" {
			fmt.Fprintf(out, " — %s", text.Truncate(c.Strategy, 80))
		}
		fmt.Fprintln(out)
	}
}
