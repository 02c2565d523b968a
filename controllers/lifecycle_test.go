package controllers

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// editSpec changes the experiment's spec as `kubectl edit` would.
func editSpec(t *testing.T, ns string, edit func(*v1alpha1.AutoResearchSpec)) {
	t.Helper()
	eventually(t, "the spec edit", func() (bool, error) {
		ar := getExperiment(t, ns, experiment)
		edit(&ar.Spec)
		err := k8s.Update(context.Background(), ar)
		return err == nil, err
	})
}

// restarter starts a new manager as soon as each child it is given
// appears, and remembers the child's UID, so that a test can check at the
// end that no child was created twice.
type restarter struct {
	t    *testing.T
	ns   string
	m    *manager
	uids map[string]types.UID
	jobs map[string]bool
}

func newRestarter(t *testing.T, ns string, m *manager) *restarter {
	return &restarter{t: t, ns: ns, m: m, uids: map[string]types.UID{}, jobs: map[string]bool{}}
}

// at waits for obj, named name, and restarts the manager.
func (r *restarter) at(name string, obj client.Object) {
	r.t.Helper()
	eventually(r.t, name, func() (bool, error) {
		err := k8s.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: name}, obj)
		return err == nil, err
	})
	r.uids[name] = obj.GetUID()
	r.m.stop()
	r.m = startManager(r.t)
}

// pod restarts the manager at the pod name, then ends it with msg.
func (r *restarter) pod(name, msg string) {
	r.t.Helper()
	r.at(name, &corev1.Pod{})
	finishPod(r.t, r.ns, name, 0, msg)
}

// job restarts the manager at the Job name, then ends it with msg.
func (r *restarter) job(name, msg string) {
	r.t.Helper()
	r.at(name, &batchv1.Job{})
	r.jobs[name] = true
	finishJob(r.t, r.ns, name, 0, msg)
}

// noneMadeTwice checks that every pod and Job still there is the one the
// restarts saw.
func (r *restarter) noneMadeTwice() {
	r.t.Helper()
	for name, uid := range r.uids {
		var obj client.Object = &corev1.Pod{}
		if r.jobs[name] {
			obj = &batchv1.Job{}
		} else if name == experiment {
			continue
		}
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: name}, obj); err != nil {
			continue // cleaned up with its round
		}
		if obj.GetUID() != uid {
			r.t.Errorf("%s was created again after a restart", name)
		}
	}
}

// A new manager after every step finds what the old one made: no child is
// created twice, no round or verdict is lost.
func TestRestartAtEveryStep(t *testing.T) {
	ns := newNamespace(t)
	r := newRestarter(t, ns, startManager(t))
	createExperiment(t, ns, func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 2 })
	r.pod(experiment+"-init", result(t, steps.WorkspaceResult{StartCommit: "s0", FixedHashes: map[string]string{"eval.py": "a"}}))
	r.job(experiment+"-r0-train-1", result(t, steps.TrainResult{}))
	r.job(experiment+"-r0-eval-1", result(t, steps.EvalResult{Found: true, Value: "1"}))
	for i, value := range []string{"0.5", "0.7"} {
		n := i + 1
		r.pod(podName(n, stepResearcher), "")
		r.pod(podName(n, stepCompliance), result(t, steps.ComplianceResult{Strategy: "s"}))
		r.job(podName(n, stepTrain), result(t, steps.TrainResult{}))
		r.job(podName(n, stepEval), result(t, steps.EvalResult{Found: true, Value: value}))
		r.pod(podName(n, stepGit), result(t, steps.GitResult{Commit: "c1"}))
	}
	ar := waitStatus(t, ns, experiment, "the end", func(s v1alpha1.AutoResearchStatus) bool { return s.Phase == v1alpha1.PhaseSucceeded })
	var got []string
	for _, h := range ar.Status.History {
		got = append(got, string(h.Verdict))
	}
	if strings.Join(got, ",") != "baseline,improved,not_improved" {
		t.Errorf("history %v, want baseline, improved, not_improved", got)
	}
	r.noneMadeTwice()
}

