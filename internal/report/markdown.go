package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// Markdown renders report.md; plot is the progress plot's file name, next
// to it.
func (r Report) Markdown(plot string) string {
	b := &strings.Builder{}
	fmt.Fprintf(b, "# %s: research report\n\n", r.Experiment)
	fmt.Fprintf(b, "**Question:** %s\n\n", oneLine(r.ResearchQuestion))
	b.WriteString("## Outcome\n\n")
	for _, line := range r.outcome() {
		fmt.Fprintf(b, "- %s\n", line)
	}
	fmt.Fprintf(b, "\n![%s per round](%s)\n\n", r.Metric, plot)

	b.WriteString("## Rounds\n\n")
	if r.HoldoutMetric == "" {
		fmt.Fprintf(b, "| Round | Verdict | %s | Best so far | Strategy | Insight |\n|---|---|---|---|---|---|\n", r.Metric)
	} else {
		fmt.Fprintf(b, "| Round | Verdict | %s | Best so far | Holdout %s | Strategy | Insight |\n|---|---|---|---|---|---|---|\n", r.Metric, r.HoldoutMetric)
	}
	for _, rd := range r.Rounds {
		holdout := ""
		if r.HoldoutMetric != "" {
			holdout = " " + cell(rd.Holdout) + " |"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |%s %s | %s |\n", rd.Label(), cell(rd.Verdict), cell(rd.Value), cell(rd.BestSoFar), holdout, cell(rd.Strategy), cell(rd.Insight))
	}

	b.WriteString("\n## Kept changes\n")
	kept := false
	for _, rd := range r.Rounds {
		if !rd.Kept {
			continue
		}
		kept = true
		fmt.Fprintf(b, "\n### Round %s: %s\n\n", rd.Label(), oneLine(rd.Strategy))
		fmt.Fprintf(b, "%s=%s, commit %s.\n\n", r.Metric, rd.Value, orDash(text.ShortCommit(rd.Commit)))
		if rd.Diff == "" {
			b.WriteString("No diff: the status history no longer holds this round's commits.\n")
			continue
		}
		diff := strings.TrimRight(rd.Diff, "\n")
		fence := "```"
		for strings.Contains(diff, fence) {
			fence += "`"
		}
		fmt.Fprintf(b, "%sdiff\n%s\n%s\n", fence, diff, fence)
	}
	if !kept {
		b.WriteString("\nNo round improved on the baseline.\n")
	}

	if insights := r.insights(); len(insights) > 0 {
		b.WriteString("\n## Insights\n\n")
		for _, line := range insights {
			fmt.Fprintf(b, "- %s\n", line)
		}
	}
	if len(r.Guidance) > 0 {
		b.WriteString("\n## Guidance\n\n")
		for _, g := range r.Guidance {
			fmt.Fprintf(b, "- %s\n", oneLine(g))
		}
	}
	b.WriteString("\n## Usage\n\n")
	for _, line := range r.usage() {
		fmt.Fprintf(b, "- %s\n", line)
	}
	return b.String()
}

// outcome is the report's summary, one fact a line.
func (r Report) outcome() []string {
	var lines []string
	if b := r.Best; b != nil {
		lines = append(lines, fmt.Sprintf("Best: %s = %s (round %d, commit %s)", r.Metric, b.Value, b.Round, orDash(text.ShortCommit(b.Commit))))
	}
	if b := r.Baseline; b != nil && b.Value != "" {
		noise := ""
		if b.Samples > 1 {
			noise = fmt.Sprintf(" ± %s over %d runs", b.Stddev, b.Samples)
		}
		lines = append(lines, fmt.Sprintf("Baseline: %s = %s%s", r.Metric, b.Value, noise))
	}
	if r.Improvement != "" {
		lines = append(lines, "Improvement: "+r.Improvement)
	}
	if r.Target != "" {
		lines = append(lines, fmt.Sprintf("Target: %s = %s", r.Metric, r.Target))
	}
	if h := r.Holdout; h != nil && h.Best != "" {
		lines = append(lines, fmt.Sprintf("Hidden holdout: %s = %s for the best code (round %d); %d candidates overfit",
			r.HoldoutMetric, h.Best, h.BestRound, r.VerdictCounts[v1alpha1.VerdictOverfit]))
	}
	lines = append(lines, fmt.Sprintf("Rounds: %d / %d", r.CompletedRounds, r.MaxRounds))
	state := string(r.Phase)
	if r.StopReason != "" {
		state += " (" + r.StopReason + ")"
	}
	if r.Message != "" {
		state += ": " + r.Message
	}
	if state != "" {
		lines = append(lines, "Status: "+state)
	}
	if len(r.VerdictCounts) > 0 {
		var parts []string
		for v, n := range r.VerdictCounts {
			parts = append(parts, fmt.Sprintf("%s %d", v, n))
		}
		sort.Strings(parts)
		lines = append(lines, "Verdicts: "+strings.Join(parts, ", "))
	}
	return lines
}

// insights are the rounds' lessons, baseline excluded.
func (r Report) insights() []string {
	var lines []string
	for _, rd := range r.Rounds {
		if rd.Round == 0 || rd.Insight == "" {
			continue
		}
		lines = append(lines, fmt.Sprintf("R%s %s: %s — %s", rd.Label(), rd.Verdict, oneLine(rd.Strategy), oneLine(rd.Insight)))
	}
	return lines
}

func (r Report) usage() []string {
	u := r.Usage
	lines := []string{
		fmt.Sprintf("Researcher: %ds", u.ResearcherSeconds),
		fmt.Sprintf("GPU (training and evaluation): %ds", u.GPUSeconds),
	}
	if u.InputTokens+u.OutputTokens > 0 {
		lines = append(lines, fmt.Sprintf("Tokens: %d in / %d out", u.InputTokens, u.OutputTokens))
	}
	if u.Cost != "" {
		lines = append(lines, "Cost: $"+u.Cost)
	}
	return lines
}

// cell is a value as a Markdown table cell holds it.
func cell(s string) string {
	if s == "" {
		return "—"
	}
	return workspace.StrategyCell(s)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
