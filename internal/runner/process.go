package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/internal/keyenv"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// Process is one user command: the Researcher, training or evaluation.
type Process struct {
	// Command runs with `sh -c` in Dir.
	Command string
	Dir     string
	// Env is added to the runner's own environment, from which the model
	// providers' API key variables are taken out unless APIKeys.
	Env []string
	// APIKeys keeps the runner's API key variables for a Researcher, which
	// calls its model with them; code it wrote, which training, the
	// evaluation and the checks run, never gets them.
	APIKeys bool
	// Timeout sends SIGTERM to the process group; KillGrace later, SIGKILL.
	Timeout   time.Duration
	KillGrace time.Duration
	// LogPath keeps the full output, for people: any process of the step
	// can write it, so no result is read back from it.
	LogPath string
	// Live, when set, also receives the output as it comes, its control
	// characters but tabs and newlines written out (text.Visible).
	Live io.Writer
	// Mounts are made, in order, in the step's mount namespace before its
	// command starts, where ReadOnlyMounts says so; elsewhere they are
	// skipped. The paths must exist. Nothing of them reaches the runner.
	Mounts []Mount
	// Offline runs the step, where OfflineSteps says so, in a network
	// namespace of its own, which has no interface up: it reaches nothing
	// over the network — no other machine, no service listening on the
	// machine's loopback and no abstract Unix socket of another process.
	// Elsewhere the step runs on the machine's network.
	Offline bool

	// containment overrides the one chosen for this machine, in tests.
	containment containment
}

const (
	// tailBytes is how much output a result keeps for insights.
	tailBytes = 8 << 10
	// outputBytes is how much of a step's output RunOutput returns; a
	// metric is the last one printed.
	outputBytes = 4 << 20
	// pipeDelay is how long the output is still read after the step and
	// everything left of it are killed: only a process that escaped the
	// containment still holds the pipe then.
	pipeDelay = time.Second
)

// Run is RunOutput without the output.
func (p Process) Run(ctx context.Context) (round.ProcessExit, error) {
	exit, _, err := p.RunOutput(ctx)
	return exit, err
}

// environ is the environment of the step, with mounts: the runner's,
// without the model's keys unless p.APIKeys, then p.Env, and for an init
// that makes the machine read-only, which unsets it (nsMountInit), the
// machine's sockets.
func (p Process) environ(mounts []Mount) []string {
	environ := os.Environ()
	if !p.APIKeys {
		environ = keyenv.Without(environ)
	}
	environ = append(environ, p.Env...)
	if slices.ContainsFunc(mounts, func(m Mount) bool { return m.Machine }) {
		environ = append(environ, "AUTORESEARCH_SOCKETS="+strings.Join(machineSockets(), "\n"))
	}
	return environ
}

// RunOutput starts the process in a session of its own, so that a
// terminal's Ctrl-C reaches only the supervisor, and contained as
// Containment says, so that every process it starts dies with it: at its
// exit, on timeout (SIGTERM to the group, SIGKILL after KillGrace) or when
// ctx ends. It returns the step's output as the supervisor read it from the
// pipe, the last outputBytes of it; results such as the metric are parsed
// from that, never from LogPath.
func (p Process) RunOutput(ctx context.Context) (round.ProcessExit, string, error) {
	c := p.containment
	if c == containAuto {
		c = chosen()
	}
	if err := c.prepare(); err != nil {
		return round.ProcessExit{}, "", err
	}
	mounts, err := p.mounts(c)
	if err != nil {
		return round.ProcessExit{}, "", err
	}
	if err := os.MkdirAll(filepath.Dir(p.LogPath), 0o755); err != nil {
		return round.ProcessExit{}, "", err
	}
	logFile, err := createLog(p.LogPath)
	if err != nil {
		return round.ProcessExit{}, "", err
	}
	defer logFile.Close()

	output := &tailBuffer{max: outputBytes}
	log := &logWriter{f: logFile, max: maxLogBytes}
	out := io.MultiWriter(log, output)
	if p.Live != nil {
		// The step's output reaches the person's terminal with its escape
		// sequences written out: it is the Researcher's code's.
		live := text.NewVisibleWriter(p.Live)
		defer func() { _ = live.Flush() }()
		out = io.MultiWriter(out, live)
	}
	// The pipe is the runner's own: the step's exit returns from Wait at
	// once, whoever still holds the write end, and the runner decides how
	// long to read after it.
	pr, pw, err := os.Pipe()
	if err != nil {
		return round.ProcessExit{}, "", err
	}
	defer pr.Close()
	command := p.Command
	if p.APIKeys && keyenv.PlainWords(command) != nil {
		// The shell that runs a command of plain words, holding the keys,
		// gives way to it: the commands the Researcher's agent runs, as
		// the same user, could read them from the shell's environment.
		command = "exec " + command
	}
	argv := c.argv(command, mounts)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = p.Dir
	cmd.Env = p.environ(mounts)
	cmd.Stdout = pw
	cmd.Stderr = pw
	cmd.SysProcAttr = c.attr(len(mounts) > 0, p.Offline && c.offline())

	// The step's first process gets SIGKILL when the thread that started
	// it ends (attr's Pdeathsig): the thread stays this goroutine's until
	// the step is over, so that only the runner's death ends it early. In
	// a PID namespace the first process is its init, and everything in
	// the namespace dies with it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := ownSessionKeyring(); err != nil {
		return round.ProcessExit{}, "", fmt.Errorf("starting %q: %w", p.Command, err)
	}
	start := time.Now()
	leaders.Lock()
	err = cmd.Start()
	if err == nil {
		leaders.pids[cmd.Process.Pid] = true
	}
	leaders.Unlock()
	// Only the step holds the write end now: the read ends when it is gone.
	_ = pw.Close()
	if err != nil {
		return round.ProcessExit{}, "", fmt.Errorf("starting %q: %w", p.Command, err)
	}
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(out, pr)
		if errors.Is(err, os.ErrClosed) {
			err = nil
		}
		copied <- err
	}()
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
	// Whatever the step left behind dies now: its group, and under a
	// subreaper every orphan. In a PID namespace nothing is left.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	leaders.Lock()
	delete(leaders.pids, cmd.Process.Pid)
	leaders.Unlock()
	if c == containSubreaper {
		sweepOrphans()
	}
	select {
	case err = <-copied:
	case <-time.After(pipeDelay):
		_ = pr.Close()
		err = <-copied
	}
	if err != nil {
		return round.ProcessExit{}, "", fmt.Errorf("reading the output of %q: %w", p.Command, err)
	}
	captured := output.String()
	exit := round.ProcessExit{TimedOut: timedOut, Duration: time.Since(start), Tail: captured[max(0, len(captured)-tailBytes):]}
	if ctx.Err() != nil && !timedOut {
		return exit, captured, fmt.Errorf("%q aborted: %w", p.Command, ctx.Err())
	}
	if waitErr != nil && cmd.ProcessState == nil {
		return exit, captured, waitErr
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		exit.ExitCode = 128 + int(ws.Signal())
	} else {
		exit.ExitCode = cmd.ProcessState.ExitCode()
	}
	// The log is the step's record for people: a write or close that fails
	// fails the step.
	if err := log.finish(captured); err != nil {
		return exit, captured, err
	}
	if _, err := fmt.Fprintf(logFile, "\n[autoresearch] exit code %d after %s (timed out: %t)\n", exit.ExitCode, exit.Duration.Round(time.Millisecond), timedOut); err != nil {
		return exit, captured, err
	}
	return exit, captured, logFile.Close()
}

