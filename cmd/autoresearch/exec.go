package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/supervisor"
)

// execFlags are the flags of `autoresearch exec`; steps.ExecArgs builds them.
type execFlags struct {
	step       string
	round      int32
	workdir    string
	timeout    time.Duration
	grace      time.Duration
	timeLimit  time.Duration
	epochLimit string
	metric     string
	pattern    string
	readings   []string
	hashesFile string
	targets    string
	python     string
	compliance string
	log        string
	result     string
}

func newExecCommand() *cobra.Command {
	var f execFlags
	cmd := &cobra.Command{
		Use:   "exec --step train|eval|holdout|parity --round N --workdir DIR [flags] [-- COMMAND [ARGS...]]",
		Short: "Run one step in a user's image: a training or evaluation command, or the kernel parity check; keep its log and write its result as the termination message",
		Long: `The step wrapper of the operator's train and eval Jobs and compliance pods.

train and eval run COMMAND (e.g. -- sh -c "python train.py") so that every
process it starts dies with it, stop it at --timeout (SIGTERM, then SIGKILL
after --grace), keep the log (its first 256 MiB and last 4 MiB) on the
workspace volume and write a compact JSON result to --result, read from
the output as captured, not from the log. eval first verifies the fixed files' hashes and does not run a changed
evaluation. exec exits with the command's exit code, so that the Job's
status is honest, and writes the result either way.

holdout runs the hidden holdout evaluation as eval runs an evaluation, but
its result holds only the metric and how the command ended, never its
output.

parity runs the kernel parity check of --targets in --workdir and completes
the compliance result of ` + "`workspace check`" + ` given with --compliance.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := undumpable(); err != nil {
				return fmt.Errorf("make the step wrapper undumpable: %w", err)
			}
			// In its pod the wrapper is the container's first process,
			// which the command's processes may signal: one that a hangup,
			// quit or user signal ended would leave its result unwritten,
			// and what the command wrote there in its place.
			signal.Ignore(syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			switch f.step {
			case steps.StepTrain, steps.StepEval, steps.StepHoldout:
				return f.runCommand(ctx, cmd, args)
			case steps.StepParity:
				if len(args) > 0 {
					return fmt.Errorf("the parity step runs no command, got %q", args)
				}
				return f.runParity(ctx)
			}
			return fmt.Errorf("--step must be %s, %s, %s or %s, got %q", steps.StepTrain, steps.StepEval, steps.StepHoldout, steps.StepParity, f.step)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.step, "step", "", "train, eval, holdout or parity")
	fl.Int32Var(&f.round, "round", 0, "the round, passed on as AUTORESEARCH_ROUND")
	fl.StringVar(&f.workdir, "workdir", ".", "the experiment directory in the worktree")
	fl.DurationVar(&f.timeout, "timeout", 0, "stop the command after this long (train and eval)")
	fl.DurationVar(&f.grace, "grace", runner.DefaultGrace, "time between SIGTERM and SIGKILL")
	fl.DurationVar(&f.timeLimit, "time-limit", 0, "the protocol's time limit, passed on as AUTORESEARCH_TIME_LIMIT")
	fl.StringVar(&f.epochLimit, "epoch-limit", "", "the protocol's epoch limit, passed on as AUTORESEARCH_EPOCH_LIMIT")
	fl.StringVar(&f.metric, "metric", "", "the metric an evaluation prints")
	fl.StringVar(&f.pattern, "pattern", "", "a regular expression that finds the metric in an evaluation's output")
	fl.StringSliceVar(&f.readings, "readings", nil, "the readings of an evaluation's output that constraints limit, comma-separated")
	fl.StringVar(&f.hashesFile, "fixed-hashes", "", "a JSON object of fixed file → SHA-256 that must hold before an evaluation runs")
	fl.StringVar(&f.targets, "targets", "", "the kernel parity targets, as the JSON list of spec.kernelTargets")
	fl.StringVar(&f.python, "python", "python3", "the Python that runs the parity check")
	fl.StringVar(&f.compliance, "compliance", "", "the compliance result of `workspace check` that the parity check completes")
	fl.StringVar(&f.log, "log", "", "where the log goes (default: the round's log on the workspace volume)")
	fl.StringVar(&f.result, "result", steps.TerminationMessagePath, "where the JSON result goes")
	return cmd
}

// runCommand runs a training or evaluation command and writes its result.
func (f *execFlags) runCommand(ctx context.Context, cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("no command to run: give it after --")
	}
	if f.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive")
	}
	if f.step == steps.StepEval && f.hashesFile != "" {
		changed, err := f.changedFixedFiles()
		if err != nil {
			return err
		}
		if len(changed) > 0 {
			// A changed evaluation says nothing about the candidate: do not run it.
			fmt.Fprintf(cmd.ErrOrStderr(), "fixed files changed, the evaluation does not run: %s\n", strings.Join(changed, ", "))
			return writeResult(f.result, &steps.EvalResult{FixedFilesChanged: changed})
		}
	}
	logPath := f.log
	if logPath == "" {
		logPath = steps.LogPath(f.round, f.step)
	}
	if w := runner.ContainmentWarning(); w != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "[autoresearch] warning: "+w)
	}
	exit, output, err := runner.Process{
		Command: runner.ShellCommand(args), Dir: f.workdir, Env: f.env(),
		Timeout: f.timeout, KillGrace: f.grace, LogPath: logPath, Live: cmd.OutOrStdout(),
	}.RunOutput(ctx)
	if err != nil && ctx.Err() == nil {
		return err
	}
	if err != nil {
		// Stopped from outside, as the kubelet does at the Job's deadline.
		exit.ExitCode = 128 + int(syscall.SIGTERM)
	}
	// Results come from the output as read from the pipe, never from the
	// log file, which any process of the step could write.
	pr := steps.ProcessResult{ExitCode: exit.ExitCode, DurationMS: exit.Duration.Milliseconds(), TimedOut: exit.TimedOut, Tail: exit.Tail}
	if f.step == steps.StepHoldout {
		// The holdout's output is the user's alone: it stays in the pod's
		// log, and the pod's status holds none of it.
		pr.Tail = ""
	}
	var res any
	if f.step == steps.StepTrain {
		r := supervisor.ReadTrainLog(output)
		r.ProcessResult = pr
		res = &r
	} else {
		r, err := supervisor.ReadEvalLog(output, f.metric, f.pattern, f.readings)
		if err != nil {
			return err
		}
		r.ProcessResult = pr
		res = &r
	}
	if err := writeResult(f.result, res); err != nil {
		return err
	}
	if exit.ExitCode != 0 {
		return &exitError{code: exit.ExitCode, err: fmt.Errorf("%s exited with code %d (timed out: %t)", f.step, exit.ExitCode, exit.TimedOut)}
	}
	return nil
}

// env is what the command gets besides the pod's environment.
func (f *execFlags) env() []string {
	env := []string{"AUTORESEARCH_ROUND=" + strconv.Itoa(int(f.round))}
	if f.timeLimit > 0 {
		env = append(env, "AUTORESEARCH_TIME_LIMIT="+f.timeLimit.String())
	}
	if f.epochLimit != "" {
		env = append(env, "AUTORESEARCH_EPOCH_LIMIT="+f.epochLimit)
	}
	return env
}

func (f *execFlags) changedFixedFiles() ([]string, error) {
	var want map[string]string
	if err := readJSONFile(f.hashesFile, &want); err != nil {
		return nil, fmt.Errorf("--fixed-hashes: %w", err)
	}
	return supervisor.ChangedFixedFiles(f.workdir, want)
}

// runParity completes the compliance result with the kernel parity check.
func (f *execFlags) runParity(ctx context.Context) error {
	var res steps.ComplianceResult
	if f.compliance != "" {
		if err := readJSONFile(f.compliance, &res); err != nil {
			return fmt.Errorf("--compliance: %w", err)
		}
	}
	var targets []v1alpha1.KernelTarget
	if f.targets != "" {
		if err := json.Unmarshal([]byte(f.targets), &targets); err != nil {
			return fmt.Errorf("--targets: %w", err)
		}
	}
	if f.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive")
	}
	// The check imports the candidate's kernels: it runs as training does,
	// so that nothing it starts outlives it and writes the result after
	// this command (the termination message is the pod's to write).
	logDir := os.TempDir()
	if f.compliance != "" {
		logDir = filepath.Dir(f.compliance)
	}
	check := func(ctx context.Context, argv []string, dir string) (string, int, error) {
		exit, output, err := runner.Process{
			Command: runner.ShellCommand(argv), Dir: dir, Env: f.env(),
			Timeout: f.timeout, KillGrace: f.grace, LogPath: filepath.Join(logDir, "parity.log"),
		}.RunOutput(ctx)
		return output, exit.ExitCode, err
	}
	if err := supervisor.CheckParity(ctx, &res, check, f.python, f.workdir, targets); err != nil {
		return err
	}
	return writeResult(f.result, &res)
}

// writeResult writes a step's result where the kubelet reads the
// termination message.
func writeResult(path string, v any) error {
	data, err := steps.Encode(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

func readJSONFile(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
