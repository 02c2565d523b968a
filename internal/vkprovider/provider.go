// Package vkprovider is a virtual-kubelet provider that runs the containers
// of the pods bound to its node as local processes, for end-to-end tests
// of the operator on one machine without a container runtime.
//
// Images are ignored: the host's userland plays every image. Each container
// runs in its own private mount and PID namespaces (the agent must be
// root), where its volumes (emptyDir, ConfigMap, Secret, and PersistentVolumeClaims
// bound to hostPath or local volumes), its termination-message file and the
// configured image files are bind-mounted at their container paths, so
// that the pod sees the paths its spec names. Security contexts are not
// applied: every container runs as the agent's user.
package vkprovider

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	dto "github.com/prometheus/client_model/go"

	"github.com/autoresearch-dev/autoresearch-operator/internal/vkprovider/containerinit"
)

const (
	// GPUResource is the extended resource the node advertises.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
	// maxMessage is the kubelet's limit on a termination message.
	maxMessage = 4096
	// fallbackTail is how much of the log a FallbackToLogsOnError message keeps.
	fallbackTail = 2048
	// killGrace is how long a stopped container has between SIGTERM and SIGKILL.
	killGrace = 5 * time.Second
)

// Config configures the provider.
type Config struct {
	// NodeName is the node the provider serves.
	NodeName string
	// GPUs is the node's nvidia.com/gpu capacity.
	GPUs int64
	// StateDir holds each pod's volumes, logs and termination messages.
	StateDir string
	// ImageFiles are mounted into every container: the files every image
	// is assumed to hold, such as the operator's own binary.
	ImageFiles []containerinit.Mount
	// ImageEnv is every container's environment before its own variables.
	ImageEnv []string
	// Client reads the ConfigMaps, Secrets and volumes that pods use.
	Client kubernetes.Interface
	// ContainerInit is the program that becomes each container
	// (containerinit.Run); the agent's own executable when empty, which
	// must then call containerinit.Run when given containerinit.Arg.
	ContainerInit string
	// KubeletPort, when set, is where the node serves the kubelet API
	// (container logs) on its InternalIP; the node advertises it.
	KubeletPort int32
}

// Provider runs pods as process trees.
type Provider struct {
	cfg Config

	mu     sync.Mutex
	pods   map[string]*podRun
	notify func(*corev1.Pod)
}

// podRun is one pod's processes and its reported state.
type podRun struct {
	pod    *corev1.Pod
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a provider; call ConfigureNode on the node it will register.
func New(cfg Config) *Provider {
	if cfg.ContainerInit == "" {
		cfg.ContainerInit = "/proc/self/exe"
	}
	return &Provider{cfg: cfg, pods: map[string]*podRun{}, notify: func(*corev1.Pod) {}}
}

// ConfigureNode sets the node's capacity, addresses and system info.
func (p *Provider) ConfigureNode(n *corev1.Node) {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		GPUResource:           *resource.NewQuantity(p.cfg.GPUs, resource.DecimalSI),
	}
	n.Status.Capacity = res
	n.Status.Allocatable = res.DeepCopy()
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: p.cfg.NodeName}}
	if p.cfg.KubeletPort != 0 {
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = p.cfg.KubeletPort
	}
	n.Status.NodeInfo.OperatingSystem = "linux"
	n.Status.NodeInfo.Architecture = "amd64"
	n.Status.NodeInfo.KubeletVersion = "process-kubelet"
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[corev1.LabelOSStable] = "linux"
}

func key(namespace, name string) string { return namespace + "/" + name }

