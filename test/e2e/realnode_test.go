//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
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

	corev1 "k8s.io/api/core/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
)

const (
	// realNode is the node hack/e2e/real-node.sh starts.
	realNode = "real-node"
	// realStorageClass is the default class cluster.sh makes for it: no
	// provisioner, so the test makes the workspace's volume.
	realStorageClass = "real-local"
)

// realNodeImage is the reference of the image hack/e2e/real-node.sh
// imported under name (operator, go, torch), from its list.
func realNodeImage(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e2eDir, "node", "images"))
	if err != nil {
		t.Fatalf("the real node's image list: %v (is hack/e2e/real-node.sh up?)", err)
	}
	for line := range strings.Lines(string(data)) {
		if n, ref, ok := strings.Cut(strings.TrimSpace(line), " "); ok && n == name {
			return ref
		}
	}
	t.Fatalf("the real node imported no %s image; its list:\n%s(NODE_IMAGES names what hack/e2e/real-node.sh imports)", name, data)
	return ""
}

// gitDaemon serves the repositories under dir read-only on the node's
// address, where pods reach the host, and returns the base URL.
func gitDaemon(t *testing.T, dir string) string {
	t.Helper()
	ip := realNodeAddress(t)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "daemon", "--reuseaddr", "--export-all", "--listen="+ip, fmt.Sprintf("--port=%d", port), "--base-path="+dir, dir)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	// The daemon's children hold its output open.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("git daemon:\n%s", log.String())
		}
	})
	eventually(t, "git daemon", 30*time.Second, func() bool {
		c, err := net.Dial("tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	return fmt.Sprintf("git://%s:%d", ip, port)
}

// realNodeAddress is the real node's address, this machine's on the
// node's bridge, where pods reach a service of the test's.
func realNodeAddress(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(kubectl(t, "", "get", "node", realNode, "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`))
}

// hostVolume makes a hostPath volume for the claim n, owned by the step
// pods' user (a hostPath volume does not get the pod's fsGroup).
func hostVolume(t *testing.T, n string) {
	t.Helper()
	hostVolumeIn(t, ns, n)
}

// hostVolumeIn is hostVolume for a claim in namespace.
func hostVolumeIn(t *testing.T, namespace, n string) {
	t.Helper()
	dir := filepath.Join(e2eDir, "node", "volumes", n)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	kubectl(t, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: %s}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: %s
  claimRef: {namespace: %s, name: %s}
  hostPath: {path: %s, type: Directory}
`, n, realStorageClass, namespace, n, dir), "apply", "-f", "-")
	t.Cleanup(func() {
		_, _ = tryKubectl("", "delete", "pvc", n, "-n", namespace, "--wait=true", "--timeout=60s")
		_, _ = tryKubectl("", "delete", "pv", n, "--wait=true", "--timeout=60s")
		_ = os.RemoveAll(dir)
	})
}

// scoreRepo serves, as n over a git daemon, a repository whose training
// writes a loss of 2.5 and whose evaluation reports it, makes the volume
// of experiment n's workspace, and returns the repository's URL.
func scoreRepo(t *testing.T, n string) string {
	t.Helper()
	repo := gittest.NewRepo(t, map[string]string{
		"train.sh": "echo 2.5 > score\n",
		"eval.sh":  "echo \"loss: $(cat score)\"\n",
	})
	return serveOnRealNode(t, ns, n, repo)
}

// serveOnRealNode serves repo, as n over a git daemon, makes the volume of
// the workspace claim of experiment n in namespace, and returns the
// repository's URL.
func serveOnRealNode(t *testing.T, namespace, n, repo string) string {
	t.Helper()
	repos := t.TempDir()
	if err := os.Rename(repo, filepath.Join(repos, n)); err != nil {
		t.Fatal(err)
	}
	url := gitDaemon(t, repos) + "/" + n
	hostVolumeIn(t, namespace, n+"-workspace")
	return url
}

// hostProcess tells whether a process of this machine, in any container,
// runs the command line args.
func hostProcess(t *testing.T, args ...string) bool {
	t.Helper()
	want := strings.Join(args, "\x00") + "\x00"
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range dirs {
		if b, err := os.ReadFile(f); err == nil && string(b) == want {
			return true
		}
	}
	return false
}

// probes are the "probe key=value" lines a step printed.
func probes(log string) map[string]string {
	found := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "probe "), "="); ok && strings.HasPrefix(sc.Text(), "probe ") {
			found[k] = v
		}
	}
	return found
}

// TestRealNode runs one round of tiny-lm-go on a node with a container
// runtime (hack/e2e/real-node.sh, `make e2e-real`): the operator's own
// pods run in its image, training in a Go toolchain image, and the
// runtime, not the process-kubelet's good will, enforces what the security
// design promises: the restricted security context, the read-only git
// directory and a Researcher's processes ending with its container.
func TestRealNode(t *testing.T) {
	if os.Getenv("E2E_REAL_NODE") != "1" {
		t.Skip("needs the real node: make e2e-real (E2E_REAL_NODE=1)")
	}
	parallel(t)
	const n = "realnode"
	operatorImage, goImage := realNodeImage(t, "operator"), realNodeImage(t, "go")
	// Training asks for two GPUs and says which it got.
	const (
		trainGPUs = 2
		// Before anything is built: whether the image's build cache holds
		// the standard library compiled.
		train = `echo "probe visible-devices=$NVIDIA_VISIBLE_DEVICES" && echo "probe std-stale=$(go list -f '{{.Stale}}' fmt)" && go run ./prepare && go run ./train`
	)
	if have := nodeGPUs(t, realNode); have < trainGPUs {
		t.Fatalf("%s has %d nvidia.com/gpu, want at least %d: E2E_GPUS=%d make e2e-real", realNode, have, trainGPUs, trainGPUs)
	}
	install(t)
	m := &manager{t: t, image: operatorImage}
	m.start()
	defer m.stop()

	url := serveOnRealNode(t, ns, n, sourceRepo(t, "tiny-lm-go"))

	// A command line no other process has: the Researcher's setsid child.
	orphan := []string{"sleep", fmt.Sprint(3000 + time.Now().Unix()%1000)}
	// The Researcher probes its sandbox, starts a process in a session of
	// its own and waits while the test looks for it on the host, then
	// edits as the plan says.
	researcher := fmt.Sprintf(`echo "probe uid=$(id -u)"; echo "probe gid=$(id -g)"
grep -E '^(NoNewPrivs|CapEff|Seccomp):' /proc/self/status | sed -e 's/:[[:space:]]*/=/' -e 's/^/probe /'
. /etc/os-release && echo "probe os=$VERSION_CODENAME"
if touch /workspace/source/.git/tampered 2>/dev/null; then echo "probe git-dir=writable"; else echo "probe git-dir=read-only"; fi
setsid %s </dev/null >/dev/null 2>&1 &
sleep 10
autoresearch researcher scripted --plan scripted-researcher.yaml`, strings.Join(orphan, " "))
	applyExperiment(t, n, url, map[string]any{
		"researchQuestion": "How low can bits per byte go?",
		"maxRounds":        1,
		// go run compiles the example's packages in every pod.
		"fixed":      map[string]any{"files": []string{"prepare/main.go", "lm/lm.go", "eval/main.go", "scripted-researcher.yaml"}, "timeLimit": "3m"},
		"variable":   map[string]any{"files": []string{"train/main.go"}},
		"train":      map[string]any{"image": goImage, "command": train, "outputs": []string{"ckpt"}, "gpus": trainGPUs},
		"eval":       map[string]any{"metric": "val_bpb", "direction": "minimize", "command": "go run ./prepare && go run ./eval"},
		"researcher": map[string]any{"command": researcher, "timeout": "2m"},
	})
	sel := "autoresearch.dev/experiment=" + n

	// The orphan lives while its Researcher does, and not after.
	eventually(t, "round 1 to start", 15*time.Minute, func() bool {
		ar := experimentNamed(t, n)
		if ar.Status.Phase == v1alpha1.PhaseFailed {
			t.Fatalf("the experiment failed: %s", ar.Status.Message)
		}
		return ar.Status.Round >= 1
	})
	researcherPod := runningPod(t, "round 1's Researcher", sel+",autoresearch.dev/round=1,autoresearch.dev/step=researcher", 15*time.Minute)
	seen := false
	eventually(t, "the Researcher to end", 3*time.Minute, func() bool {
		seen = seen || hostProcess(t, orphan...)
		p := pod(t, researcherPod.Name)
		return p == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if !seen {
		t.Errorf("the Researcher's setsid child %q never showed on the host", orphan)
	}
	eventually(t, "the setsid child to die with its container", 30*time.Second, func() bool {
		return !hostProcess(t, orphan...)
	})

	ar := finished(t, n, 20*time.Minute)
	var verdicts []string
	for _, h := range ar.Status.History {
		verdicts = append(verdicts, string(h.Verdict))
	}
	if got := strings.Join(verdicts, " "); got != "baseline improved" {
		t.Errorf("verdicts %q (phase %s: %s), want baseline improved", got, ar.Status.Phase, ar.Status.Message)
	}

	t.Run("the Researcher ran restricted, as 65532, in the image, and could not write the git directory", func(t *testing.T) {
		log := kubectl(t, "", "logs", researcherPod.Name, "-n", ns, "-c", "researcher")
		got := probes(log)
		want := map[string]string{
			"uid": "65532", "gid": "65532",
			// no_new_privs, no capabilities, seccomp in filter mode
			// (RuntimeDefault).
			"NoNewPrivs": "1", "CapEff": "0000000000000000", "Seccomp": "2",
			// The image's Debian, not this machine's.
			"os":      "trixie",
			"git-dir": "read-only",
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("the Researcher's %s = %q, want %q", k, got[k], v)
			}
		}
		if t.Failed() {
			t.Logf("Researcher log:\n%s", log)
		}
	})

	t.Run("training got the GPUs it asked for from the kubelet", func(t *testing.T) {
		trainingDevices(t, sel, trainGPUs)
	})

	t.Run("training found the standard library compiled in the Go image", func(t *testing.T) {
		for name, p := range trainingProbes(t, sel) {
			if got := p["std-stale"]; got != "false" {
				t.Errorf("training pod %s: fmt stale = %q, want false (GOCACHE of hack/image.sh go)", name, got)
			}
		}
	})

	t.Run("the operator's pods ran its image on the real node", func(t *testing.T) {
		var list corev1.PodList
		if err := json.Unmarshal([]byte(kubectl(t, "", "get", "pods", "-n", ns, "-l", sel, "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		steps := map[string]int{}
		for _, p := range list.Items {
			if p.Spec.NodeName != realNode {
				t.Errorf("pod %s ran on %q, want %s", p.Name, p.Spec.NodeName, realNode)
			}
			statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
			for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
				if c.Image != operatorImage {
					continue
				}
				steps[p.Labels["autoresearch.dev/step"]]++
				for _, s := range statuses {
					if s.Name != c.Name {
						continue
					}
					if s.Image != operatorImage || s.ImageID == "" {
						t.Errorf("pod %s container %s ran image %q (%q), want %s", p.Name, c.Name, s.Image, s.ImageID, operatorImage)
					}
					if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
						t.Errorf("pod %s container %s did not end well: %+v", p.Name, c.Name, s.State)
					}
				}
			}
		}
		t.Logf("containers of the operator's image, by step: %v", steps)
		for _, step := range []string{"researcher", "compliance", "git"} {
			if steps[step] == 0 {
				t.Errorf("no %s pod ran the operator's image; by step: %v", step, steps)
			}
		}
	})
	t.Logf("pods:\n%s", kubectl(t, "", "get", "pods", "-n", ns, "-l", sel, "--sort-by=.metadata.creationTimestamp", "-o",
		"custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,PHASE:.status.phase,CREATED:.metadata.creationTimestamp,END:.status.containerStatuses[0].state.terminated.finishedAt"))
}

// TestRealNodeTorch runs examples/nanogpt-torch, with its kernel parity
// target, on the real node: training, evaluation and the parity check run
// in the Python image hack/image.sh builds (Debian's CPU PyTorch), as the
// image's user gives way to the operator's 65532, and the operator's
// steps in its own image.
func TestRealNodeTorch(t *testing.T) {
	if os.Getenv("E2E_REAL_NODE") != "1" {
		t.Skip("needs the real node: make e2e-real (E2E_REAL_NODE=1)")
	}
	parallel(t)
	const n = "realnode-torch"
	operatorImage, torchImage := realNodeImage(t, "operator"), realNodeImage(t, "torch")
	install(t)
	m := &manager{t: t, image: operatorImage}
	m.start()
	defer m.stop()

	url := serveOnRealNode(t, ns, n, sourceRepo(t, "nanogpt-torch"))
	kubectl(t, torchExperiment(n, url, "image: "+torchImage), "apply", "-f", "-")
	sel := "autoresearch.dev/experiment=" + n
	deleteAtEnd(t, n)

	ar := finished(t, n, 25*time.Minute)
	var got []string
	for _, h := range ar.Status.History {
		got = append(got, string(h.Verdict))
	}
	if strings.Join(got, " ") != "baseline improved not_improved parity_failed" {
		t.Errorf("verdicts %v (phase %s: %s), want baseline, improved, not_improved, parity_failed", got, ar.Status.Phase, ar.Status.Message)
	}

	var list corev1.PodList
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "pods", "-n", ns, "-l", sel+",autoresearch.dev/step in (train,eval)", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for _, p := range list.Items {
		for _, s := range p.Status.ContainerStatuses {
			if s.Image == torchImage && s.ImageID != "" {
				ran[p.Labels["autoresearch.dev/step"]]++
			}
		}
	}
	t.Logf("containers of the PyTorch image, by step: %v", ran)
	for _, step := range []string{"train", "eval"} {
		if ran[step] == 0 {
			t.Errorf("no %s container ran %s; by step: %v", step, torchImage, ran)
		}
	}
}

// TestRealNodeHoldsTrainingToItsLimits lets the runtime stop training: in
// round 1 the Researcher's training outgrows the container's memory limit
// and the kernel kills it (OOMKilled), in round 2 it outlives the time
// limit. Both are the candidate's failures, judged so, and the loop goes on.
func TestRealNodeHoldsTrainingToItsLimits(t *testing.T) {
	if os.Getenv("E2E_REAL_NODE") != "1" {
		t.Skip("needs the real node: make e2e-real (E2E_REAL_NODE=1)")
	}
	parallel(t)
	const n = "realnode-limits"
	operatorImage := realNodeImage(t, "operator")
	install(t)
	m := &manager{t: t, image: operatorImage}
	m.start()
	defer m.stop()

	url := scoreRepo(t, n)
	// Round 1 holds half a gigabyte in memory (tail keeps a line until it
	// ends, and /dev/zero has none); round 2 sleeps past the time limit.
	researcher := `case $AUTORESEARCH_ROUND in
1) echo 'head -c 512m /dev/zero | tail -n 1 > /dev/null && echo 1.0 > score' > train.sh; s="hold half a gigabyte" ;;
*) echo 'sleep 600; echo 1.0 > score' > train.sh; s="sleep past the time limit" ;;
esac
echo "| $AUTORESEARCH_ROUND |  |  |  | $s |  |  |" >> "$AUTORESEARCH_EXPERIENCES"`
	applyExperiment(t, n, url, map[string]any{
		"researchQuestion": "Does the runtime hold training to its limits?",
		"maxRounds":        2,
		"fixed":            map[string]any{"files": []string{"eval.sh"}, "timeLimit": "20s"},
		"variable":         map[string]any{"files": []string{"train.sh"}},
		"train": map[string]any{
			"image": operatorImage, "command": "sh train.sh", "outputs": []string{"score"}, "gpus": 0,
			"resources": map[string]any{"limits": map[string]any{"memory": "128Mi"}},
		},
		"eval":       map[string]any{"metric": "loss", "direction": "minimize", "command": "sh eval.sh"},
		"researcher": map[string]any{"command": researcher, "timeout": "1m"},
	})
	sel := "autoresearch.dev/experiment=" + n

	ar := finished(t, n, 10*time.Minute)
	var verdicts []string
	for _, h := range ar.Status.History {
		verdicts = append(verdicts, string(h.Verdict))
		t.Logf("round %d: %s: %s", h.Round, h.Verdict, h.Insight)
	}
	if got := strings.Join(verdicts, " "); got != "baseline train_failed train_timeout" {
		t.Errorf("verdicts %q (phase %s: %s), want baseline train_failed train_timeout", got, ar.Status.Phase, ar.Status.Message)
	} else if insight := ar.Status.History[1].Insight; !strings.Contains(insight, "OOMKilled") {
		t.Errorf("round 1's insight %q does not say the kernel killed training for its memory limit", insight)
	}

	var list corev1.PodList
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "pods", "-n", ns, "-l", sel+",autoresearch.dev/step=train,autoresearch.dev/round=1", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	oom := false
	for _, p := range list.Items {
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Terminated != nil {
				t.Logf("round 1's training pod %s: container %s ended %s (exit %d)", p.Name, c.Name, c.State.Terminated.Reason, c.State.Terminated.ExitCode)
				oom = oom || c.State.Terminated.Reason == "OOMKilled"
			}
		}
	}
	if !oom {
		t.Errorf("no training container of round 1 was OOMKilled by the runtime; pods: %d", len(list.Items))
	}
}

// TestRealNodeRetriesADisruptedStep deletes the running Researcher pod and
// evicts the running training pod on the real node, as an administrator or
// a node drain would: the kubelet stops their containers, with every
// process in them, and each step runs again, so the round is judged on
// what the new pods do. Training leaves a process in a session of its own,
// named after its pod, which must not outlive the evicted container.
func TestRealNodeRetriesADisruptedStep(t *testing.T) {
	if os.Getenv("E2E_REAL_NODE") != "1" {
		t.Skip("needs the real node: make e2e-real (E2E_REAL_NODE=1)")
	}
	parallel(t)
	const n = "realnode-disrupted"
	operatorImage := realNodeImage(t, "operator")
	install(t)
	m := &manager{t: t, image: operatorImage}
	m.start()
	defer m.stop()

	url := scoreRepo(t, n)
	// The Researcher and training wait 20s before their work: time to take
	// their pods away while they run.
	researcher := `sleep 20
cat > train.sh <<'TRAIN'
setsid sh -c 'while :; do sleep 1; done' "orphan-$(cat /proc/sys/kernel/hostname)" </dev/null >/dev/null 2>&1 &
sleep 20
echo 1.0 > score
TRAIN
echo "| $AUTORESEARCH_ROUND |  |  |  | train for longer |  |  |" >> "$AUTORESEARCH_EXPERIENCES"`
	applyExperiment(t, n, url, map[string]any{
		"researchQuestion": "Does a disrupted step run again?",
		"maxRounds":        1,
		"fixed":            map[string]any{"files": []string{"eval.sh"}, "timeLimit": "2m"},
		"variable":         map[string]any{"files": []string{"train.sh"}},
		"train":            map[string]any{"image": operatorImage, "command": "sh train.sh", "outputs": []string{"score"}, "gpus": 0},
		"eval":             map[string]any{"metric": "loss", "direction": "minimize", "command": "sh eval.sh"},
		"researcher":       map[string]any{"command": researcher, "timeout": "2m"},
	})
	sel := "autoresearch.dev/experiment=" + n

	researcherPod := runningPod(t, "round 1's Researcher", sel+",autoresearch.dev/round=1,autoresearch.dev/step=researcher", 10*time.Minute)
	kubectl(t, "", "delete", "pod", researcherPod.Name, "-n", ns, "--wait=false")
	eventually(t, "a new Researcher pod", 3*time.Minute, func() bool {
		p := pod(t, researcherPod.Name)
		return p != nil && p.UID != researcherPod.UID
	})

	train := runningPod(t, "round 1's training", "batch.kubernetes.io/job-name="+n+"-r1-train", 5*time.Minute)
	orphan := []string{"sh", "-c", "while :; do sleep 1; done", "orphan-" + train.Name}
	eventually(t, "training's setsid child on the host", time.Minute, func() bool {
		return hostProcess(t, orphan...)
	})
	evict(t, train)
	eventually(t, "the setsid child to die with the evicted container", 30*time.Second, func() bool {
		return !hostProcess(t, orphan...)
	})

	ar := finished(t, n, 10*time.Minute)
	var verdicts []string
	for _, h := range ar.Status.History {
		verdicts = append(verdicts, string(h.Verdict))
	}
	if got := strings.Join(verdicts, " "); got != "baseline improved" {
		t.Errorf("verdicts %q (phase %s: %s), want baseline improved", got, ar.Status.Phase, ar.Status.Message)
	}
	retriedAfterEviction(t, ar, train)
}

// applyExperiment applies the experiment n of spec, with one baseline run
// unless spec has a baseline, its source cloned from url and a workspace of
// 1Gi, and deletes it when the test ends.
func applyExperiment(t *testing.T, n, url string, spec map[string]any) {
	t.Helper()
	if _, ok := spec["baseline"]; !ok {
		spec["baseline"] = map[string]any{"runs": 1}
	}
	spec["source"] = map[string]any{"git": map[string]any{"url": url, "ref": "main"}}
	spec["workspace"] = map[string]any{"size": "1Gi"}
	data, err := json.Marshal(map[string]any{
		"apiVersion": "autoresearch.dev/v1alpha1",
		"kind":       "AutoResearch",
		"metadata":   map[string]any{"name": n, "namespace": ns},
		"spec":       spec,
	})
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, string(data), "apply", "-f", "-")
	deleteAtEnd(t, n)
}

// deleteAtEnd deletes the experiment n when the test ends; when it failed,
// it first logs how each of the experiment's pods ended and their logs'
// last lines.
func deleteAtEnd(t *testing.T, n string) {
	t.Helper()
	sel := "autoresearch.dev/experiment=" + n
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := tryKubectl("", "get", "pods", "-n", ns, "-l", sel, "-o",
				`jsonpath={range .items[*]}{.metadata.name}{" "}{.status.phase}{" "}{.status.containerStatuses[*].state.terminated.reason}{" "}{.status.containerStatuses[*].state.terminated.message}{"\n"}{end}`)
			t.Logf("pods, reasons and termination messages:\n%s", out)
			out, _ = tryKubectl("", "logs", "-n", ns, "-l", sel, "--all-containers", "--prefix", "--tail=30")
			t.Logf("logs:\n%s", out)
		}
		kubectl(t, "", "delete", "autoresearch", n, "-n", ns, "--wait=true", "--timeout=120s")
	})
}

// finished waits for the experiment n to fail, or to succeed and commit
// its final ledger: the phase turns Succeeded before the finish pod that
// writes the ledger has ended.
func finished(t *testing.T, n string, timeout time.Duration) *v1alpha1.AutoResearch {
	t.Helper()
	var ar *v1alpha1.AutoResearch
	eventually(t, "experiment "+n+" to finish", timeout, func() bool {
		ar = experimentNamed(t, n)
		return ar.Status.Phase == v1alpha1.PhaseFailed || (ar.Status.Phase == v1alpha1.PhaseSucceeded && ar.Status.LedgerCommit != "")
	})
	return ar
}

// trainingProbes are the probes each training pod of the experiment the
// label selector sel finds printed, by pod name.
func trainingProbes(t *testing.T, sel string) map[string]map[string]string {
	t.Helper()
	names := strings.Fields(kubectl(t, "", "get", "pods", "-n", ns, "-l", sel+",autoresearch.dev/step=train", "-o", "jsonpath={.items[*].metadata.name}"))
	if len(names) == 0 {
		t.Fatal("no training pod is left to check")
	}
	found := map[string]map[string]string{}
	for _, name := range names {
		found[name] = probes(kubectl(t, "", "logs", name, "-n", ns, "-c", "train"))
	}
	return found
}

// trainingDevices checks that each training pod of the experiment the
// label selector sel finds printed gpus distinct devices of the real node.
func trainingDevices(t *testing.T, sel string, gpus int) {
	t.Helper()
	for name, p := range trainingProbes(t, sel) {
		got := visibleDevices(p["visible-devices"])
		if err := distinctDevices(got, gpus, nodeGPUs(t, realNode)); err != nil {
			t.Errorf("training pod %s: NVIDIA_VISIBLE_DEVICES %q: %v", name, got, err)
		}
	}
}

// visibleDevices splits an NVIDIA_VISIBLE_DEVICES value.
func visibleDevices(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// distinctDevices checks that devices are want distinct GPUs of a node of
// have, named by their indices as cmd/fake-gpu-plugin names them.
func distinctDevices(devices []string, want, have int) error {
	if len(devices) != want {
		return fmt.Errorf("%d devices, want %d", len(devices), want)
	}
	seen := map[string]bool{}
	for _, d := range devices {
		i, err := strconv.Atoi(d)
		if err != nil || i < 0 || i >= have {
			return fmt.Errorf("device %q is not one of the node's %d", d, have)
		}
		if seen[d] {
			return fmt.Errorf("device %s twice", d)
		}
		seen[d] = true
	}
	return nil
}

// gpuPod starts a pod that asks for gpus GPUs and prints the devices it
// was given, in the operator's image; nodeName binds it to the real node
// without the scheduler, so that only the kubelet admits it.
func gpuPod(t *testing.T, name, image string, gpus int, nodeName string) {
	t.Helper()
	bind := ""
	if nodeName != "" {
		bind = "\n  nodeName: " + nodeName
	}
	kubectl(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1%s
  containers:
  - name: c
    image: %s
    imagePullPolicy: Never
    command: [sh, -c, 'echo "probe visible-devices=$NVIDIA_VISIBLE_DEVICES"; exec sleep 600']
    resources: {limits: {nvidia.com/gpu: %d}}
`, name, ns, bind, image, gpus), "apply", "-f", "-")
	t.Cleanup(func() {
		_, _ = tryKubectl("", "delete", "pod", name, "-n", ns, "--ignore-not-found", "--wait=true", "--timeout=60s")
	})
}

