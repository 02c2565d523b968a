package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/autoresearch-dev/autoresearch-operator/internal/protocol"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

func newImportCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "import autoresearch-protocol.md [-o experiment.yaml]",
		Short: "Convert a seed-style protocol file into an AutoResearch experiment YAML, naming every field it could not find",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			res, err := protocol.Parse(string(text), repoFiles(cmd.Context(), filepath.Dir(args[0])))
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			data, err := protocol.YAML(res, filepath.Base(args[0]))
			if err != nil {
				return err
			}
			if output == "" || output == "-" {
				_, err = cmd.OutOrStdout().Write(data)
			} else {
				err = os.WriteFile(output, data, 0o644)
			}
			if err != nil {
				return err
			}
			for _, note := range res.Inferred {
				fmt.Fprintln(cmd.ErrOrStderr(), "inferred:", note)
			}
			if len(res.Missing) > 0 {
				return &exitError{code: 3, err: fmt.Errorf("written with gaps; fill in: %s", strings.Join(res.Missing, ", "))}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the YAML here instead of standard output")
	return cmd
}

// repoFiles lists the files git tracks in dir, relative to it, so that the
// older protocol layout's prose can be matched against real file names.
func repoFiles(ctx context.Context, dir string) []string {
	out, err := workspace.Git(ctx, dir, nil, "ls-files")
	if err != nil {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil
		}
		var files []string
		for _, e := range entries {
			if !e.IsDir() {
				files = append(files, e.Name())
			}
		}
		return files
	}
	return strings.Fields(out)
}
