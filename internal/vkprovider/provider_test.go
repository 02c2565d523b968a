package vkprovider

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/autoresearch-dev/autoresearch-operator/internal/vkprovider/containerinit"
)

func TestTerminationMessage(t *testing.T) {
	tests := map[string]struct {
		message, log string
		policy       corev1.TerminationMessagePolicy
		code         int32
		want         string
	}{
		"message file wins":              {message: "result", log: "noise", policy: corev1.TerminationMessageFallbackToLogsOnError, code: 1, want: "result"},
		"fallback to the log on failure": {log: "boom", policy: corev1.TerminationMessageFallbackToLogsOnError, code: 2, want: "boom"},
		"no fallback on success":         {log: "fine", policy: corev1.TerminationMessageFallbackToLogsOnError, want: ""},
		"no fallback by policy":          {log: "boom", policy: corev1.TerminationMessageReadFile, code: 2, want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			term, log := filepath.Join(dir, "term"), filepath.Join(dir, "log")
			if err := os.WriteFile(term, []byte(tc.message), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(log, []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := terminationMessage(term, log, tc.policy, tc.code); got != tc.want {
				t.Errorf("terminationMessage() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestContainerMounts(t *testing.T) {
	vol := t.TempDir()
	c := &corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{
		{Name: "ws", MountPath: "/workspace/worktree", SubPath: "worktree"},
		{Name: "ws", MountPath: "/workspace/source/.git", SubPath: "source/.git", ReadOnly: true},
	}}
	got, err := containerMounts(c, map[string]string{"ws": vol})
	if err != nil {
		t.Fatal(err)
	}
	want := []containerinit.Mount{
		{Source: filepath.Join(vol, "worktree"), Target: "/workspace/worktree"},
		{Source: filepath.Join(vol, "source/.git"), Target: "/workspace/source/.git", ReadOnly: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("containerMounts() (-want +got):\n%s", diff)
	}
	if info, err := os.Stat(filepath.Join(vol, "source/.git")); err != nil || !info.IsDir() {
		t.Errorf("subPath directory not created: %v", err)
	}
	if _, err := containerMounts(&corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "missing"}}}, nil); err == nil {
		t.Error("containerMounts() with an unknown volume succeeded, want an error")
	}
}

func TestConfigureNodeAdvertisesTheKubeletAPI(t *testing.T) {
	for port, want := range map[int32]int32{0: 0, 16464: 16464} {
		n := &corev1.Node{}
		New(Config{NodeName: "process-node", KubeletPort: port}).ConfigureNode(n)
		if got := n.Status.DaemonEndpoints.KubeletEndpoint.Port; got != want {
			t.Errorf("KubeletPort %d: the node advertises port %d, want %d", port, got, want)
		}
		if a := n.Status.Addresses; len(a) == 0 || a[0].Type != corev1.NodeInternalIP || a[0].Address != "127.0.0.1" {
			t.Errorf("addresses %v, want the InternalIP 127.0.0.1 first", a)
		}
	}
}

func TestADeletedPodLeavesNoVolumes(t *testing.T) {
	state := t.TempDir()
	p := New(Config{StateDir: state})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "step", UID: "uid-1"},
		Spec:       corev1.PodSpec{Volumes: []corev1.Volume{{Name: "tools", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	}
	ctx := context.Background()
	if err := p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	for {
		s, err := p.GetPodStatus(ctx, "ns", "step")
		if err != nil {
			t.Fatal(err)
		}
		if s.Phase == corev1.PodSucceeded {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	volumes := filepath.Join(state, "pods", "uid-1", "volumes")
	// What a container left in its emptyDir, as the step wrapper is.
	if err := os.WriteFile(filepath.Join(volumes, "tools", "autoresearch"), make([]byte, 1<<20), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.DeletePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(volumes); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the deleted pod's volumes are still there: %v", err)
	}
	if _, err := p.GetPod(ctx, "ns", "step"); err == nil {
		t.Error("the provider still knows the deleted pod")
	}
}

// A pod deleted and made anew under the same name runs, and is the one the
// provider reports, whether or not the old one's deletion reached it first.
func TestAPodMadeAnewUnderItsNameRuns(t *testing.T) {
	state := t.TempDir()
	p := New(Config{StateDir: state})
	ctx := context.Background()
	pod := func(uid types.UID) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "git", UID: uid}}
	}
	succeeded := func(uid types.UID) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			got, err := p.GetPod(ctx, "ns", "git")
			if err != nil {
				t.Fatal(err)
			}
			if got.UID == uid && got.Status.Phase == corev1.PodSucceeded {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the provider reports pod %s in phase %q, want %s succeeded", got.UID, got.Status.Phase, uid)
			}
		}
	}
	if err := p.CreatePod(ctx, pod("uid-1")); err != nil {
		t.Fatal(err)
	}
	succeeded("uid-1")
	if err := p.CreatePod(ctx, pod("uid-2")); err != nil {
		t.Fatal(err)
	}
	succeeded("uid-2")
	// The old pod's deletion, arriving late, leaves the new one alone.
	if err := p.DeletePod(ctx, pod("uid-1")); err == nil {
		t.Error("deleting the replaced pod succeeded, want it unknown")
	}
	succeeded("uid-2")
	if err := p.DeletePod(ctx, pod("uid-2")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.GetPod(ctx, "ns", "git"); err == nil {
		t.Error("the provider still knows the deleted pod")
	}
}
