package controllers

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

const (
	holdoutDir       = "/srv/hidden-holdout"
	holdoutConfigMap = "holdout-files"
)

func withHoldout(s *v1alpha1.AutoResearchSpec) {
	s.Holdout = &v1alpha1.HoldoutSpec{
		Command: `sh "$AUTORESEARCH_HOLDOUT_DIR/holdout.sh"`, Metric: "holdout_score", Tolerance: "0.5", Dir: holdoutDir,
		Volume: &v1alpha1.HoldoutVolume{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: holdoutConfigMap}}},
	}
}

func holdoutValue(v string) string {
	return `{"exitCode":0,"durationMs":3000,"found":true,"value":"` + v + `"}`
}

// TestHoldoutOnACluster runs the hidden holdout as its own Job after the
// baseline and after each improvement: an improvement whose holdout value
// is worse than the best's by more than the tolerance is overfit and rolled
// back, one it confirms is committed, and only status.holdout holds the
// values.
func TestHoldoutOnACluster(t *testing.T) {
	requireEnvtest(t)
	ns := newNamespace(t)
	startManager(t)
	createExperiment(t, ns, func(s *v1alpha1.AutoResearchSpec) {
		withHoldout(s)
		s.Acceptance.MinDelta = "0.001"
	})
	initWorkspace(t, ns)
	baseline(t, ns, "1.0")
	job := waitJob(t, ns, experiment+"-r0-holdout-1")
	checkHoldoutJob(t, job, "/workspace/state/runs/r0-s1/train")
	finishJob(t, ns, job.Name, 0, holdoutValue("10.5"))
	waitStatus(t, ns, experiment, "the baseline", func(s v1alpha1.AutoResearchStatus) bool { return s.Phase == v1alpha1.PhaseRunning })

	// Round 1 improves the evaluation, but its holdout value is worse than
	// the baseline's by more than the tolerance: overfit.
	playRound(t, ns, 1, roundPlay{compliance: steps.ComplianceResult{Strategy: "memorize", Candidate: "cand1"}, train: trainOK(), eval: evalValue("0.9")})
	job = waitJob(t, ns, podName(1, stepHoldout))
	checkHoldoutJob(t, job, "/workspace/state/runs/r1/train")
	if !strings.Contains(strings.Join(job.Spec.Template.Spec.InitContainers[len(job.Spec.Template.Spec.InitContainers)-1].Args, " "), "--commit=cand1") {
		t.Errorf("the holdout does not check out the candidate: %v", job.Spec.Template.Spec.InitContainers)
	}
	finishJob(t, ns, job.Name, 0, holdoutValue("11.2"))
	finishPod(t, ns, podName(1, stepGit), 0, result(t, steps.GitResult{}))
	if args := strings.Join(waitPod(t, ns, podName(1, stepGit)).Spec.Containers[0].Args, " "); !strings.Contains(args, "rollback") {
		t.Errorf("the git step of an overfit round does not roll back: %s", args)
	}

	// Round 2 improves both: improved.
	playRound(t, ns, 2, roundPlay{compliance: steps.ComplianceResult{Strategy: "regularize", Candidate: "cand2"}, train: trainOK(), eval: evalValue("0.95")})
	finishJob(t, ns, podName(2, stepHoldout), 0, holdoutValue("10.2"))
	finishPod(t, ns, podName(2, stepGit), 0, result(t, steps.GitResult{Commit: "c2"}))
	ar := waitStatus(t, ns, experiment, "round 2's verdict", func(s v1alpha1.AutoResearchStatus) bool { return s.CompletedRounds == 2 })

	var verdicts []string
	for _, h := range ar.Status.History {
		verdicts = append(verdicts, string(h.Verdict))
		if strings.Contains(h.Insight, "11.2") || strings.Contains(h.Insight, "10.") {
			t.Errorf("round %d's insight %q holds a holdout value", h.Round, h.Insight)
		}
	}
	if diff := cmp.Diff([]string{"baseline", "overfit", "improved"}, verdicts); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if args := strings.Join(waitPod(t, ns, podName(2, stepGit)).Spec.Containers[0].Args, " "); strings.Contains(args, "rollback") {
		t.Errorf("the git step of a confirmed improvement rolls back: %s", args)
	}
	want := &v1alpha1.HoldoutStatus{Best: "10.2", BestRound: 2, Peak: "10.2", Readings: []v1alpha1.HoldoutReading{
		{Round: 0, Value: "10.5", Verdict: v1alpha1.VerdictBaseline},
		{Round: 1, Value: "11.2", Verdict: v1alpha1.VerdictOverfit},
		{Round: 2, Value: "10.2", Verdict: v1alpha1.VerdictImproved},
	}}
	if diff := cmp.Diff(want, ar.Status.Holdout); diff != "" {
		t.Errorf("status.holdout (-want +got):\n%s", diff)
	}
	if !hasEvent(t, ns, experiment, "Overfit", "Round 1") {
		t.Errorf("no Overfit event for round 1: %v", eventReasons(t, ns))
	}
	checkNothingElseNamesTheHoldout(t, ns)
	checkHoldoutPolicy(t, ns)
}

