//go:build e2e

// Package e2e drives the operator on a real control plane with the
// process-kubelet node (hack/e2e), through kubectl alone. Run it with
// `make e2e`; it needs the cluster that `hack/e2e/cluster.sh up` starts.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/yaml"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

const (
	// k8sVersion is the release hack/build-k8s-binaries.sh builds.
	k8sVersion = "1.37.2"

	name     = "tiny"
	ns       = "default"
	gpu      = "nvidia.com/gpu"
	selector = "autoresearch.dev/experiment=" + name
)

var (
	root    = mustAbs("../..")
	e2eDir  = envOr("E2E_DIR", filepath.Join(root, "bin/e2e"))
	kubeBin = envOr("K8S_BIN", filepath.Join(root, "bin/k8s", k8sVersion)) + "/kubectl"
)

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// kubectl runs kubectl as the cluster admin.
func kubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := tryKubectl(stdin, args...)
	// An API server busy with a whole suite on two cores may time a read
	// out: a get is asked again, for up to half a minute.
	for try := 0; err != nil && len(args) > 0 && args[0] == "get" && serverBusy(out) && try < 10; try++ {
		time.Sleep(3 * time.Second)
		out, err = tryKubectl(stdin, args...)
	}
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// serverBusy tells whether kubectl's output says the API server did not
// answer in time, as against an answer such as NotFound.
func serverBusy(out string) bool {
	for _, s := range []string{"Error from server (Timeout)", "Error from server (ServiceUnavailable)", "Error from server (TooManyRequests)", "TLS handshake timeout"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// kubectlCommand is kubectl args as the cluster's admin.
func kubectlCommand(args ...string) *exec.Cmd {
	return exec.Command(kubeBin, append([]string{"--kubeconfig", filepath.Join(e2eDir, "kubeconfig")}, args...)...)
}

func tryKubectl(stdin string, args ...string) (string, error) {
	cmd := kubectlCommand(args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// eventually polls f until it holds or the timeout passes.
func eventually(t testing.TB, what string, timeout time.Duration, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(time.Second)
	}
}

func experiment(t testing.TB) *v1alpha1.AutoResearch {
	t.Helper()
	return experimentNamed(t, name)
}

func experimentNamed(t testing.TB, n string) *v1alpha1.AutoResearch {
	t.Helper()
	ar := &v1alpha1.AutoResearch{}
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "autoresearch", n, "-n", ns, "-o", "json")), ar); err != nil {
		t.Fatal(err)
	}
	return ar
}

func jobs(t testing.TB) []batchv1.Job {
	t.Helper()
	var list batchv1.JobList
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "jobs", "-n", ns, "-l", selector, "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// parallel lets the test run beside the other parallel ones (make e2e
// runs two at a time), once the tests that are not parallel have ended: a
// test may be parallel when its experiments, namespaces and assertions are
// its own, and it neither needs every GPU of the node, nor counts on
// running Jobs at once, nor stops the manager mid-run. Every test's manager
// reconciles every experiment: the one that holds the leader lease does
// the work, and gives the lease up to the next one when its test ends.
func parallel(t *testing.T) {
	t.Parallel()
}

// install applies the CRD and the operator's RBAC from config/default,
// leaving out the Deployment: the manager runs as a local process.
func install(t *testing.T) {
	kubectl(t, "", "apply", "--server-side", "-k", filepath.Join(root, "config/crd"))
	// Not kubectl wait: on a CRD whose status.conditions was still null it
	// failed with an accessor error instead of waiting.
	eventually(t, "the CRD to be established", time.Minute, func() bool {
		out, err := tryKubectl("", "get", "crd", "autoresearches.autoresearch.dev", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return err == nil && out == "True"
	})
	var keep []string
	for _, doc := range strings.Split(kubectl(t, "", "kustomize", filepath.Join(root, "config/default")), "\n---\n") {
		var obj struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		switch obj.Kind {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			keep = append(keep, doc)
		}
	}
	kubectl(t, strings.Join(keep, "\n---\n"), "apply", "--server-side", "-f", "-")
}

// manager is the operator, run with its service account's identity.
type manager struct {
	t   *testing.T
	cmd *exec.Cmd
	n   int
	// image is the operator's image, for its step pods; the
	// process-kubelet ignores images.
	image string
}

func (m *manager) start() {
	m.n++
	log, err := os.Create(filepath.Join(e2eDir, "logs", fmt.Sprintf("manager-%s-%d.log", strings.ReplaceAll(m.t.Name(), "/", "_"), m.n)))
	if err != nil {
		m.t.Fatal(err)
	}
	image := m.image
	if image == "" {
		image = "autoresearch:e2e"
	}
	m.cmd = exec.Command(filepath.Join(e2eDir, "manager"), "--image="+image, "--leader-elect=true",
		"--leader-election-namespace=autoresearch-system", "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0")
	m.cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(e2eDir, "operator.kubeconfig"))
	m.cmd.Stdout, m.cmd.Stderr = log, log
	if err := m.cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
}

// stop ends the manager as a rollout would, with SIGTERM: it gives up its
// leader lease, so that the next manager need not wait for the lease to
// expire.
func (m *manager) stop() {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan struct{})
	go func() {
		_ = m.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		m.t.Errorf("the manager did not stop within a minute of SIGTERM")
		_ = m.cmd.Process.Kill()
		<-exited
	}
	m.cmd = nil
}

