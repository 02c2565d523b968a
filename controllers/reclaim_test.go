package controllers

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
)

// TestARetainedWorkspaceOutlivesItsExperiment: under the default
// reclaimPolicy, Retain, the workspace claim has no owner to be collected
// with, the status and an event name it, and an experiment of the same
// name made later does not start over it.
func TestARetainedWorkspaceOutlivesItsExperiment(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	const name = "kept"
	createNamed(t, ns, name, nil)
	ar := waitStatus(t, ns, name, "the claim in the status", func(s v1alpha1.AutoResearchStatus) bool {
		return s.Workspace != nil && s.Workspace.ClaimName == name+"-workspace"
	})
	if ar.Spec.Workspace.ReclaimPolicy != v1alpha1.ReclaimRetain {
		t.Errorf("reclaimPolicy defaulted to %q, want Retain", ar.Spec.Workspace.ReclaimPolicy)
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name + "-workspace"}, claim); err != nil {
		t.Fatal(err)
	}
	if owners := claim.GetOwnerReferences(); len(owners) != 0 {
		t.Errorf("the retained claim has owners, and would go with the experiment: %+v", owners)
	}
	if claim.Labels[LabelExperiment] != name || claim.Labels[LabelExperimentUID] != string(ar.UID) {
		t.Errorf("claim labels %v do not name the experiment", claim.Labels)
	}
	if !hasEvent(t, ns, name, reasonClaimRetained, "kubectl delete pvc -n "+ns+" "+name+"-workspace") {
		t.Errorf("no %s event naming the claim; events: %v", reasonClaimRetained, eventReasons(t, ns))
	}

	if err := k8s.Delete(context.Background(), ar); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the experiment to go", func() (bool, error) { return absent(t, &v1alpha1.AutoResearch{ObjectMeta: ar.ObjectMeta}), nil })
	if err := k8s.Create(context.Background(), builder.MakeAutoResearch(name, ns).Obj()); err != nil {
		t.Fatal(err)
	}
	if !hasEvent(t, ns, name, reasonChildConflict, "holds the workspace an earlier experiment named kept retained") {
		t.Fatalf("no ChildConflict event for the retained claim; events: %v", eventReasons(t, ns))
	}
	// envtest runs no garbage collector: the first experiment's init pod
	// may still be there, but none may be the new one's.
	again := getExperiment(t, ns, name)
	if init := (&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-init"}}); !absent(t, init) && metav1.IsControlledBy(init, again) {
		t.Error("the new experiment started over the retained workspace")
	}
}
