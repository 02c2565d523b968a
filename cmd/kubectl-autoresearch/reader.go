package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/readout"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

const (
	// readerContainer is the reader pod's only container.
	readerContainer = "read"
	// readerUser is the user the operator's step pods run as, who owns
	// the workspace's files.
	readerUser = 65532
	// readerDeadline ends a reader pod that its plugin left behind.
	readerDeadline = 15 * time.Minute
	// LabelReaderOf names, on a reader pod, the experiment it reads. It
	// is not the operator's experiment label: a reader is no child of the
	// experiment's.
	labelReaderOf  = "autoresearch.dev/reader-of"
	labelManagedBy = "app.kubernetes.io/managed-by"
	pluginName     = "kubectl-autoresearch"
	// The labels the operator puts on its children.
	labelExperiment = "autoresearch.dev/experiment"
)

// readerOptions configure the reader pod.
type readerOptions struct {
	image   string
	timeout time.Duration
}

func (o *readerOptions) register(fl *pflag.FlagSet) {
	fl.StringVar(&o.image, "image", "", "the operator's image, which the reader pod runs (default: the image of the experiment's own step pods)")
	fl.DurationVar(&o.timeout, "start-timeout", 2*time.Minute, "how long the reader pod may take to be scheduled and start")
}

// readerPod mounts the experiment's workspace claim read-only and prints
// what req asks for: under the restricted Pod Security Standard, without
// a service-account token, with a read-only root file system.
func readerPod(ar *v1alpha1.AutoResearch, claim, image string, req readout.Request) (*corev1.Pod, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: ar.Name + "-reader-",
			Namespace:    ar.Namespace,
			Labels:       map[string]string{labelManagedBy: pluginName, labelReaderOf: ar.Name},
			// A reader left behind goes with its experiment.
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "AutoResearch", Name: ar.Name, UID: ar.UID,
			}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			ActiveDeadlineSeconds:        ptr.To(int64(readerDeadline / time.Second)),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](readerUser),
				RunAsGroup:     ptr.To[int64](readerUser),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:    readerContainer,
				Image:   image,
				Command: []string{steps.ImageBinary, "read", "--request", string(data)},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				},
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				VolumeMounts: []corev1.VolumeMount{
					{Name: "workspace", MountPath: steps.WorkspaceMount, ReadOnly: true},
					// git writes a bundle through a lock file beside it.
					{Name: "tmp", MountPath: "/tmp"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "workspace", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: true}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}, nil
}

// read runs a reader pod for req on ar's workspace and returns what it
// read. The pod is deleted whatever happens, an interrupt included.
func (c *cluster) read(ctx context.Context, ar *v1alpha1.AutoResearch, req readout.Request) (readout.Entries, error) {
	claim, err := c.workspaceClaim(ctx, ar)
	if err != nil {
		return nil, err
	}
	image := c.reader.image
	if image == "" {
		if image, err = c.operatorImage(ctx, ar); err != nil {
			return nil, err
		}
	}
	pod, err := readerPod(ar, claim, image, req)
	if err != nil {
		return nil, err
	}
	if err := c.client.Create(ctx, pod); err != nil {
		return nil, fmt.Errorf("creating the reader pod: %w", err)
	}
	defer func() {
		// A fresh context: the command's may be cancelled already.
		del, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := c.client.Delete(del, pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			// Its deadline and its owner, the experiment, still end it.
			fmt.Fprintf(os.Stderr, "kubectl autoresearch: the reader pod %s is left behind: %v\n", pod.Name, err)
		}
	}()
	if err := c.waitFinished(ctx, pod); err != nil {
		return nil, err
	}
	if pod.Status.Phase == corev1.PodFailed {
		return nil, fmt.Errorf("the reader pod %s failed: %s", pod.Name, terminated(pod))
	}
	stream, err := c.clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: readerContainer}).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the reader pod's log: %w", err)
	}
	defer stream.Close()
	return readout.Read(stream)
}