// kill stops the manager without a chance to clean up.
func (m *manager) kill() {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	_ = m.cmd.Wait()
	m.cmd = nil
}

// sourceRepo commits an example into a fresh git repository.
func sourceRepo(t *testing.T, example string) string {
	dir := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("cp", "-r", filepath.Join(root, "examples", example), dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "commit", "-q", "-m", example},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

// manifestFor is the tiny-lm-go experiment n cloned from url; a pause
// makes the Researcher and training wait that long before their work, and
// gives training the time. Training and evaluation run in goImage, unless
// it is empty: the process node's pods run this machine's Go.
func manifestFor(n, url string, maxRounds int, pause time.Duration, goImage string) string {
	wait, image := "", ""
	if pause > 0 {
		wait = fmt.Sprintf("sleep %d && ", int(pause.Seconds()))
	}
	if goImage != "" {
		image = "\n    image: " + goImage
	}
	return fmt.Sprintf(`apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata: {name: %s, namespace: %s}
spec:
  researchQuestion: "How low can bits per byte go?"
  maxRounds: %d
  baseline: {runs: 1}
  source:
    git: {url: "%s", ref: main}
  workspace: {size: 1Gi}
  fixed:
    files: [prepare/main.go, lm/lm.go, eval/main.go, scripted-researcher.yaml]
    timeLimit: %s
  variable:
    files: [train/main.go]
    range: "hyperparameters and training loop in train/main.go"
  train:
    command: "%sgo run ./prepare && go run ./train"
    outputs: [ckpt]
    gpus: 1%s
  eval:
    metric: val_bpb
    direction: minimize
    command: "go run ./prepare && go run ./eval"%s
  researcher:
    command: "%sautoresearch researcher scripted --plan scripted-researcher.yaml"
    timeout: %s
`, n, ns, maxRounds, url, 30*time.Second+pause, wait, image, image, wait, 60*time.Second+pause)
}

// watcher records, once a second, what kubectl shows: the experiment's
// table rows and how many GPU Jobs' pods run at once: bound to the node
// and not ended. A Job's own count of active pods lags its pod's end, and
// the operator starts the next step once the pod has succeeded.
type watcher struct {
	rows       []string
	maxRunning int
	stop       chan struct{}
	done       chan struct{}
}

func watch() *watcher {
	w := &watcher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			w.record()
			if out, err := tryKubectl("", "get", "pods", "-n", ns, "-l", selector+",batch.kubernetes.io/job-name", "-o", "jsonpath={range .items[*]}{.spec.nodeName}{\" \"}{.status.phase}{\"\\n\"}{end}"); err == nil {
				w.maxRunning = max(w.maxRunning, runningOnANode(out))
			}
			select {
			case <-w.stop:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return w
}

// runningOnANode counts the lines "NODE PHASE" of pods that are bound to a
// node and have not ended.
func runningOnANode(out string) int {
	n := 0
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) == 2 && (f[1] == string(corev1.PodPending) || f[1] == string(corev1.PodRunning)) {
			n++
		}
	}
	return n
}

