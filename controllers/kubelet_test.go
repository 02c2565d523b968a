package controllers

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// These helpers play the kubelet and the Job controller, which envtest
// does not run.

func result(t testing.TB, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// waitPod waits for the operator to create a pod and returns it.
func waitPod(t testing.TB, ns, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	eventually(t, "pod "+name, func() (bool, error) {
		err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pod)
		return err == nil, err
	})
	return pod
}

func waitJob(t testing.TB, ns, name string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{}
	eventually(t, "job "+name, func() (bool, error) {
		err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, job)
		return err == nil, err
	})
	return job
}

func absent(t testing.TB, obj client.Object) bool {
	t.Helper()
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return apierrors.IsNotFound(err)
}

// terminate marks every container of a pod as exited, the last one with
// exitCode and message, as the kubelet reports a finished pod.
func terminate(t testing.TB, pod *corev1.Pod, exitCode int32, message string) {
	t.Helper()
	start := metav1.NewTime(time.Now().Add(-3 * time.Second).Truncate(time.Second))
	end := metav1.NewTime(start.Add(2 * time.Second))
	done := func(name string, code int32, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Message: msg, StartedAt: start, FinishedAt: end,
		}}}
	}
	pod.Status.StartTime = &start
	pod.Status.Phase = corev1.PodSucceeded
	if exitCode != 0 {
		pod.Status.Phase = corev1.PodFailed
	}
	pod.Status.InitContainerStatuses = nil
	// An init container that writes a result, as the compliance check
	// before the parity container does, writes the same one.
	for _, c := range pod.Spec.InitContainers {
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, done(c.Name, 0, message))
	}
	pod.Status.ContainerStatuses = nil
	for i, c := range pod.Spec.Containers {
		if i == len(pod.Spec.Containers)-1 {
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, done(c.Name, exitCode, message))
		} else {
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, done(c.Name, 0, ""))
		}
	}
	if err := k8s.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

// finishPod waits for a pod of the operator and ends it.
func finishPod(t testing.TB, ns, name string, exitCode int32, message string) {
	t.Helper()
	terminate(t, waitPod(t, ns, name), exitCode, message)
}

// finishJob plays the Job controller: it creates the Job's pod, ends it,
// and marks the Job complete or failed.
func finishJob(t testing.TB, ns, name string, exitCode int32, message string) {
	t.Helper()
	job := waitJob(t, ns, name)
	pod := runJobPod(t, job, "")
	terminate(t, pod, exitCode, message)
	completeJob(t, job, exitCode == 0, "")
}

// runJobPod creates a pod of the Job, as the Job controller would.
func runJobPod(t testing.TB, job *batchv1.Job, suffix string) *corev1.Pod {
	t.Helper()
	labels := map[string]string{"batch.kubernetes.io/job-name": job.Name}
	for k, v := range job.Spec.Template.Labels {
		labels[k] = v
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: job.Name + "-pod" + suffix, Namespace: job.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true),
			}},
		},
		Spec: job.Spec.Template.Spec,
	}
	if err := k8s.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// completeJob writes the Job's final conditions; reason "DeadlineExceeded"
// plays activeDeadlineSeconds.
func completeJob(t testing.TB, job *batchv1.Job, succeeded bool, reason string) {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(job), job); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	start := metav1.NewTime(now.Add(-5 * time.Second))
	job.Status.StartTime = &start
	cond := func(typ batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: reason, LastTransitionTime: now, LastProbeTime: now}
	}
	if succeeded {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, "CompletionsReached"), cond(batchv1.JobComplete, "CompletionsReached")}
	} else {
		if reason == "" {
			reason = batchv1.JobReasonBackoffLimitExceeded
		}
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, reason), cond(batchv1.JobFailed, reason)}
	}
	if err := k8s.Status().Update(context.Background(), job); err != nil {
		t.Fatal(err)
	}
}

// getExperiment reads the experiment as it is now.
func getExperiment(t testing.TB, ns, name string) *v1alpha1.AutoResearch {
	t.Helper()
	ar := &v1alpha1.AutoResearch{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, ar); err != nil {
		t.Fatal(err)
	}
	return ar
}

// waitStatus waits until the experiment's status satisfies cond.
func waitStatus(t testing.TB, ns, name, what string, cond func(v1alpha1.AutoResearchStatus) bool) *v1alpha1.AutoResearch {
	t.Helper()
	ar := &v1alpha1.AutoResearch{}
	eventually(t, what, func() (bool, error) {
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, ar); err != nil {
			return false, err
		}
		return cond(ar.Status), nil
	})
	return ar
}

// experimentEvents lists the reasons and messages of the experiment's events.
func experimentEvents(t testing.TB, ns, name string) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// hasEvent waits a while for an event: the recorder sends events in the
// background, after the status they report is written.
func hasEvent(t testing.TB, ns, name, reason, contains string) bool {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, e := range experimentEvents(t, ns, name) {
			if e.Reason == reason && (contains == "" || containsText(e.Message, contains)) {
				return true
			}
		}
	}
	return false
}
