package runner

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mountContainments are the containments this machine runs with mounts.
func mountContainments(t *testing.T) []containment {
	t.Helper()
	var modes []containment
	for _, c := range containments(t) {
		if c.mounts() {
			modes = append(modes, c)
		} else if c.namespaced() {
			t.Logf("no read-only mounts under %s here", c)
		}
	}
	if len(modes) == 0 {
		t.Skip("no containment of this machine makes read-only mounts")
	}
	return modes
}

// TestARootRunnerGetsItsMounts fails, rather than skips every mount test,
// where a root runner with util-linux has namespaces but a step's mounts
// fail: the mounts of the machine are what this package promises there.
func TestARootRunnerGetsItsMounts(t *testing.T) {
	if os.Geteuid() != 0 || !slices.Contains(containments(t), containNamespaces) {
		t.Skip("not root, or no namespaces here")
	}
	for _, tool := range []string{"mount", "findmnt", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	argv := containNamespaces.argv("true", []Mount{theMachine})
	step := exec.Command(argv[0], argv[1:]...)
	step.Dir = t.TempDir()
	step.SysProcAttr = containNamespaces.attr(true, false)
	if output, err := step.CombinedOutput(); err != nil {
		t.Fatalf("a step with the machine read-only: %v, output %q", err, output)
	}
	if !containNamespaces.mounts() {
		t.Error("the step ran with its mounts, but the probe says this machine has none")
	}
}

// TestAMountThatGoesAwayLeavesTheMachineReadOnly has a mount of the machine
// go away while a step's init makes the machine read-only, as one does
// when the machine unmounts it and removes its directory between the
// init's listing and its remount: the step runs, and the directory is as
// read-only as the rest. A mount that stays and cannot be remounted still
// fails the step.
func TestAMountThatGoesAwayLeavesTheMachineReadOnly(t *testing.T) {
	if os.Geteuid() != 0 || !containNamespaces.mounts() {
		t.Skip("not root, or no mounts under namespaces here")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	vanish := filepath.Join(dir, "vanish")
	if err := os.Mkdir(vanish, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "tmpfs", vanish).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", vanish).Run() })
	mount, err := exec.LookPath("mount")
	if err != nil {
		t.Fatal(err)
	}
	// The init's mount, which first takes the mount it is asked to remount
	// away ($GONE) or has the remount fail with the mount still there
	// ($STUCK).
	bin := t.TempDir()
	wrapper := `#!/bin/sh
case "$*" in
*remount,*" -- $GONE") umount -l -- "$GONE" ;;
*remount,*" -- $STUCK") exit 32 ;;
esac
exec ` + mount + ` "$@"
`
	if err := os.WriteFile(filepath.Join(bin, "mount"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, env string
		ok        bool
	}{
		{name: "gone", env: "GONE=" + vanish, ok: true},
		{name: "stuck", env: "STUCK=" + vanish},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv := containNamespaces.argv(`echo step > "$VANISH/file" && echo wrote vanish; echo step > "$DIR/file" && echo wrote dir; true`, []Mount{theMachine})
			step := exec.Command(argv[0], argv[1:]...)
			step.Dir = dir
			step.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), tc.env, "VANISH="+vanish, "DIR="+dir)
			step.SysProcAttr = containNamespaces.attr(true, false)
			output, err := step.CombinedOutput()
			if !tc.ok {
				if code := step.ProcessState.ExitCode(); code != 125 || !strings.Contains(string(output), "cannot mount / machine") {
					t.Errorf("exit %d, output %q: want the mounts to fail the step", code, output)
				}
				return
			}
			if err != nil {
				t.Fatalf("a step whose mount went away: %v, output %q", err, output)
			}
			if strings.Contains(string(output), "wrote") {
				t.Errorf("the step wrote the machine: %q", output)
			}
		})
	}
}

// mountTree is a read-only directory with a file, a directory inside it
// that is writable again, and one inside that which is read-only again.
type mountTree struct{ ro, file, rw, sub string }

