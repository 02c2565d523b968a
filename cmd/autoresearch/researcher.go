package main

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/autoresearch-dev/autoresearch-operator/internal/scripted"
)

func newResearcherCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "researcher",
		Short: "Researchers that follow the Researcher contract ($AUTORESEARCH_PROMPT_FILE, the worktree as working directory, a Strategy row)",
	}
	cmd.AddCommand(newScriptedResearcherCommand())
	return cmd
}

func newScriptedResearcherCommand() *cobra.Command {
	var plan string
	cmd := &cobra.Command{
		Use:   "scripted --plan scripted-researcher.yaml",
		Short: "A deterministic, scripted Researcher for demos and tests: applies the plan's edits for this round (not an LLM)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			inv, err := scripted.InvocationFromEnv(os.Getenv)
			if err != nil {
				return err
			}
			p, err := scripted.LoadPlan(plan)
			if err != nil {
				return err
			}
			dir, err := os.Getwd()
			if err != nil {
				return err
			}
			err = scripted.Run(cmd.Context(), p, inv.Round, dir, inv.ExperiencesPath, cmd.OutOrStdout())
			var exit *scripted.ExitError
			if errors.As(err, &exit) {
				return &exitError{code: exit.Code, err: err}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&plan, "plan", "scripted-researcher.yaml", "the plan: one step of edits per round")
	return cmd
}