// checkHoldoutPolicy: a NetworkPolicy of the experiment's allows its
// holdout pods no traffic at all, in or out, and selects no other child.
func checkHoldoutPolicy(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	var policy networkingv1.NetworkPolicy
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: experiment + "-holdout"}, &policy); err != nil {
		t.Fatalf("the holdout's NetworkPolicy: %v", err)
	}
	if owner := metav1.GetControllerOf(&policy); owner == nil || owner.Kind != "AutoResearch" || owner.Name != experiment {
		t.Errorf("the holdout's NetworkPolicy is controlled by %+v, want the experiment", owner)
	}
	want := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	if !slices.Equal(policy.Spec.PolicyTypes, want) || len(policy.Spec.Ingress) > 0 || len(policy.Spec.Egress) > 0 {
		t.Errorf("the holdout's NetworkPolicy %+v, want no traffic allowed in or out", policy.Spec)
	}
	selector, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	var jobs batchv1.JobList
	for _, l := range []client.ObjectList{&pods, &jobs} {
		if err := k8s.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	children := map[string]map[string]string{}
	for _, p := range pods.Items {
		children["pod "+p.Name] = p.Labels
	}
	for _, j := range jobs.Items {
		children["the pods of job "+j.Name] = j.Spec.Template.Labels
	}
	holdouts := 0
	for name, l := range children {
		holdout := l[LabelStep] == stepHoldout
		if holdout {
			holdouts++
		}
		if selector.Matches(labels.Set(l)) != holdout {
			t.Errorf("the holdout's NetworkPolicy selects %s (%v): %v, want %v", name, l, !holdout, holdout)
		}
	}
	if holdouts == 0 || len(children) == holdouts {
		t.Errorf("%d children, %d of them the holdout's: nothing to tell apart", len(children), holdouts)
	}
}

// checkHoldoutJob checks what the holdout's pod sees: the volume read-only
// at the holdout's dir, its own copy of the candidate with the training
// outputs of trained, made from a read-only workspace, and nothing of the
// workspace in the container that runs the holdout; its log stays in the
// pod.
func checkHoldoutJob(t *testing.T, job *batchv1.Job, trained string) {
	t.Helper()
	spec := job.Spec.Template.Spec
	checkStepPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.Name}, Spec: spec})
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 || job.Spec.ActiveDeadlineSeconds == nil {
		t.Errorf("%s backoffLimit %v deadline %v; want 0 and a deadline", job.Name, job.Spec.BackoffLimit, job.Spec.ActiveDeadlineSeconds)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	c := spec.Containers[0]
	if gpus := c.Resources.Limits[GPUResource]; c.Name != stepHoldout || c.Image != "pytorch/pytorch:2.5.1" || gpus.Value() != 2 {
		t.Errorf("%s runs %s in %s with GPUs %v; want the holdout in the evaluation's image with its GPUs", job.Name, c.Name, c.Image, c.Resources.Limits)
	}
	var atDir bool
	for _, m := range c.VolumeMounts {
		v := volumes[m.Name]
		switch {
		case v.PersistentVolumeClaim != nil && !m.ReadOnly:
			t.Errorf("%s mounts the claim %s writable at %s", job.Name, v.PersistentVolumeClaim.ClaimName, m.MountPath)
		case m.Name == volumeWorkspace:
			t.Errorf("%s mounts the workspace at %s", job.Name, m.MountPath)
		case m.MountPath == holdoutDir:
			atDir = m.ReadOnly && v.ConfigMap != nil && v.ConfigMap.Name == holdoutConfigMap
		case v.EmptyDir == nil:
			t.Errorf("%s mounts %s (%+v) at %s", job.Name, m.Name, v.VolumeSource, m.MountPath)
		}
	}
	if !atDir {
		t.Errorf("%s does not mount ConfigMap %s read-only at %s: %+v", job.Name, holdoutConfigMap, holdoutDir, c.VolumeMounts)
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--step=holdout", "--metric=holdout_score", "--log=" + holdoutScratch + "/"} {
		if !strings.Contains(args, want) {
			t.Errorf("%s runs %q, want %s", job.Name, args, want)
		}
	}
	if strings.Contains(args, steps.WorkspaceMount) && !strings.Contains(args, "--workdir="+steps.WorktreeDir) {
		t.Errorf("%s writes to the workspace: %q", job.Name, args)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["AUTORESEARCH_HOLDOUT_DIR"] != holdoutDir {
		t.Errorf("%s env %v, want AUTORESEARCH_HOLDOUT_DIR=%s", job.Name, env, holdoutDir)
	}
	checkHoldoutCheckout(t, job, trained)
}

// checkHoldoutCheckout checks that the holdout's checkout copies the
// outputs of trained under its own scratch space, from a read-only
// workspace.
func checkHoldoutCheckout(t *testing.T, job *batchv1.Job, trained string) {
	t.Helper()
	spec := job.Spec.Template.Spec
	var checkout *corev1.Container
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == "checkout" {
			checkout = &spec.InitContainers[i]
		}
	}
	if checkout == nil {
		t.Fatalf("%s has no checkout init container", job.Name)
	}
	if a := strings.Join(checkout.Args, " "); !strings.Contains(a, "--trained="+trained+" ") || !strings.Contains(a, "--dest="+holdoutScratch+"/") {
		t.Errorf("%s checkout %q, want the outputs of %s copied under %s", job.Name, a, trained, holdoutScratch)
	}
	for _, m := range checkout.VolumeMounts {
		if m.Name == volumeWorkspace && !m.ReadOnly {
			t.Errorf("%s: the checkout mounts the workspace writable at %s", job.Name, m.MountPath)
		}
	}
}