func newMountTree(t *testing.T) mountTree {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := mountTree{ro: filepath.Join(dir, "ro"), file: filepath.Join(dir, "ro", "file"), rw: filepath.Join(dir, "ro", "rw")}
	m.sub = filepath.Join(m.rw, "sub")
	if err := os.MkdirAll(m.sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{m.file, filepath.Join(m.sub, "file")} {
		if err := os.WriteFile(f, []byte("before\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func (m mountTree) run(t *testing.T, c containment, command string) string {
	t.Helper()
	p := Process{
		Command: command, Dir: m.rw, Timeout: 20 * time.Second, KillGrace: time.Second,
		LogPath: filepath.Join(t.TempDir(), "log"), containment: c,
		Mounts: []Mount{{Path: m.ro, ReadOnly: true}, {Path: m.rw}, {Path: m.sub, ReadOnly: true}},
	}
	exit, output, err := p.RunOutput(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if exit.ExitCode == 125 {
		t.Fatalf("the mounts failed: %s", output)
	}
	return output
}

func TestMountsAreReadOnlyButTheWritableOnes(t *testing.T) {
	for _, c := range mountContainments(t) {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			m := newMountTree(t)
			// The step starts in the writable directory: a relative path
			// from there reaches the read-only one inside it.
			output := m.run(t, c, `echo step > "`+m.file+`"; echo new > "`+m.ro+`/new"; echo step > sub/file; echo step > "`+m.rw+`/file" && echo wrote rw; id -u`)
			for _, f := range []string{m.file, filepath.Join(m.sub, "file")} {
				if data, _ := os.ReadFile(f); string(data) != "before\n" {
					t.Errorf("the step wrote %q into the read-only %s", data, f)
				}
			}
			if _, err := os.Stat(filepath.Join(m.ro, "new")); err == nil {
				t.Error("the step made a file in a read-only mount")
			}
			if data, _ := os.ReadFile(filepath.Join(m.rw, "file")); string(data) != "step\n" || !strings.Contains(output, "wrote rw") {
				t.Errorf("the step could not write the writable mount: %q, output %q", data, output)
			}
			// The step runs as the runner's user.
			if !strings.Contains(output, "\n"+strconv.Itoa(os.Getuid())+"\n") {
				t.Errorf("output %q, want the step to run as uid %d", output, os.Getuid())
			}
			// Nothing of the mounts reached the runner.
			if err := os.WriteFile(m.file, []byte("after\n"), 0o644); err != nil {
				t.Errorf("after the step the runner cannot write the path: %v", err)
			}
			if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(mi), m.ro) {
				t.Errorf("the runner sees the step's mount of %s", m.ro)
			}
		})
	}
}

// mountEscapes are ways a step tries to undo its read-only mount of $RO
// before it writes $RO/file; $SELF is the runner's pid, whose root is the
// runner's mount namespace.
var mountEscapes = map[string]string{
	"umount":                     `umount "$RO"`,
	"umount lazy":                `umount -l "$RO"`,
	"remount rw":                 `mount -o remount,rw "$RO"`,
	"remount bind rw":            `mount -o remount,bind,rw "$RO" "$RO"`,
	"user namespace umount":      `unshare -Urm sh -c 'umount "$RO"; echo escaped > "$RO/file"'`,
	"user namespace umount lazy": `unshare -Urm sh -c 'umount -l "$RO"; echo escaped > "$RO/file"'`,
	"user namespace remount rw":  `unshare -Urm sh -c 'mount -o remount,bind,rw "$RO" "$RO"; echo escaped > "$RO/file"'`,
	// A bind of a parent without its submounts would show the directory
	// under the read-only mount.
	"user namespace bind parent": `unshare -Urm sh -c 'd=$(mktemp -d); mount --bind "$(dirname "$RO")" "$d" && echo escaped > "$d/ro/file"'`,
	"runner's root":              `echo escaped > "/proc/$SELF/root$RO/file"`,
	"runner's mount namespace":   `nsenter -t "$SELF" -m sh -c 'echo escaped > "$RO/file"'`,
}

func TestAStepCannotUndoItsMounts(t *testing.T) {
	for _, c := range mountContainments(t) {
		for name, escape := range mountEscapes {
			t.Run(c.String()+"/"+name, func(t *testing.T) {
				t.Parallel()
				m := newMountTree(t)
				output := m.run(t, c, "export RO='"+m.ro+"' SELF="+strconv.Itoa(os.Getpid())+"\n"+escape+"\necho escaped > \"$RO/file\"\n:")
				if data, _ := os.ReadFile(m.file); string(data) != "before\n" {
					t.Errorf("the step wrote %q through its read-only mount; output:\n%s", data, output)
				}
			})
		}
	}
}

func TestAMountThatFailsFailsTheStep(t *testing.T) {
	for _, c := range mountContainments(t) {
		t.Run(c.String(), func(t *testing.T) {
			m := newMountTree(t)
			marker := filepath.Join(m.rw, "ran")
			p := Process{
				Command: "touch " + marker, Dir: m.rw, Timeout: 10 * time.Second, KillGrace: time.Second,
				LogPath: filepath.Join(t.TempDir(), "log"), containment: c,
				// A path that is gone when the step starts.
				Mounts: []Mount{{Path: m.ro, ReadOnly: true}, {Path: filepath.Join(m.ro, "gone")}},
			}
			if _, _, err := p.RunOutput(context.Background()); err == nil {
				t.Error("a step whose mount path does not exist started")
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the command ran without its mounts")
			}
		})
	}
}

func TestAStepWithMountsIsContainedAsWithout(t *testing.T) {
	for _, c := range mountContainments(t) {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			m := newMountTree(t)
			file := filepath.Join(m.rw, "written")
			m.run(t, c, "export FILE="+file+"; "+leftovers["setsid double fork"]+"\nsleep 0.3")
			// The timeout leaves the step's mounts time to be made on a
			// loaded machine before it ends the command, whose trap is set.
			p := Process{
				Command: `trap 'echo terminated; exit 3' TERM; sleep 30 & wait`, Dir: m.rw,
				Timeout: 3 * time.Second, KillGrace: 5 * time.Second,
				LogPath: filepath.Join(t.TempDir(), "log"), containment: c,
				Mounts: []Mount{{Path: m.ro, ReadOnly: true}, {Path: m.rw}},
			}
			exit, output, err := p.RunOutput(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !exit.TimedOut || exit.ExitCode != 3 || !strings.Contains(output, "terminated") {
				t.Errorf("exit %+v, output %q: want the command's own SIGTERM handler to end it", exit, output)
			}
			neverWritten(t, file, 3*time.Second)
		})
	}
}

// TestTheMachineIsReadOnlyToAStep makes every mount of the machine
// read-only to a step but a directory it writes, and gives it a kernel
// view of its own: it writes nothing elsewhere that a later step would
// read — a file beside its directory, one in a submount of the machine —
// and what it leaves in /dev/shm is gone with it. It sees no process but
// its own, writes no kernel setting and no trigger a root step would use
// to run a program outside every namespace (core_pattern, uevent_helper,
// a cgroup's release_agent), and finds no disk to write under the mounts.
func TestTheMachineIsReadOnlyToAStep(t *testing.T) {
	shm, err := os.Stat("/dev/shm")
	if err != nil || !shm.IsDir() {
		t.Skip("no /dev/shm here")
	}
	for _, c := range mountContainments(t) {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			rw, beside := filepath.Join(dir, "rw"), filepath.Join(dir, "beside")
			if err := os.Mkdir(rw, 0o755); err != nil {
				t.Fatal(err)
			}
			// A mount of the machine that is no step's: the sweep must
			// reach submounts, not / alone.
			sub := filepath.Join(dir, "submount")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("mount", "-t", "tmpfs", "tmpfs", sub).CombinedOutput(); err != nil {
				t.Logf("no submount (%v: %s): the sweep is tried on / alone", err, out)
				sub = ""
			} else {
				t.Cleanup(func() { _ = exec.Command("umount", sub).Run() })
			}
			shmFile := filepath.Join("/dev/shm", "autoresearch-test-"+strconv.Itoa(os.Getpid())+"-"+strings.ReplaceAll(c.String(), " ", "-"))
			t.Cleanup(func() { _ = os.Remove(shmFile) })
			script := `echo step > "$BESIDE"; [ -z "$SUB" ] || echo step > "$SUB/file"; echo step > "$SHM" && echo wrote shm; echo step > /dev/null && echo wrote null; echo step > "$RW/file" && echo wrote rw
grep -qF "$RUNNER_ARG0" "/proc/$RUNNER/cmdline" 2>/dev/null && echo "sees the runner"
head -c 1 /dev/urandom | wc -c | grep -q 1 && echo read urandom
for f in /proc/sys/kernel/core_pattern /proc/sysrq-trigger /sys/kernel/uevent_helper /sys/fs/cgroup/*/release_agent; do [ -e "$f" ] && [ -w "$f" ] && echo "writes $f"; done
for d in /dev/* /dev/*/*; do [ -b "$d" ] && echo "reaches the disk $d"; done
for d in /dev/pts/*; do [ "$d" = /dev/pts/ptmx ] || echo "reaches the terminal $d"; done
! command -v python3 >/dev/null || python3 -c 'import os, pty; m, s = pty.openpty(); print("opened", os.ttyname(s))'
! command -v python3 >/dev/null || python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print("reaches the service")' "$SERVICE" 2>/dev/null
[ -z "$DEEP" ] || ! command -v python3 >/dev/null || python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print("reaches the deep service")' "$DEEP" 2>/dev/null
true`
			// A service of the machine's, listening on a Unix socket in a
			// temporary directory, and a terminal of the machine's, which
			// the step must not reach.
			// The socket lies where the step writes, which a later mount
			// makes writable again.
			service, err := net.Listen("unix", filepath.Join(rw, "service.sock"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = service.Close() })
			// And one deep in a directory of the machine's that is neither
			// /run nor a temporary directory, as a container runtime's
			// socket lies under its state directory.
			var deep string
			if cache, err := os.UserCacheDir(); err == nil {
				top := filepath.Join(cache, fmt.Sprintf("autoresearch-test-%d-%d", os.Getpid(), c))
				d := filepath.Join(top, "a", "b", "c", "d")
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = os.RemoveAll(top) })
				if l, err := net.Listen("unix", filepath.Join(d, "service.sock")); err == nil {
					t.Cleanup(func() { _ = l.Close() })
					deep = l.Addr().String()
				} else {
					t.Logf("no deep socket: %v", err)
				}
			}
			if ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0); err == nil {
				t.Cleanup(func() { _ = ptmx.Close() })
			}
			p := Process{
				Command: script, Dir: rw, Timeout: 20 * time.Second, KillGrace: time.Second,
				Env:     []string{"BESIDE=" + beside, "SUB=" + sub, "SHM=" + shmFile, "RW=" + rw, "RUNNER=" + strconv.Itoa(os.Getpid()), "RUNNER_ARG0=" + os.Args[0], "SERVICE=" + filepath.Join(rw, "service.sock"), "DEEP=" + deep},
				LogPath: filepath.Join(t.TempDir(), "log"), containment: c,
				Mounts: []Mount{theMachine, {Path: rw}},
			}
			exit, output, err := p.RunOutput(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if exit.ExitCode == 125 {
				t.Fatalf("the mounts failed: %s", output)
			}
			outside := []string{beside, shmFile}
			if sub != "" {
				outside = append(outside, filepath.Join(sub, "file"))
			}
			for _, f := range outside {
				if _, err := os.Stat(f); err == nil {
					t.Errorf("the step left %s, outside what it may write; output:\n%s", f, output)
				}
			}
			for _, want := range []string{"wrote shm", "wrote null", "wrote rw", "read urandom"} {
				if !strings.Contains(output, want) {
					t.Errorf("output %q, want %q", output, want)
				}
			}
			if _, err := exec.LookPath("python3"); err == nil && !strings.Contains(output, "opened /dev/pts/0") {
				t.Errorf("output %q, want a terminal of the step's own, the first of its devpts", output)
			}
			for _, escape := range []string{"sees the runner", "writes ", "reaches the disk", "reaches the terminal", "reaches the service", "reaches the deep service"} {
				if strings.Contains(output, escape) {
					t.Errorf("output %q: the step %s", output, escape)
				}
			}
		})
	}
}

