package vkprovider

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func TestKeepOthersConditions(t *testing.T) {
	ctx := context.Background()
	cond := func(typ corev1.PodConditionType, status corev1.ConditionStatus, reason string) corev1.PodCondition {
		return corev1.PodCondition{Type: typ, Status: status, Reason: reason}
	}
	stored := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "default", UID: "u1", ResourceVersion: "7"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			cond(corev1.PodScheduled, corev1.ConditionTrue, ""),
			cond(corev1.PodReady, corev1.ConditionTrue, ""),
			// The eviction API marked the pod while it ran.
			cond(corev1.DisruptionTarget, corev1.ConditionTrue, "EvictionByEvictionAPI"),
		}},
	}
	client := fake.NewClientset(stored)
	factory := informers.NewSharedInformerFactory(client, 0)
	cfg := node.PodControllerConfig{PodClient: client.CoreV1(), PodInformer: factory.Core().V1().Pods()}
	if err := cfg.PodInformer.Informer().GetIndexer().Add(stored); err != nil {
		t.Fatal(err)
	}
	if err := KeepOthersConditions(&cfg); err != nil {
		t.Fatal(err)
	}

	// The provider's status, made before the eviction, knows only the
	// conditions it had then.
	reported := stored.DeepCopy()
	reported.Status.Phase = corev1.PodFailed
	reported.Status.Conditions = []corev1.PodCondition{
		cond(corev1.PodScheduled, corev1.ConditionTrue, ""),
		cond(corev1.PodInitialized, corev1.ConditionTrue, ""),
		cond(corev1.PodReady, corev1.ConditionFalse, ""),
		cond(corev1.ContainersReady, corev1.ConditionFalse, ""),
	}
	if _, err := cfg.PodClient.Pods("default").UpdateStatus(ctx, reported, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Pods("default").Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.PodCondition{
		cond(corev1.PodScheduled, corev1.ConditionTrue, ""),
		cond(corev1.DisruptionTarget, corev1.ConditionTrue, "EvictionByEvictionAPI"),
		cond(corev1.PodInitialized, corev1.ConditionTrue, ""),
		cond(corev1.PodReady, corev1.ConditionFalse, ""),
		cond(corev1.ContainersReady, corev1.ConditionFalse, ""),
	}
	if diff := cmp.Diff(want, got.Status.Conditions); diff != "" {
		t.Errorf("stored conditions (-want +got):\n%s", diff)
	}
	if got.Status.Phase != corev1.PodFailed {
		t.Errorf("phase %s, want the reported Failed", got.Status.Phase)
	}
	if len(reported.Status.Conditions) != 4 {
		t.Errorf("the provider's status was changed: %v", reported.Status.Conditions)
	}

	// A pod of the same name made anew is not the one the informer saw.
	other := reported.DeepCopy()
	other.UID = "u2"
	other.Status.Conditions = other.Status.Conditions[:1]
	if err := client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), other, "default"); err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.PodClient.Pods("default").UpdateStatus(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err = client.CoreV1().Pods("default").Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 1 {
		t.Errorf("conditions of another pod were taken: %v", got.Status.Conditions)
	}
}
