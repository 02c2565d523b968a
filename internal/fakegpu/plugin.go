// Package fakegpu is a kubelet device plugin for test nodes: it advertises
// nvidia.com/gpu devices that do not exist, so that a real kubelet counts,
// allocates and checkpoints them as it would GPUs, and it tells each
// container which devices it got in NVIDIA_VISIBLE_DEVICES, the variable
// through which NVIDIA's device plugin hands GPUs to its container runtime.
package fakegpu

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const (
	// Resource is the extended resource the plugin advertises.
	Resource = "nvidia.com/gpu"
	// VisibleDevices is the variable that lists a container's devices,
	// comma-separated, as NVIDIA's device plugin sets it.
	VisibleDevices = "NVIDIA_VISIBLE_DEVICES"
	// kubeletSocket is the kubelet's registration socket, in Plugin.Dir.
	kubeletSocket = "kubelet.sock"
	// registerTimeout bounds one registration call.
	registerTimeout = 10 * time.Second
)

// Plugin serves Devices fake GPUs, named by their indices "0", "1", …,
// and registers them with the kubelet whose device-plugin directory is
// Dir. A kubelet that starts removes every socket in Dir; the plugin then
// serves on a new socket and registers again.
type Plugin struct {
	// Devices is how many GPUs the node gets.
	Devices int
	// Dir is the kubelet's device-plugin directory.
	Dir string
	// Socket is the name of the plugin's socket in Dir.
	Socket string
	// Interval is how often the plugin checks that its socket is still
	// there, and retries a registration the kubelet did not take.
	Interval time.Duration
}

// Run serves and registers the devices until ctx ends.
func (p Plugin) Run(ctx context.Context) error {
	if p.Devices < 1 {
		return fmt.Errorf("devices = %d: a node needs at least one GPU", p.Devices)
	}
	if p.Interval <= 0 {
		return fmt.Errorf("interval = %s: want a positive duration", p.Interval)
	}
	if p.Socket == "" || strings.ContainsRune(p.Socket, filepath.Separator) || p.Socket == kubeletSocket {
		return fmt.Errorf("socket %q: want a file name in the device-plugin directory other than %s", p.Socket, kubeletSocket)
	}
	for ctx.Err() == nil {
		if err := p.serve(ctx); err != nil {
			return err
		}
	}
	return nil
}

// serve serves on a fresh socket and registers once the kubelet takes it,
// until ctx ends or the socket is removed.
func (p Plugin) serve(ctx context.Context) error {
	path := filepath.Join(p.Dir, p.Socket)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, newDevicePlugin(p.Devices))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	// Stop ends the kubelet's streams and closes the listener, which
	// removes the socket.
	defer srv.Stop()

	tick := time.NewTicker(p.Interval)
	defer tick.Stop()
	registered := false
	for {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			klog.InfoS("The plugin's socket is gone: the kubelet restarted; registering again", "socket", path)
			return nil
		}
		if !registered {
			if err := p.register(ctx); err != nil {
				klog.InfoS("The kubelet did not take the registration; retrying", "err", err)
			} else {
				registered = true
				klog.InfoS("Registered with the kubelet", "resource", Resource, "devices", p.Devices, "socket", path)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			return fmt.Errorf("serving on %s: %w", path, err)
		case <-tick.C:
		}
	}
}

// register tells the kubelet about the plugin's socket and resource.
func (p Plugin) register(ctx context.Context) error {
	conn, err := grpc.NewClient("unix://"+filepath.Join(p.Dir, kubeletSocket), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     p.Socket,
		ResourceName: Resource,
		Options:      &pluginapi.DevicePluginOptions{},
	})
	return err
}

// devicePlugin is the gRPC service the kubelet calls.
type devicePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devices []*pluginapi.Device
	// index of each device ID.
	index map[string]int
}

func newDevicePlugin(n int) *devicePlugin {
	d := &devicePlugin{index: map[string]int{}}
	for i := range n {
		id := strconv.Itoa(i)
		d.devices = append(d.devices, &pluginapi.Device{ID: id, Health: pluginapi.Healthy})
		d.index[id] = i
	}
	return d
}

func (d *devicePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the devices, all healthy, and then holds the stream
// open until the kubelet or the plugin ends it: the kubelet takes a stream
// that ends for a plugin that is gone.
func (d *devicePlugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: d.devices}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

// Allocate gives each container the devices the kubelet chose for it, in
// NVIDIA_VISIBLE_DEVICES, in index order.
func (d *devicePlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		ids := slices.Clone(c.DevicesIds)
		for _, id := range ids {
			if _, ok := d.index[id]; !ok {
				return nil, status.Errorf(codes.InvalidArgument, "no device %q: this plugin has devices 0 to %d", id, len(d.devices)-1)
			}
		}
		slices.SortFunc(ids, func(a, b string) int { return d.index[a] - d.index[b] })
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{VisibleDevices: strings.Join(ids, ",")},
		})
	}
	return resp, nil
}
