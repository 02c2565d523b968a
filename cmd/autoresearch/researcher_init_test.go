package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// initCommand is the environment variable that has this test binary run
// researcher-init on its value instead of the tests.
const initCommand = "AUTORESEARCH_TEST_INIT_COMMAND"

func TestMain(m *testing.M) {
	if command, ok := os.LookupEnv(initCommand); ok {
		code, err := researcherInit(command)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 127
		}
		syscall.Exit(code)
	}
	os.Exit(m.Run())
}

// initCmd runs researcher-init on command in a process of its own: this
// test binary, or binary, after prefix (unshare, setpriv).
func initCmd(command string, prefix ...string) *exec.Cmd {
	return initCmdOf(os.Args[0], command, prefix...)
}

func initCmdOf(binary, command string, prefix ...string) *exec.Cmd {
	argv := append(prefix, binary)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), initCommand+"="+command)
	return cmd
}

// startInit starts cmd and waits for its command to print "ready". A
// command still running a minute later is killed, and its test fails on
// what it printed.
func startInit(t *testing.T, cmd *exec.Cmd) *bufio.Scanner {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stuck := time.AfterFunc(time.Minute, func() { _ = cmd.Process.Kill() })
	t.Cleanup(func() {
		stuck.Stop()
		_ = cmd.Process.Kill()
	})
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("the command did not start: %q", lines.Text())
	}
	return lines
}

// ended reads what the command prints until it ends, and how it ended.
func ended(t *testing.T, cmd *exec.Cmd, lines *bufio.Scanner) (string, int) {
	t.Helper()
	var out []string
	for lines.Scan() {
		out = append(out, lines.Text())
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return strings.Join(out, "\n"), cmd.ProcessState.ExitCode()
}

// child is the pid of the only child of pid, 0 while it has none: of any
// of its threads, for a Go program starts its children from whichever
// thread runs the goroutine.
func child(t *testing.T, pid int) int {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, task := range tasks {
		data, err := os.ReadFile(task)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		all = append(all, strings.Fields(string(data))...)
	}
	if len(all) == 0 {
		return 0
	}
	c, err := strconv.Atoi(all[0])
	if err != nil || len(all) > 1 {
		t.Fatalf("the child of %d: %q: %v", pid, all, err)
	}
	return c
}

func TestResearcherInitExitsWithTheCommandsStatus(t *testing.T) {
	for command, want := range map[string]int{"echo out; exit 3": 3, "true": 0, "no-such-program-here": 127} {
		if err := initCmd(command).Run(); err == nil && want != 0 || err != nil && cmdExit(err) != want {
			t.Errorf("%s: exit %v, want %d", command, err, want)
		}
	}
}

func cmdExit(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	return -1
}

// Without a PID namespace, as on the process node, the init passes the
// SIGTERM to the command, which may finish its work first.
func TestResearcherInitPassesTheStopToTheCommand(t *testing.T) {
	cmd := initCmd(`trap 'echo finishing the books; exit 7' TERM; echo ready; while :; do sleep 0.1; done`)
	lines := startInit(t, cmd)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out, code := ended(t, cmd, lines)
	if out != "finishing the books" || code != 7 {
		t.Errorf("output %q, exit %d; want the command's handler to run and its exit 7", out, code)
	}
}

// As the first process of a PID namespace, as in a container, the init
// passes the SIGTERM that stops the pod to every process of the
// container: a command with a handler runs it; the shell of one without
// stops, with what it runs. The container then ends with whatever is
// left.
func TestResearcherInitStopsTheContainer(t *testing.T) {
	if os.Getuid() != 0 || exec.Command("unshare", "--pid", "--fork", "true").Run() != nil {
		t.Skip("needs root and unshare --pid")
	}
	for _, c := range []struct {
		name, command, out string
		code               int
	}{
		{"an agent with a handler", `sleep 600 & trap 'echo the agent stops; exit 0' TERM; echo ready; while :; do sleep 0.1; done`, "the agent stops", 0},
		{"a script without", `echo ready; sleep 600; echo the script went on`, "", 128 + int(syscall.SIGTERM)},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := initCmd(c.command, "unshare", "--pid", "--fork", "--kill-child")
			lines := startInit(t, cmd)
			if err := syscall.Kill(child(t, cmd.Process.Pid), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if out, code := ended(t, cmd, lines); out != c.out || code != c.code {
				t.Errorf("output %q, exit %d; want %q, exit %d", out, code, c.out, c.code)
			}
		})
	}
}

