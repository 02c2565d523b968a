// Command kubectl-autoresearch is the kubectl plugin for AutoResearch
// experiments on a cluster: `kubectl autoresearch status|note|suspend|
// resume|logs|report|export|diff NAME`. What lives on the experiment's
// workspace volume (the ledger, the step logs, the git repository) it reads
// through a short-lived reader pod that mounts the volume read-only, runs
// the operator's image and prints what was asked for to its log.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/version"
)

func main() {
	// An interrupt cancels the context, so that the reader pod is deleted
	// before the plugin exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubectl autoresearch:", err)
		os.Exit(1)
	}
}

// cluster is how the commands reach the cluster: the kubeconfig flags, and
// the clients made from them on first use.
type cluster struct {
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
	reader     readerOptions

	namespace string
	client    client.Client
	clientset kubernetes.Interface
}

func (c *cluster) register(cmd *cobra.Command) {
	fl := cmd.PersistentFlags()
	fl.StringVar(&c.kubeconfig, "kubeconfig", "", "the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	clientcmd.BindOverrideFlags(&c.overrides, fl, clientcmd.RecommendedConfigOverrideFlags(""))
	c.reader.register(fl)
}

// connect makes the clients once.
func (c *cluster) connect() error {
	if c.client != nil {
		return nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.kubeconfig
	config := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &c.overrides)
	ns, _, err := config.Namespace()
	if err != nil {
		return err
	}
	rest, err := config.ClientConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	cl, err := client.New(rest, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return err
	}
	c.namespace, c.client, c.clientset = ns, cl, cs
	return nil
}

func newRootCommand() *cobra.Command {
	c := &cluster{}
	root := &cobra.Command{
		Use:           "kubectl autoresearch",
		Short:         "Watch and steer AutoResearch experiments on a cluster, and read their ledger, logs and code from the workspace volume",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version prints the release this binary was built from.
		Version: version.String(),
	}
	root.SetVersionTemplate("kubectl-autoresearch {{.Version}}\n")
	c.register(root)
	root.AddCommand(newStatusCommand(c), newNoteCommand(c), newSuspendCommand(c, true), newSuspendCommand(c, false),
		newLogsCommand(c), newReportCommand(c), newExportCommand(c), newDiffCommand(c))
	return root
}
