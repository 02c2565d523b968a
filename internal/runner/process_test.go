package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
)

// containments are the modes this machine can run, each forced in turn:
// the namespaces need root or unprivileged user namespaces, the subreaper
// Linux.
func containments(t *testing.T) []containment {
	t.Helper()
	t.Logf("this machine contains steps by %s", Containment())
	var modes []containment
	for _, c := range []containment{containNamespaces, containUserNamespaces, containSubreaper, containProcessGroup} {
		if c.prepare() != nil {
			continue
		}
		probe := exec.Command("/bin/sh", "-c", ":")
		probe.SysProcAttr = c.attr(false, false)
		if probe.Run() == nil {
			modes = append(modes, c)
		}
	}
	return modes
}

func runStep(t *testing.T, c containment, command string, timeout time.Duration) (round.ProcessExit, string) {
	t.Helper()
	p := Process{
		Command: command, Dir: t.TempDir(), Timeout: timeout, KillGrace: 300 * time.Millisecond,
		LogPath: filepath.Join(t.TempDir(), "log"), containment: c,
	}
	exit, output, err := p.RunOutput(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(output) < tailBytes && exit.Tail != output {
		t.Errorf("tail %q of a short output %q", exit.Tail, output)
	}
	return exit, output
}

// neverWritten fails when file appears within d.
func neverWritten(t *testing.T, file string, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	if _, err := os.Stat(file); err == nil {
		t.Errorf("a process of the step outlived it and wrote %s", file)
	}
}

// leftovers are ways a step leaves a process behind that writes a file two
// seconds later; the step's directory has the file as FILE.
var leftovers = map[string]string{
	"background":         `sh -c 'sleep 2; echo x > "$FILE"' &`,
	"setsid":             `setsid sh -c 'sleep 2; echo x > "$FILE"' &`,
	"double fork":        `(sh -c 'sleep 2; echo x > "$FILE"' &)`,
	"setsid double fork": `(setsid sh -c 'sleep 2; echo x > "$FILE"' &)`,
	"ignores SIGTERM":    `setsid sh -c 'trap "" TERM; sleep 2; echo x > "$FILE"' &`,
}

func TestEveryProcessOfAStepDiesWithIt(t *testing.T) {
	for _, c := range containments(t) {
		for name, command := range leftovers {
			// A process group is all the fallback of last resort holds.
			if c == containProcessGroup && strings.Contains(command, "setsid") {
				continue
			}
			t.Run(c.String()+"/"+name, func(t *testing.T) {
				t.Parallel()
				file := filepath.Join(t.TempDir(), "written")
				runStep(t, c, "export FILE="+file+"; "+command+"\nsleep 0.3", 10*time.Second)
				neverWritten(t, file, 3*time.Second)
			})
		}
	}
}

func TestAStepEndsWhenItExitsThoughAChildHoldsItsOutput(t *testing.T) {
	for _, c := range containments(t) {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			command := "sleep 30 & echo done"
			if c != containProcessGroup {
				command = "setsid sleep 30 & echo done"
			}
			// Held by its child, the step would run into its timeout.
			exit, output := runStep(t, c, command, 10*time.Second)
			if exit.TimedOut || exit.ExitCode != 0 {
				t.Errorf("exit %+v: want the step to end at its own exit, held by its child", exit)
			}
			if !strings.Contains(output, "done") {
				t.Errorf("output %q", output)
			}
		})
	}
}

func TestTimeoutSendsSIGTERMThenSIGKILL(t *testing.T) {
	for _, c := range containments(t) {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			p := Process{
				Command: `trap 'echo terminated; exit 3' TERM; sleep 30 & wait`, Dir: t.TempDir(),
				Timeout: 300 * time.Millisecond, KillGrace: 5 * time.Second,
				LogPath: filepath.Join(t.TempDir(), "log"), containment: c,
			}
			exit, output, err := p.RunOutput(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !exit.TimedOut || exit.ExitCode != 3 || !strings.Contains(output, "terminated") {
				t.Errorf("exit %+v, output %q: want the command's own SIGTERM handler to end it", exit, output)
			}

			file := filepath.Join(t.TempDir(), "written")
			// Killed after the grace, before the command would end: one
			// that outlasted the kill would exit 0 and write the file.
			p.Command = "trap '' TERM; sleep 4; echo x > " + file
			p.KillGrace = 300 * time.Millisecond
			if exit, _, err = p.RunOutput(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !exit.TimedOut || exit.ExitCode != 128+9 {
				t.Errorf("exit %+v, want killed after the grace", exit)
			}
			neverWritten(t, file, 5*time.Second)
		})
	}
}

