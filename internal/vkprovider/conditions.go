package vkprovider

import (
	"context"
	"slices"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
)

// ownConditions are the pod conditions the provider reports. The others
// belong to whoever set them: PodScheduled to the scheduler,
// DisruptionTarget to the eviction API, preemption, the taint manager or
// the pod garbage collector, readiness gates to their controllers.
var ownConditions = []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady}

// KeepOthersConditions is a virtual-kubelet pod controller option that
// keeps, in each pod status the node writes, the conditions it does not
// own as the API server has them, as the kubelet does. virtual-kubelet
// replaces a pod's whole status with the provider's, which would drop a
// DisruptionTarget set while the pod runs: the Job controller and the
// operator would then read an eviction as the pod's own failure.
func KeepOthersConditions(cfg *node.PodControllerConfig) error {
	cfg.PodClient = conditionKeeper{PodsGetter: cfg.PodClient, pods: cfg.PodInformer.Lister()}
	return nil
}

// conditionKeeper is a pod client whose status updates keep others'
// conditions.
type conditionKeeper struct {
	corev1client.PodsGetter
	pods corev1listers.PodLister
}

func (k conditionKeeper) Pods(namespace string) corev1client.PodInterface {
	return podConditionKeeper{PodInterface: k.PodsGetter.Pods(namespace), pods: k.pods.Pods(namespace)}
}

type podConditionKeeper struct {
	corev1client.PodInterface
	pods corev1listers.PodNamespaceLister
}

// UpdateStatus takes the conditions the provider does not own from the
// pod as the informer last saw it. virtual-kubelet sends the status with
// that pod's resourceVersion, so when the informer is behind the update is
// refused as a conflict and made again from a newer pod: a condition
// written in between is never lost.
func (k podConditionKeeper) UpdateStatus(ctx context.Context, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error) {
	if stored, err := k.pods.Get(pod.Name); err == nil && stored.UID == pod.UID {
		pod = pod.DeepCopy()
		pod.Status.Conditions = mergeConditions(pod.Status.Conditions, stored.Status.Conditions)
	}
	return k.PodInterface.UpdateStatus(ctx, pod, opts)
}

// mergeConditions is the provider's own conditions as it reports them and
// everyone else's as they are stored.
func mergeConditions(reported, stored []corev1.PodCondition) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range stored {
		if !slices.Contains(ownConditions, c.Type) {
			out = append(out, c)
		}
	}
	for _, c := range reported {
		if slices.Contains(ownConditions, c.Type) {
			out = append(out, c)
		}
	}
	return out
}