// record adds the experiment's row, without its age, when it changed.
func (w *watcher) record() {
	out, err := tryKubectl("", "get", "autoresearch", name, "-n", ns, "--no-headers")
	f := strings.Fields(out)
	if err != nil || len(f) < 2 {
		return
	}
	row := strings.Join(f[:len(f)-1], " ")
	if len(w.rows) == 0 || w.rows[len(w.rows)-1] != row {
		w.rows = append(w.rows, row)
	}
}

func (w *watcher) close() { close(w.stop); <-w.done }

func waitPhase(t *testing.T, phase v1alpha1.Phase, round int32, timeout time.Duration) {
	t.Helper()
	eventually(t, fmt.Sprintf("phase %s at round %d", phase, round), timeout, func() bool {
		ar := experiment(t)
		return ar.Status.Phase == phase && ar.Status.Round >= round
	})
}

// experimentEvents are the events about the experiment ar.
func experimentEvents(t testing.TB, ar *v1alpha1.AutoResearch) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	out := kubectl(t, "", "get", "events.v1.events.k8s.io", "-n", ar.Namespace, "--field-selector", "regarding.kind=AutoResearch,regarding.name="+ar.Name, "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	// Events outlive an earlier experiment of the same name.
	return slices.DeleteFunc(list.Items, func(e eventsv1.Event) bool { return e.Regarding.UID != ar.UID })
}

