package controllers

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
)

// TestWatchNamespacesLeavesOtherNamespacesAlone runs a manager that watches
// one namespace, as --watch-namespaces does: the experiment there runs its
// workspace and baseline, while one created earlier in another namespace
// gets no status and no child, so that the manager needs no
// rights there.
func TestWatchNamespacesLeavesOtherNamespacesAlone(t *testing.T) {
	watched, unwatched := newNamespace(t), newNamespace(t)
	startManager(t, watched)
	ctx := context.Background()
	const name = "scoped"
	if err := k8s.Create(ctx, builder.MakeAutoResearch(name, unwatched).Question("q").MaxRounds(3).Obj()); err != nil {
		t.Fatal(err)
	}

	// The experiment created later in the watched namespace gets as far as
	// its first round, so the manager had every chance to act on the other.
	createNamed(t, watched, name, nil)
	waitPod(t, watched, name+"-r1-researcher")

	ar := &v1alpha1.AutoResearch{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: unwatched, Name: name}, ar); err != nil {
		t.Fatal(err)
	}
	if ar.Status.Phase != "" {
		t.Errorf("the experiment in the unwatched namespace has phase %q, want no status", ar.Status.Phase)
	}
	for what, list := range map[string]client.ObjectList{
		"claims": &corev1.PersistentVolumeClaimList{}, "pods": &corev1.PodList{},
		"jobs": &batchv1.JobList{}, "config maps": &corev1.ConfigMapList{},
	} {
		if err := k8s.List(ctx, list, client.InNamespace(unwatched)); err != nil {
			t.Fatal(err)
		}
		var names []string
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			names = append(names, o.(client.Object).GetName())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(names) > 0 {
			t.Errorf("the manager made %s %v in the namespace it does not watch", what, names)
		}
	}
}
