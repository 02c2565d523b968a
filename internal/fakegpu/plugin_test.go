package fakegpu

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const socket = "fake-gpu.sock"

// fakeKubelet is the kubelet's registration service on a unix socket in
// a device-plugin directory.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	dir      string
	srv      *grpc.Server
	requests chan *pluginapi.RegisterRequest
}

// startKubelet starts a kubelet in dir the way the kubelet's device
// manager starts: it removes every socket there, then listens.
func startKubelet(t *testing.T, dir string) *fakeKubelet {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("unix", filepath.Join(dir, kubeletSocket))
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKubelet{dir: dir, srv: grpc.NewServer(), requests: make(chan *pluginapi.RegisterRequest, 8)}
	pluginapi.RegisterRegistrationServer(k.srv, k)
	go func() { _ = k.srv.Serve(l) }()
	t.Cleanup(k.srv.Stop)
	return k
}

// Register takes a plugin that answers on its endpoint, as the kubelet
// does.
func (k *fakeKubelet) Register(ctx context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	conn, err := grpc.NewClient("unix://"+filepath.Join(k.dir, r.Endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	if _, err := pluginapi.NewDevicePluginClient(conn).GetDevicePluginOptions(ctx, &pluginapi.Empty{}); err != nil {
		return nil, err
	}
	k.requests <- r
	return &pluginapi.Empty{}, nil
}

// registration waits for the next registration the kubelet gets and
// checks it names the plugin's socket, resource and API version.
func (k *fakeKubelet) registration(t *testing.T) {
	t.Helper()
	select {
	case r := <-k.requests:
		if r.Version != pluginapi.Version || r.Endpoint != socket || r.ResourceName != Resource {
			t.Fatalf("registered version %q endpoint %q resource %q, want %q %q %q", r.Version, r.Endpoint, r.ResourceName, pluginapi.Version, socket, Resource)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no registration within 10s")
	}
}

// runPlugin runs a plugin of n devices in dir until the test ends, and
// then checks that it stopped cleanly and removed its socket.
func runPlugin(t *testing.T, dir string, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Plugin{Devices: n, Dir: dir, Socket: socket, Interval: 20 * time.Millisecond}.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, socket)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the plugin left its socket behind: %v", err)
		}
	})
}

// dial connects to the plugin's socket in dir, as the kubelet does.
func dial(t *testing.T, dir string) pluginapi.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, socket), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

// devices is the first list the plugin in dir sends on ListAndWatch, as
// "ID:Health".
func devices(t *testing.T, dir string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := dial(t, dir).ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range resp.Devices {
		got = append(got, d.ID+":"+d.Health)
	}
	return got
}

func TestRegistersAndListsItsDevices(t *testing.T) {
	dir := t.TempDir()
	k := startKubelet(t, dir)
	runPlugin(t, dir, 3)
	k.registration(t)
	if diff := cmp.Diff([]string{"0:Healthy", "1:Healthy", "2:Healthy"}, devices(t, dir)); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
}

func TestAllocateSetsTheVisibleDevices(t *testing.T) {
	dir := t.TempDir()
	k := startKubelet(t, dir)
	runPlugin(t, dir, 8)
	k.registration(t)
	client := dial(t, dir)
	for name, tc := range map[string]struct {
		containers [][]string
		want       []string
		code       codes.Code
	}{
		"one device":             {containers: [][]string{{"5"}}, want: []string{"5"}},
		"in index order":         {containers: [][]string{{"7", "0", "3", "1"}}, want: []string{"0,1,3,7"}},
		"all eight":              {containers: [][]string{{"3", "1", "4", "0", "5", "2", "6", "7"}}, want: []string{"0,1,2,3,4,5,6,7"}},
		"each container its own": {containers: [][]string{{"2", "6"}, {"4"}}, want: []string{"2,6", "4"}},
		"a device it lacks":      {containers: [][]string{{"1"}, {"8"}}, code: codes.InvalidArgument},
	} {
		t.Run(name, func(t *testing.T) {
			req := &pluginapi.AllocateRequest{}
			for _, ids := range tc.containers {
				req.ContainerRequests = append(req.ContainerRequests, &pluginapi.ContainerAllocateRequest{DevicesIds: ids})
			}
			resp, err := client.Allocate(context.Background(), req)
			if got := status.Code(err); got != tc.code {
				t.Fatalf("Allocate: %v, want code %s", err, tc.code)
			}
			var got []string
			for _, c := range resp.GetContainerResponses() {
				if len(c.Envs) != 1 {
					t.Errorf("container envs %v, want %s alone", c.Envs, VisibleDevices)
				}
				got = append(got, c.Envs[VisibleDevices])
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s per container (-want +got):\n%s", VisibleDevices, diff)
			}
		})
	}
}

// A kubelet that restarts removes the plugin's socket: the plugin serves
// on a new one and registers with the new kubelet.
func TestRegistersAgainWhenTheKubeletRestarts(t *testing.T) {
	dir := t.TempDir()
	first := startKubelet(t, dir)
	runPlugin(t, dir, 2)
	first.registration(t)
	first.srv.Stop()
	second := startKubelet(t, dir)
	second.registration(t)
	if diff := cmp.Diff([]string{"0:Healthy", "1:Healthy"}, devices(t, dir)); diff != "" {
		t.Errorf("devices after the restart (-want +got):\n%s", diff)
	}
	select {
	case r := <-first.requests:
		t.Errorf("the stopped kubelet got a registration: %v", r)
	default:
	}
}

// A plugin that starts before the kubelet registers once it listens.
func TestRegistersWhenTheKubeletComesUp(t *testing.T) {
	dir := t.TempDir()
	runPlugin(t, dir, 1)
	time.Sleep(100 * time.Millisecond)
	// The kubelet's start removes the socket the plugin made first.
	startKubelet(t, dir).registration(t)
	if diff := cmp.Diff([]string{"0:Healthy"}, devices(t, dir)); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
}

func TestRunRefusesABadPlugin(t *testing.T) {
	for name, tc := range map[string]struct {
		plugin Plugin
		want   string
	}{
		"no devices":           {Plugin{Devices: 0, Socket: socket, Interval: time.Second}, "at least one GPU"},
		"the kubelet's socket": {Plugin{Devices: 1, Socket: kubeletSocket, Interval: time.Second}, "other than kubelet.sock"},
		"a path":               {Plugin{Devices: 1, Socket: "a/b.sock", Interval: time.Second}, "a file name"},
		"no socket":            {Plugin{Devices: 1, Interval: time.Second}, "a file name"},
		"no interval":          {Plugin{Devices: 1, Socket: socket}, "positive duration"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.plugin.Dir = t.TempDir()
			err := tc.plugin.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