// roundOverheads tells, for each round after the baseline, how long it
// took from the previous round's verdict to its own and how much of that
// the user's commands ran (the Researcher, training, evaluation, as the
// round's durations say): the rest is the operator's and the cluster's.
// The verdicts' times are their events' (microseconds; the history's
// completion times have whole seconds). notes label the rounds the test
// disturbed.
func roundOverheads(t testing.TB, n string, notes map[int32]string) string {
	t.Helper()
	ar := experimentNamed(t, n)
	var judged []time.Time
	for _, e := range experimentEvents(t, ar) {
		if e.Action == "Judge" {
			judged = append(judged, e.EventTime.Time)
		}
	}
	slices.SortFunc(judged, func(a, b time.Time) int { return a.Compare(b) })
	history := ar.Status.History
	if len(judged) != len(history) {
		return fmt.Sprintf("%d verdict events for %d rounds: no overheads", len(judged), len(history))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-5s %-17s %9s %9s %9s\n", "round", "verdict", "span", "user", "overhead")
	for i := 1; i < len(history); i++ {
		h := history[i]
		var user time.Duration
		for _, d := range []*metav1.Duration{h.Durations.Researcher, h.Durations.Train, h.Durations.Eval} {
			if d != nil {
				user += d.Duration
			}
		}
		span := judged[i].Sub(judged[i-1])
		fmt.Fprintf(&b, "%-5d %-17s %8.2fs %8.2fs %8.2fs %s\n", h.Round, h.Verdict, span.Seconds(), user.Seconds(), (span - user).Seconds(), notes[h.Round])
	}
	return b.String()
}

// TestControlPlaneVersion checks that the control plane and kubectl built
// from source say which release they are, as released binaries do.
func TestControlPlaneVersion(t *testing.T) {
	var v struct {
		ClientVersion, ServerVersion version.Info
	}
	if err := json.Unmarshal([]byte(kubectl(t, "", "version", "-o", "json")), &v); err != nil {
		t.Fatal(err)
	}
	want := strings.Split(k8sVersion, ".")
	for who, info := range map[string]version.Info{"server": v.ServerVersion, "kubectl": v.ClientVersion} {
		if info.GitVersion != "v"+k8sVersion || info.Major != want[0] || info.Minor != want[1] {
			t.Errorf("%s version %s (major %q, minor %q), want v%s", who, info.GitVersion, info.Major, info.Minor, k8sVersion)
		}
	}
}

// TestExperimentOnCluster runs tiny-lm-go on either node: on the real
// node, training and evaluation run in the Go image and every other step
// in the operator's.
func TestExperimentOnCluster(t *testing.T) {
	install(t)
	m := startManager(t)
	defer m.stop()
	repo := sourceRepo(t, "tiny-lm-go")
	url, goImage := "file://"+repo, ""
	if onRealNode() {
		url, goImage = serveOnRealNode(t, ns, name, repo), realNodeImage(t, "go")
	}
	w := watch()
	start := time.Now()
	kubectl(t, manifestFor(name, url, 2, 0, goImage), "apply", "-f", "-")

	// The manager dies in the middle of round 1's training and comes back.
	eventually(t, "round 1 training", 10*time.Minute, func() bool {
		_, err := tryKubectl("", "get", "job", name+"-r1-train", "-n", ns)
		return err == nil
	})
	m.kill()
	time.Sleep(5 * time.Second)
	m.start()

	waitPhase(t, v1alpha1.PhaseSucceeded, 2, 15*time.Minute)
	t.Logf("two rounds in %s", time.Since(start).Round(time.Second))
	// The watcher's findings are read once it has stopped.
	w.close()
	w.record()
	ar := experiment(t)
	var rounds []int32
	for _, h := range ar.Status.History {
		rounds = append(rounds, h.Round)
		if h.Verdict == "" {
			t.Errorf("round %d has no verdict", h.Round)
		}
	}
	t.Logf("history rounds %v, verdict counts %v", rounds, ar.Status.VerdictCounts)
	if got := fmt.Sprint(rounds); !strings.Contains(got, "1 2") {
		t.Errorf("history rounds = %s, want rounds 1 and 2 each once", got)
	}

	t.Run("jobs request the GPU and run one at a time", func(t *testing.T) {
		// The round went on when the last Job's pod succeeded; the Job
		// controller counts it a little later.
		eventually(t, "every Job to count its ended pod", time.Minute, func() bool {
			for _, j := range jobs(t) {
				if j.Status.Succeeded+j.Status.Failed == 0 {
					return false
				}
			}
			return true
		})
		seen := map[string]bool{}
		for _, j := range jobs(t) {
			if seen[j.Name] {
				t.Errorf("duplicate job %s", j.Name)
			}
			seen[j.Name] = true
			req := j.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceName(gpu)]
			if req.Value() != 1 {
				t.Errorf("job %s requests %s GPUs, want 1", j.Name, req.String())
			}
			if j.Status.Succeeded+j.Status.Failed != 1 {
				t.Errorf("job %s: succeeded %d failed %d, want exactly one finished pod", j.Name, j.Status.Succeeded, j.Status.Failed)
			}
		}
		for _, want := range []string{name + "-r1-train", name + "-r1-eval", name + "-r2-train", name + "-r2-eval"} {
			if !seen[want] {
				t.Errorf("job %s is missing; have %v", want, seen)
			}
		}
		if w.maxRunning != 1 {
			t.Errorf("at most %d GPU jobs' pods ran at once, want 1", w.maxRunning)
		}
	})

	t.Run("kubectl get shows progress", func(t *testing.T) {
		t.Logf("rows:\n%s", strings.Join(w.rows, "\n"))
		var phases []string
		for _, r := range w.rows {
			if f := strings.Fields(r); len(f) > 1 {
				phases = append(phases, f[1])
			}
		}
		for _, want := range []string{"Running", "Succeeded"} {
			if !strings.Contains(strings.Join(phases, " "), want) {
				t.Errorf("phases seen %v, want %s among them", phases, want)
			}
		}
	})

	t.Run("raising maxRounds resumes, suspend pauses, the tampering round is caught", func(t *testing.T) {
		// Round 3 of the plan breaks the build; round 4 edits the fixed eval.
		kubectl(t, "", "patch", "autoresearch", name, "-n", ns, "--type=merge", "-p", `{"spec":{"maxRounds":4,"suspend":true}}`)
		waitPhase(t, v1alpha1.PhaseSuspended, 2, 5*time.Minute)
		before := len(jobs(t))
		time.Sleep(10 * time.Second)
		if after := len(jobs(t)); after != before {
			t.Errorf("%d jobs while suspended, had %d", after, before)
		}
		kubectl(t, "", "patch", "autoresearch", name, "-n", ns, "--type=merge", "-p", `{"spec":{"suspend":false}}`)
		waitPhase(t, v1alpha1.PhaseSucceeded, 4, 15*time.Minute)
		ar := experiment(t)
		verdicts := map[int32]v1alpha1.Verdict{}
		for _, h := range ar.Status.History {
			verdicts[h.Round] = h.Verdict
		}
		if verdicts[4] != v1alpha1.Verdict("compliance_failed") {
			t.Errorf("round 4 verdict = %q, want compliance_failed; all %v", verdicts[4], verdicts)
		}
	})

	t.Logf("time per round:\n%s", roundOverheads(t, name, map[int32]string{1: "(the manager restarted)", 3: "(includes the suspension)"}))

	// Step timings for the report: each pod's creation, start and end.
	t.Logf("pods:\n%s", kubectl(t, "", "get", "pods", "-n", ns, "-l", selector, "--sort-by=.metadata.creationTimestamp", "-o",
		"custom-columns=NAME:.metadata.name,CREATED:.metadata.creationTimestamp,FIRST_START:.status.initContainerStatuses[0].state.terminated.startedAt,START:.status.containerStatuses[0].state.terminated.startedAt,END:.status.containerStatuses[0].state.terminated.finishedAt"))

	t.Run("deleting the experiment removes its children and keeps its workspace", func(t *testing.T) {
		claim := experiment(t).Status.Workspace.ClaimName
		if claim == "" {
			t.Fatal("status.workspace.claimName is empty")
		}
		kubectl(t, "", "delete", "autoresearch", name, "-n", ns, "--wait=true", "--timeout=120s")
		eventually(t, "children gone", 3*time.Minute, func() bool {
			out := kubectl(t, "", "get", "pods,jobs,configmaps", "-n", ns, "-l", selector, "-o", "name")
			return strings.TrimSpace(out) == ""
		})
		// reclaimPolicy Retain, the default: the results outlive the
		// experiment.
		if out := kubectl(t, "", "get", "pvc", "-n", ns, "-l", selector, "-o", "name"); strings.TrimSpace(out) != "persistentvolumeclaim/"+claim {
			t.Errorf("claims left: %q, want the retained %s", out, claim)
		}
		kubectl(t, "", "delete", "pvc", claim, "-n", ns, "--wait=false")
	})
}

