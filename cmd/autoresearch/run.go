package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
)

// experimentFlags are the flags that find an experiment and its worktree.
type experimentFlags struct {
	file     string
	worktree string
}

func (f *experimentFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.file, "file", "f", "experiment.yaml", "the AutoResearch experiment file")
	cmd.Flags().StringVar(&f.worktree, "worktree", "", "where the experiment's worktree lives (default: spec.workspace.path, else ../autoresearch-<name> next to the repository)")
}

func (f *experimentFlags) load(ctx context.Context) (*runner.Experiment, error) {
	if _, err := os.Stat(f.file); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no experiment file %s: point -f at one, write one from a protocol with `autoresearch import autoresearch-protocol.md -o %s`, or start from a bundled example such as examples/tiny-lm-go/experiment.yaml", f.file, f.file)
	}
	return runner.LoadExperiment(ctx, f.file, f.worktree)
}

func newRunCommand() *cobra.Command {
	var (
		flags      experimentFlags
		verbose    bool
		grace      time.Duration
		rebaseline bool
		isolation  bool
		gpus       []string
		writable   []string
		home       string
	)
	cmd := &cobra.Command{
		Use:   "run -f experiment.yaml",
		Short: "Run the loop on this machine until the target or maxRounds; Ctrl-C stops after the current step, the same command resumes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, abort := context.WithCancel(cmd.Context())
			defer abort()
			x, err := flags.load(ctx)
			if err != nil {
				return err
			}
			stop := make(chan struct{})
			signals := make(chan os.Signal, 2)
			// A hangup, the terminal gone, aborts at once: no one is left
			// to press Ctrl-C again. Under nohup, which ignores it, the
			// run goes on.
			signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
			if !signal.Ignored(syscall.SIGHUP) {
				signal.Notify(signals, syscall.SIGHUP)
			}
			defer signal.Stop(signals)
			go func() {
				if <-signals != syscall.SIGHUP {
					fmt.Fprintln(cmd.ErrOrStderr(), "\nStopping after the current step; press Ctrl-C again to abort it now.")
					close(stop)
					<-signals
				}
				fmt.Fprintln(cmd.ErrOrStderr(), "\nAborting the current step; the next run restarts its round.")
				abort()
			}()
			for i, w := range writable {
				if writable[i], err = filepath.Abs(w); err != nil {
					return err
				}
			}
			if home != "" {
				if home, err = filepath.Abs(home); err != nil {
					return err
				}
			}
			opts := runner.Options{
				Out: cmd.OutOrStdout(), Verbose: verbose, Stop: stop, Grace: grace, KillGrace: grace, Rebaseline: rebaseline,
				GPUs: gpus, Writable: writable, ResearcherHome: home, RequireIsolation: isolation,
			}
			if len(gpus) == 0 && x.Object.Spec.Candidates > 1 {
				// One GPU each, from the ones this shell was given.
				if visible := os.Getenv("CUDA_VISIBLE_DEVICES"); visible != "" {
					opts.GPUs = strings.Split(visible, ",")
				}
			}
			if opts.OutputUsername, opts.OutputToken, err = takeOutputCredentials(); err != nil {
				return err
			}
			st, err := runner.Run(ctx, x, opts)
			if err != nil {
				return err
			}
			if st.Phase == v1alpha1.PhaseFailed {
				return &exitError{code: 2, err: fmt.Errorf("experiment failed: %s", st.Message)}
			}
			return nil
		},
	}
	flags.register(cmd)
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "stream the Researcher's, training's and evaluation's output")
	cmd.Flags().DurationVar(&grace, "grace", runner.DefaultGrace, "buffer past a time limit before SIGTERM, and between SIGTERM and SIGKILL")
	cmd.Flags().StringSliceVar(&gpus, "gpus", nil, "the GPUs the candidates of a round (spec.candidates) train and evaluate on, one each in turn, e.g. 0,1,2,3; each step sees its own as CUDA_VISIBLE_DEVICES (default: the devices CUDA_VISIBLE_DEVICES lists, when spec.candidates > 1)")
	cmd.Flags().StringSliceVar(&writable, "writable", nil, "a directory that training and evaluation may write besides their checkout (a dataset cache, a scratch disk): the rest of the machine is read-only to them where steps get read-only mounts; repeat or separate with commas")
	cmd.Flags().StringVar(&home, "researcher-home", "", "the Researcher's HOME, an existing directory it writes, e.g. ~ for your agent's settings and login (default: a directory of the experiment's own, researcher-home in the supervisor's .autoresearch directory, with your home read-only to the Researcher where steps get read-only mounts); what it writes in your home outlives the run, your shell's start-up files included")
	cmd.Flags().BoolVar(&isolation, "require-isolation", false, "refuse to run where the steps would get no read-only mounts and process namespaces (or, with spec.holdout, the holdout's step no network of its own), instead of warning and running without those guards")
	cmd.Flags().BoolVar(&rebaseline, "rebaseline", false, "accept a measure (fixed files, train or eval command, metric, baseline…) changed since the experiment started: measure the baseline again on the best code before the next round; the rounds done keep their verdicts")
	return cmd
}

// The variables that give `autoresearch run` the https credentials of
// spec.output.git.
const (
	envOutputToken    = "AUTORESEARCH_OUTPUT_TOKEN"
	envOutputUsername = "AUTORESEARCH_OUTPUT_USERNAME"
)

// takeOutputCredentials reads the credentials of spec.output.git from the
// environment and removes them from it, so that no step, which inherits the
// rest of the environment, sees them.
func takeOutputCredentials() (username, token string, err error) {
	username, token = os.Getenv(envOutputUsername), os.Getenv(envOutputToken)
	return username, token, errors.Join(os.Unsetenv(envOutputUsername), os.Unsetenv(envOutputToken))
}