func TestSuspendResume(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	createNamed(t, ns, experiment, nil)
	waitPod(t, ns, podName(1, stepResearcher))
	editSpec(t, ns, func(s *v1alpha1.AutoResearchSpec) { s.Suspend = ptr.To(true) })

	// The running step finishes; nothing new starts.
	finishPod(t, ns, podName(1, stepResearcher), 0, "")
	ar := waitStatus(t, ns, experiment, "Suspended", func(s v1alpha1.AutoResearchStatus) bool { return s.Phase == v1alpha1.PhaseSuspended })
	if c := condition(ar, v1alpha1.ConditionSuspended); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Suspended condition %+v", c)
	}
	if !absent(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName(1, stepCompliance)}}) {
		t.Fatal("a suspended experiment started its compliance step")
	}

	editSpec(t, ns, func(s *v1alpha1.AutoResearchSpec) { s.Suspend = ptr.To(false) })
	waitPod(t, ns, podName(1, stepCompliance))
	waitStatus(t, ns, experiment, "Running", func(s v1alpha1.AutoResearchStatus) bool { return s.Phase == v1alpha1.PhaseRunning })
}

func TestGuidanceAndMaxRounds(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	createNamed(t, ns, experiment, func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 1 })
	playNamed(t, ns, experiment, roundPlay{train: trainOK(), eval: evalValue("0.5")})
	finishPod(t, ns, podName(1, stepGit), 0, result(t, steps.GitResult{Commit: "c1"}))
	waitStatus(t, ns, experiment, "Succeeded", func(s v1alpha1.AutoResearchStatus) bool { return s.Phase == v1alpha1.PhaseSucceeded })

	// Raising maxRounds resumes a finished experiment; new guidance reaches
	// the next prompt and that round's Note.
	editSpec(t, ns, func(s *v1alpha1.AutoResearchSpec) {
		s.MaxRounds = 3
		s.Guidance = append(s.Guidance, "try a cosine schedule")
	})
	waitPod(t, ns, podName(2, stepResearcher))
	prompt := &corev1.ConfigMap{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: experiment + "-r2-prompt"}, prompt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prompt.Data["prompt.md"], "try a cosine schedule") {
		t.Errorf("round 2 prompt lacks the guidance:\n%s", prompt.Data["prompt.md"])
	}

	// Lowering maxRounds below the current round ends after this round.
	editSpec(t, ns, func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 1 })
	finishPod(t, ns, podName(2, stepResearcher), 0, "")
	finishPod(t, ns, podName(2, stepCompliance), 0, result(t, steps.ComplianceResult{Violation: "modified fixed file eval.py"}))
	finishPod(t, ns, podName(2, stepGit), 0, result(t, steps.GitResult{}))
	ar := waitStatus(t, ns, experiment, "Succeeded again", func(s v1alpha1.AutoResearchStatus) bool {
		return s.Phase == v1alpha1.PhaseSucceeded && s.CompletedRounds == 2
	})
	if h := ar.Status.History[len(ar.Status.History)-1]; h.Note != "try a cosine schedule" || h.Verdict != v1alpha1.VerdictComplianceFailed {
		t.Errorf("round 2 record %+v, want the note and compliance_failed", h)
	}
	if !absent(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName(3, stepResearcher)}}) {
		t.Error("round 3 started after maxRounds was lowered")
	}
}

