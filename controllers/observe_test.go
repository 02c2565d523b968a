package controllers

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// TestParityCannotSpeakForTheFileCheck plays a candidate whose kernels, run
// by the parity container, write a termination message of their own: it
// may say what it likes about parity, but the candidate and the file rules
// come from the file check alone.
func TestParityCannotSpeakForTheFileCheck(t *testing.T) {
	ar := builder.MakeAutoResearch("p", "ns").Obj()
	ar.Status = v1alpha1.AutoResearchStatus{
		Phase: v1alpha1.PhaseRunning,
		CurrentRound: &v1alpha1.RoundStatus{
			Number: 1, Step: v1alpha1.StepCompliance, StepState: v1alpha1.StepStateRunning, BaseCommit: "base",
			Candidates: []v1alpha1.CandidateStatus{{Index: 0}},
		},
	}
	message := func(t *testing.T, r steps.ComplianceResult) string {
		data, err := steps.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	terminated := func(name, msg string, code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: msg}}}
	}
	check := steps.ComplianceResult{Strategy: "s", Violation: "modified fixed file eval.py", Candidate: "sealed"}
	cases := map[string]struct {
		check, parity steps.ComplianceResult
		parityExit    int32
		want          round.ComplianceResult
	}{
		"a forged pass": {
			check:  check,
			parity: steps.ComplianceResult{Strategy: "s", Candidate: "an older candidate"},
			want:   round.ComplianceResult{Strategy: "s", Violation: "modified fixed file eval.py", Candidate: "sealed"},
		},
		"a forged candidate": {
			check:  steps.ComplianceResult{Strategy: "s", Candidate: "sealed"},
			parity: steps.ComplianceResult{Strategy: "s", Candidate: "an older candidate"},
			want:   round.ComplianceResult{Strategy: "s", Candidate: "sealed"},
		},
		"a parity container that died": {
			check:      steps.ComplianceResult{Strategy: "s", Candidate: "sealed"},
			parity:     steps.ComplianceResult{Strategy: "s", Candidate: "sealed"},
			parityExit: 143,
			want: round.ComplianceResult{Strategy: "s", Candidate: "sealed",
				Parity: "PARITY_FAIL kind=crash detail=the parity check ended with exit code 143 and no result"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationBase: "base"}},
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{Name: stepCompliance}},
					Containers:     []corev1.Container{{Name: containerParity}},
				},
				Status: corev1.PodStatus{
					Phase:                 corev1.PodSucceeded,
					InitContainerStatuses: []corev1.ContainerStatus{terminated(stepCompliance, message(t, tc.check), 0)},
					ContainerStatuses:     []corev1.ContainerStatus{terminated(containerParity, message(t, tc.parity), tc.parityExit)},
				},
			}
			a, _ := round.CurrentAction(&ar.Spec, &ar.Status)
			obs, failure := observe(ar, &ar.Spec, world{pods: map[string]*corev1.Pod{childName(ar, a): pod}})
			if failure != nil || obs.Compliance == nil {
				t.Fatalf("observation %+v, failure %+v", obs, failure)
			}
			if *obs.Compliance != tc.want {
				t.Errorf("compliance %+v, want %+v", *obs.Compliance, tc.want)
			}
		})
	}
}

// evaluating is an experiment whose round 1 evaluates its one candidate,
// and the name of that evaluation's Job.
func evaluating() (*v1alpha1.AutoResearch, string) {
	ar := builder.MakeAutoResearch("p", "ns").Obj()
	ar.Status = v1alpha1.AutoResearchStatus{
		Phase: v1alpha1.PhaseRunning,
		CurrentRound: &v1alpha1.RoundStatus{
			Number: 1, Step: v1alpha1.StepEval, StepState: v1alpha1.StepStateRunning, BaseCommit: "base",
			Candidates: []v1alpha1.CandidateStatus{{Index: 0}},
		},
	}
	a, _ := round.CurrentAction(&ar.Spec, &ar.Status)
	return ar, childName(ar, a)
}

// evalPod is an evaluation pod that ended in phase, its container with
// exit code code and a metric found.
func evalPod(t *testing.T, phase corev1.PodPhase, code int32) *corev1.Pod {
	t.Helper()
	msg, err := steps.Encode(steps.EvalResult{Found: true, Value: "0.5"})
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: stepEval}}}, Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
		Name: stepEval, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: string(msg)}},
	}}}}
}

