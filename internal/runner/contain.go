package runner

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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

// mountsOff is set by WithoutMounts.
var mountsOff atomic.Bool

// WithoutMounts has the steps this process runs get no read-only mounts
// until the returned function is called, as on a machine that allows none:
// the tamper corpus uses it to attack the guards that hold there too.
func WithoutMounts() (restore func()) {
	mountsOff.Store(true)
	return func() { mountsOff.Store(false) }
}

// Containment says how this process contains the steps it runs, e.g.
// "pid+mount namespaces, read-only mounts", "subreaper" or "process group".
// It is chosen once, the first time it is needed, as the best this machine
// allows.
func Containment() string {
	if ReadOnlyMounts() {
		return chosen().String() + ", read-only mounts"
	}
	return chosen().String()
}

// ReadOnlyMounts reports whether the steps this process runs get the
// read-only mounts that Process.Mounts asks for. They need the namespaces,
// and util-linux's mount, findmnt and setpriv or unshare.
func ReadOnlyMounts() bool { return chosen().mounts() }

// MountsWarning is what a person should know when the steps run without
// read-only mounts, or "" when they have them.
func MountsWarning() string {
	if ReadOnlyMounts() {
		return ""
	}
	return "steps run without read-only mounts: while it runs, a step can write whatever this user can, the repository's git directory and the supervisor's state included; " +
		"what it changes of git and of the ledger is undone and fails the round"
}