// checkNothingElseNamesTheHoldout checks that no child but the holdout's
// Jobs names the holdout's dir, volume or command: not the Researcher's
// pods, not compliance, training or evaluation.
func checkNothingElseNamesTheHoldout(t *testing.T, ns string) {
	t.Helper()
	var pods corev1.PodList
	var jobs batchv1.JobList
	var cms corev1.ConfigMapList
	for _, l := range []client.ObjectList{&pods, &jobs, &cms} {
		if err := k8s.List(context.Background(), l, client.InNamespace(ns), client.MatchingLabels{LabelExperiment: experiment}); err != nil {
			t.Fatal(err)
		}
	}
	var objs []client.Object
	for i := range pods.Items {
		objs = append(objs, &pods.Items[i])
	}
	for i := range jobs.Items {
		objs = append(objs, &jobs.Items[i])
	}
	for i := range cms.Items {
		objs = append(objs, &cms.Items[i])
	}
	var researchers int
	for _, obj := range objs {
		if obj.GetLabels()[LabelStep] == stepHoldout {
			continue
		}
		if obj.GetLabels()[LabelStep] == stepResearcher {
			researchers++
		}
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{holdoutDir, holdoutConfigMap, "AUTORESEARCH_HOLDOUT_DIR", "holdout.sh", "holdout_score"} {
			if strings.Contains(string(data), s) {
				t.Errorf("%T %s names the holdout (%q)", obj, obj.GetName(), s)
			}
		}
	}
	if researchers < 2 {
		t.Errorf("checked %d Researcher pods and ConfigMaps, want those of rounds 1 and 2", researchers)
	}
}

// TestHoldoutNeedsAVolumeOnACluster: without spec.holdout.volume nothing
// brings the holdout's files to its pod; the experiment fails before
// anything runs, saying what to set.
func TestHoldoutNeedsAVolumeOnACluster(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	ar := builder.MakeAutoResearch(experiment, ns).Edit(func(s *v1alpha1.AutoResearchSpec) {
		s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "/srv/holdout"}
	}).Obj()
	if err := k8s.Create(context.Background(), ar); err != nil {
		t.Fatal(err)
	}
	got := waitStatus(t, ns, experiment, "the experiment to fail", func(s v1alpha1.AutoResearchStatus) bool { return s.Phase == v1alpha1.PhaseFailed })
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailed); c == nil || c.Reason != v1alpha1.ReasonInvalidSpec || !strings.Contains(c.Message, "set spec.holdout.volume") {
		t.Errorf("Failed condition %+v, want reason InvalidSpec asking for spec.holdout.volume", c)
	}
	if !absent(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: experiment + "-workspace"}}) {
		t.Error("an experiment whose holdout cannot run got a workspace claim")
	}
}

// TestHoldoutMayNotUseTheWorkspaceClaim: the claim the operator makes for
// the workspace, which every Researcher mounts, cannot hold the holdout.
func TestHoldoutMayNotUseTheWorkspaceClaim(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	ar := builder.MakeAutoResearch(experiment, ns).Edit(func(s *v1alpha1.AutoResearchSpec) {
		s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "/srv/holdout", Volume: &v1alpha1.HoldoutVolume{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: experiment + "-workspace"},
		}}
	}).Obj()
	if err := k8s.Create(context.Background(), ar); err != nil {
		t.Fatal(err)
	}
	got := waitStatus(t, ns, experiment, "the experiment to fail", func(s v1alpha1.AutoResearchStatus) bool { return s.Phase == v1alpha1.PhaseFailed })
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailed); c == nil || !strings.Contains(c.Message, "may not be the workspace claim") {
		t.Errorf("Failed condition %+v, want one refusing the workspace claim", c)
	}
}