// NotifyPods registers the callback that reports status changes.
func (p *Provider) NotifyPods(_ context.Context, f func(*corev1.Pod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = f
}

// CreatePod starts the pod's containers.
func (p *Provider) CreatePod(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := key(pod.Namespace, pod.Name)
	if old, ok := p.pods[k]; ok {
		if old.pod.UID == pod.UID {
			return nil
		}
		// A pod made anew under the name of one the provider still runs:
		// the old one is gone from the API server, so its processes stop
		// and its volumes go, as a deleted pod's do, and the new one runs.
		old.cancel()
		go func() {
			<-old.done
			_ = os.RemoveAll(filepath.Join(p.podDir(old.pod), "volumes"))
		}()
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &podRun{pod: pod.DeepCopy(), cancel: cancel, done: make(chan struct{})}
	p.pods[k] = r
	go p.run(ctx, r)
	return nil
}

// StopAll stops every pod's processes and waits for them to exit.
func (p *Provider) StopAll() {
	p.mu.Lock()
	runs := make([]*podRun, 0, len(p.pods))
	for _, r := range p.pods {
		runs = append(runs, r)
	}
	p.mu.Unlock()
	for _, r := range runs {
		r.cancel()
		<-r.done
	}
}

// UpdatePod accepts the change: a running process cannot take a new spec.
func (p *Provider) UpdatePod(context.Context, *corev1.Pod) error { return nil }

// DeletePod stops the pod's processes and reports it terminated.
func (p *Provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	r, ok := p.pods[key(pod.Namespace, pod.Name)]
	if !ok || r.pod.UID != pod.UID {
		// An older pod of the name, which a new one replaced, stopped then.
		p.mu.Unlock()
		return errdefs.NotFoundf("pod %s/%s (%s) is not known", pod.Namespace, pod.Name, pod.UID)
	}
	p.mu.Unlock()
	r.cancel()
	<-r.done
	p.mu.Lock()
	if p.pods[key(pod.Namespace, pod.Name)] == r {
		delete(p.pods, key(pod.Namespace, pod.Name))
	}
	final := r.pod.DeepCopy()
	notify := p.notify
	p.mu.Unlock()
	notify(final)
	// The pod's own volumes go with it, as the kubelet removes a deleted
	// pod's emptyDirs: every step pod holds a copy of the step wrapper,
	// tens of megabytes, and a long run makes thousands of pods. Its logs
	// and termination messages stay for whoever reads them later.
	return os.RemoveAll(filepath.Join(p.podDir(final), "volumes"))
}

// GetPod returns the pod as the provider runs it.
func (p *Provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.pods[key(namespace, name)]
	if !ok {
		return nil, errdefs.NotFoundf("pod %s/%s is not known", namespace, name)
	}
	return r.pod.DeepCopy(), nil
}

// GetPodStatus returns the pod's current status.
func (p *Provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods returns every pod the provider knows.
func (p *Provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pods := make([]*corev1.Pod, 0, len(p.pods))
	for _, r := range p.pods {
		pods = append(pods, r.pod.DeepCopy())
	}
	return pods, nil
}

// GetContainerLogs returns a container's combined stdout and stderr.
func (p *Provider) GetContainerLogs(_ context.Context, namespace, podName, containerName string, _ api.ContainerLogOpts) (io.ReadCloser, error) {
	p.mu.Lock()
	r, ok := p.pods[key(namespace, podName)]
	p.mu.Unlock()
	if !ok {
		return nil, errdefs.NotFoundf("pod %s/%s is not known", namespace, podName)
	}
	return os.Open(filepath.Join(p.containerDir(r.pod, containerName), "log"))
}

// RunInContainer is not supported.
func (p *Provider) RunInContainer(context.Context, string, string, string, []string, api.AttachIO) error {
	return errors.New("exec is not supported by process-kubelet")
}

// AttachToContainer is not supported.
func (p *Provider) AttachToContainer(context.Context, string, string, string, api.AttachIO) error {
	return errors.New("attach is not supported by process-kubelet")
}

// GetStatsSummary is not supported.
func (p *Provider) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	return nil, errors.New("stats are not supported by process-kubelet")
}

// GetMetricsResource is not supported.
func (p *Provider) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) {
	return nil, errors.New("metrics are not supported by process-kubelet")
}

// PortForward is not supported.
func (p *Provider) PortForward(context.Context, string, string, int32, io.ReadWriteCloser) error {
	return errors.New("port forwarding is not supported by process-kubelet")
}

func (p *Provider) podDir(pod *corev1.Pod) string {
	return filepath.Join(p.cfg.StateDir, "pods", string(pod.UID))
}

func (p *Provider) containerDir(pod *corev1.Pod, container string) string {
	return filepath.Join(p.podDir(pod), "containers", container)
}

// update changes the pod's status under the lock and reports it.
func (p *Provider) update(r *podRun, f func(*corev1.PodStatus)) {
	p.mu.Lock()
	f(&r.pod.Status)
	pod := r.pod.DeepCopy()
	notify := p.notify
	current := p.pods[key(pod.Namespace, pod.Name)] == r
	p.mu.Unlock()
	if current {
		// A replaced pod's status would be taken for its successor's.
		notify(pod)
	}
}

// run plays the kubelet's pod lifecycle: init containers one by one, then
// the containers together, under the pod's active deadline.
func (p *Provider) run(ctx context.Context, r *podRun) {
	defer close(r.done)
	defer r.cancel()
	pod := r.pod
	start := metav1.Now()
	p.update(r, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodPending
		s.StartTime = &start
		s.HostIP, s.PodIP = "127.0.0.1", "127.0.0.1"
		s.HostIPs, s.PodIPs = []corev1.HostIP{{IP: "127.0.0.1"}}, []corev1.PodIP{{IP: "127.0.0.1"}}
		setCondition(s, corev1.PodInitialized, len(pod.Spec.InitContainers) == 0)
		setCondition(s, corev1.ContainersReady, false)
		setCondition(s, corev1.PodReady, false)
		s.InitContainerStatuses = waiting(pod.Spec.InitContainers)
		s.ContainerStatuses = waiting(pod.Spec.Containers)
	})
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, start.Add(time.Duration(*d)*time.Second))
		defer cancel()
	}
	dirs, err := volumeDirs(ctx, p.cfg.Client, pod, p.podDir(pod))
	if err != nil {
		p.finish(ctx, r, corev1.PodFailed, "VolumeError", err.Error())
		return
	}
	for i := range pod.Spec.InitContainers {
		if !p.runContainer(ctx, r, &pod.Spec.InitContainers[i], dirs, true, i) {
			p.finish(ctx, r, corev1.PodFailed, "", "")
			return
		}
	}
	p.update(r, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		setCondition(s, corev1.PodInitialized, true)
		setCondition(s, corev1.ContainersReady, true)
		setCondition(s, corev1.PodReady, true)
	})
	var wg sync.WaitGroup
	ok := make([]bool, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		wg.Go(func() { ok[i] = p.runContainer(ctx, r, &pod.Spec.Containers[i], dirs, false, i) })
	}
	wg.Wait()
	phase := corev1.PodSucceeded
	for _, o := range ok {
		if !o {
			phase = corev1.PodFailed
		}
	}
	p.finish(ctx, r, phase, "", "")
}

