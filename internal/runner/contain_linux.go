//go:build linux

package runner

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// chooseContainment tries, best first, what this machine allows: PID
// namespaces need root or unprivileged user namespaces; a subreaper needs
// only Linux.
func chooseContainment() containment {
	for _, c := range []containment{containNamespaces, containUserNamespaces} {
		if c == containNamespaces && os.Geteuid() != 0 {
			continue
		}
		probe := exec.Command("/bin/sh", "-c", ":")
		probe.SysProcAttr = c.attr(false, false)
		if probe.Run() == nil {
			return c
		}
	}
	if enableSubreaper() == nil {
		return containSubreaper
	}
	return containProcessGroup
}

// addNamespaces gives a step under c its namespaces, and its death with
// the runner.
func (c containment) addNamespaces(a *syscall.SysProcAttr, mounted, offline bool) {
	// A step dies with the runner, even one killed at once: left running,
	// a Researcher would go on writing the worktree beside the next run.
	a.Pdeathsig = syscall.SIGKILL
	// An IPC namespace of its own: the machine's System V shared memory,
	// semaphores and message queues, and its POSIX message queues, outlive
	// the process that made them, and one step would leave there what the
	// next reads (a number for training; the holdout's rows for a later
	// Researcher).
	switch c {
	case containNamespaces:
		a.Cloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC
	case containUserNamespaces:
		a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC
		// An init that mounts is the namespace's root; it runs the command
		// as the runner's user again (dropMountPower).
		uid, gid := os.Getuid(), os.Getgid()
		if mounted {
			uid, gid = 0, 0
		}
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: os.Getgid(), Size: 1}}
	default:
		return
	}
	// Go makes the new mount namespace private before the exec: nothing a
	// step mounts reaches the runner or the steps after it.
	a.Unshareflags = syscall.CLONE_NEWNS
	if offline {
		// A network namespace of its own has only its loopback, down: no
		// address, not even 127.0.0.1, and no abstract Unix socket of the
		// machine's.
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
}

// probeOffline says whether a step under c can get a network namespace of
// its own: a machine may allow PID and mount namespaces and refuse this
// one.
func probeOffline(c containment) bool {
	probe := exec.Command("/bin/sh", "-c", ":")
	probe.SysProcAttr = c.attr(false, true)
	return probe.Run() == nil
}

// probeMounts tries the mounts of a step under c on a directory of its own:
// the whole machine read-only, one directory read-only again, one
// read-write inside it, and that the command can write only the last.
func probeMounts(c containment) bool {
	dir, err := os.MkdirTemp("", "autoresearch-mounts-")
	if err != nil {
		return false
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return false
	}
	rw := filepath.Join(dir, "rw")
	if err := os.Mkdir(rw, 0o755); err != nil {
		return false
	}
	argv := c.argv(`true >"$PROBE/ro" 2>/dev/null; true >"$PROBE/rw/rw"`, []Mount{theMachine, {Path: dir, ReadOnly: true}, {Path: rw}})
	probe := exec.Command(argv[0], argv[1:]...)
	probe.Env = append(os.Environ(), "PROBE="+dir)
	probe.SysProcAttr = c.attr(true, false)
	if probe.Run() != nil {
		return false
	}
	_, errRO := os.Stat(filepath.Join(dir, "ro"))
	_, errRW := os.Stat(filepath.Join(rw, "rw"))
	return errors.Is(errRO, os.ErrNotExist) && errRW == nil
}

// rootUserNamespace says, once, whether a root runner's steps can run
// their commands in a user namespace of their own (dropMountPower): a
// machine may refuse user namespaces.
var rootUserNamespace = sync.OnceValue(func() bool {
	return os.Geteuid() == 0 && exec.Command("unshare", "--user", "--map-user=0", "--map-group=0", "--", "true").Run() == nil
})

// ownSessionKeyring gives the calling thread, and so the step it starts, a
// new session keyring of its own: a runner started from a login session
// holds one, which every step would otherwise share, possessed and
// writable, as a place to leave keys for the next. The thread is locked
// (Process.RunOutput). A kernel without keyrings, or a seccomp filter that
// denies keyctl(2) (a container runtime's default, where the step wrapper
// runs in a pod), leaves nothing to share: the step is denied it too.
func ownSessionKeyring() error {
	_, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	if errno != 0 && errno != unix.ENOSYS && errno != unix.EPERM {
		return fmt.Errorf("a session keyring of its own: %w", errno)
	}
	return nil
}

// machineSockets are the paths of the Unix sockets bound in the runner's
// network namespace, as /proc/net/unix lists them: where a service put its
// socket, however deep (a container runtime's under its state directory).
func machineSockets() []string {
	data, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return nil
	}
	var paths []string
	for _, line := range strings.Split(string(data), "\n") {
		// Num RefCount Protocol Flags Type St Inode Path; an abstract
		// socket's name starts with @.
		if f := strings.Fields(line); len(f) >= 8 && strings.HasPrefix(f[7], "/") {
			paths = append(paths, strings.Join(f[7:], " "))
		}
	}
	return paths
}

// prepare readies the runner for a step under c.
func (c containment) prepare() error {
	if c == containSubreaper {
		return enableSubreaper()
	}
	return nil
}

var enableSubreaper = sync.OnceValue(func() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
})

// sweepMu serializes sweeps: a sweep reaps the pids it killed, and no other
// may wait on them meanwhile.
var sweepMu sync.Mutex

// sweepOrphans kills every process that a step left behind. The runner is a
// subreaper, so a step's orphans are its children; they are told from the
// runner's own children by their session — a step runs in a session of its
// own, and no process can join another session — and from the steps running
// now by leaders. Each is killed with everything it started, and reaped by
// its pid alone: waiting for any child would take os/exec's.
func sweepOrphans() {
	sweepMu.Lock()
	defer sweepMu.Unlock()
	self := os.Getpid()
	sid, err := unix.Getsid(0)
	if err != nil {
		return
	}
	// Each pass kills the orphans and their descendants; what they forked
	// meanwhile is orphaned to the runner again and found by the next.
	for range 100 {
		leaders.Lock()
		procs := readProcs()
		var orphans []int
		for pid, p := range procs {
			if p.ppid == self && p.sid != sid && !leaders.pids[pid] {
				orphans = append(orphans, pid)
			}
		}
		for _, pid := range descendants(procs, orphans) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		leaders.Unlock()
		if len(orphans) == 0 {
			return
		}
		for _, pid := range orphans {
			for {
				if _, err := syscall.Wait4(pid, nil, 0, nil); !errors.Is(err, syscall.EINTR) {
					break
				}
			}
		}
	}
}

// proc is what a sweep needs of a process.
type proc struct{ ppid, sid int }

// readProcs reads every process's parent and session from /proc.
func readProcs() map[int]proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	procs := make(map[int]proc, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session …; comm may hold anything.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 4 {
			continue
		}
		ppid, err1 := strconv.Atoi(f[1])
		sid, err2 := strconv.Atoi(f[3])
		if err1 == nil && err2 == nil {
			procs[pid] = proc{ppid: ppid, sid: sid}
		}
	}
	return procs
}

// descendants returns roots and every process below them.
func descendants(procs map[int]proc, roots []int) []int {
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	all := append([]int(nil), roots...)
	for i := 0; i < len(all); i++ {
		all = append(all, children[all[i]]...)
	}
	return all
}
