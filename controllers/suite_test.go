package controllers

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// The controller tests run against a real kube-apiserver and etcd
// (envtest). There is no kubelet, Job controller or garbage collector: the
// tests play those parts by writing Pod and Job status themselves.

var (
	cfg    *rest.Config
	scheme = k8sruntime.NewScheme()
	// k8s is a client without a cache, for tests to read and write directly.
	k8s client.Client
	// noEnvtest says why the tests that need an API server skip.
	noEnvtest error
)

const testImage = "ghcr.io/autoresearch-dev/autoresearch-operator:test"

func TestMain(m *testing.M) {
	logs := io.Discard
	if os.Getenv("TEST_VERBOSE") != "" {
		logs = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true)))
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if kubeconfig := os.Getenv(benchKubeletConfig); kubeconfig != "" {
		// The benchmark's kubelet, in a process of its own, on the API
		// server of the benchmark that started it.
		var err error
		if cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
			panic(err)
		}
		cfg.QPS, cfg.Burst = 1000, 2000
		if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			panic(err)
		}
		os.Exit(m.Run())
	}
	assets, err := envtestAssets()
	if err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		// Each test that needs the API server says so when it skips.
		noEnvtest = err
		os.Exit(m.Run())
	}
	_, self, _, _ := runtime.Caller(0)
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(filepath.Dir(self), "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		os.Exit(1)
	}
	// The tests and the managers they start must not queue behind
	// client-go's default rate limit of 20 requests a second.
	cfg.QPS, cfg.Burst = 1000, 2000
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		panic(err)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

// envtestAssets finds kube-apiserver and etcd: KUBEBUILDER_ASSETS, or what
// `make envtest` left in bin/.
func envtestAssets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	_, self, _, _ := runtime.Caller(0)
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(self), "..", "bin", "k8s", "*", "kube-apiserver"))
	for _, m := range matches {
		if _, err := os.Stat(filepath.Join(filepath.Dir(m), "etcd")); err == nil {
			return filepath.Dir(m), nil
		}
	}
	return "", fmt.Errorf("no kube-apiserver and etcd: run `make envtest` or set KUBEBUILDER_ASSETS")
}

// requireEnvtest skips a test that needs the API server when there is none.
func requireEnvtest(t testing.TB) {
	t.Helper()
	if noEnvtest != nil {
		t.Skipf("needs a kube-apiserver and etcd: %v", noEnvtest)
	}
}

// manager is a running controller manager for one test.
type manager struct {
	t      testing.TB
	cancel context.CancelFunc
	done   chan error
}

// startManager runs the reconciler in its own manager, as the operator
// binary does, until stop or the end of the test; with watchNamespaces it
// sees only those, as with --watch-namespaces.
func startManager(t testing.TB, watchNamespaces ...string) *manager {
	t.Helper()
	return startManagerWith(t, cfg, watchNamespaces...)
}

// testRetryDelay is the wait before a child that failed twice is made
// again in these tests.
const testRetryDelay = 3 * time.Second

// startManagerWith starts the manager with the client configuration c.
func startManagerWith(t testing.TB, c *rest.Config, watchNamespaces ...string) *manager {
	t.Helper()
	mgr, err := ctrl.NewManager(c, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  CacheOptions(watchNamespaces),
		// Tests start a manager after another one, in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := NewReconciler(mgr.GetClient(), mgr.GetScheme(), mgr.GetEventRecorder(ControllerName),
		WithImage(testImage), WithMaxConcurrentReconciles(4), WithRetryBackoff(testRetryDelay, 2*testRetryDelay))
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &manager{t: t, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- mgr.Start(ctx) }()
	t.Cleanup(m.stop)
	return m
}

func (m *manager) stop() {
	if m.cancel == nil {
		return
	}
	m.cancel()
	if err := <-m.done; err != nil {
		m.t.Errorf("manager: %v", err)
	}
	m.cancel = nil
}

// newNamespace gives a test a namespace of its own.
func newNamespace(t testing.TB) string {
	t.Helper()
	requireEnvtest(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ar-test-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// eventually polls cond until it holds; the timeout only bounds a broken
// test, it asserts nothing about speed.
func eventually(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s (last error: %v)", what, last)
}
