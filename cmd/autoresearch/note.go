package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newNoteCommand() *cobra.Command {
	var flags experimentFlags
	cmd := &cobra.Command{
		Use:   `note -f experiment.yaml "try a cosine schedule"`,
		Short: "Add guidance for the next Researcher; the round that sees it records it in its Note column",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("give the note's text\nUsage: autoresearch %s", cmd.Use)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			x, err := flags.load(cmd.Context())
			if err != nil {
				return err
			}
			if err := x.AddNote(strings.Join(args, " ")); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "Noted; the next round's Researcher will see it.")
			return nil
		},
	}
	flags.register(cmd)
	return cmd
}
