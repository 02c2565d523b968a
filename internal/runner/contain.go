package runner

import (
	"sync"
	"syscall"
)

// containment is how the processes of a step are made to die with it.
type containment int

const (
	// containAuto is the best this machine allows, chosen once.
	containAuto containment = iota
	// containNamespaces runs the step in its own PID and mount namespaces:
	// when its first process exits, the kernel kills every other.
	containNamespaces
	// containUserNamespaces is containNamespaces for a runner that is not
	// root, inside a new user namespace that maps only the runner's user.
	containUserNamespaces
	// containSubreaper makes the runner a child subreaper: every process a
	// step orphans becomes the runner's child, and is killed after the step.
	containSubreaper
	// containProcessGroup kills the step's process group only: a process
	// that starts a new session (setsid) may outlive the step.
	containProcessGroup
)

func (c containment) String() string {
	switch c {
	case containNamespaces:
		return "pid+mount namespaces"
	case containUserNamespaces:
		return "user+pid+mount namespaces"
	case containSubreaper:
		return "subreaper"
	case containProcessGroup:
		return "process group"
	}
	return "auto"
}

// namespaced reports whether the step runs in its own PID namespace.
func (c containment) namespaced() bool {
	return c == containNamespaces || c == containUserNamespaces
}

var chosen = sync.OnceValue(chooseContainment)

// Containment says how this process contains the steps it runs, e.g.
// "pid+mount namespaces", "subreaper" or "process group". It is chosen once,
// the first time it is needed, as the best this machine allows.
func Containment() string { return chosen().String() }

// ContainmentWarning is what a person should know about the containment
// of steps here, or "" when every process of a step dies with it.
func ContainmentWarning() string {
	if chosen() != containProcessGroup {
		return ""
	}
	return "steps are contained by their process group only: a process a step starts with setsid may outlive it, and change files after the step"
}

// nsInit is the first process of a step's PID namespace. The command runs
// as its child, never as PID 1, so that it gets the SIGTERM of a timeout
// (PID 1 of a namespace ignores signals it has no handler for); when it
// exits, so does nsInit, and the kernel kills what is left.
const nsInit = `/bin/sh -c "$1"
exit $?`

// argv is the command line that runs command under c.
func (c containment) argv(command string) []string {
	if c.namespaced() {
		return []string{"/bin/sh", "-c", nsInit, "autoresearch-step", command}
	}
	return []string{"/bin/sh", "-c", command}
}

// leaders are the first processes of the steps running now: children of
// this process in a session of their own, as a step's orphans are, which
// the subreaper's sweep must leave alone. Starting a step and sweeping hold
// the lock, so that a sweep never sees a step not yet registered.
var leaders = struct {
	sync.Mutex
	pids map[int]bool
}{pids: map[int]bool{}}

// attr is the SysProcAttr of a step under c: a session of its own (which
// is also its process group), so that no process of the step can join the
// runner's session or group.
func (c containment) attr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true}
	c.addNamespaces(a)
	return a
}
