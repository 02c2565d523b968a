package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/autoresearch-dev/autoresearch-operator/internal/report"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
)

func newStatusCommand() *cobra.Command {
	var (
		flags  experimentFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "status -f experiment.yaml [-o json|yaml]",
		Short: "Print the experiment's state: phase, round, best, and the per-round table",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := report.CheckOutput(output); err != nil {
				return err
			}
			x, err := flags.load(cmd.Context())
			if err != nil {
				return err
			}
			saved, ok, err := x.LoadSaved()
			if err != nil {
				return err
			}
			if !ok {
				msg := fmt.Sprintf("%s has not started: run `autoresearch run -f %s`", x.Object.Name, flags.file)
				if output != "" {
					return errors.New(msg)
				}
				fmt.Fprintln(cmd.OutOrStdout(), msg+".")
				return nil
			}
			out, err := report.StatusOutput(&saved.Status, output, func() string { return formatStatus(x, saved) })
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	flags.register(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "", "print the status object as json or yaml instead of the table")
	return cmd
}

// formatStatus renders the status report: a summary, then the ledger as a
// table.
func formatStatus(x *runner.Experiment, saved runner.Saved) string {
	return report.StatusText(report.StatusView{
		Name: x.Object.Name, WhereLabel: "Worktree", Where: x.Worktree,
		Spec: x.Object.Spec, Status: saved.Status, Notes: saved.Notes, Rows: saved.Ledger.Rows,
	})
}