// TestChildrenAreOwnedForDeletion: under reclaimPolicy Delete every child,
// the workspace claim too, goes with the experiment.
func TestChildrenAreOwnedForDeletion(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	createNamed(t, ns, experiment, func(s *v1alpha1.AutoResearchSpec) { s.Workspace.ReclaimPolicy = v1alpha1.ReclaimDelete })
	waitPod(t, ns, podName(1, stepResearcher))
	ar := getExperiment(t, ns, experiment)

	var pods corev1.PodList
	var jobs batchv1.JobList
	var cms corev1.ConfigMapList
	var claims corev1.PersistentVolumeClaimList
	for _, l := range []client.ObjectList{&pods, &jobs, &cms, &claims} {
		if err := k8s.List(context.Background(), l, client.InNamespace(ns), client.MatchingLabels{LabelExperiment: experiment}); err != nil {
			t.Fatal(err)
		}
	}
	var children []client.Object
	for i := range pods.Items {
		if pods.Items[i].Labels["batch.kubernetes.io/job-name"] == "" {
			children = append(children, &pods.Items[i])
		}
	}
	for i := range jobs.Items {
		children = append(children, &jobs.Items[i])
	}
	for i := range cms.Items {
		children = append(children, &cms.Items[i])
	}
	for i := range claims.Items {
		children = append(children, &claims.Items[i])
	}
	if len(children) < 6 {
		t.Fatalf("found %d children, want the claim, the init pod, the baseline jobs, the round's config map and the researcher", len(children))
	}
	for _, c := range children {
		owner := metav1.GetControllerOf(c)
		if owner == nil || owner.UID != ar.UID || owner.BlockOwnerDeletion == nil || !*owner.BlockOwnerDeletion {
			t.Errorf("%T %s is not controlled by the experiment: %+v", c, c.GetName(), c.GetOwnerReferences())
		}
	}

	if err := k8s.Delete(context.Background(), ar); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the experiment to go", func() (bool, error) { return absent(t, &v1alpha1.AutoResearch{ObjectMeta: ar.ObjectMeta}), nil })
}

// TestChildOfAnotherOwnerIsNotAdopted puts a claim of the experiment's
// workspace name in its way: the operator must neither use it nor take it
// over, and must say so.
func TestChildOfAnotherOwnerIsNotAdopted(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	squatter := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: experiment + "-workspace"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if err := k8s.Create(context.Background(), squatter); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), builder.MakeAutoResearch(experiment, ns).Obj()); err != nil {
		t.Fatal(err)
	}
	if !hasEvent(t, ns, experiment, reasonChildConflict, "PersistentVolumeClaim exp-workspace exists and is not controlled by this experiment") {
		t.Fatalf("no ChildConflict event; events: %v", eventReasons(t, ns))
	}
	if !absent(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: initPodName(getExperiment(t, ns, experiment))}}) {
		t.Error("the init pod was created on a workspace claim the experiment does not own")
	}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(squatter), squatter); err != nil {
		t.Fatal(err)
	}
	if owners := squatter.GetOwnerReferences(); len(owners) != 0 {
		t.Errorf("the claim was taken over: %+v", owners)
	}
}

func TestKueueQueueName(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	createNamed(t, ns, "queued", func(s *v1alpha1.AutoResearchSpec) { s.QueueName = "gpu-queue" })
	finishPod(t, ns, "queued-r1-researcher", 0, "")
	finishPod(t, ns, "queued-r1-compliance", 0, result(t, steps.ComplianceResult{}))
	job := waitJob(t, ns, "queued-r1-train")
	if job.Labels[LabelKueueQueue] != "gpu-queue" || job.Spec.Suspend == nil || !*job.Spec.Suspend {
		t.Errorf("train job labels %v suspend %v; want the queue label and a suspended job for Kueue to admit", job.Labels, job.Spec.Suspend)
	}
}

func TestSpecNoSchemaRefusesFailsBeforeAnythingRuns(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	// The API server cannot count a pattern's capture groups; the engine can.
	ar := builder.MakeAutoResearch(experiment, ns).Edit(func(s *v1alpha1.AutoResearchSpec) { s.Eval.Pattern = `(val|test)_bpb: ([0-9.]+)` }).Obj()
	if err := k8s.Create(context.Background(), ar); err != nil {
		t.Fatal(err)
	}
	got := waitStatus(t, ns, experiment, "the experiment to fail", func(s v1alpha1.AutoResearchStatus) bool { return s.Phase == v1alpha1.PhaseFailed })
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailed); c == nil || c.Reason != v1alpha1.ReasonInvalidSpec || !strings.Contains(c.Message, "needs a capture group") {
		t.Errorf("Failed condition %+v, want reason InvalidSpec saying what to fix", c)
	}
	if !hasEvent(t, ns, experiment, string(v1alpha1.PhaseFailed), "spec.eval.pattern") {
		t.Errorf("no Failed event naming the field; events: %v", eventReasons(t, ns))
	}
	if !absent(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: experiment + "-workspace"}}) {
		t.Error("an invalid experiment got a workspace claim")
	}
}