// TestPyTorchExampleOnCluster runs examples/nanogpt-torch, with its kernel
// parity target, where this machine has PyTorch (Debian's python3-torch).
func TestPyTorchExampleOnCluster(t *testing.T) {
	parallel(t)
	const torchName = "torch"
	python := "/usr/bin/python3"
	if exec.Command(python, "-c", "import torch").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no python3 with torch: install Debian's python3-torch (make test does)")
		}
		t.Skip("no python3 with torch")
	}
	install(t)
	m := &manager{t: t}
	m.start()
	defer m.stop()
	repo := sourceRepo(t, "nanogpt-torch")
	// The host's userland plays the training image: its python3 has torch.
	kubectl(t, torchExperiment(torchName, "file://"+repo, `env: [{name: PATH, value: "/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin"}]`), "apply", "-f", "-")
	defer kubectl(t, "", "delete", "autoresearch", torchName, "-n", ns, "--wait=true")

	eventually(t, "the PyTorch experiment to finish", 20*time.Minute, func() bool {
		return experimentNamed(t, torchName).Status.Phase == v1alpha1.PhaseSucceeded
	})
	var got []string
	for _, h := range experimentNamed(t, torchName).Status.History {
		got = append(got, string(h.Verdict))
	}
	if strings.Join(got, " ") != "baseline improved not_improved parity_failed" {
		t.Errorf("verdicts %v, want baseline, improved, not_improved, parity_failed", got)
	}
}

// torchExperiment is examples/nanogpt-torch as the experiment n, with its
// kernel parity target, cloned from url; train is one more field of
// spec.train, which says where python3 with torch is.
func torchExperiment(n, url, train string) string {
	return fmt.Sprintf(`apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata: {name: %s, namespace: %s}
spec:
  researchQuestion: "How low can a tiny GPT push bits per byte?"
  maxRounds: 3
  source:
    git: {url: %q, ref: main}
  workspace: {size: 1Gi}
  fixed:
    files: [prepare.py, eval.py, reference_kernels.py, scripted-researcher.yaml]
    timeLimit: 10m
  variable:
    files: [train.py, kernels.py]
  train:
    command: "python3 prepare.py && python3 train.py"
    outputs: [ckpt]
    gpus: 1
    %s
  eval:
    metric: val_bpb
    direction: minimize
    command: "python3 prepare.py && python3 eval.py"
  kernelTargets:
    - {name: rmsnorm, newModule: "kernels:rmsnorm", baselineModule: "reference_kernels:rmsnorm", fixture: "reference_kernels:rmsnorm_fixture", atol: "1e-5", rtol: "1e-4"}
  researcher:
    command: "autoresearch researcher scripted --plan scripted-researcher.yaml"
    timeout: 60s
`, n, ns, url, train)
}