// podDevices waits for the pod n to run and print its devices.
func podDevices(t *testing.T, n string) []string {
	t.Helper()
	var got string
	eventually(t, "pod "+n+" to print its devices", 2*time.Minute, func() bool {
		p := pod(t, n)
		if p == nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			t.Fatalf("pod %s ended or is gone: %+v", n, p)
		}
		if p.Status.Phase != corev1.PodRunning {
			return false
		}
		v, ok := probes(kubectl(t, "", "logs", n, "-n", ns))["visible-devices"]
		got = v
		return ok
	})
	return visibleDevices(got)
}

// TestRealNodeGPUs checks that the real node's kubelet, through
// cmd/fake-gpu-plugin, accounts for nvidia.com/gpu as a GPU node does: it
// shows the devices in the node's allocatable, gives each container the
// number of devices it asks for and no device twice, refuses a pod when
// none is free, and allocates again after it restarts.
func TestRealNodeGPUs(t *testing.T) {
	if os.Getenv("E2E_REAL_NODE") != "1" {
		t.Skip("needs the real node: make e2e-real (E2E_REAL_NODE=1)")
	}
	image := realNodeImage(t, "operator")
	n := nodeGPUs(t, realNode)
	if want := envOr("E2E_GPUS", ""); want != "" && want != strconv.Itoa(n) {
		t.Errorf("%s has %d allocatable nvidia.com/gpu, want E2E_GPUS=%s", realNode, n, want)
	}
	if capacity := kubectl(t, "", "get", "node", realNode, "-o", `jsonpath={.status.capacity.nvidia\.com/gpu}`); capacity != strconv.Itoa(n) {
		t.Errorf("%s has capacity %q and %d allocatable nvidia.com/gpu, want the same", realNode, capacity, n)
	}
	if n < 2 || n%2 != 0 {
		t.Fatalf("%s has %d nvidia.com/gpu, want an even number, at least 2 (E2E_GPUS)", realNode, n)
	}
	t.Logf("%s: %d nvidia.com/gpu", realNode, n)

	t.Run("two pods of half the GPUs each get disjoint devices, and a third none", func(t *testing.T) {
		gpuPod(t, "gpus-a", image, n/2, "")
		gpuPod(t, "gpus-b", image, n/2, "")
		a, b := podDevices(t, "gpus-a"), podDevices(t, "gpus-b")
		for name, got := range map[string][]string{"gpus-a": a, "gpus-b": b} {
			if err := distinctDevices(got, n/2, n); err != nil {
				t.Errorf("pod %s: NVIDIA_VISIBLE_DEVICES %q: %v", name, got, err)
			}
		}
		if both := append(slices.Clone(a), b...); distinctDevices(both, n, n) != nil {
			t.Errorf("the pods share devices: %q and %q", a, b)
		}
		t.Logf("gpus-a %q, gpus-b %q", a, b)
		// Past the scheduler, the kubelet itself must refuse it.
		gpuPod(t, "gpus-c", image, 1, realNode)
		var c *corev1.Pod
		eventually(t, "the kubelet to refuse gpus-c", time.Minute, func() bool {
			c = pod(t, "gpus-c")
			return c == nil || c.Status.Phase != corev1.PodPending
		})
		if c == nil {
			t.Fatal("gpus-c is gone")
		}
		if c.Status.Phase != corev1.PodFailed || !strings.Contains(c.Status.Message, "nvidia.com/gpu") {
			t.Errorf("gpus-c, a pod of one GPU on a node with none free: phase %s, reason %s: %s; want Failed for want of nvidia.com/gpu",
				c.Status.Phase, c.Status.Reason, c.Status.Message)
		}
		t.Logf("gpus-c: %s: %s", c.Status.Reason, c.Status.Message)
	})

	t.Run("after a kubelet restart, a pod of all the GPUs gets them all", func(t *testing.T) {
		cmd := exec.Command(filepath.Join(root, "hack/e2e/real-node.sh"), "restart-kubelet")
		cmd.Env = append(os.Environ(), "E2E_DIR="+e2eDir, "K8S_BIN="+filepath.Dir(kubeBin))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("real-node.sh restart-kubelet: %v\n%s", err, out)
		}
		gpuPod(t, "gpus-all", image, n, "")
		if got := podDevices(t, "gpus-all"); distinctDevices(got, n, n) != nil {
			t.Errorf("gpus-all: NVIDIA_VISIBLE_DEVICES %q, want all %d devices", got, n)
		}
	})
}

