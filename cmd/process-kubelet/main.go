// Command process-kubelet is a test node agent: it registers a Node that
// advertises nvidia.com/gpu and runs the containers of the pods bound to
// it as local processes, ignoring their images (see internal/vkprovider).
// It also provisions hostPath volumes for claims of its StorageClass.
// It must run as root, for the containers' private mount namespaces.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/autoresearch-dev/autoresearch-operator/internal/vkprovider"
	"github.com/autoresearch-dev/autoresearch-operator/internal/vkprovider/containerinit"
)

// mountFlags collects repeated TARGET=SOURCE flags.
type mountFlags []containerinit.Mount

func (m *mountFlags) String() string { return fmt.Sprint(*m) }

func (m *mountFlags) Set(v string) error {
	target, source, ok := strings.Cut(v, "=")
	if !ok || !strings.HasPrefix(target, "/") {
		return fmt.Errorf("want /TARGET=SOURCE, got %q", v)
	}
	*m = append(*m, containerinit.Mount{Source: source, Target: target, ReadOnly: true})
	return nil
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == containerinit.Arg {
		err := containerinit.Run(os.Args[2])
		fmt.Fprintln(os.Stderr, "process-kubelet:", err)
		os.Exit(127)
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "process-kubelet:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		kubeconfig   = flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "The kubeconfig of the cluster to join.")
		nodeName     = flag.String("node-name", "process-node", "The name of the Node to register.")
		gpus         = flag.Int64("gpus", 1, "The node's nvidia.com/gpu capacity.")
		stateDir     = flag.String("state-dir", "", "Where pods' volumes, logs and termination messages live (required).")
		imageEnv     = flag.String("image-env", "PATH,HOME,GOCACHE,GOPATH,GOMODCACHE,GOFLAGS,GOPROXY,GOTOOLCHAIN", "Variables of this process's environment that every container starts with, as an image's ENV would set them.")
		storageClass = flag.String("storage-class", "process-local", "The StorageClass whose claims get hostPath volumes; empty disables provisioning.")
		volumeDir    = flag.String("volume-dir", "", "Where provisioned volumes live (default STATE_DIR/volumes).")
		apiQPS       = flag.Float64("kube-api-qps", 50, "Requests per second to the API server, as the kubelet's flag of that name; client-go's default of 5 delays every pod status update.")
		apiBurst     = flag.Int("kube-api-burst", 100, "Requests allowed in a burst to the API server, as the kubelet's flag of that name.")
		listen       = flag.String("listen-address", "", "HOST:PORT to serve the kubelet API (container logs) on, over TLS with --tls-cert-file and --tls-private-key-file, to clients whose certificate --client-ca-file signed (the API server's --kubelet-client-certificate); empty serves none.")
		tlsCert      = flag.String("tls-cert-file", "", "The kubelet API's serving certificate.")
		tlsKey       = flag.String("tls-private-key-file", "", "The kubelet API's serving key.")
		clientCA     = flag.String("client-ca-file", "", "The CA that signs the certificates of the kubelet API's clients.")
		initPath     = flag.String("container-init", "", "The program that becomes each container: process-kubelet-init, which starts in a few milliseconds of CPU; empty runs this agent again as the container init, at some 50 ms of CPU per container.")
		imageFiles   mountFlags
	)
	flag.Var(&imageFiles, "image-file", "/TARGET=SOURCE: a host file mounted read-only at TARGET in every container, such as /autoresearch=bin/autoresearch; repeatable.")
	klog.InitFlags(nil)
	flag.Parse()
	if *stateDir == "" {
		return fmt.Errorf("--state-dir is required")
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("must run as root to give containers their own mount namespaces")
	}
	if *volumeDir == "" {
		*volumeDir = *stateDir + "/volumes"
	}
	var env []string
	for _, name := range strings.Split(*imageEnv, ",") {
		if v, ok := os.LookupEnv(name); ok && name != "" {
			env = append(env, name+"="+v)
		}
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	config.QPS, config.Burst = float32(*apiQPS), *apiBurst
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	opts := []nodeutil.NodeOpt{nodeutil.WithClient(client), nodeutil.WithPodControllerConfigOverrides(vkprovider.KeepOthersConditions)}
	var port int32
	if *listen != "" {
		if *tlsCert == "" || *tlsKey == "" || *clientCA == "" {
			return fmt.Errorf("--listen-address needs --tls-cert-file, --tls-private-key-file and --client-ca-file")
		}
		_, p, err := net.SplitHostPort(*listen)
		if err != nil {
			return fmt.Errorf("--listen-address: %w", err)
		}
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			return fmt.Errorf("--listen-address: %w", err)
		}
		port = int32(n)
		// Only a client with a certificate of the CA, the API server, gets
		// the pod routes: it authorizes pods/log for its callers.
		mux := http.NewServeMux()
		opts = append(opts, nodeutil.AttachProviderRoutes(mux),
			nodeutil.WithTLSConfig(nodeutil.WithKeyPairFromPath(*tlsCert, *tlsKey), nodeutil.WithCAFromPath(*clientCA)),
			func(cfg *nodeutil.NodeConfig) error {
				cfg.HTTPListenAddr, cfg.Handler = *listen, mux
				return nil
			})
	}

	p := vkprovider.New(vkprovider.Config{
		NodeName: *nodeName, GPUs: *gpus, StateDir: *stateDir,
		ImageFiles: imageFiles, ImageEnv: env, Client: client, KubeletPort: port, ContainerInit: *initPath,
	})
	// Containers outlive no agent: they are stopped when it stops.
	defer p.StopAll()
	newProvider := func(cfg nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
		p.ConfigureNode(cfg.Node)
		return p, nil, nil
	}
	n, err := nodeutil.NewNode(*nodeName, newProvider, opts...)
	if err != nil {
		return err
	}
	if *storageClass != "" {
		go vkprovider.Provisioner{Client: client, StorageClass: *storageClass, Dir: *volumeDir, Interval: time.Second}.Run(ctx)
	}
	go func() {
		if err := n.WaitReady(ctx, time.Minute); err == nil {
			klog.InfoS("Node ready", "node", *nodeName, "gpus", *gpus)
		}
	}()
	return n.Run(ctx)
}
