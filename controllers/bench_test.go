package controllers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
	"github.com/autoresearch-dev/autoresearch-operator/internal/memlimit"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// BenchmarkOperator creates many experiments (BENCH_EXPERIMENTS, default
// 500) at once and drives each through 3 rounds, playing the kubelet and the
// Job controller as fast as it can: the operator's capacity. It reports the
// time from a child's completion to the creation of the experiment's next
// child (p50, p99), the test process's memory and CPU with the manager in
// it, and the largest status.
func BenchmarkOperator(b *testing.B) {
	n := benchEnv(b, "BENCH_EXPERIMENTS", 500)
	for range b.N {
		benchmarkOperator(b, n, 3, 0)
	}
}

// BenchmarkOperatorPaced is the operator under a steady load rather than a
// burst: experiments (BENCH_PACED_EXPERIMENTS, default 1,000) of one round
// each, started evenly over one step's time, whose every step takes
// BENCH_PACED_STEP_SECONDS (default 60), as a cluster of that many running
// experiments would see them.
func BenchmarkOperatorPaced(b *testing.B) {
	n := benchEnv(b, "BENCH_PACED_EXPERIMENTS", 1000)
	step := time.Duration(benchEnv(b, "BENCH_PACED_STEP_SECONDS", 60)) * time.Second
	for range b.N {
		benchmarkOperator(b, n, 1, step)
	}
}

// benchEnv is the positive number in the environment variable name, or def.
func benchEnv(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// benchmarkOperator drives n experiments of the given rounds, each child
// ending step after it appears, the experiments created evenly over step.
// The process's heap is kept below the memory limit the manager's chart
// gives it (BENCH_MEMORY_LIMIT_MIB, default 256), as the manager keeps
// its own below its container's (memlimit).
func benchmarkOperator(b *testing.B, n int, rounds int32, step time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	soft := memlimit.Set(int64(benchEnv(b, "BENCH_MEMORY_LIMIT_MIB", 256))<<20, os.Getenv)
	ns := newNamespace(b)
	writes := &writeCounter{by: map[string]int{}}
	managerCfg := rest.CopyConfig(cfg)
	managerCfg.Wrap(writes.wrap)
	m := startManagerWith(b, managerCfg)
	defer m.stop()

	k := startKubeletProcess(b, ns, step)
	defer k.stop()

	b.ResetTimer()
	start, cpuStart := time.Now(), cpuTime()
	for i := range n {
		if step > 0 {
			time.Sleep(time.Until(start.Add(step * time.Duration(i) / time.Duration(n))))
		}
		ar := builder.MakeAutoResearch(fmt.Sprintf("b%d", i), ns).Question("q").MaxRounds(rounds).TimeLimit(max(time.Minute, 2*step)).Obj()
		if err := k8s.Create(ctx, ar); err != nil {
			b.Fatal(err)
		}
	}
	// The experiments are counted every few seconds: the CPU the
	// benchmark measures is mostly the manager's, not this count's.
	var largest, judged int
	for deadline := time.Now().Add(30 * time.Minute); ; time.Sleep(2 * time.Second) {
		var list v1alpha1.AutoResearchList
		if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		done := 0
		judged = 0
		for _, ar := range list.Items {
			if ar.Status.Phase == v1alpha1.PhaseSucceeded {
				done++
			}
			judged += len(ar.Status.History)
			data, _ := json.Marshal(ar.Status)
			largest = max(largest, len(data))
		}
		if done == n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting for every experiment to finish: %d of %d done", done, n)
		}
	}
	elapsed, cpu := time.Since(start), cpuTime()-cpuStart
	b.StopTimer()
	writeHeapProfile(b)
	lat := k.stop()
	slices.Sort(lat)
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	b.ReportMetric(float64(percentile(lat, 50).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(percentile(lat, 99).Milliseconds()), "p99-ms")
	b.ReportMetric(float64(rssBytes())/(1<<20), "rss-MiB")
	b.ReportMetric(float64(soft)/(1<<20), "gomemlimit-MiB")
	b.ReportMetric(float64(mem.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(largest), "max-status-bytes")
	b.ReportMetric(elapsed.Seconds(), "total-s")
	b.ReportMetric(float64(len(lat)), "handoffs")
	if len(lat) > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(lat)), "cpu-ms/handoff")
	}
	if judged > 0 {
		total, table := writes.perRound(judged)
		b.ReportMetric(total, "api-writes/round")
		b.Logf("the manager's API writes per judged round (%d rounds):\n%s", judged, table)
	}
}

// writeCounter counts the requests that change something (every method
// but GET) a client makes, by method and resource.
type writeCounter struct {
	mu sync.Mutex
	by map[string]int
}