// finish sets the pod's final phase; a deadline overrides it as the
// kubelet's does.
func (p *Provider) finish(ctx context.Context, r *podRun, phase corev1.PodPhase, reason, message string) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		phase, reason, message = corev1.PodFailed, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
	}
	now := metav1.Now()
	p.update(r, func(s *corev1.PodStatus) {
		s.Phase, s.Reason, s.Message = phase, reason, message
		setCondition(s, corev1.ContainersReady, false)
		setCondition(s, corev1.PodReady, false)
		// Containers that never ran end as the kubelet reports them.
		for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
			for i := range list {
				if list[i].State.Terminated == nil {
					list[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
						ExitCode: 137, Reason: "ContainerStatusUnknown", StartedAt: now, FinishedAt: now,
					}}
				}
			}
		}
	})
}

// runContainer runs one container to completion and records its status;
// it reports whether the container exited with 0.
func (p *Provider) runContainer(ctx context.Context, r *podRun, c *corev1.Container, dirs map[string]string, isInit bool, index int) bool {
	setStatus := func(st corev1.ContainerState) {
		p.update(r, func(s *corev1.PodStatus) {
			list := s.ContainerStatuses
			if isInit {
				list = s.InitContainerStatuses
			}
			list[index].State = st
			list[index].Ready = st.Running != nil && !isInit
			started := st.Running != nil
			list[index].Started = &started
		})
	}
	started := metav1.Now()
	code, message := p.exec(ctx, r.pod, c, dirs, func() {
		setStatus(corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}})
	})
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	setStatus(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: reason, Message: message, StartedAt: started, FinishedAt: metav1.Now(),
	}})
	return code == 0
}