// TestAJobSeenBeforeItsPodWaitsForIt plays the cache showing a finished
// evaluation Job while its pod, which holds the metric, still looks
// running: Jobs and pods come through separate watches. The result is read
// once the pod is seen ended; a pod that never shows up is waited for only
// so long.
func TestAJobSeenBeforeItsPodWaitsForIt(t *testing.T) {
	ar, name := evaluating()
	ended := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: batchv1.JobStatus{
		Succeeded:  1,
		Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(ended)}},
	}}
	running := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	done := evalPod(t, corev1.PodSucceeded, 0)
	cases := map[string]struct {
		pod   *corev1.Pod
		after time.Duration
		want  round.ObservationKind
		found bool
	}{
		"the pod still looks running":           {pod: running, after: time.Second, want: round.ObserveTick},
		"the pod is seen ended":                 {pod: done, after: time.Second, want: round.ObserveEvalFinished, found: true},
		"the pod never shows up":                {after: 2 * podLag, want: round.ObserveEvalFinished},
		"the pod still looks running, for good": {pod: running, after: 2 * podLag, want: round.ObserveEvalFinished},
	}
	for n, tc := range cases {
		t.Run(n, func(t *testing.T) {
			w := world{jobs: map[string]*batchv1.Job{name: job}, jobPods: map[string][]*corev1.Pod{}, now: ended.Add(tc.after)}
			if tc.pod != nil {
				w.jobPods[name] = []*corev1.Pod{tc.pod}
			}
			obs, failure := observe(ar, &ar.Spec, w)
			if failure != nil {
				t.Fatalf("failure %+v", failure)
			}
			if obs.Kind != tc.want || (obs.Eval != nil && obs.Eval.Found) != tc.found {
				t.Errorf("observation %+v, want %s with a metric found %v", obs, tc.want, tc.found)
			}
		})
	}
}

// TestAPodThatSucceededIsReadBeforeItsJob plays the Job controller behind
// its pod: a pod that succeeded ends the step at once, with its metric; a
// pod that failed waits for the Job, which may replace it; and a Job
// marked complete is read as before.
func TestAPodThatSucceededIsReadBeforeItsJob(t *testing.T) {
	ar, name := evaluating()
	running := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: batchv1.JobStatus{Active: 1}}
	complete := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: batchv1.JobStatus{
		Succeeded:  1,
		Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}},
	}}
	cases := map[string]struct {
		job   *batchv1.Job
		pod   *corev1.Pod
		want  round.ObservationKind
		found bool
	}{
		"the pod runs":                         {job: running, pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, want: round.ObserveTick},
		"the pod succeeded, the Job runs":      {job: running, pod: evalPod(t, corev1.PodSucceeded, 0), want: round.ObserveEvalFinished, found: true},
		"the pod failed, the Job runs":         {job: running, pod: evalPod(t, corev1.PodFailed, 1), want: round.ObserveTick},
		"the pod succeeded, the Job completed": {job: complete, pod: evalPod(t, corev1.PodSucceeded, 0), want: round.ObserveEvalFinished, found: true},
	}
	for n, tc := range cases {
		t.Run(n, func(t *testing.T) {
			w := world{jobs: map[string]*batchv1.Job{name: tc.job}, jobPods: map[string][]*corev1.Pod{name: {tc.pod}}, now: time.Now()}
			obs, failure := observe(ar, &ar.Spec, w)
			if failure != nil {
				t.Fatalf("failure %+v", failure)
			}
			if obs.Kind != tc.want || (obs.Eval != nil && obs.Eval.Found) != tc.found {
				t.Errorf("observation %+v, want %s with a metric found %v", obs, tc.want, tc.found)
			}
		})
	}
}