// TestResearcherInitOutlastsItsContainersProcesses: as the first process
// of a PID namespace, the init reaps the orphans that end (their zombies
// would count against the pod's processes for as long as it runs), and a
// hangup that a process of the container sends it does not end it.
func TestResearcherInitOutlastsItsContainersProcesses(t *testing.T) {
	if os.Getuid() != 0 || exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").Run() != nil {
		t.Skip("needs root and unshare --pid --mount-proc")
	}
	cmd := initCmd(`(true &); (true &); (true &); kill -HUP 1; kill -USR1 1; sleep 1
z=0; for f in /proc/[0-9]*/stat; do case $(cut -d' ' -f3 "$f" 2>/dev/null) in Z) z=$((z+1));; esac; done; echo zombies=$z`,
		"unshare", "--pid", "--fork", "--kill-child", "--mount-proc")
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "zombies=0" {
		t.Errorf("output %q (%v), want the command to finish with no zombie left", out, err)
	}
}

// TestResearcherInitRunsAScriptWithoutAnInterpreterLine: a command of
// plain words naming a script without #!, which the kernel does not run,
// runs with a shell, as a shell would run it.
func TestResearcherInitRunsAScriptWithoutAnInterpreterLine(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/agent", []byte("echo ran $#\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := initCmd(dir + "/agent one two").Output()
	if err != nil || strings.TrimSpace(string(out)) != "ran 2" {
		t.Errorf("output %q (%v), want the script run with its two arguments", out, err)
	}
}

// TestResearcherInitKeepsTheKeysFromTheCommand: the init holds the
// container's environment, the model's API key among it, and the
// Researcher's commands run as its user: its /proc/<pid>/environ is out of
// their reach. A command of plain words, as the built-in agent's is, runs
// with no shell between (a shell would hold the key, dumpable).
func TestResearcherInitKeepsTheKeysFromTheCommand(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("PR_SET_DUMPABLE is Linux's")
	}
	binary, prefix := os.Args[0], []string(nil)
	if os.Getuid() == 0 {
		// Root reads any process's environment: the init and its command
		// run as the Researcher's user, as in its pod, from a copy of this
		// binary that user may run.
		if _, err := exec.LookPath("setpriv"); err != nil {
			t.Skip("as root, needs setpriv to run the init as another user")
		}
		prefix = []string{"setpriv", "--reuid", "65532", "--regid", "65532", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"}
		binary = runnableCopy(t)
	}
	cmd := initCmdOf(binary, `cat /proc/$PPID/environ >/dev/null 2>&1 && echo readable || echo unreadable`, prefix...)
	cmd.Env = append(cmd.Env, "ANTHROPIC_API_KEY=sk-test")
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != "unreadable" {
		t.Errorf("the command read the init's environment: %q (%v)", out, err)
	}

	cmd = initCmdOf(binary, "sleep 30", prefix...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var comm []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if c := child(t, cmd.Process.Pid); c != 0 {
			if comm, _ = os.ReadFile(fmt.Sprintf("/proc/%d/comm", c)); strings.TrimSpace(string(comm)) == "sleep" {
				return
			}
		}
	}
	t.Errorf("the init's child is %q, want the command itself", comm)
}

// runnableCopy is a copy of this test binary that every user may run.
func runnableCopy(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "researcher-init")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	binary := dir + "/researcher-init.test"
	if err := os.WriteFile(binary, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return binary
}