func TestWaitingForAGPUIsNeverATimeout(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	createNamed(t, ns, "q", func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 1 })

	// The pod waits for a GPU for three time limits, then the Job's
	// deadline ends it: its command never ran.
	job := trainingJob(t, ns, "q")
	pod := runJobPod(t, job, "")
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
	}}
	if err := k8s.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if !hasEvent(t, ns, "q", reasonQueued, "Insufficient nvidia.com/gpu") {
		t.Error("no Queued event saying why the pod waits")
	}
	completeJob(t, job, false, batchv1.JobReasonDeadlineExceeded)
	if !hasEvent(t, ns, "q", reasonStepRetried, "never a verdict") {
		t.Error("no StepRetried event for the Job its deadline ended while it waited")
	}
	eventually(t, "a new training Job", func() (bool, error) {
		again := &batchv1.Job{}
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(job), again)
		return err == nil && again.UID != job.UID, client.IgnoreNotFound(err)
	})
	if h := getExperiment(t, ns, "q").Status.History; len(h) > 1 {
		t.Fatalf("waiting was judged: %+v", h[len(h)-1])
	}

	// The new Job gets its GPU and trains past its time: that is a timeout.
	again := waitJob(t, ns, "q-r1-train")
	terminate(t, runJobPod(t, again, "-2"), 143, result(t, steps.TrainResult{ProcessResult: steps.ProcessResult{ExitCode: 143, TimedOut: true, DurationMS: 70000}}))
	completeJob(t, again, false, "")
	ar := waitStatus(t, ns, "q", "round 1's verdict", func(s v1alpha1.AutoResearchStatus) bool {
		return s.CurrentRound != nil && s.CurrentRound.Step == v1alpha1.StepGit
	})
	if v := ar.Status.CurrentRound.Candidates[0].Verdict; v != v1alpha1.VerdictTrainTimeout {
		t.Errorf("round 1 after a real timeout: %s, want train_timeout", v)
	}
}

// A step whose pod cannot start says why, in an event, the Progressing
// condition and the message, and says so no longer once it runs; the time
// it waited is never judged.
func TestAStepThatCannotStartSaysWhy(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	createNamed(t, ns, "w", func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 1 })
	setStatus := func(edit func(*corev1.PodStatus)) {
		t.Helper()
		eventually(t, "the pod's status", func() (bool, error) {
			pod := waitPod(t, ns, "w-r1-researcher")
			edit(&pod.Status)
			err := k8s.Status().Update(context.Background(), pod)
			return err == nil, err
		})
	}
	progressing := func(what string, want metav1.ConditionStatus, reason string) *v1alpha1.AutoResearch {
		t.Helper()
		return waitStatus(t, ns, "w", what, func(s v1alpha1.AutoResearchStatus) bool {
			c := meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionProgressing)
			return c != nil && c.Status == want && c.Reason == reason
		})
	}

	setStatus(func(s *corev1.PodStatus) {
		s.Phase = corev1.PodPending
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: stepResearcher, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "CreateContainerConfigError", Message: `secret "llm-key" not found`,
		}}}}
	})
	if !hasEvent(t, ns, "w", reasonStepBlocked, `secret "llm-key" not found`) {
		t.Errorf("no StepBlocked event naming the missing Secret; events: %v", eventReasons(t, ns))
	}
	ar := progressing("Progressing to say the step waits", metav1.ConditionFalse, v1alpha1.ReasonStepWaiting)
	if c := meta.FindStatusCondition(ar.Status.Conditions, v1alpha1.ConditionProgressing); !strings.Contains(c.Message, `secret "llm-key" not found`) {
		t.Errorf("Progressing %q does not say what to fix", c.Message)
	}
	if !strings.Contains(ar.Status.Message, `waiting: w-r1-researcher cannot start its container researcher: CreateContainerConfigError: secret "llm-key" not found`) {
		t.Errorf("message %q does not say why the step waits", ar.Status.Message)
	}

	setStatus(func(s *corev1.PodStatus) {
		s.Phase = corev1.PodPending
		s.ContainerStatuses = nil
		s.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu.",
		}}
	})
	if !hasEvent(t, ns, "w", reasonQueued, "Insufficient cpu") {
		t.Errorf("no Queued event for the pod that waits for a node; events: %v", eventReasons(t, ns))
	}

	setStatus(func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		s.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: stepResearcher, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	})
	ar = progressing("Progressing once the step runs", metav1.ConditionTrue, v1alpha1.ReasonRoundInProgress)
	if ar.Status.CurrentRound.Waiting != "" || strings.Contains(ar.Status.Message, "waiting") {
		t.Errorf("the running step still waits: %q, message %q", ar.Status.CurrentRound.Waiting, ar.Status.Message)
	}
	if h := ar.Status.History; len(h) != 1 {
		t.Errorf("waiting was judged: %+v", h)
	}
}

