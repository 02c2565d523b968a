package agent

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// gitWrite spots git subcommands that change the repository. The shell is
// not a sandbox, so this only spares an honest model a compliance failure;
// the supervisor's compliance check and, on Kubernetes, the read-only git
// directory are what enforce the rule.
var gitWrite = regexp.MustCompile(`(?:^|[\s;&|(` + "`" + `])git(?:\s+-[Cc]\s+\S+)*\s+(?:add|am|apply\s+--index|branch\s+-[dDmM]|checkout|cherry-pick|clean|commit|config|fetch|gc|merge|mv|pull|push|rebase|reset|restore|revert|rm|stash|switch|tag|update-index|update-ref|worktree)\b`)

// commandWaitDelay bounds how long a killed command's children may hold
// its output open.
const commandWaitDelay = 2 * time.Second

func (t *Toolbox) runCommand(ctx context.Context, command string, timeout time.Duration) (string, error) {
	if strings.TrimSpace(command) == "" {
		return "", errors.New("command is empty")
	}
	if gitWrite.MatchString(command) {
		return "", refuse("git commands that change the repository belong to the supervisor, which commits or rolls back after training and evaluation; leave version control alone (read-only git commands such as git diff, git log and git status are fine)")
	}
	if timeout <= 0 || timeout > t.opts.CommandTimeout {
		timeout = t.opts.CommandTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	out := &headTail{limit: t.opts.OutputLimit}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Dir = t.dir
	cmd.Env = t.opts.Env
	cmd.Stdout = out
	cmd.Stderr = out
	// Its own process group, so that a timeout kills everything it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = commandWaitDelay
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start).Round(time.Millisecond)
	text := out.String()
	switch {
	case ctx.Err() != nil:
		return text, fmt.Errorf("the command did not finish within %s and was killed; run something quicker (training and evaluation are the supervisor's)", timeout)
	case err != nil && cmd.ProcessState == nil:
		return text, err
	case cmd.ProcessState.ExitCode() != 0:
		return text, fmt.Errorf("exit code %d after %s", cmd.ProcessState.ExitCode(), took)
	}
	return fmt.Sprintf("%s[exit code 0 after %s]", text, took), nil
}

// headTail keeps the first and last limit/2 bytes of what is written, and
// counts what it left out in between.
type headTail struct {
	mu      sync.Mutex
	limit   int
	head    []byte
	tail    []byte
	dropped int
}

func (h *headTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	half := h.limit / 2
	if room := half - len(h.head); room > 0 {
		take := min(room, len(p))
		h.head = append(h.head, p[:take]...)
		p = p[take:]
	}
	h.tail = append(h.tail, p...)
	if over := len(h.tail) - (h.limit - half); over > 0 {
		h.dropped += over
		h.tail = h.tail[over:]
	}
	return n, nil
}

func (h *headTail) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	b.Write(h.head)
	if h.dropped > 0 {
		fmt.Fprintf(&b, "\n[… %d bytes of output left out …]\n", h.dropped)
	}
	b.Write(h.tail)
	if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
	return b.String()
}