// TestWritableMustBeADirectory refuses, before any step, a writable
// directory that is relative or not a directory at all: a mount of it
// would fail every step instead.
func TestWritableMustBeADirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"data", file, filepath.Join(t.TempDir(), "gone")} {
		repo := newRepo(t, toyFiles(improvePlan, ""))
		_, err := Run(context.Background(), load(t, repo), Options{Writable: []string{w}})
		if err == nil || !strings.Contains(err.Error(), "not the absolute path of a directory") {
			t.Errorf("writable %q: error %v, want it refused", w, err)
		}
	}
}

// TestTheSharedCachesAreAResearchersTool keeps the caches that
// experiments share, the evaluations' among them, read-only to
// Researchers given the user's home (Options.ResearcherHome), who write
// the home they lie in.
func TestTheSharedCachesAreAResearchersTool(t *testing.T) {
	root, err := sharedCacheRoot()
	if err != nil {
		t.Skip("no user cache directory here")
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil || !inside(root, home) {
		t.Skipf("the cache %s lies outside the home %q: read-only already", root, home)
	}
	if dirs := toolDirs(context.Background(), stepPath(false, home), home); !slices.Contains(dirs, root) {
		t.Errorf("tool directories %v lack the shared caches %s", dirs, root)
	}
}

// TestTheStepsPathIsFixedWhenTheRunStarts names each directory of the
// steps' PATH as it resolves, drops the relative entries, which name the
// step's checkout, and, when steps get mounts, which keep the rest
// read-only to Researchers, drops a directory Researchers write as a whole
// and makes the missing ones where they write.
func TestTheStepsPathIsFixedWhenTheRunStarts(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bin, link, absent := filepath.Join(dir, "bin"), filepath.Join(dir, "link"), filepath.Join(dir, "absent", "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", strings.Join([]string{".", "", "rel/bin", link, absent, bin, "/no/such/dir", dir}, string(os.PathListSeparator)))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if self, err = filepath.EvalSymlinks(filepath.Dir(self)); err != nil {
		t.Fatal(err)
	}
	// dir is the Researchers' home.
	if got, want := stepPath(false, dir), []string{self, bin, dir}; !slices.Equal(got, want) {
		t.Errorf("without mounts: PATH %v, want %v", got, want)
	}
	if _, err := os.Stat(absent); err == nil {
		t.Errorf("without mounts %s was made", absent)
	}
	if got, want := stepPath(true, dir), []string{self, bin, absent}; !slices.Equal(got, want) {
		t.Errorf("with mounts: PATH %v, want %v, without the Researchers' home", got, want)
	}
	if _, err := os.Stat("/no/such/dir"); err == nil {
		t.Error("/no/such/dir, outside where Researchers write, was made")
	}
}

// TestResearcherHomeMustStandApart refuses, before any step, a Researcher
// home that is no directory, or that lies in the repository or the
// worktree, which the Researcher may not write as a whole.
func TestResearcherHomeMustStandApart(t *testing.T) {
	repo := newRepo(t, toyFiles(improvePlan, ""))
	x := load(t, repo)
	inWorktree := filepath.Join(x.Worktree, "home")
	if err := os.MkdirAll(inWorktree, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{".", filepath.Join(t.TempDir(), "gone"), repo, inWorktree, link} {
		_, err := Run(context.Background(), x, Options{ResearcherHome: h})
		if err == nil || !strings.Contains(err.Error(), "researcher home") {
			t.Errorf("researcher home %q: error %v, want it refused", h, err)
		}
	}
}

// TestAVeilLeavesOnlyWhatItKeeps: a veiled directory is empty and
// read-only to the step but for the paths kept in it, a directory and a
// file, which stay as they were: the kept directory writable where a later
// mount makes it so. Nothing else of the directory is in sight, not even a
// name. A veil with a source shows that directory instead, writable, and
// what the step writes there stays there.
func TestAVeilLeavesOnlyWhatItKeeps(t *testing.T) {
	if os.Geteuid() == 0 && os.Getenv(veilAsUserEnv) == "" {
		t.Run("as a user other than root", veilAsAUser)
	}
	for _, c := range mountContainments(t) {
		for _, withSource := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/source=%t", c, withSource), func(t *testing.T) {
				t.Parallel()
				dir, err := filepath.EvalSymlinks(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				veiled := filepath.Join(dir, "worktree")
				run, kept, secret := filepath.Join(veiled, "state", "runs", "r1"), filepath.Join(veiled, "state", "kept"), filepath.Join(veiled, "left-by-the-researcher")
				if err := os.MkdirAll(run, 0o755); err != nil {
					t.Fatal(err)
				}
				for f, content := range map[string]string{kept: "kept\n", secret: "99\n"} {
					if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				var source string
				if withSource {
					source = filepath.Join(dir, "source")
					if err := os.Mkdir(source, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				p := Process{
					Command: `find "$VEILED" | sort; cat "$VEILED/state/kept"; cat "$VEILED/left-by-the-researcher" && echo read the secret
echo step > "$VEILED/state/runs/r1/out" && echo wrote the run
echo step > "$VEILED/new" && echo wrote beside; true`,
					Dir: run, Timeout: 20 * time.Second, KillGrace: time.Second, Env: []string{"VEILED=" + veiled},
					LogPath: filepath.Join(t.TempDir(), "log"), containment: c,
					Mounts: []Mount{theMachine, {Path: run, Keep: true}, {Path: kept, Keep: true}, {Path: veiled, Veil: true, Source: source}, {Path: run}},
				}
				exit, output, err := p.RunOutput(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if exit.ExitCode != 0 {
					t.Fatalf("exit %+v: %s", exit, output)
				}
				want := strings.Join([]string{veiled, filepath.Join(veiled, "state"), kept, filepath.Join(veiled, "state", "runs"), run}, "\n") + "\nkept\n"
				if !strings.HasPrefix(output, want) {
					t.Errorf("the step saw\n%s\nwant only\n%s", output, want)
				}
				if strings.Contains(output, "read the secret") {
					t.Errorf("the step read the secret:\n%s", output)
				}
				if strings.Contains(output, "wrote beside") != withSource {
					t.Errorf("the step wrote beside what it keeps: %t, want %t\n%s", !withSource, withSource, output)
				}
				if !strings.Contains(output, "wrote the run") {
					t.Errorf("the step could not write its run:\n%s", output)
				}
				if data, err := os.ReadFile(filepath.Join(run, "out")); err != nil || string(data) != "step\n" {
					t.Errorf("the run holds %q (%v), want the step's write", data, err)
				}
				if _, err := os.Stat(filepath.Join(veiled, "new")); err == nil {
					t.Error("what the step wrote beside what it keeps reached the veiled directory")
				}
				if withSource {
					if data, err := os.ReadFile(filepath.Join(source, "new")); err != nil || string(data) != "step\n" {
						t.Errorf("the source holds %q (%v), want the step's write", data, err)
					}
				}
			})
		}
	}
}

// veilAsUserEnv marks the run of veilAsAUser.
const veilAsUserEnv = "AUTORESEARCH_TEST_VEIL_AS_USER"

// veilAsAUser runs TestAVeilLeavesOnlyWhatItKeeps again as a user other
// than root, whose steps get their mounts in a user namespace of their own,
// where a mount keeps the flags its namespace locked.
func veilAsAUser(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv to run the test as another user")
	}
	// Not t.TempDir(), whose parent the other user may not enter.
	dir, err := os.MkdirTemp("", "autoresearch-veil-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(dir, "runner.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(binary, data, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", binary, "-test.run=^TestAVeilLeavesOnlyWhatItKeeps$", "-test.v")
	cmd.Env = append(os.Environ(), veilAsUserEnv+"=1", "TMPDIR="+tmp, "HOME="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// A machine may give that user no mounts at all (no user namespaces,
	// or mounts its namespace cannot make read-only): then there is no
	// veil to try.
	if strings.Contains(string(out), "--- SKIP: TestAVeilLeavesOnlyWhatItKeeps ") {
		t.Skipf("steps of user 65534 get no read-only mounts here:\n%s", out)
	}
	if !strings.Contains(string(out), "--- PASS: TestAVeilLeavesOnlyWhatItKeeps/user+pid+mount_namespaces/source=true") {
		t.Errorf("the veil was not tried in a user namespace of a user other than root:\n%s", out)
	}
}
