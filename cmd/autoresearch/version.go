package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/autoresearch-dev/autoresearch-operator/internal/version"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version this binary was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "autoresearch", version.String())
			return err
		},
	}
}