// nodeGPUs is the node's allocatable nvidia.com/gpu.
func nodeGPUs(t testing.TB, node string) int {
	t.Helper()
	out := kubectl(t, "", "get", "node", node, "-o", `jsonpath={.status.allocatable.nvidia\.com/gpu}`)
	n, err := strconv.Atoi(out)
	if err != nil {
		t.Fatalf("node %s's allocatable nvidia.com/gpu %q: %v", node, out, err)
	}
	return n
}

// pod is the pod n, or nil when there is none.
func pod(t testing.TB, n string) *corev1.Pod {
	t.Helper()
	out, err := tryKubectl("", "get", "pod", n, "-n", ns, "-o", "json")
	if err != nil {
		if strings.Contains(out, "NotFound") {
			return nil
		}
		t.Fatalf("kubectl get pod %s: %v\n%s", n, err, out)
	}
	p := &corev1.Pod{}
	if err := json.Unmarshal([]byte(out), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// runningPod waits for a pod whose containers (not just its init
// containers) have started, among those the label selector finds.
func runningPod(t testing.TB, what, labels string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	eventually(t, what+" running", timeout, func() bool {
		var list corev1.PodList
		if err := json.Unmarshal([]byte(kubectl(t, "", "get", "pods", "-n", ns, "-l", labels, "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		for i, p := range list.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil {
				found = &list.Items[i]
				return true
			}
		}
		return false
	})
	return found
}

// TestDisruptionIsRetried deletes the running Researcher pod and evicts
// the running training pod, as an administrator or a node drain would:
// neither is the candidate's doing, so each step runs again and the round
// is judged on what the new pods do.
func TestDisruptionIsRetried(t *testing.T) {
	parallel(t)
	const n = "disrupted"
	install(t)
	m := &manager{t: t}
	m.start()
	defer m.stop()
	repo := sourceRepo(t, "tiny-lm-go")
	// The Researcher and training wait 20s before their work: time to
	// take their pods away while they run.
	kubectl(t, manifestFor(n, "file://"+repo, 1, 20*time.Second, ""), "apply", "-f", "-")
	defer kubectl(t, "", "delete", "autoresearch", n, "-n", ns, "--wait=true", "--timeout=120s")
	sel := "autoresearch.dev/experiment=" + n

	researcher := runningPod(t, "round 1's Researcher", sel+",autoresearch.dev/round=1,autoresearch.dev/step=researcher", 10*time.Minute)
	kubectl(t, "", "delete", "pod", researcher.Name, "-n", ns, "--wait=false")
	eventually(t, "a new Researcher pod", 3*time.Minute, func() bool {
		p := pod(t, researcher.Name)
		return p != nil && p.UID != researcher.UID
	})

	train := runningPod(t, "round 1's training", "batch.kubernetes.io/job-name="+n+"-r1-train", 5*time.Minute)
	evict(t, train)

	eventually(t, "the experiment to finish", 10*time.Minute, func() bool {
		return experimentNamed(t, n).Status.Phase == v1alpha1.PhaseSucceeded
	})
	ar := experimentNamed(t, n)
	var verdicts []string
	for _, h := range ar.Status.History {
		verdicts = append(verdicts, string(h.Verdict))
	}
	// Round 1 of the plan improves, disrupted or not.
	if got := strings.Join(verdicts, " "); got != "baseline improved" {
		t.Errorf("verdicts %s, want baseline improved", got)
	}
	retriedAfterEviction(t, ar, train)
}

// evict evicts the running pod p through the eviction API, as a node drain
// does, and checks that the pod ended with the condition the eviction set:
// the Job's pod failure policy and the operator tell a disruption from a
// failure by it. The pod's end is read from a watch, not polled: its Job
// may delete it within a second of its end.
func evict(t *testing.T, p *corev1.Pod) {
	t.Helper()
	watch := kubectlCommand("get", "pod", p.Name, "-n", ns, "--watch", "--output-watch-events", "-o", "json")
	out, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errs bytes.Buffer
	watch.Stderr = &errs
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = watch.Process.Kill()
		_ = watch.Wait()
	}()
	// Every state of the pod, from the one the watch starts with until
	// it failed or was deleted; the channel closes when the watch ends.
	states, done := make(chan *corev1.Pod), make(chan struct{})
	defer close(done)
	go func() {
		defer close(states)
		dec := json.NewDecoder(out)
		for {
			var e struct {
				Type   string     `json:"type"`
				Object corev1.Pod `json:"object"`
			}
			if dec.Decode(&e) != nil {
				return
			}
			if e.Object.UID != p.UID {
				continue
			}
			select {
			case states <- &e.Object:
			case <-done:
				return
			}
			if e.Object.Status.Phase == corev1.PodFailed || e.Type == "DELETED" {
				return
			}
		}
	}()
	evicted, ok := <-states
	if !ok {
		_ = watch.Process.Kill()
		_ = watch.Wait()
		t.Fatalf("watching pod %s: %s", p.Name, errs.String())
	}
	kubectl(t, fmt.Sprintf(`{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": %q, "namespace": %q}}`, p.Name, ns),
		"create", "--raw", fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/eviction", ns, p.Name), "-f", "-")
	timeout := time.After(2 * time.Minute)
	for evicted.Status.Phase != corev1.PodFailed {
		select {
		case s, ok := <-states:
			if !ok {
				t.Fatalf("the evicted pod %s was deleted without failing first; its last state: %+v", p.Name, evicted.Status)
			}
			evicted = s
		case <-timeout:
			t.Fatalf("timed out after 2m waiting for the evicted pod %s to end", p.Name)
		}
	}
	disrupted := false
	for _, c := range evicted.Status.Conditions {
		disrupted = disrupted || c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "EvictionByEvictionAPI"
	}
	if !disrupted {
		t.Errorf("the evicted pod ended without its DisruptionTarget condition: %+v", evicted.Status.Conditions)
	}
}

// retriedAfterEviction checks that the experiment ar told of a retried
// step, and that the Job of the evicted pod replaced it rather than
// failing (its pod failure policy ignores disruptions) and succeeded.
func retriedAfterEviction(t *testing.T, ar *v1alpha1.AutoResearch, evicted *corev1.Pod) {
	t.Helper()
	var retried []string
	for _, e := range experimentEvents(t, ar) {
		if e.Reason == "StepRetried" {
			retried = append(retried, e.Note)
		}
	}
	if len(retried) == 0 {
		t.Errorf("no StepRetried event")
	}
	t.Logf("StepRetried: %q", retried)
	owner := metav1.GetControllerOf(evicted)
	if owner == nil {
		t.Fatalf("the evicted pod %s has no Job", evicted.Name)
	}
	// The round went on when the new pod succeeded; the Job controller
	// counts it a little later.
	var job batchv1.Job
	eventually(t, owner.Name+" to count its ended pod", time.Minute, func() bool {
		if err := json.Unmarshal([]byte(kubectl(t, "", "get", "job", owner.Name, "-n", ns, "-o", "json")), &job); err != nil {
			t.Fatal(err)
		}
		return job.Status.Succeeded+job.Status.Failed > 0
	})
	if owner.UID != job.UID || job.Status.Succeeded != 1 {
		t.Errorf("the evicted pod's Job did not finish with a new pod: owner %v, job %s succeeded %d failed %d", owner, job.UID, job.Status.Succeeded, job.Status.Failed)
	}
}

// TestABudgetStopsTheLoopAndRaisingItResumes gives the experiment less GPU
// time than its baseline takes: no round starts, the experiment ends with
// reason BudgetExhausted, and raising the budget runs the rounds it allows.
func TestABudgetStopsTheLoopAndRaisingItResumes(t *testing.T) {
	parallel(t)
	const n = "budgeted"
	install(t)
	m := startManager(t)
	defer m.stop()
	kubectl(t, toyManifest(n, clusterSource(t, n, pipelineToy), 1)+"  budget: {gpuHours: \"0.0001\"}\n", "apply", "-f", "-")
	defer kubectl(t, "", "delete", "autoresearch", n, "-n", ns, "--wait=true", "--timeout=120s")

	eventually(t, "the budget to stop the experiment", 10*time.Minute, func() bool {
		return experimentNamed(t, n).Status.Phase == v1alpha1.PhaseSucceeded
	})
	ar := experimentNamed(t, n)
	c := meta.FindStatusCondition(ar.Status.Conditions, v1alpha1.ConditionSucceeded)
	if c == nil || c.Reason != v1alpha1.ReasonBudgetExhausted || !strings.Contains(c.Message, "budget gpuHours exhausted") {
		t.Fatalf("Succeeded condition %+v, want reason BudgetExhausted naming gpuHours", c)
	}
	if ar.Status.CompletedRounds != 0 {
		t.Errorf("%d rounds ran past the budget", ar.Status.CompletedRounds)
	}
	t.Logf("stopped: %s; %q", c.Message, ar.Status.Usage.Budget)

	kubectl(t, "", "patch", "autoresearch", n, "-n", ns, "--type=merge", "-p", `{"spec":{"budget":{"gpuHours":"10"}}}`)
	eventually(t, "the raised budget's round to finish", 10*time.Minute, func() bool {
		ar = experimentNamed(t, n)
		return ar.Status.Phase == v1alpha1.PhaseSucceeded && ar.Status.CompletedRounds == 1
	})
	if c := meta.FindStatusCondition(ar.Status.Conditions, v1alpha1.ConditionSucceeded); c == nil || c.Reason != v1alpha1.ReasonMaxRoundsReached {
		t.Errorf("after the raise: Succeeded condition %+v, want MaxRoundsReached", c)
	}
}

// TestADatasetReachesTraining mounts a dataset into training and
// evaluation through spec.train.podTemplate, with shm, on the node: the
// training command fails unless it can read the dataset, and has a
// /dev/shm and a HOME it can write.
func TestADatasetReachesTraining(t *testing.T) {
	parallel(t)
	const n = "dataset"
	install(t)
	m := startManager(t)
	defer m.stop()
	url := clusterSource(t, n, pipelineToy)
	kubectl(t, fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: corpus, namespace: %s}
data: {corpus.txt: "the dataset the cluster provides"}
`, ns), "apply", "-f", "-")
	defer kubectl(t, "", "delete", "configmap", "corpus", "-n", ns)
	spec := strings.Replace(toyManifest(n, url, 1), `command: "./train.sh"`,
		`command: "grep -q dataset /data/corpus.txt && : > /dev/shm/w && test -w \"$HOME\" && ./train.sh"`, 1)
	spec = strings.Replace(spec, "    outputs: [out.txt]\n", `    outputs: [out.txt]
    shm: 64Mi
    podTemplate:
      spec:
        containers:
        - name: train
          volumeMounts: [{name: data, mountPath: /data, readOnly: true}]
        volumes: [{name: data, configMap: {name: corpus}}]
`, 1)
	if !strings.Contains(spec, "grep -q dataset") || !strings.Contains(spec, "podTemplate") {
		t.Fatalf("the manifest did not take the dataset:\n%s", spec)
	}
	kubectl(t, spec, "apply", "-f", "-")
	defer kubectl(t, "", "delete", "autoresearch", n, "-n", ns, "--wait=true", "--timeout=120s")

	eventually(t, "the experiment to finish", 10*time.Minute, func() bool {
		return experimentNamed(t, n).Status.Phase == v1alpha1.PhaseSucceeded || experimentNamed(t, n).Status.Phase == v1alpha1.PhaseFailed
	})
	ar := experimentNamed(t, n)
	var verdicts []string
	for _, h := range ar.Status.History {
		verdicts = append(verdicts, string(h.Verdict))
	}
	if got := strings.Join(verdicts, " "); got != "baseline improved" {
		t.Errorf("verdicts %q (phase %s: %s), want baseline improved: training could not read its dataset", got, ar.Status.Phase, ar.Status.Message)
	}
}

// TestServerBusy tells a read the API server timed out, which make
// bench-parallel once saw fail a whole matrix, from an answer.
func TestServerBusy(t *testing.T) {
	for out, want := range map[string]bool{
		"Error from server (Timeout): the server was unable to return a response in the time allotted, but may still be processing the request (get autoresearches.autoresearch.dev bench-k8-pipe-r5)\n": true,
		"Unable to connect to the server: net/http: TLS handshake timeout\n":                      true,
		`Error from server (NotFound): autoresearches.autoresearch.dev "nosuch" not found` + "\n": false,
		"": false,
	} {
		if got := serverBusy(out); got != want {
			t.Errorf("serverBusy(%q) = %t, want %t", out, got, want)
		}
	}
}
