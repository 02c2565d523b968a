// Command fake-gpu-plugin is a test tool: a kubelet device plugin that
// gives a node GPUs it does not have (see internal/fakegpu), so that the
// kubelet of a test node admits, allocates and accounts for
// nvidia.com/gpu as it would on a GPU node. hack/e2e/real-node.sh runs it;
// it is not part of the operator's image.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/autoresearch-dev/autoresearch-operator/internal/fakegpu"
)

func main() {
	p := fakegpu.Plugin{}
	flag.IntVar(&p.Devices, "devices", 8, "How many nvidia.com/gpu devices the node gets.")
	flag.StringVar(&p.Dir, "dir", pluginapi.DevicePluginPath, "The kubelet's device-plugin directory, where its registration socket is.")
	flag.StringVar(&p.Socket, "socket", "fake-gpu.sock", "The name of the plugin's socket in --dir.")
	flag.DurationVar(&p.Interval, "interval", time.Second, "How often to check that the kubelet still has the plugin's socket, and to retry a registration.")
	klog.InitFlags(nil)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := p.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "fake-gpu-plugin:", err)
		os.Exit(1)
	}
}