func TestOutputIsWhatTheRunnerRead(t *testing.T) {
	for _, c := range containments(t) {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			log := filepath.Join(t.TempDir(), "eval.log")
			p := Process{
				// The step writes its own log file besides its output.
				Command: "echo 'val_bpb: 0.9'; echo 'val_bpb: 0.01' >> " + log, Dir: t.TempDir(),
				Timeout: 10 * time.Second, KillGrace: time.Second, LogPath: log, containment: c,
			}
			_, output, err := p.RunOutput(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if output != "val_bpb: 0.9\n" {
				t.Errorf("output %q, want only what the step printed", output)
			}
		})
	}
}

// TestLiveOutputShowsItsEscapes: what a step prints reaches the person's
// terminal (run --verbose) with its escape sequences written out, and the
// log and the captured output as printed.
func TestLiveOutputShowsItsEscapes(t *testing.T) {
	var live bytes.Buffer
	log := filepath.Join(t.TempDir(), "train.log")
	p := Process{
		Command: `printf 'loss 0.5\033[2K\rloss 0.1\n'`, Dir: t.TempDir(),
		Timeout: 10 * time.Second, KillGrace: time.Second, LogPath: log, Live: &live,
	}
	_, output, err := p.RunOutput(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := live.String(), `loss 0.5\x1b[2K\x0dloss 0.1`+"\n"; got != want {
		t.Errorf("live output %q, want %q", got, want)
	}
	if want := "loss 0.5\x1b[2K\rloss 0.1\n"; output != want {
		t.Errorf("captured output %q, want %q as printed", output, want)
	}
}

// TestTheLogIsNeverWrittenThroughALink plants a symbolic link where the
// step's log goes, as training can in the round's log directory on a
// cluster: the file it names keeps its content, and the log is a file of
// its own.
func TestTheLogIsNeverWrittenThroughALink(t *testing.T) {
	dir := t.TempDir()
	fixed, log := filepath.Join(dir, "fixed.txt"), filepath.Join(dir, "eval.log")
	if err := os.WriteFile(fixed, []byte("golden\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fixed, log); err != nil {
		t.Fatal(err)
	}
	p := Process{Command: "echo 'val_bpb: 0.9'", Dir: t.TempDir(), Timeout: 10 * time.Second, KillGrace: time.Second, LogPath: log}
	if _, _, err := p.RunOutput(context.Background()); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(fixed); err != nil || string(data) != "golden\n" {
		t.Errorf("the file the link named now holds %q (%v), want it unchanged", data, err)
	}
	info, err := os.Lstat(log)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Mode().IsRegular() {
		t.Fatalf("the log is a %s, want a regular file", info.Mode().Type())
	}
	if data, _ := os.ReadFile(log); !strings.HasPrefix(string(data), "val_bpb: 0.9\n") {
		t.Errorf("the log holds %q, want the step's output", data)
	}
}

func TestOutputKeepsItsEnd(t *testing.T) {
	// 5 MiB of lines, then the metric.
	_, output := runStep(t, containAuto, `yes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz | head -c 5242880; echo; echo 'val_bpb: 0.9'`, time.Minute)
	if len(output) != outputBytes || !strings.HasSuffix(output, "\nval_bpb: 0.9\n") {
		t.Errorf("output of %d bytes ending %q", len(output), output[max(0, len(output)-40):])
	}
}

// TestTheLogKeepsItsStartAndEnd floods a step's output past what its log
// keeps: the log holds the start, says how much it left out, then the
// end, and the step's output ends as it did.
func TestTheLogKeepsItsStartAndEnd(t *testing.T) {
	defer func(limit int64) { maxLogBytes = limit }(maxLogBytes)
	maxLogBytes = 1 << 20
	log := filepath.Join(t.TempDir(), "log")
	exit, output, err := Process{
		Command: `echo first line; head -c 20971520 /dev/zero | tr '\0' x; echo; echo 'val_bpb: 0.9'`,
		Dir:     t.TempDir(), Timeout: time.Minute, KillGrace: time.Second, LogPath: log,
	}.RunOutput(context.Background())
	if err != nil || exit.ExitCode != 0 || !strings.HasSuffix(output, "\nval_bpb: 0.9\n") {
		t.Fatalf("exit %+v, err %v, output ending %q", exit, err, output[max(0, len(output)-40):])
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	// The start, the note of what was left out, the output's kept end
	// (outputBytes) and the exit line.
	if len(data) > (1<<20)+outputBytes+200 || !strings.HasPrefix(got, "first line\n") ||
		!strings.Contains(got, fmt.Sprintf("[autoresearch] %d bytes of output left out here, past the log's first %d; the last %d follow\n", 20971520+11+1+13-(1<<20)-outputBytes, 1<<20, outputBytes)) ||
		!strings.Contains(got, "\nval_bpb: 0.9\n\n[autoresearch] exit code 0") {
		t.Errorf("a log of %d bytes: starts %q, ends %q", len(data), got[:min(len(got), 40)], got[max(0, len(got)-200):])
	}
}

// sendScript sends what it reads (or, reading nothing, a secret) to a TCP
// port on the loopback (argv 1) and to an abstract Unix socket (argv 2),
// where any process of the machine can listen, and says for each whether
// it got through.
const sendScript = `import socket, sys
data = sys.stdin.buffer.read() or b"the secret"
def send(kind, connect):
    try:
        s = connect()
        s.sendall(data)
        s.close()
        print(kind, "sent")
    except OSError as e:
        print(kind, "failed:", e)
def tcp():
    return socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
def abstract():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect("\0" + sys.argv[2])
    return s
send("tcp", tcp)
send("abstract", abstract)
`

// drop listens where a step could send what it knows: a TCP port on the
// loopback and an abstract Unix socket. It returns their addresses and
// what reached them once the step is done.
func drop(t *testing.T) (port, abstract string, received func() []string) {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	abstract = fmt.Sprintf("autoresearch-drop-%d-%d", os.Getpid(), time.Now().UnixNano())
	unix, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		got  []string
		done sync.WaitGroup
	)
	for _, l := range []net.Listener{tcp, unix} {
		done.Go(func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				data, _ := io.ReadAll(conn)
				_ = conn.Close()
				mu.Lock()
				got = append(got, l.Addr().Network()+": "+string(data))
				mu.Unlock()
			}
		})
	}
	closeAll := func() {
		_ = tcp.Close()
		_ = unix.Close()
		done.Wait()
	}
	t.Cleanup(closeAll)
	return fmt.Sprint(tcp.Addr().(*net.TCPAddr).Port), abstract, func() []string {
		closeAll()
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// TestAnOfflineStepReachesNoNetwork: a step that asks to be offline, in
// its namespaces, reaches neither a service on the machine's loopback nor
// an abstract Unix socket, while the same step online reaches both.
func TestAnOfflineStepReachesNoNetwork(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on PATH")
	}
	script := filepath.Join(t.TempDir(), "send.py")
	if err := os.WriteFile(script, []byte(sendScript), 0o644); err != nil {
		t.Fatal(err)
	}
	tested := 0
	for _, c := range containments(t) {
		if !c.namespaced() {
			continue
		}
		if !c.offline() {
			t.Logf("%s: this machine allows no network namespace", c)
			continue
		}
		tested++
		for _, offline := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/offline=%v", c, offline), func(t *testing.T) {
				port, abstract, received := drop(t)
				p := Process{
					Command: fmt.Sprintf("python3 %s %s %s", script, port, abstract), Dir: t.TempDir(),
					Timeout: 20 * time.Second, KillGrace: time.Second,
					LogPath: filepath.Join(t.TempDir(), "log"), containment: c, Offline: offline,
				}
				_, output, err := p.RunOutput(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				got := received()
				want, wantReceived := "failed", 0
				if !offline {
					want, wantReceived = "sent", 2
				}
				for _, kind := range []string{"tcp", "abstract"} {
					if !strings.Contains(output, kind+" "+want) {
						t.Errorf("output %q, want %q", output, kind+" "+want)
					}
				}
				if len(got) != wantReceived {
					t.Errorf("the listeners received %q, want %d messages", got, wantReceived)
				}
			})
		}
	}
	if tested == 0 {
		t.Skip("no containment here gives a step a network namespace")
	}
}