func TestADeletedPodIsRetriedNotJudged(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	createNamed(t, ns, "d", func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 1 })

	// Someone deletes the running Researcher pod: the kubelet stops it with
	// SIGTERM (exit 143) while the pod is being deleted.
	pod := waitPod(t, ns, "d-r1-researcher")
	uid := pod.UID
	pod.Finalizers = append(pod.Finalizers, "example.com/hold")
	if err := k8s.Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	terminate(t, waitPod(t, ns, "d-r1-researcher"), 143, "")
	if !hasEvent(t, ns, "d", reasonStepRetried, "never a verdict") {
		t.Error("no StepRetried event for the deleted pod")
	}
	held := waitPod(t, ns, "d-r1-researcher")
	held.Finalizers = nil
	if err := k8s.Update(context.Background(), held); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new Researcher pod", func() (bool, error) {
		again := &corev1.Pod{}
		err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "d-r1-researcher"}, again)
		return err == nil && again.UID != uid, client.IgnoreNotFound(err)
	})
	ar := getExperiment(t, ns, "d")
	if c := ar.Status.CurrentRound; c == nil || c.Step != v1alpha1.StepResearcher || c.Candidates[0].Verdict != "" {
		t.Errorf("after the deletion: %+v, want round 1's Researcher again, without a verdict", c)
	}

	// The same for the training Job's pod.
	job := trainingJob(t, ns, "d")
	trainPod := runJobPod(t, job, "")
	trainPod.Finalizers = []string{"example.com/hold"}
	if err := k8s.Update(context.Background(), trainPod); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(context.Background(), trainPod); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(trainPod), trainPod); err != nil {
		t.Fatal(err)
	}
	terminate(t, trainPod, 143, "")
	completeJob(t, job, false, "")
	eventually(t, "a new training Job", func() (bool, error) {
		again := &batchv1.Job{}
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(job), again)
		return err == nil && again.UID != job.UID, client.IgnoreNotFound(err)
	})
	if v := getExperiment(t, ns, "d").Status.CurrentRound.Candidates[0].Verdict; v != "" {
		t.Errorf("the deleted training pod was judged %s", v)
	}
}

