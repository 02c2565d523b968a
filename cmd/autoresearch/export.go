package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

func newExportCommand() *cobra.Command {
	var (
		flags      experimentFlags
		out        string
		candidates bool
		force      bool
	)
	cmd := &cobra.Command{
		Use:   "export -f experiment.yaml -o FILE.bundle [--candidates]",
		Short: "Write the experiment branch, with its code and ledger, to a git bundle that git clone reads",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if out == "" {
				return errors.New("-o FILE.bundle is required: the file to write the bundle to")
			}
			x, err := flags.load(ctx)
			if err != nil {
				return err
			}
			bundle, err := filepath.Abs(out)
			if err != nil {
				return err
			}
			if _, err := os.Stat(bundle); err == nil && !force {
				return fmt.Errorf("%s exists: choose another file, or pass --force to overwrite it", out)
			} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			repo, err := workspace.RepositoryOf(ctx, x.Repo)
			if err != nil {
				return err
			}
			branch := workspace.BranchPrefix + x.Object.Name
			if ok, err := repo.HasBranch(ctx, x.Object.Name); err != nil {
				return err
			} else if !ok {
				return fmt.Errorf("%s has no branch %s in %s to export: run `autoresearch run -f %s` first", x.Object.Name, branch, x.Repo, flags.file)
			}
			refs, err := repo.Bundle(ctx, x.Object.Name, bundle, candidates)
			if err != nil {
				return fmt.Errorf("writing %s: %w", out, err)
			}
			var msg strings.Builder
			fmt.Fprintf(&msg, "Wrote branch %s", branch)
			if n := len(refs) - 1; n > 0 {
				fmt.Fprintf(&msg, " and %d candidate refs", n)
			}
			fmt.Fprintf(&msg, " of %s to %s.\nClone it with:\n  git clone -b %s %s\n", x.Object.Name, out, branch, out)
			if len(refs) > 1 {
				fmt.Fprintf(&msg, "and fetch the candidates into the clone with:\n  git fetch %s '%s*:%s*'\n", bundle, workspace.CandidateRefPrefix, workspace.CandidateRefPrefix)
			}
			_, err = io.WriteString(cmd.OutOrStdout(), msg.String())
			return err
		},
	}
	flags.register(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "the bundle file to write")
	cmd.Flags().BoolVar(&candidates, "candidates", false, "also export every round's sealed candidate, kept or not ("+workspace.CandidateRefPrefix+"<name>/r<round>)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite the bundle file if it exists")
	return cmd
}
