package controllers

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// TestAQuotaThatDemandsResourcesAdmitsEveryStep runs an experiment through
// its first round in a namespace whose ResourceQuota refuses a pod that
// does not state its CPU and memory requests and limits, as many shared
// clusters do. The user states them for the Researcher and training; the
// operator must for everything of its own image.
func TestAQuotaThatDemandsResourcesAdmitsEveryStep(t *testing.T) {
	ns := newNamespace(t)
	demandResources(t, ns)
	startManager(t)
	user := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")},
	}
	const name = "quota"
	createNamed(t, ns, name, func(s *v1alpha1.AutoResearchSpec) {
		s.Researcher.Resources = user
		s.Train.Resources = user
	})
	playNamed(t, ns, name, roundPlay{compliance: steps.ComplianceResult{Candidate: "c1"}, train: trainOK(), eval: evalValue("0.9")})
	git := waitPod(t, ns, name+"-r1-git")
	checkOwnPod(t, git)
	if hasEvent(t, ns, name, reasonCreateRefused, "") {
		t.Errorf("the quota refused a step; events: %v", eventReasons(t, ns))
	}
}

// demandResources gives the namespace a ResourceQuota on CPU and memory
// requests and limits, with the status the quota controller, which envtest
// does not run, would write: without it the API server admits no pod.
func demandResources(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	plenty := corev1.ResourceList{
		corev1.ResourceRequestsCPU: resource.MustParse("1000"), corev1.ResourceRequestsMemory: resource.MustParse("1Ti"),
		corev1.ResourceLimitsCPU: resource.MustParse("1000"), corev1.ResourceLimitsMemory: resource.MustParse("1Ti"),
	}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "compute"}, Spec: corev1.ResourceQuotaSpec{Hard: plenty}}
	if err := k8s.Create(ctx, quota); err != nil {
		t.Fatal(err)
	}
	quota.Status.Hard = plenty
	quota.Status.Used = corev1.ResourceList{}
	for r := range plenty {
		quota.Status.Used[r] = resource.MustParse("0")
	}
	if err := k8s.Status().Update(ctx, quota); err != nil {
		t.Fatal(err)
	}
	// The quota is enforced: a pod that states nothing is refused.
	bare := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bare"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	eventually(t, "the quota to refuse a pod without resources", func() (bool, error) {
		err := k8s.Create(ctx, bare)
		if err == nil {
			return false, k8s.Delete(ctx, bare)
		}
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "must specify"), nil
	})
}