// A step of the operator's own that fails for good (a full disk, a broken
// repository) is made again with backoff, and says so, rather than at
// once, several times a second, forever.
func TestAStepThatKeepsFailingBacksOff(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	createNamed(t, ns, "g", func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 1 })
	playNamed(t, ns, "g", roundPlay{researcherExit: 1})

	name := "g-r1-git"
	var uids []types.UID
	fail := func() {
		t.Helper()
		pod := waitPod(t, ns, name)
		eventually(t, "a new git pod", func() (bool, error) {
			err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pod)
			return err == nil && !slices.Contains(uids, pod.UID), client.IgnoreNotFound(err)
		})
		uids = append(uids, pod.UID)
		terminate(t, pod, 1, "fatal: could not write index: No space left on device")
	}
	fail()
	fail() // made again at once after the first failure
	failedAt := time.Now()
	var waiting string
	eventually(t, "the status to say the git step waits", func() (bool, error) {
		waiting = getExperiment(t, ns, "g").Status.CurrentRound.Waiting
		return strings.Contains(waiting, name+" failed 2 times"), nil
	})
	if !strings.Contains(waiting, "No space left on device") || !strings.Contains(waiting, "made again at") {
		t.Errorf("waiting = %q, want why the step failed and when it runs again", waiting)
	}
	if !hasEvent(t, ns, "g", reasonStepRetried, "it failed 2 times and is made again in 3s") {
		t.Errorf("no StepRetried event saying when the step runs again; events: %v", eventsOf(t, ns, "g"))
	}
	pod := waitPod(t, ns, name)
	if pod.UID == uids[1] {
		t.Fatal("the failed pod was not deleted")
	}
	if made := pod.CreationTimestamp.Time; made.Before(failedAt.Add(testRetryDelay - time.Second)) {
		t.Errorf("the git pod was made again %s after its second failure, before its backoff of %s ended", made.Sub(failedAt), testRetryDelay)
	}
	uids = append(uids, pod.UID)
	terminate(t, pod, 1, "fatal: could not write index: No space left on device")
	if !hasEvent(t, ns, "g", reasonStepRetried, "it failed 3 times and is made again in 6s") {
		t.Errorf("the backoff did not double; events: %v", eventsOf(t, ns, "g"))
	}

	// Once the disk has room the step succeeds and the loop goes on.
	finishPod(t, ns, name, 0, result(t, steps.GitResult{}))
	eventually(t, "round 1 to end", func() (bool, error) {
		h := getExperiment(t, ns, "g").Status.History
		return len(h) == 2 && h[1].Verdict == v1alpha1.VerdictResearcherFailed, nil
	})
}

