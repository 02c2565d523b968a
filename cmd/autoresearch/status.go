package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
)

func newStatusCommand() *cobra.Command {
	var flags experimentFlags
	cmd := &cobra.Command{
		Use:   "status -f experiment.yaml",
		Short: "Print the experiment's state: phase, round, best, and the per-round table",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			x, err := flags.load(cmd.Context())
			if err != nil {
				return err
			}
			saved, ok, err := x.LoadSaved()
			if err != nil {
				return err
			}
			if !ok {
				fmt.Fprintf(cmd.OutOrStdout(), "%s has not started: run `autoresearch run -f %s`.\n", x.Object.Name, flags.file)
				return nil
			}
			_, err = io.WriteString(cmd.OutOrStdout(), formatStatus(x, saved))
			return err
		},
	}
	flags.register(cmd)
	return cmd
}

// formatStatus renders the status report: a summary, then the ledger as a
// table.
func formatStatus(x *runner.Experiment, saved runner.Saved) string {
	out := &strings.Builder{}
	s, st := x.Object.Spec, saved.Status
	m := s.Eval.Metric
	fmt.Fprintf(out, "Experiment: %s\n", x.Object.Name)
	fmt.Fprintf(out, "Worktree:   %s (branch autoresearch/%s)\n", x.Worktree, x.Object.Name)
	fmt.Fprintf(out, "Phase:      %s — %s\n", st.Phase, st.Message)
	fmt.Fprintf(out, "Round:      %d done / %d\n", st.CompletedRounds, s.MaxRounds)
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
			v1alpha1.VerdictImproved, v1alpha1.VerdictNotImproved, v1alpha1.VerdictWithinNoise,
			v1alpha1.VerdictComplianceFailed, v1alpha1.VerdictParityFailed, v1alpha1.VerdictTrainFailed,
			v1alpha1.VerdictTrainTimeout, v1alpha1.VerdictEvalFailed, v1alpha1.VerdictResearcherFailed,
		} {
			if n := st.VerdictCounts[v]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", v, n))
			}
		}
		fmt.Fprintf(out, "Verdicts:   %s\n", strings.Join(parts, ", "))
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
	if len(saved.Notes)+len(s.Guidance) > 0 {
		fmt.Fprintln(out, "Guidance:")
		for _, n := range append(append([]string(nil), s.Guidance...), saved.Notes...) {
			fmt.Fprintf(out, "  - %s\n", n)
		}
	}
	if cr := st.CurrentRound; cr != nil {
		fmt.Fprintf(out, "\nCurrent round %d (%s, %s):\n", cr.Number, cr.Step, cr.StepState)
		for _, t := range cr.Tasks {
			fmt.Fprintf(out, "  %s\n", t)
		}
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROUND\tCOMPLIANCE\tRESULT\tVERDICT\tSTRATEGY\tINSIGHT\tNOTE")
	for _, r := range saved.Ledger.Rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Round, cell(r.Compliance, 30), cell(r.Result, 24), cell(r.Verdict, 18), cell(r.Strategy, 40), cell(r.Insight, 60), cell(r.Note, 30))
	}
	// Flushing into a strings.Builder cannot fail.
	_ = tw.Flush()
	return out.String()
}

// cell shortens a table cell to n characters.
func cell(s string, n int) string {
	if s == "" {
		return "-"
	}
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
