package controllers

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startResearcherInit runs argv, which ends in researcherInit and the
// Researcher's command, and waits for the command to print "ready". A
// command still running a minute later is killed, and its test fails on
// what it printed.
func startResearcherInit(t *testing.T, argv ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
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
	return cmd, lines
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

func TestResearcherInitExitsWithTheCommandsStatus(t *testing.T) {
	err := exec.Command("/bin/sh", "-c", researcherInit, "autoresearch-researcher", "echo out; exit 3").Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("exit %v, want the command's 3", err)
	}
}

// Without a PID namespace, as on the process node, the init passes the
// SIGTERM to the command, which may finish its work first.
func TestResearcherInitPassesTheStopToTheCommand(t *testing.T) {
	cmd, lines := startResearcherInit(t, "/bin/sh", "-c", researcherInit, "autoresearch-researcher",
		`trap 'echo finishing the books; exit 7' TERM; echo ready; while :; do sleep 0.1; done`)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out, code := ended(t, cmd, lines)
	if out != "finishing the books" || code != 7 {
		t.Errorf("output %q, exit %d; want the command's handler to run and its exit 7", out, code)
	}
}

// As the first process of a PID namespace, as in a container, the init
// gets the SIGTERM that a shell running the command itself would ignore
// (the kubelet would kill it only at the end of the grace period), and
// passes it to every process of the container: a command with a handler
// runs it; the shell of one without stops, with what it runs. The
// container then ends with whatever is left.
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
			cmd, lines := startResearcherInit(t, "unshare", "--pid", "--fork", "--kill-child", "/bin/sh", "-c", researcherInit, "autoresearch-researcher", c.command)
			data, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(cmd.Process.Pid) + "/children")
			if err != nil {
				t.Fatal(err)
			}
			init, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatalf("the init's pid: %q: %v", data, err)
			}
			if err := syscall.Kill(init, syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if out, code := ended(t, cmd, lines); out != c.out || code != c.code {
				t.Errorf("output %q, exit %d; want %q, exit %d", out, code, c.out, c.code)
			}
		})
	}
}