func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet {
			w.mu.Lock()
			w.by[req.Method+" "+resourceOf(req.URL.Path)]++
			w.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// perRound is the number of writes per round over rounds, and a table of
// them by method and resource.
func (w *writeCounter) perRound(rounds int) (float64, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var total float64
	var table strings.Builder
	for _, k := range slices.Sorted(maps.Keys(w.by)) {
		n := float64(w.by[k]) / float64(rounds)
		total += n
		fmt.Fprintf(&table, "  %-40s %6.2f\n", k, n)
	}
	return total, table.String()
}

// resourceOf is the resource of an API path, with its subresource:
// /api/v1/namespaces/n/pods/p/status is pods/status.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if i := slices.Index(parts, "namespaces"); i >= 0 && i+2 < len(parts) {
		parts = parts[i+2:]
	} else if len(parts) > 0 {
		parts = parts[len(parts)-1:]
	}
	if len(parts) == 3 {
		return parts[0] + "/" + parts[2]
	}
	return parts[0]
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// writeHeapProfile writes the heap as it is with the manager still running
// to the file BENCH_HEAP_PROFILE names, if any (go test's -memprofile is
// written once the manager has stopped).
func writeHeapProfile(b *testing.B) {
	name := os.Getenv("BENCH_HEAP_PROFILE")
	if name == "" {
		return
	}
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}()
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// cpuTime is the CPU time this process, which holds the manager, has
// used so far.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// The benchmark's kubelet runs in a process of its own, so that the
// memory and CPU the benchmark reports are the manager's: this test binary
// again, given a kubeconfig, the namespace and the step's time, running
// BenchmarkSimulatedKubelet alone.
const (
	benchKubeletConfig    = "AUTORESEARCH_BENCH_KUBECONFIG"
	benchKubeletNamespace = "AUTORESEARCH_BENCH_NAMESPACE"
	benchKubeletStep      = "AUTORESEARCH_BENCH_STEP"
	benchKubeletLatencies = "AUTORESEARCH_BENCH_LATENCIES"
)

// kubeletProcess is the benchmark's kubelet, in its process.
type kubeletProcess struct {
	b         *testing.B
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	latencies string
	stopped   []time.Duration
}

// startKubeletProcess starts the kubelet of the experiments in ns, whose
// steps take step, and waits until it watches them.
func startKubeletProcess(b *testing.B, ns string, step time.Duration) *kubeletProcess {
	dir := b.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	user := &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	config := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"envtest": {Server: cfg.Host, CertificateAuthorityData: cfg.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"envtest": user},
		Contexts:       map[string]*clientcmdapi.Context{"envtest": {Cluster: "envtest", AuthInfo: "envtest"}},
		CurrentContext: "envtest",
	}
	if err := clientcmd.WriteToFile(config, kubeconfig); err != nil {
		b.Fatal(err)
	}
	k := &kubeletProcess{b: b, latencies: filepath.Join(dir, "latencies.json")}
	k.cmd = exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkSimulatedKubelet$", "-test.benchtime=1x")
	k.cmd.Env = append(os.Environ(), benchKubeletConfig+"="+kubeconfig, benchKubeletNamespace+"="+ns,
		benchKubeletStep+"="+step.String(), benchKubeletLatencies+"="+k.latencies)
	k.cmd.Stderr = os.Stderr
	stdout, err := k.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if k.stdin, err = k.cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	if err := k.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && lines.Text() != kubeletReady {
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return k
}

// kubeletReady is what the kubelet's process prints once it watches.
const kubeletReady = "kubelet ready"

// stop ends the kubelet once, and returns its handoff latencies.
func (k *kubeletProcess) stop() []time.Duration {
	if k.cmd == nil {
		return k.stopped
	}
	cmd := k.cmd
	k.cmd = nil
	_ = k.stdin.Close()
	if err := cmd.Wait(); err != nil {
		k.b.Fatalf("the benchmark's kubelet: %v", err)
	}
	data, err := os.ReadFile(k.latencies)
	if err != nil {
		k.b.Fatal(err)
	}
	if err := json.Unmarshal(data, &k.stopped); err != nil {
		k.b.Fatal(err)
	}
	return k.stopped
}