// TestTheCacheKeepsWhatTheControllerReads trims the children the operator
// makes as its cache does, and checks that what observe reads of them
// stays: the containers by name, the workspace's claim, a Job's suspension,
// labels, annotations and status; and that the rest of a spec goes.
func TestTheCacheKeepsWhatTheControllerReads(t *testing.T) {
	ar := builder.MakeAutoResearch("x", "ns").GPUs(1).Obj()
	ar.Status.Workspace = &v1alpha1.WorkspaceStatus{StartCommit: "c0"}
	b := childBuilder{ar: ar, image: "operator:1"}
	researcher, err := b.researcherPod(round.Action{Type: round.ActionRunResearcher, Round: 1, BaseCommit: "c0"})
	if err != nil {
		t.Fatal(err)
	}
	job, err := b.gpuJob(round.Action{Type: round.ActionRunTrain, Round: 1, Code: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	job.Spec.Suspend = ptr.To(true)
	job.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
	jobPod := &corev1.Pod{ObjectMeta: job.Spec.Template.ObjectMeta, Spec: job.Spec.Template.Spec}
	pods := []*corev1.Pod{b.initPod(), researcher, b.compliancePod(round.Action{Type: round.ActionCheckCompliance, Round: 1, BaseCommit: "c0"}), jobPod}
	for _, pod := range pods {
		pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
		last := pod.Spec.Containers[len(pod.Spec.Containers)-1].Name
		pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{
			{Name: last, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: "the result"}}},
		}}
		out, err := trimChild(pod.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		trimmed := out.(*corev1.Pod)
		name := pod.Labels[LabelStep]
		if got, want := claimOf(trimmed), claimOf(pod); got != want {
			t.Errorf("%s: claim %q, want %q", name, got, want)
		}
		if got := lastTerminated(trimmed).Message; got != "the result" {
			t.Errorf("%s: the last container's result %q, want %q", name, got, "the result")
		}
		if len(trimmed.Spec.Containers) != len(pod.Spec.Containers) {
			t.Errorf("%s: %d containers, want %d", name, len(trimmed.Spec.Containers), len(pod.Spec.Containers))
		}
		for i, c := range trimmed.Spec.Containers {
			if c.Name != pod.Spec.Containers[i].Name || len(c.Command)+len(c.Env)+len(c.VolumeMounts) > 0 || c.Image != "" {
				t.Errorf("%s: container %d kept %+v", name, i, c)
			}
		}
		if !equality.Semantic.DeepEqual(trimmed.ObjectMeta, withoutManagedFields(pod.ObjectMeta)) || !equality.Semantic.DeepEqual(trimmed.Status, pod.Status) {
			t.Errorf("%s: metadata or status changed", name)
		}
		again, _ := trimChild(trimmed.DeepCopy())
		if !equality.Semantic.DeepEqual(again, trimmed) {
			t.Errorf("%s: trimming a trimmed pod changed it", name)
		}
	}
	if claimOf(pods[0]) == "" {
		t.Error("the workspace pod claims no workspace: the test checks nothing of claims")
	}
	out, err := trimChild(job.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	trimmed := out.(*batchv1.Job)
	if !ptr.Deref(trimmed.Spec.Suspend, false) || len(trimmed.Spec.Template.Spec.Containers) > 0 || len(trimmed.ManagedFields) > 0 {
		t.Errorf("trimmed Job %+v", trimmed.Spec)
	}
}

func withoutManagedFields(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.ManagedFields = nil
	return m
}

// TestAnOOMKillEndsTheInsight has the kernel kill training for its memory
// limit: whether the step wrapper lived to write its result or died too,
// the runtime's reason is the last line of the tail that the insight
// quotes.
func TestAnOOMKillEndsTheInsight(t *testing.T) {
	message := func(t *testing.T, r steps.TrainResult) string {
		data, err := steps.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	cases := map[string]struct {
		message string
		code    int32
		want    round.ProcessExit
	}{
		"the wrapper wrote its result": {
			message: message(t, steps.TrainResult{ProcessResult: steps.ProcessResult{ExitCode: 137, DurationMS: 2000, Tail: "step 10 loss=2.5\nKilled"}}),
			code:    137,
			want:    round.ProcessExit{ExitCode: 137, Duration: 2 * time.Second, Tail: "step 10 loss=2.5\nKilled\n" + oomKilled},
		},
		"the wrapper died with it": {
			code: 137,
			want: round.ProcessExit{ExitCode: 137, Tail: oomKilled},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded}}}}
			pod := &corev1.Pod{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: stepTrain}}},
				Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
					Name: stepTrain, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: tc.code, Reason: reasonOOMKilled, Message: tc.message}},
				}}},
			}
			obs := observeGPUStep(round.Action{Type: round.ActionRunTrain, Round: 1}, job, []*corev1.Pod{pod})
			if obs.Train == nil {
				t.Fatalf("observation %+v has no training result", obs)
			}
			if obs.Train.Exit != tc.want {
				t.Errorf("exit %+v, want %+v", obs.Train.Exit, tc.want)
			}
		})
	}
}
