// Command manager runs the autoresearch operator: the controller manager
// that drives AutoResearch experiments through their rounds on a cluster.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	autoresearchv1alpha1 "github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/controllers"
	"github.com/autoresearch-dev/autoresearch-operator/internal/memlimit"
	"github.com/autoresearch-dev/autoresearch-operator/internal/version"
)

// imageEnv names the environment variable that --image defaults to; the
// Deployment sets it from its own image so that both always match.
const imageEnv = "AUTORESEARCH_IMAGE"

var setupLog = ctrl.Log.WithName("setup")

// options are the manager's command-line settings.
type options struct {
	metricsAddr             string
	metricsSecure           bool
	metricsCertDir          string
	probeAddr               string
	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	enableHTTP2             bool
	image                   string
	stepResources           corev1.ResourceRequirements
	concurrency             int
	kubeAPIQPS              float64
	kubeAPIBurst            int
	watchNamespaces         []string
	zap                     zap.Options
	printVersion            bool
}

func main() {
	opts, err := parseOptions(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(2)
	}
	if opts.printVersion {
		fmt.Println("manager", version.String())
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.zap)))
	self, _ := os.ReadFile("/proc/self/cgroup")
	if soft := memlimit.Set(memlimit.FromCgroup("/sys/fs/cgroup", self), os.Getenv); soft > 0 {
		setupLog.Info("Keeping the heap below the container's memory limit", "GOMEMLIMIT", soft)
	}

	if err := run(ctrl.SetupSignalHandler(), opts); err != nil {
		setupLog.Error(err, "Manager stopped")
		os.Exit(1)
	}
}

// parseOptions reads the flags in args; getenv supplies the defaults that
// come from the environment.
func parseOptions(args []string, getenv func(string) string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443",
		"The address the metrics endpoint binds to; 0 disables it.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true,
		"Serve metrics over HTTPS to authenticated and authorized clients only. Use --metrics-secure=false for plain HTTP.")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "",
		"A directory holding tls.crt and tls.key for the metrics endpoint, reloaded when they change. "+
			"Empty means a self-signed certificate.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "The address the health probe endpoint binds to.")
	fs.BoolVar(&o.leaderElect, "leader-elect", true,
		"Elect a leader so that only one replica reconciles at a time.")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "autoresearch-operator.autoresearch.dev",
		"The name of the Lease that leader election holds.")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "",
		"The namespace of the leader election Lease; defaults to the manager's own namespace, and is required out of cluster.")
	fs.BoolVar(&o.enableHTTP2, "enable-http2", false,
		"Allow HTTP/2 on the metrics server. Off by default because of the HTTP/2 Stream Cancellation and Rapid Reset CVEs.")
	fs.StringVar(&o.image, "image", getenv(imageEnv),
		"The operator's own image, which runs the git and compliance steps and supplies the step wrapper to user images. "+
			"Defaults to $"+imageEnv+".")
	o.stepResources = controllers.DefaultStepResources()
	defaultResources, err := json.Marshal(o.stepResources)
	if err != nil {
		return nil, err
	}
	fs.Func("step-resources",
		"The requests and limits, as JSON, of every container that runs the operator's image: the clone, the file check, "+
			"the git steps and the init containers of the Researcher's, training and evaluation pods. "+
			"A namespace whose ResourceQuota demands requests and limits admits no pod without them. Default "+string(defaultResources)+".",
		func(v string) error { return parseResources(v, &o.stepResources) })
	fs.IntVar(&o.concurrency, "max-concurrent-reconciles", 4,
		"How many experiments reconcile at once.")
	fs.Float64Var(&o.kubeAPIQPS, "kube-api-qps", 50, "Requests a second the manager may send to the API server.")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", 100, "Requests the manager may send in a burst to the API server.")
	fs.Func("watch-namespaces",
		"Comma-separated namespaces whose experiments the manager runs; it neither sees nor touches any other. "+
			"Empty means every namespace. The manager needs its role in each of them (a Role instead of the ClusterRole).",
		func(v string) error { return parseNamespaces(v, &o.watchNamespaces) })
	fs.BoolVar(&o.printVersion, "version", false, "Print the version this binary was built from and exit.")
	o.zap.BindFlags(fs)

	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.image == "" && !o.printVersion {
		return nil, fmt.Errorf("--image or $%s is required: the operator runs its git and compliance steps in that image", imageEnv)
	}
	return o, nil
}

// parseResources reads requests and limits written as JSON, such as
// {"requests":{"cpu":"100m"},"limits":{"cpu":"1"}}, and refuses a request
// above its limit, which the API server would refuse in every pod.
func parseResources(v string, res *corev1.ResourceRequirements) error {
	var r corev1.ResourceRequirements
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return fmt.Errorf(`want JSON such as {"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"cpu":"1","memory":"512Mi"}}: %w`, err)
	}
	for name, req := range r.Requests {
		if limit, ok := r.Limits[name]; ok && req.Cmp(limit) > 0 {
			return fmt.Errorf("the %s request %s exceeds its limit %s", name, req.String(), limit.String())
		}
	}
	*res = r
	return nil
}

// parseNamespaces reads a comma-separated list of namespace names; an empty
// list means every namespace.
func parseNamespaces(v string, namespaces *[]string) error {
	var out []string
	for _, ns := range strings.Split(v, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			continue
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("%q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
		out = append(out, ns)
	}
	*namespaces = out
	return nil
}

// newScheme holds the built-in kinds the operator creates and the AutoResearch API.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := autoresearchv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}

// managerOptions turns the flags into the controller manager's settings.
func managerOptions(o *options, scheme *runtime.Scheme) ctrl.Options {
	var tlsOpts []func(*tls.Config)
	if !o.enableHTTP2 {
		// https://github.com/advisories/GHSA-qppj-fm5r-hxr3 and GHSA-4374-p667-p6c8.
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metrics := metricsserver.Options{
		BindAddress:   o.metricsAddr,
		SecureServing: o.metricsSecure,
		CertDir:       o.metricsCertDir,
		TLSOpts:       tlsOpts,
	}
	if o.metricsSecure {
		// Clients need a token that may `get /metrics` (the metrics-reader
		// ClusterRole); the manager checks it with TokenReviews and
		// SubjectAccessReviews.
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metrics,
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        o.leaderElectionID,
		LeaderElectionNamespace: o.leaderElectionNamespace,
		// The process exits as soon as the manager stops, so giving up the
		// Lease on the way out is safe and lets a new leader start at once.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controllers.CacheOptions(o.watchNamespaces),
	}
}

// run starts the manager and blocks until ctx ends or the manager fails.
func run(ctx context.Context, o *options) error {
	scheme, err := newScheme()
	if err != nil {
		return fmt.Errorf("building the scheme: %w", err)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(o.kubeAPIQPS), o.kubeAPIBurst
	mgr, err := ctrl.NewManager(cfg, managerOptions(o, scheme))
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}

	r := controllers.NewReconciler(mgr.GetClient(), mgr.GetScheme(), mgr.GetEventRecorder(controllers.ControllerName),
		controllers.WithImage(o.image), controllers.WithStepResources(o.stepResources), controllers.WithMaxConcurrentReconciles(o.concurrency))
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the AutoResearch controller: %w", err)
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}

	setupLog.Info("Starting manager", "image", o.image, "leaderElection", o.leaderElect, "watchNamespaces", o.watchNamespaces)
	return mgr.Start(ctx)
}