// isolated says why the steps here lack the isolation that
// Options.RequireIsolation asks for: read-only mounts and namespaces, and
// with a holdout a network namespace for its step; nil when they have it.
func isolated(holdout bool) error {
	var missing []string
	if !ReadOnlyMounts() {
		missing = append(missing, "read-only mounts (steps are contained by "+Containment()+")")
	}
	if holdout && !OfflineSteps() {
		missing = append(missing, "a network namespace for the holdout's step")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("isolation required, and this machine gives the steps no %s: run as root, or allow unprivileged user namespaces "+
		"(sysctl kernel.unprivileged_userns_clone=1, or kernel.apparmor_restrict_unprivileged_userns=0), with util-linux's mount, findmnt and setpriv or unshare installed",
		strings.Join(missing, " and no "))
}

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

// nsMountInit is nsInit for a step with mounts: its arguments after the
// command are pairs of a mode and a path, applied in order. For ro and rw
// (and hide:<empty>, where the empty file or directory is bound onto the
// path) the path is bound onto itself and remounted read-only or
// read-write (read-only for hide), keeping the flags it had (nosuid,
// nodev, …: a user namespace may not drop them); for pin, bound onto
// itself with the mounts below it, as they are. For machine, every mount
// point of the machine but /proc and /dev is remounted read-only in place
// (/sys and its cgroup file systems too); a mount point that findmnt has
// to escape fails the step rather than stay writable, and so does one that
// cannot be remounted, unless it is gone: the machine removed its
// directory after the listing, which detaches it from the step's namespace
// too, leaving nothing to make read-only. The step then gets a
// kernel view of its own (own_kernel): a /proc of its PID namespace, so
// that it sees no process but its own, with the kernel's settings and
// triggers read-only; and a /dev of its own, read-only, holding only the
// devices a step uses — the null, zero, random and terminal devices, the
// GPUs' and accelerators', RDMA's — with terminals of its own (a new
// devpts instance: no other session's terminal) and an empty /dev/shm: no
// disk, no console, no kernel log. The Unix sockets of the machine's
// services (a session's D-Bus, systemd's, a container runtime's, tmux's)
// are bound over by /dev/null: a step that reached one would have it run
// commands outside every namespace. They are those the machine's network
// namespace has bound (machineSockets, which the runner lists in
// $AUTORESEARCH_SOCKETS: a step's /proc/net may be of a network of its
// own), and those in /run and the temporary directories. A mount that
// fails fails the step before its command runs. The init enters its
// directory again, by path: the one it started in is under the mounts,
// and a relative path from it would go around them. The command then runs
// without the power to undo them (dropMountPower fills in how). A veil
// hides a directory but what the keeps before it name
// inside it: each keep is bound aside first, into the step's /dev/shm, the
// veil mounts an empty tmpfs on the directory, the keeps are moved back to
// their paths in it, made there, and the tmpfs is made read-only: nothing
// else of the directory, not even a name, is left in the step's sight. A
// veil with a source (veil:<dir>) binds that directory instead, writable.
const nsMountInit = `readonly_machine() {
	mounts=$(findmnt -rn -o TARGET,VFS-OPTIONS) || return 1
	while read -r target opts; do
		case $target in /proc | /proc/* | /dev | /dev/*) continue ;; esac
		case $target in *\\*) echo "autoresearch: cannot name the mount $target for the step" >&2; return 1 ;; esac
		mount -o "remount,bind,ro${opts#r[ow]}" -- "$target" || gone "$target" || return 1
	done <<-MOUNTS
	$mounts
	MOUNTS
	machine=1
	own_kernel
}
keep() {
	kept=$((kept + 1))
	aside=/dev/shm/.kept-$kept
	if [ -d "$1" ]; then mkdir -- "$aside"; else : >"$aside"; fi &&
		mount --rbind -- "$1" "$aside" &&
		eval "keep_$kept=\$1"
}
veil() {
	if [ -n "$2" ]; then
		mount --bind -- "$2" "$1" &&
			opts=$(findmnt -n -o VFS-OPTIONS --mountpoint "$1" | tail -n 1) &&
			mount -o "remount,bind,rw${opts#r[ow]}" -- "$1" "$1" || return 1
	else
		mount -t tmpfs -o nosuid,nodev,mode=755,size=1m tmpfs "$1" || return 1
	fi
	while [ "$kept" -gt 0 ]; do
		aside=/dev/shm/.kept-$kept
		eval "path=\$keep_$kept"
		case $path in "$1"/*) ;; *) echo "autoresearch: $path lies outside the veiled $1" >&2; return 1 ;; esac
		if [ -d "$aside" ]; then mkdir -p -- "$path"; else mkdir -p -- "${path%%/*}" && : >"$path"; fi &&
			mount -n --move -- "$aside" "$path" && rm -d -- "$aside" || return 1
		kept=$((kept - 1))
	done
	[ -n "$2" ] || mount -o remount,bind,ro,nosuid,nodev -- "$1"
}
gone() {
	now=$(findmnt -rn -o TARGET) || return 1
	! printf '%%s\n' "$now" | grep -qxF -- "$1"
}
hide_sockets() {
	{
		printf '%%s\n' "$sockets"
		find /run /var/run /tmp /var/tmp -maxdepth 4 -type s 2>/dev/null
	} | sort -u | while IFS= read -r s; do
		[ -S "$s" ] || continue
		mount --bind /dev/null "$s" 2>/dev/null || [ ! -S "$s" ] || : >/dev/shm/.exposed
	done
	[ ! -e /dev/shm/.exposed ] && return
	rm -f /dev/shm/.exposed
	return 1
}
own_kernel() {
	mount -t proc -o nosuid,nodev,noexec proc /proc || return 1
	for p in /proc/sys /proc/sysrq-trigger /proc/irq /proc/bus; do
		[ -e "$p" ] || continue
		mount --bind -- "$p" "$p" && mount -o remount,bind,ro,nosuid,nodev,noexec -- "$p" || return 1
	done
	{ [ -d /dev/shm ] || mkdir /dev/shm; } && mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /dev/shm || return 1
	new=/dev/shm/dev
	mkdir "$new" && mount -t tmpfs -o nosuid,mode=755 tmpfs "$new" || return 1
	for d in /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty /dev/nvidia* /dev/dri /dev/kfd /dev/accel* /dev/vfio /dev/infiniband; do
		[ -e "$d" ] || continue
		if [ -d "$d" ]; then mkdir "$new/${d#/dev/}"; else : >"$new/${d#/dev/}"; fi &&
			mount --rbind -- "$d" "$new/${d#/dev/}" || return 1
	done
	mkdir "$new/pts" && mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$new/pts" &&
		ln -s pts/ptmx "$new/ptmx" || return 1
	ln -s /proc/self/fd "$new/fd" && ln -s /proc/self/fd/0 "$new/stdin" &&
		ln -s /proc/self/fd/1 "$new/stdout" && ln -s /proc/self/fd/2 "$new/stderr" &&
		mkdir "$new/shm" && mount -n --move -- "$new" /dev &&
		mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /dev/shm &&
		mount -o remount,bind,ro,nosuid -- /dev
}
cmd=$1
shift
kept=0
sockets=$AUTORESEARCH_SOCKETS
unset AUTORESEARCH_SOCKETS
while [ $# -gt 1 ]; do
	mode=$1 src=$2
	case $1 in hide:*) mode=ro src=${1#hide:} ;; veil:*) mode=veil src=${1#veil:} ;; veil) src= ;; esac
	case $mode in
	machine) readonly_machine ;;
	pin) mount --rbind -- "$2" "$2" ;;
	keep) keep "$2" ;;
	veil) veil "$2" "$src" ;;
	*)
		# A writable directory comes with the mounts below it (a
		# separate file system holding the experiment under /tmp), as
		# read-only as the machine made them; a read-only one without
		# them, which would stay writable.
		bind=--bind
		[ "$mode" != rw ] || bind=--rbind
		mount "$bind" -- "$src" "$2" &&
			opts=$(findmnt -n -o VFS-OPTIONS --mountpoint "$2" | tail -n 1) &&
			mount -o "remount,bind,$mode${opts#r[ow]}" -- "$2" "$2" ;;
	esac || {
		echo "autoresearch: cannot mount $2 $1 for the step" >&2
		exit 125
	}
	shift 2
done
[ -z "$machine" ] || hide_sockets || {
	echo "autoresearch: cannot hide the machine's sockets from the step" >&2
	exit 125
}
here=$(pwd -P) && cd -- "$here" || exit 125
%s /bin/sh -c "$cmd"
exit $?`

// Mount is a path of a step's mount namespace bound onto itself read-only,
// or read-write again inside an enclosing read-only one.
type Mount struct {
	Path     string
	ReadOnly bool
	// Machine makes every mount of the machine read-only where it is, and
	// gives the step a /proc and a /dev of its own (nsMountInit), instead
	// of binding Path: the step writes nothing of the machine but what
	// later mounts make writable again, and reaches no other process, no
	// kernel setting and no disk. It comes first; Path is "/".
	Machine bool
	// Hide, when set, is an empty file or directory bound read-only over
	// Path, a file or directory of the same kind, so that the step reads
	// and writes nothing there.
	Hide string
	// Pin binds Path onto itself with every mount below it, as they are:
	// nothing changes but that Path is a mount point, which the step can
	// neither move nor remove.
	Pin bool
	// Veil hides the directory Path, but what the Keep mounts just before
	// it name inside it: the step sees an empty, read-only directory there,
	// with only the kept paths in it, as they were. It needs the machine's
	// mount first.
	Veil bool
	// Source, with Veil, is a directory that the step sees and writes at
	// Path instead of the empty read-only one, the kept paths made in it:
	// nothing the step writes there reaches Path.
	Source string
	// Keep is a path inside the next Veil's directory that stays in the
	// step's sight.
	Keep bool
}

// theMachine is the Mount that makes the machine read-only to a step.
var theMachine = Mount{Path: "/", ReadOnly: true, Machine: true}

// argv is the command line that runs command under c, with mounts when
// there are any (only namespaced containments have them).
func (c containment) argv(command string, mounts []Mount) []string {
	if !c.namespaced() {
		return []string{"/bin/sh", "-c", command}
	}
	if len(mounts) == 0 {
		return []string{"/bin/sh", "-c", nsInit, "autoresearch-step", command}
	}
	argv := []string{"/bin/sh", "-c", fmt.Sprintf(nsMountInit, c.dropMountPower()), "autoresearch-step", command}
	for _, m := range mounts {
		mode := "rw"
		switch {
		case m.Machine:
			mode = "machine"
		case m.Pin:
			mode = "pin"
		case m.Veil && m.Source != "":
			mode = "veil:" + m.Source
		case m.Veil:
			mode = "veil"
		case m.Keep:
			mode = "keep"
		case m.Hide != "":
			mode = "hide:" + m.Hide
		case m.ReadOnly:
			mode = "ro"
		}
		argv = append(argv, mode, m.Path)
	}
	return argv
}

// dropMountPower is the command that runs a step's command, in its
// namespaces, so that it cannot undo the mounts. As root it keeps no
// capability at all, and cannot gain one: without CAP_SYS_ADMIN it can
// neither mount nor enter another mount namespace, without CAP_SYS_PTRACE
// it cannot reach the runner's file system through /proc/<pid>/root, and
// without CAP_DAC_READ_SEARCH it cannot open a file by its handle, around
// the mounts. In a user namespace, where the init is the
// namespace's root, the command runs as the runner's user in a user
// namespace of its own, with no capabilities over the mounts. A new user
// and mount namespace that the command makes gets the mounts locked: it can
// neither unmount them nor make them writable. As root too, where the
// machine allows one, the command runs in a user namespace of its own, as
// its root, without capabilities: the kernel keeps a user's keyrings per
// user namespace, and a key that one step added to its user's keyring
// (add_key(2), which takes no capability and no file) the next would read.
func (c containment) dropMountPower() string {
	if c == containUserNamespaces {
		return fmt.Sprintf("unshare --user --map-user=%d --map-group=%d --", os.Getuid(), os.Getgid())
	}
	drop := "setpriv --no-new-privs --inh-caps=-all --bounding-set=-all --"
	if rootUserNamespace() {
		return "unshare --user --map-user=0 --map-group=0 -- " + drop
	}
	return drop
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
// runner's session or group. mounted says the step's init makes mounts;
// offline gives a namespaced step a network namespace of its own.
func (c containment) attr(mounted, offline bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true}
	c.addNamespaces(a, mounted, offline)
	return a
}

// mountProbes say, each once, whether read-only mounts work under a
// namespaced containment.
var mountProbes = map[containment]func() bool{
	containNamespaces:     sync.OnceValue(func() bool { return probeMounts(containNamespaces) }),
	containUserNamespaces: sync.OnceValue(func() bool { return probeMounts(containUserNamespaces) }),
}

// offlineProbes say, each once, whether a step under a namespaced
// containment can get a network namespace of its own.
var offlineProbes = map[containment]func() bool{
	containNamespaces:     sync.OnceValue(func() bool { return probeOffline(containNamespaces) }),
	containUserNamespaces: sync.OnceValue(func() bool { return probeOffline(containUserNamespaces) }),
}

// offline reports whether a step under c that asks for it runs without
// the machine's network (Process.Offline).
func (c containment) offline() bool {
	probe := offlineProbes[c]
	return probe != nil && probe()
}

// OfflineSteps reports whether a step that asks for it (Process.Offline)
// runs in a network namespace of its own here: that takes the namespaces,
// and a machine that allows a network namespace.
func OfflineSteps() bool { return chosen().offline() }

// mounts reports whether steps under c get their mounts.
func (c containment) mounts() bool {
	if mountsOff.Load() {
		return false
	}
	probe := mountProbes[c]
	return probe != nil && probe()
}