// BenchmarkSimulatedKubelet is the benchmark's kubelet, which
// startKubeletProcess runs in a process of its own: it ends every child
// step of the experiments in its namespace a step's time after it
// appears, until its standard input closes, and then writes the handoff
// latencies it saw.
func BenchmarkSimulatedKubelet(b *testing.B) {
	ns := os.Getenv(benchKubeletNamespace)
	if ns == "" {
		b.Skip("the operator's benchmarks run it in a process of their own")
	}
	step, err := time.ParseDuration(os.Getenv(benchKubeletStep))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k := &benchKubelet{ns: ns, step: step, finished: map[string]time.Time{}, work: make(chan benchChild, 100000), done: make(chan struct{})}
	// The kubelet's informers watch the children's metadata alone, and
	// read a child whole only to end it.
	informers, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}, DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		b.Fatal(err)
	}
	for _, obj := range []client.Object{&corev1.Pod{}, &batchv1.Job{}} {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			b.Fatal(err)
		}
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(gvk)
		inf, err := informers.GetInformer(ctx, meta)
		if err != nil {
			b.Fatal(err)
		}
		added := func(o any) {
			if m, ok := o.(*metav1.PartialObjectMetadata); ok {
				k.added(benchChild{meta: m, kind: obj})
			}
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: added}); err != nil {
			b.Fatal(err)
		}
	}
	go func() { _ = informers.Start(ctx) }()
	informers.WaitForCacheSync(ctx)
	var workers sync.WaitGroup
	for range 8 {
		workers.Go(func() {
			for {
				select {
				case c := <-k.work:
					k.finish(ctx, b, c)
				case <-k.done:
					return
				}
			}
		})
	}
	fmt.Println(kubeletReady)
	_, _ = io.Copy(io.Discard, os.Stdin)
	close(k.done)
	workers.Wait()
	k.mu.Lock()
	data, err := json.Marshal(k.latencies)
	k.mu.Unlock()
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv(benchKubeletLatencies), data, 0o600); err != nil {
		b.Fatal(err)
	}
}

// benchKubelet ends every child step after it appears.
type benchKubelet struct {
	ns        string
	step      time.Duration
	work      chan benchChild
	done      chan struct{} // closed when the benchmark is over
	mu        sync.Mutex
	finished  map[string]time.Time // experiment → when its last child ended
	latencies []time.Duration
}

// benchChild is a child the benchmark's kubelet saw appear: its metadata,
// and an empty object of its kind to read it into.
type benchChild struct {
	meta *metav1.PartialObjectMetadata
	kind client.Object
}

func (k *benchKubelet) added(c benchChild) {
	if l := c.meta.GetLabels(); l[LabelManagedBy] != ManagerName || l["batch.kubernetes.io/job-name"] != "" {
		return
	}
	exp := c.meta.GetLabels()[LabelExperiment]
	k.mu.Lock()
	if t, ok := k.finished[exp]; ok {
		k.latencies = append(k.latencies, time.Since(t))
		delete(k.finished, exp)
	}
	k.mu.Unlock()
	if k.step == 0 {
		k.send(c)
		return
	}
	time.AfterFunc(k.step, func() { k.send(c) })
}

// send queues c to be ended, unless the benchmark is over.
func (k *benchKubelet) send(c benchChild) {
	select {
	case k.work <- c:
	case <-k.done:
	}
}

func (k *benchKubelet) finish(ctx context.Context, b *testing.B, c benchChild) {
	step, exp := c.meta.GetLabels()[LabelStep], c.meta.GetLabels()[LabelExperiment]
	var msg string
	switch step {
	case stepInit:
		msg = result(b, steps.WorkspaceResult{StartCommit: "s0", FixedHashes: map[string]string{"eval.py": "a"}})
	case stepCompliance:
		msg = result(b, steps.ComplianceResult{Strategy: "a strategy"})
	case stepTrain:
		msg = result(b, steps.TrainResult{ProcessResult: steps.ProcessResult{DurationMS: 1000}})
	case stepEval:
		value := "1.0"
		if r, _ := strconv.Atoi(c.meta.GetLabels()[LabelRound]); r > 0 {
			value = strconv.FormatFloat(1-0.1*float64(r), 'f', 2, 64)
		}
		msg = result(b, steps.EvalResult{Found: true, Value: value})
	case stepGit:
		msg = result(b, steps.GitResult{Commit: "c" + c.meta.GetLabels()[LabelRound]})
	case stepResearcher:
	default:
		return
	}
	obj := c.kind.DeepCopyObject().(client.Object)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(c.meta), obj); err != nil {
		b.Fatal(err)
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		terminate(b, o, 0, msg)
	case *batchv1.Job:
		terminate(b, runJobPod(b, o, ""), 0, msg)
		completeJob(b, o, true, "")
	default:
		return
	}
	k.mu.Lock()
	k.finished[exp] = time.Now()
	k.mu.Unlock()
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// rssBytes is this process's resident memory, which holds the manager.
func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
