package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
)

// Process is one user command: the Researcher, training or evaluation.
type Process struct {
	// Command runs with `sh -c` in Dir.
	Command string
	Dir     string
	// Env is added to the runner's own environment.
	Env []string
	// Timeout sends SIGTERM to the process group; KillGrace later, SIGKILL.
	Timeout   time.Duration
	KillGrace time.Duration
	// LogPath keeps the full output.
	LogPath string
	// Live, when set, also receives the output as it comes.
	Live io.Writer
}

// tailBytes is how much output a result keeps in memory for insights.
const tailBytes = 8 << 10

// Run starts the process in its own process group, so that a terminal's
// Ctrl-C reaches only the supervisor, and kills the whole group on timeout
// or when ctx ends. The exit keeps the tail of the output; LogPath has all.
func (p Process) Run(ctx context.Context) (round.ProcessExit, error) {
	if err := os.MkdirAll(filepath.Dir(p.LogPath), 0o755); err != nil {
		return round.ProcessExit{}, err
	}
	logFile, err := os.Create(p.LogPath)
	if err != nil {
		return round.ProcessExit{}, err
	}
	defer logFile.Close()

	tail := &tailBuffer{max: tailBytes}
	out := io.MultiWriter(logFile, tail)
	if p.Live != nil {
		out = io.MultiWriter(out, p.Live)
	}
	cmd := exec.Command("/bin/sh", "-c", p.Command)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A background child that keeps the output open must not hold us past the group kill.
	cmd.WaitDelay = time.Second

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return round.ProcessExit{}, fmt.Errorf("starting %q: %w", p.Command, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	timer := time.NewTimer(p.Timeout)
	defer timer.Stop()
	var timedOut bool
	var waitErr error
	select {
	case waitErr = <-done:
	case <-timer.C:
		timedOut = true
		waitErr = stopGroup(cmd.Process.Pid, done, p.KillGrace)
	case <-ctx.Done():
		waitErr = stopGroup(cmd.Process.Pid, done, p.KillGrace)
	}
	exit := round.ProcessExit{TimedOut: timedOut, Duration: time.Since(start), Tail: tail.String()}
	if ctx.Err() != nil && !timedOut {
		return exit, fmt.Errorf("%q aborted: %w", p.Command, ctx.Err())
	}
	if waitErr != nil && cmd.ProcessState == nil {
		return exit, waitErr
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		exit.ExitCode = 128 + int(ws.Signal())
	} else {
		exit.ExitCode = cmd.ProcessState.ExitCode()
	}
	// The log is the step's record, read back for its result: a write or
	// close that fails fails the step.
	if _, err := fmt.Fprintf(logFile, "\n[autoresearch] exit code %d after %s (timed out: %t)\n", exit.ExitCode, exit.Duration.Round(time.Millisecond), timedOut); err != nil {
		return exit, err
	}
	return exit, logFile.Close()
}

// stopGroup sends SIGTERM to the process group and SIGKILL after grace.
func stopGroup(pid int, done <-chan error, grace time.Duration) error {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case err := <-done:
		// The leader is gone; make sure nothing it started lingers.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return err
	case <-time.After(grace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return <-done
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