// workspaceClaim is the experiment's workspace claim, once it exists.
func (c *cluster) workspaceClaim(ctx context.Context, ar *v1alpha1.AutoResearch) (string, error) {
	ws := ar.Status.Workspace
	if ws == nil || ws.ClaimName == "" {
		return "", fmt.Errorf("%s has no workspace yet (phase %s): wait until it is initialized", ar.Name, ar.Status.Phase)
	}
	claim := &corev1.PersistentVolumeClaim{}
	err := c.client.Get(ctx, client.ObjectKey{Namespace: ar.Namespace, Name: ws.ClaimName}, claim)
	switch {
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("the workspace claim %s of %s is gone: its ledger, logs and repository went with it", ws.ClaimName, ar.Name)
	case err != nil:
		return "", err
	case claim.DeletionTimestamp != nil:
		return "", fmt.Errorf("the workspace claim %s of %s is being deleted", ws.ClaimName, ar.Name)
	}
	return ws.ClaimName, nil
}

// operatorImage is the image of the experiment's own step pods, which is
// the operator's: its init pod is kept for the experiment's life.
func (c *cluster) operatorImage(ctx context.Context, ar *v1alpha1.AutoResearch) (string, error) {
	var pods corev1.PodList
	if err := c.client.List(ctx, &pods, client.InNamespace(ar.Namespace), client.MatchingLabels{labelExperiment: ar.Name}); err != nil {
		return "", fmt.Errorf("finding the operator's image among the pods of %s: %w (or pass --image)", ar.Name, err)
	}
	if image := imageOf(ar, pods.Items); image != "" {
		return image, nil
	}
	return "", fmt.Errorf("no pod of %s runs the operator's image any more: pass --image with the image of the operator's Deployment", ar.Name)
}

// imageOf finds, among the experiment's own pods (those it controls), a
// container that runs the operator's binary.
func imageOf(ar *v1alpha1.AutoResearch, pods []corev1.Pod) string {
	for _, p := range pods {
		if owner := metav1.GetControllerOf(&p); owner == nil || owner.UID != ar.UID {
			continue
		}
		for _, ct := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
			if len(ct.Command) > 0 && ct.Command[0] == steps.ImageBinary {
				return ct.Image
			}
		}
	}
	return ""
}

// waitFinished waits until pod has ended, updating it. A pod that has not
// started within the start timeout is given up on, saying why it waits.
func (c *cluster) waitFinished(ctx context.Context, pod *corev1.Pod) error {
	started := false
	deadline := time.Now().Add(c.reader.timeout)
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err
		}
		switch pod.Status.Phase {
		case corev1.PodSucceeded, corev1.PodFailed:
			return true, nil
		case corev1.PodRunning:
			started = true
		}
		if !started && time.Now().After(deadline) {
			return false, fmt.Errorf("the reader pod %s did not start within %s: %s", pod.Name, c.reader.timeout, c.waitingReason(ctx, pod))
		}
		return false, nil
	})
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted; the reader pod %s is deleted", pod.Name)
	}
	return err
}

// waitingReason says why a pod has not started: the scheduler's word, the
// container's waiting reason, and the pod's latest warning event.
func (c *cluster) waitingReason(ctx context.Context, pod *corev1.Pod) string {
	var why []string
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
			why = append(why, fmt.Sprintf("not scheduled (%s: %s)", cond.Reason, cond.Message))
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			why = append(why, strings.TrimSpace(fmt.Sprintf("container waiting (%s) %s", w.Reason, w.Message)))
		}
	}
	var events corev1.EventList
	if err := c.client.List(ctx, &events, client.InNamespace(pod.Namespace), client.MatchingFields{"involvedObject.uid": string(pod.UID)}); err == nil {
		var last *corev1.Event
		for i, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && (last == nil || e.LastTimestamp.After(last.LastTimestamp.Time)) {
				last = &events.Items[i]
			}
		}
		if last != nil {
			why = append(why, fmt.Sprintf("%s: %s", last.Reason, last.Message))
		}
	}
	if len(why) == 0 {
		return fmt.Sprintf("it is %s; see `kubectl describe pod %s`", pod.Status.Phase, pod.Name)
	}
	return strings.Join(why, "; ")
}

// terminated is how the reader container ended.
func terminated(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return strings.TrimSpace(fmt.Sprintf("exit code %d %s %s", t.ExitCode, t.Reason, t.Message))
		}
	}
	return strings.TrimSpace(pod.Status.Reason + " " + pod.Status.Message)
}
