package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/autoresearch-dev/autoresearch-operator/internal/readout"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// newReadCommand is what the kubectl plugin's reader pod runs: it prints
// the files and git output a readout.Request asks for, framed, to stdout,
// which the plugin reads back as the pod's log.
func newReadCommand() *cobra.Command {
	var (
		request string
		volume  string
		result  string
	)
	cmd := &cobra.Command{
		Use:    "read --request JSON",
		Short:  "Print files and git output of the workspace volume, framed for a pod's log (the kubectl plugin's reader pod)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var req readout.Request
			err := json.Unmarshal([]byte(request), &req)
			if err != nil {
				err = fmt.Errorf("--request: %w", err)
			} else {
				err = readout.Serve(cmd.Context(), volume, req, cmd.OutOrStdout())
			}
			if err != nil && result != "" {
				// The error is the container's termination message, not
				// its log, which holds the frame.
				_ = os.WriteFile(result, []byte(text.Truncate(err.Error(), steps.MaxResultBytes)), 0o644)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&request, "request", "", "what to read, as a readout.Request in JSON")
	cmd.Flags().StringVar(&volume, "volume", steps.WorkspaceMount, "where the workspace volume is mounted")
	cmd.Flags().StringVar(&result, "result", steps.TerminationMessagePath, "where an error goes")
	_ = cmd.MarkFlagRequired("request")
	return cmd
}
