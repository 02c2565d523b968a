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
			res, err := protocol.Parse(string(text), repo(cmd.Context(), filepath.Dir(args[0])))
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
			for _, note := range res.Unenforced {
				fmt.Fprintln(cmd.ErrOrStderr(), "not enforced:", note)
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

// repo describes the repository of dir for import: the files git tracks
// in it, relative to it, so that the older protocol layout's prose can be
// matched against real file names, and those that hold fixed-region
// markers, which enforce the constraints on their code. Outside git it
// reads the files of dir itself.
func repo(ctx context.Context, dir string) protocol.Repo {
	out, err := workspace.Git(ctx, dir, nil, "ls-files")
	if err != nil {
		return dirFiles(dir)
	}
	r := protocol.Repo{Files: strings.Fields(out)}
	// git grep exits 1 when no file matches.
	if out, err := workspace.Git(ctx, dir, nil, "grep", "-l", "-z", "-F", "--no-textconv", "-e", workspace.RegionBegin); err == nil {
		r.Marked = strings.FieldsFunc(out, func(c rune) bool { return c == 0 })
	}
	return r
}

// dirFiles lists the files of dir and those that hold fixed-region markers.
func dirFiles(dir string) protocol.Repo {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return protocol.Repo{}
	}
	var r protocol.Repo
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		r.Files = append(r.Files, e.Name())
		if content, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && strings.Contains(string(content), workspace.RegionBegin) {
			r.Marked = append(r.Marked, e.Name())
		}
	}
	return r
}
