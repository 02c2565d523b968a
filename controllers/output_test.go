package controllers

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

const pushSecret = "push-creds"

// spec.output.git: the git steps of kept rounds and the end push, with the
// Secret mounted in them alone; a failed push keeps the round and warns,
// and the next push clears the error.
func TestOutputGit(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	createExperiment(t, ns, func(s *v1alpha1.AutoResearchSpec) {
		s.Output = &v1alpha1.OutputSpec{Git: &v1alpha1.GitOutput{
			URL: "https://git.example.com/org/results.git", SecretRef: &v1alpha1.SecretReference{Name: pushSecret}, Candidates: ptr.To(true),
		}}
	})
	startWorkspace(t, ns)
	checkNoPushSecret(t, waitPod(t, ns, experiment+"-init").Spec)
	measureBaseline(t, ns)

	// Round 1 is kept; its push fails.
	checkNoPushSecret(t, waitPod(t, ns, podName(1, stepResearcher)).Spec)
	playRound(t, ns, 1, roundPlay{compliance: steps.ComplianceResult{Strategy: "warmup", Candidate: "cafe1111"}, train: trainOK(), eval: evalValue("0.9")})
	checkNoPushSecret(t, waitPod(t, ns, podName(1, stepCompliance)).Spec)
	checkNoPushSecret(t, waitJob(t, ns, podName(1, stepTrain)).Spec.Template.Spec)
	checkNoPushSecret(t, waitJob(t, ns, podName(1, stepEval)).Spec.Template.Spec)
	checkPushes(t, waitPod(t, ns, podName(1, stepGit)))
	finishPod(t, ns, podName(1, stepGit), 0, result(t, steps.GitResult{Commit: "c1c1c1c1c1", Push: &steps.PushResult{Error: "git push: ! [rejected] (fetch first)"}}))
	ar := waitStatus(t, ns, experiment, "the failed push in the status", func(s v1alpha1.AutoResearchStatus) bool { return s.Output != nil && s.Output.Error != "" })
	if ar.Status.Best.Commit != "c1c1c1c1c1" || ar.Status.Output.PushedCommit != "" || !strings.Contains(ar.Status.Output.Error, "rejected") {
		t.Errorf("after a failed push: best %+v, output %+v; want round 1 kept and the push's error", ar.Status.Best, ar.Status.Output)
	}
	if !hasEvent(t, ns, experiment, v1alpha1.ReasonPushFailed, "the next commit or the end pushes it again: git push: ! [rejected]") {
		t.Errorf("no PushFailed event; events: %v", eventReasons(t, ns))
	}

	// Rounds 2 and 3 are rolled back, which pushes nothing; the end pushes.
	for n := 2; n <= 3; n++ {
		playRound(t, ns, n, roundPlay{train: trainOK(), eval: evalValue("0.95")})
		git := waitPod(t, ns, podName(n, stepGit))
		checkNoPushSecret(t, git.Spec)
		if args := strings.Join(git.Spec.Containers[0].Args, " "); strings.Contains(args, "--push") {
			t.Errorf("the rollback of round %d pushes: %s", n, args)
		}
		finishPod(t, ns, podName(n, stepGit), 0, result(t, steps.GitResult{}))
	}
	checkPushes(t, waitPod(t, ns, podName(3, stepFinish)))
	finishPod(t, ns, podName(3, stepFinish), 0, result(t, steps.GitResult{Commit: "1edge4", Push: &steps.PushResult{Commit: "1edge4"}}))
	ar = waitStatus(t, ns, experiment, "the end's push", func(s v1alpha1.AutoResearchStatus) bool { return s.Output != nil && s.Output.PushedCommit == "1edge4" })
	if ar.Status.Output.Error != "" || ar.Status.Output.PushTime == nil {
		t.Errorf("after the end's push: %+v, want no error and its time", ar.Status.Output)
	}
}

// checkPushes checks a git step that pushes, with the Secret mounted
// read-only in its one container.
func checkPushes(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	checkOwnPod(t, pod)
	args := strings.Join(pod.Spec.Containers[0].Args, " ")
	for _, want := range []string{"--push-url=https://git.example.com/org/results.git", "--push-candidates", "--push-secret-dir=" + outputSecretMount} {
		if !strings.Contains(args, want) {
			t.Errorf("%s args %q lack %s", pod.Name, args, want)
		}
	}
	var mounted bool
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == pushSecret {
			for _, m := range pod.Spec.Containers[0].VolumeMounts {
				mounted = mounted || m.Name == v.Name && m.MountPath == outputSecretMount && m.ReadOnly
			}
		}
	}
	if !mounted {
		t.Errorf("%s does not mount the Secret %s read-only at %s: %+v", pod.Name, pushSecret, outputSecretMount, pod.Spec.Volumes)
	}
}

// checkNoPushSecret checks that a pod that is not a pushing git step names
// the push Secret nowhere.
func checkNoPushSecret(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), `"`+pushSecret+`"`) || strings.Contains(string(data), outputSecretMount) {
		t.Errorf("a pod that runs no push names its Secret: %s", data)
	}
}