// onRealNode tells whether the suite runs on the real node (make e2e-real),
// where pods run the images and fetch only what the network serves them.
func onRealNode() bool { return os.Getenv("E2E_REAL_NODE") == "1" }

// startManager starts the operator; on the real node its step pods run
// the operator's image that the node imported.
func startManager(t *testing.T) *manager {
	t.Helper()
	m := &manager{t: t}
	if onRealNode() {
		m.image = realNodeImage(t, "operator")
	}
	m.start()
	return m
}

// clusterSource commits files into a repository for experiment n and
// returns the URL its clone takes: on the process node, whose pods run on
// this machine, the repository's path; on the real node, a git daemon's,
// with a volume made for the experiment's workspace claim.
func clusterSource(t *testing.T, n string, files map[string]string) string {
	t.Helper()
	return clusterSourceIn(t, ns, n, files)
}

// clusterSourceIn is clusterSource for an experiment in namespace.
func clusterSourceIn(t *testing.T, namespace, n string, files map[string]string) string {
	t.Helper()
	repo := toyRepo(t, files)
	if !onRealNode() {
		return "file://" + repo
	}
	return serveOnRealNode(t, namespace, n, repo)
}

// serviceHost is where a service of the test's listens for the node's
// pods: the loopback, which the process node's pods share, or the real
// node's address.
func serviceHost(t *testing.T) string {
	t.Helper()
	if onRealNode() {
		return realNodeAddress(t)
	}
	return "127.0.0.1"
}
