// Command autoresearch runs the research loop on one machine and holds the
// small tools around it: status, guidance notes, protocol import and the
// scripted Researcher. On Kubernetes, the operator's pods run its step
// commands: exec wraps a user's training or evaluation command, and
// workspace performs the supervisor's git and ledger steps.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries a chosen exit code up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func main() {
	cmd := newRootCommand()
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "autoresearch:", err)
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "autoresearch",
		Short:         "Autonomous ML research loop: a Researcher edits, the supervisor checks, trains, evaluates and commits or rolls back",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCommand(), newStatusCommand(), newReportCommand(), newExportCommand(), newNoteCommand(), newImportCommand(), newResearcherCommand(),
		newExecCommand(), newResearcherInitCommand(), newWorkspaceCommand(), newReadCommand(), newVersionCommand())
	return root
}