func TestARefusedChildIsAnnounced(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	// An admission policy refuses every pod of the namespace, as a quota or
	// a webhook might.
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-pods-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "no pods in this namespace"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "no-pods-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := k8s.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), obj) })
	}
	eventually(t, "the policy to be in force", func() (bool, error) {
		probe := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
		}
		err := k8s.Create(context.Background(), probe, client.DryRunAll)
		return err != nil, nil
	})
	if err := k8s.Create(context.Background(), builder.MakeAutoResearch(experiment, ns).Obj()); err != nil {
		t.Fatal(err)
	}
	if !hasEvent(t, ns, experiment, reasonCreateRefused, "no pods in this namespace") {
		t.Errorf("no CreateRefused event; events: %v", eventReasons(t, ns))
	}
	// The status says what the step waits for, until the policy goes.
	waitStatus(t, ns, experiment, "the message to say why the step waits", func(s v1alpha1.AutoResearchStatus) bool {
		return strings.Contains(s.Message, "waiting: creating "+experiment+"-init") && strings.Contains(s.Message, "no pods in this namespace")
	})
	for _, obj := range []client.Object{binding, policy} {
		if err := k8s.Delete(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	waitPod(t, ns, experiment+"-init")
	waitStatus(t, ns, experiment, "the message to say no longer that the step waits", func(s v1alpha1.AutoResearchStatus) bool {
		return s.Message == "preparing the workspace"
	})
}

// A budget stops the experiment before a round that would go past it, and
// raising the budget continues it.
func TestABudgetStopsAndRaisingItContinues(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	createNamed(t, ns, experiment, func(s *v1alpha1.AutoResearchSpec) {
		s.MaxRounds = 5
		s.Budget = &v1alpha1.BudgetSpec{ResearcherTokens: 1500}
	})
	report := func(t *testing.T) string {
		t.Helper()
		data, err := json.Marshal(steps.ResearcherReport{InputTokens: 800, OutputTokens: 200})
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	finishPod(t, ns, podName(1, stepResearcher), 0, report(t))
	finishPod(t, ns, podName(1, stepCompliance), 0, result(t, steps.ComplianceResult{NoChange: true}))
	finishPod(t, ns, podName(1, stepGit), 0, result(t, steps.GitResult{}))

	// 1000 tokens used, 1000 a round: a second round would go past 1500.
	ar := waitStatus(t, ns, experiment, "the budget to stop the experiment", func(s v1alpha1.AutoResearchStatus) bool { return s.Phase == v1alpha1.PhaseSucceeded })
	if c := meta.FindStatusCondition(ar.Status.Conditions, v1alpha1.ConditionSucceeded); c == nil || c.Reason != v1alpha1.ReasonBudgetExhausted ||
		!strings.Contains(c.Message, "researcherTokens exhausted: 1000 of 1500 tokens used") {
		t.Errorf("Succeeded condition %+v, want reason BudgetExhausted naming the budget and its use", c)
	}
	if got := ar.Status.Usage.Budget; len(got) != 1 || got[0] != "researcherTokens: 1000 of 1500 tokens used" {
		t.Errorf("status.usage.budget %q", got)
	}
	if !hasEvent(t, ns, experiment, string(v1alpha1.PhaseSucceeded), "budget researcherTokens exhausted") {
		t.Errorf("no Succeeded event naming the budget; events: %v", eventReasons(t, ns))
	}
	finishPod(t, ns, podName(1, stepFinish), 0, result(t, steps.GitResult{Commit: "f1"}))

	editSpec(t, ns, func(s *v1alpha1.AutoResearchSpec) { s.Budget.ResearcherTokens = 10000 })
	waitPod(t, ns, podName(2, stepResearcher))
	waitStatus(t, ns, experiment, "Running again", func(s v1alpha1.AutoResearchStatus) bool { return s.Phase == v1alpha1.PhaseRunning })
}

// TestAKubeletEvictionIsJudged evicts the training pod for the node's disk
// pressure, as training that fills its emptyDir gets itself evicted, while
// the Job, which ignores disruptions, already runs it again: the step is
// judged a failure at once, and the Job, with its second pod, is deleted,
// so that no run of the candidate resumes from what the first one left.
func TestAKubeletEvictionIsJudged(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	createNamed(t, ns, "ev", func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 1 })
	job := trainingJob(t, ns, "ev")
	runJobPod(t, job, "-retry")
	evicted := runJobPod(t, job, "")
	terminate(t, evicted, 137, "")
	evicted.Status.Reason = "Evicted"
	evicted.Status.Message = "The node was low on resource: ephemeral-storage."
	evicted.Status.Conditions = append(evicted.Status.Conditions, corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonTerminationByKubelet,
		LastTransitionTime: metav1.Now(),
	})
	if err := k8s.Status().Update(context.Background(), evicted); err != nil {
		t.Fatal(err)
	}
	ar := waitStatus(t, ns, "ev", "round 1's verdict", func(s v1alpha1.AutoResearchStatus) bool {
		return s.CurrentRound != nil && s.CurrentRound.Candidates[0].Verdict != ""
	})
	if c := ar.Status.CurrentRound.Candidates[0]; c.Verdict != v1alpha1.VerdictTrainFailed || !strings.Contains(c.Insight, "evicted by the kubelet: The node was low on resource") {
		t.Errorf("round 1: %s (%s), want train_failed for the eviction", c.Verdict, c.Insight)
	}
	eventually(t, "the evicted step's Job to be deleted", func() (bool, error) {
		return absent(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job.Name}}), nil
	})
}

// trainingJob ends round 1's Researcher and check of experiment name, a
// round of one candidate, and returns the training Job that follows.
func trainingJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	finishPod(t, ns, name+"-r1-researcher", 0, "")
	finishPod(t, ns, name+"-r1-compliance", 0, result(t, steps.ComplianceResult{Strategy: "s", Candidate: "c1"}))
	return waitJob(t, ns, name+"-r1-train")
}