// maxLogBytes is how much of a step's output its log keeps from the start;
// the end follows, as much of it as RunOutput keeps (outputBytes). A step
// that floods its output fills no disk.
var maxLogBytes int64 = 256 << 20

// logWriter writes a step's output to its log until max bytes, and counts
// the rest. It never fails a write, so that the output goes on to the tail
// the supervisor reads; a write error of the log's is finish's.
type logWriter struct {
	f        *os.File
	max, n   int64
	total    int64
	writeErr error
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.total += int64(len(p))
	if w.writeErr == nil && w.n < w.max {
		k, err := w.f.Write(p[:min(int64(len(p)), w.max-w.n)])
		w.n += int64(k)
		w.writeErr = err
	}
	return len(p), nil
}

// finish ends a log that max cut short with what it left out, then tail,
// the end of the output, from where the log's start ends; and returns the
// log's write error, if any.
func (w *logWriter) finish(tail string) error {
	if w.writeErr != nil || w.total <= w.n {
		return w.writeErr
	}
	// tail is the output's last bytes: those the log holds already go.
	tail = tail[max(0, w.n-(w.total-int64(len(tail)))):]
	_, err := fmt.Fprintf(w.f, "\n[autoresearch] %d bytes of output left out here, past the log's first %d; the last %d follow\n%s",
		w.total-w.n-int64(len(tail)), w.n, len(tail), tail)
	return err
}

// mounts are the mounts the step gets under c, their paths resolved as the
// kernel lists mount points.
func (p Process) mounts(c containment) ([]Mount, error) {
	if len(p.Mounts) == 0 || !c.mounts() {
		return nil, nil
	}
	mounts := make([]Mount, len(p.Mounts))
	for i, m := range p.Mounts {
		path, err := filepath.EvalSymlinks(m.Path)
		if err == nil {
			path, err = filepath.Abs(path)
		}
		if err != nil {
			return nil, fmt.Errorf("a mount of the step: %w", err)
		}
		m.Path = path
		mounts[i] = m
	}
	return mounts, nil
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

// ShellCommand is argv as the command line Process gives to sh -c: `sh -c
// CMD` is CMD itself, anything else is quoted and exec'd, so that the exit
// code and signals are the command's own.
func ShellCommand(argv []string) string {
	if len(argv) == 3 && (argv[0] == "sh" || argv[0] == "/bin/sh") && argv[1] == "-c" {
		return argv[2]
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return "exec " + strings.Join(quoted, " ")
}

// createLog creates a step's log anew. What is at its path is removed
// first and the file is created exclusively, so that the log is never
// written through a symbolic link that an earlier step planted there: on
// Kubernetes training shares the round's log directory with the
// evaluation, and a link from eval.log into the evaluation's checkout
// would have the evaluation's fixed files emptied after they were verified.
func createLog(path string) (*os.File, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("replacing the log %s: %w", path, err)
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}