// exec starts the container's process, calls running once it runs, and
// returns its exit code and termination message.
func (p *Provider) exec(ctx context.Context, pod *corev1.Pod, c *corev1.Container, dirs map[string]string, running func()) (int32, string) {
	dir := p.containerDir(pod, c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 128, err.Error()
	}
	termFile := filepath.Join(dir, "termination-log")
	if err := os.WriteFile(termFile, nil, 0o666); err != nil {
		return 128, err.Error()
	}
	mounts, err := containerMounts(c, dirs)
	if err != nil {
		return 128, err.Error()
	}
	termPath := c.TerminationMessagePath
	if termPath == "" {
		termPath = corev1.TerminationMessagePathDefault
	}
	mounts = append(append(append([]containerinit.Mount(nil), p.cfg.ImageFiles...), mounts...), containerinit.Mount{Source: termFile, Target: termPath})
	argv := append(append([]string(nil), c.Command...), c.Args...)
	if len(c.Command) == 0 {
		return 128, "process-kubelet ignores images, so every container needs a command"
	}
	env := append(append([]string(nil), p.cfg.ImageEnv...), "HOSTNAME="+pod.Name)
	for _, e := range c.Env {
		// A container's variable replaces the image's, as in a real
		// runtime; a shell would otherwise read the first of two.
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, e.Name+"=") })
		env = append(env, e.Name+"="+e.Value)
	}
	cmd, err := containerCommand(p.cfg.ContainerInit, containerinit.Spec{Mounts: mounts, Dir: c.WorkingDir, Argv: argv, Env: env})
	if err != nil {
		return 128, err.Error()
	}
	logFile, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		return 128, err.Error()
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return 128, err.Error()
	}
	running()
	exited := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(killGrace):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		case <-exited:
		}
	}()
	_ = cmd.Wait()
	close(exited)
	code := exitCode(cmd.ProcessState)
	return code, terminationMessage(termFile, logFile.Name(), c.TerminationMessagePolicy, code)
}

func exitCode(ps *os.ProcessState) int32 {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(ps.ExitCode())
}

// terminationMessage reads the message file, or for a failed container
// with FallbackToLogsOnError and no message, the tail of its log.
func terminationMessage(termFile, logFile string, policy corev1.TerminationMessagePolicy, code int32) string {
	msg := readTail(termFile, maxMessage, false)
	if msg == "" && code != 0 && policy == corev1.TerminationMessageFallbackToLogsOnError {
		msg = readTail(logFile, fallbackTail, true)
	}
	return msg
}

// readTail reads at most n bytes of a file: its start, or its end.
func readTail(name string, n int, tail bool) string {
	b, err := os.ReadFile(name)
	if err != nil {
		return ""
	}
	if len(b) > n {
		if tail {
			b = b[len(b)-n:]
		} else {
			b = b[:n]
		}
	}
	return string(bytes.TrimRight(b, "\x00"))
}

func waiting(cs []corev1.Container) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, len(cs))
	for i, c := range cs {
		out[i] = corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}},
		}
	}
	return out
}

func setCondition(s *corev1.PodStatus, t corev1.PodConditionType, ok bool) {
	status := corev1.ConditionFalse
	if ok {
		status = corev1.ConditionTrue
	}
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			if s.Conditions[i].Status != status {
				s.Conditions[i].Status = status
				s.Conditions[i].LastTransitionTime = metav1.Now()
			}
			return
		}
	}
	s.Conditions = append(s.Conditions, corev1.PodCondition{Type: t, Status: status, LastTransitionTime: metav1.Now()})
}
