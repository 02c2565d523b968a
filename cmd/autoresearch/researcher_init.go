package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/autoresearch-dev/autoresearch-operator/internal/keyenv"
)

func newResearcherInitCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "researcher-init COMMAND",
		Short:  "Run the Researcher's command as the first process of its container",
		Hidden: true,
		Long: `The first process of the Researcher's container on a cluster. It holds
the container's environment, the model's API keys among it, and makes itself
undumpable first, so that the commands the Researcher's agent runs, as the
same user, cannot read them from its /proc/<pid>/environ. It runs COMMAND
as its child: a command of plain words itself, so that no shell holding the
keys stands between it and the agent (the built-in agent makes itself
undumpable too), anything else with /bin/sh -c. It passes on the SIGTERM
that stops the pod (its deletion, its deadline): as the first process of a
PID namespace, to every process of the container, so that an agent gets the
signal and its time to finish (the first process ignores a signal it has no
handler for, and the kubelet would kill everything at the end of the grace
period); otherwise to the command. As that first process it also reaps
the orphans that end, and ignores the hangup, quit and user signals that a
process of the container could end it with. It exits with the command's
status, or 128 plus the signal that ended it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			code, err := researcherInit(args[0])
			if err != nil {
				return &exitError{code: 127, err: err}
			}
			if code != 0 {
				return &exitError{code: code, err: fmt.Errorf("the Researcher's command exited with status %d", code)}
			}
			return nil
		},
	}
}

// researcherInit runs command as researcher-init describes and returns its
// exit status.
func researcherInit(command string) (int, error) {
	if err := undumpable(); err != nil {
		return 0, fmt.Errorf("make the Researcher's init undumpable: %w", err)
	}
	// The signals the init has no use for are ignored, as the first
	// process of a PID namespace ignores them without a handler: a Go
	// program has a handler for every signal, and would end at a hangup
	// that any process of the container sends it.
	signal.Ignore(syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	// A stop that comes before the command starts is passed on once it
	// has.
	stops := make(chan os.Signal, 1)
	signal.Notify(stops, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(stops)
	cmd, err := startCommand(command)
	if err != nil {
		return 0, err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-stops:
				if os.Getpid() == 1 {
					_ = syscall.Kill(-1, syscall.SIGTERM)
				} else {
					_ = cmd.Process.Signal(syscall.SIGTERM)
				}
			case <-done:
				return
			}
		}
	}()
	return waitCommand(cmd)
}

// startCommand starts command: a command of plain words itself (a script
// without #!, which the kernel does not run, with a shell as a shell
// would), anything else with /bin/sh -c.
func startCommand(command string) (*exec.Cmd, error) {
	if argv := keyenv.PlainWords(command); argv != nil {
		cmd := inherit(exec.Command(argv[0], argv[1:]...))
		if err := cmd.Start(); !errors.Is(err, syscall.ENOEXEC) {
			return cmd, err
		}
	}
	cmd := inherit(exec.Command("/bin/sh", "-c", command))
	return cmd, cmd.Start()
}

func inherit(cmd *exec.Cmd) *exec.Cmd {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd
}

// waitCommand waits for cmd to end and returns its status, or 128 plus the
// signal that ended it. As the first process of a PID namespace it reaps
// every orphan that ends meanwhile too, whose zombie would stay.
func waitCommand(cmd *exec.Cmd) (int, error) {
	if os.Getpid() != 1 {
		err := cmd.Wait()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			return 0, err
		}
		return exitStatus(cmd.ProcessState.Sys().(syscall.WaitStatus)), nil
	}
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil:
			return 0, err
		case pid == cmd.Process.Pid:
			return exitStatus(ws), nil
		}
	}
}

func exitStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
