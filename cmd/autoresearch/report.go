package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/autoresearch-dev/autoresearch-operator/internal/report"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

func newReportCommand() *cobra.Command {
	var (
		flags experimentFlags
		dir   string
	)
	cmd := &cobra.Command{
		Use:   "report -f experiment.yaml [-o DIR]",
		Short: "Write the research report: progress.png/.svg, report.md, a self-contained report.html and results.json",
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
				return fmt.Errorf("%s has not started, so there is nothing to report: run `autoresearch run -f %s` first", x.Object.Name, flags.file)
			}
			repo, err := workspace.RepositoryOf(cmd.Context(), x.Repo)
			if err != nil {
				return err
			}
			diffs, err := report.KeptDiffs(cmd.Context(), repo, x.Subdir, x.Object.Spec.Variable.Files, saved.Status)
			if err != nil {
				return err
			}
			r := report.Build(report.Input{
				Name: x.Object.Name, Spec: x.Object.Spec, Status: saved.Status, Ledger: saved.Ledger, Notes: saved.Notes, Diffs: diffs,
			})
			if dir == "" {
				dir = filepath.Join(x.StateDir(), "report")
				if h := x.HoldoutStateDir(); h != "" {
					// The report shows the hidden holdout's trend, which no
					// Researcher may read: it goes with the holdout's state,
					// out of the worktree.
					dir = filepath.Join(h, "report")
				}
			}
			paths, err := r.Write(dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Wrote the report of %s to %s:\n", x.Object.Name, dir)
			for _, p := range paths {
				fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", filepath.Base(p))
			}
			return nil
		},
	}
	flags.register(cmd)
	cmd.Flags().StringVarP(&dir, "output-dir", "o", "", "the directory to write the report into (default: .autoresearch/report in the experiment's worktree; with a hidden holdout, .autoresearch/<name>/report in holdout.dir)")
	return cmd
}
