package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// TestRoundOfTwoCandidates plays a round of two candidates: each gets its
// own Researcher pod on its own copy of the base commit, its own compliance
// pod and its own training and evaluation Jobs, at once; the round's one
// git pod commits the better one.
func TestRoundOfTwoCandidates(t *testing.T) {
	requireEnvtest(t)
	ns := newNamespace(t)
	startManager(t)
	createExperiment(t, ns, func(s *v1alpha1.AutoResearchSpec) {
		s.Candidates = 2
		s.MaxRounds = 1
	})
	initWorkspace(t, ns)
	baseline(t, ns, "1.000")

	name := func(c, step string) string { return experiment + "-r1" + c + "-" + step }
	for _, c := range []string{"a", "b"} {
		pod := waitPod(t, ns, name(c, stepResearcher))
		checkStepPod(t, pod)
		r := pod.Spec.Containers[0]
		var mounts []string
		for _, m := range r.VolumeMounts {
			if m.Name == volumeWorkspace {
				mounts = append(mounts, m.SubPath+" at "+m.MountPath)
			}
		}
		if want := []string{"candidates/r1" + c + " at " + steps.WorktreeDir}; !slices.Equal(mounts, want) {
			t.Errorf("candidate %s's Researcher mounts %q of the workspace, want only %q", c, mounts, want)
		}
		if !slices.Contains(r.Env, corev1.EnvVar{Name: "AUTORESEARCH_CANDIDATE", Value: c}) {
			t.Errorf("candidate %s's Researcher is not told its candidate: %v", c, r.Env)
		}
		prepare := strings.Join(pod.Spec.InitContainers[0].Args, " ")
		if !strings.Contains(prepare, "--candidate="+c) || !strings.Contains(prepare, "--candidate-root=/workspace/candidates/r1"+c) {
			t.Errorf("candidate %s's preparation %q does not make its copy", c, prepare)
		}
		if strings.Contains(prepare, "--prepare-worktree") != (c == "a") {
			t.Errorf("candidate %s's preparation %q: want only candidate a to prepare the worktree", c, prepare)
		}
		prompt := &corev1.ConfigMap{}
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: experiment + "-r1" + c + "-prompt"}, prompt); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(prompt.Data["prompt.md"], "you are candidate "+c) {
			t.Errorf("candidate %s's prompt does not name it:\n%s", c, prompt.Data["prompt.md"])
		}
	}
	finishPod(t, ns, name("b", stepResearcher), 0, "")
	finishPod(t, ns, name("a", stepResearcher), 0, "")
	values := map[string]string{"a": "0.9", "b": "0.8"}
	for _, c := range []string{"a", "b"} {
		check := waitPod(t, ns, name(c, stepCompliance))
		if args := strings.Join(check.Spec.Containers[0].Args, " "); !strings.Contains(args, "--candidate="+c) || !strings.Contains(args, "--candidate-root=/workspace/candidates/r1"+c) {
			t.Errorf("candidate %s's compliance args %q do not seal its copy", c, args)
		}
		finishPod(t, ns, name(c, stepCompliance), 0, result(t, steps.ComplianceResult{Strategy: "idea " + c, Candidate: "cafe000" + c}))
	}
	for _, c := range []string{"a", "b"} {
		train := waitJob(t, ns, name(c, stepTrain))
		var mounts []string
		for _, m := range train.Spec.Template.Spec.Containers[0].VolumeMounts {
			if m.Name == volumeWorkspace {
				mounts = append(mounts, m.SubPath)
			}
		}
		if want := []string{"state/runs/r1/train-" + c, "logs/round-1/" + c}; !slices.Equal(mounts, want) {
			t.Errorf("candidate %s's training mounts %q of the workspace, want %q", c, mounts, want)
		}
		finishJob(t, ns, name(c, stepTrain), 0, result(t, trainOK()))
	}
	for _, c := range []string{"b", "a"} {
		finishJob(t, ns, name(c, stepEval), 0, result(t, evalValue(values[c])))
	}
	git := waitPod(t, ns, podName(1, stepGit))
	if args := strings.Join(git.Spec.Containers[0].Args, " "); !strings.Contains(args, "--candidate=cafe000b") || !strings.Contains(args, "round 1b — val_bpb=0.8 (improved)") {
		t.Errorf("git pod args %q: want candidate b's commit", args)
	}
	finishPod(t, ns, podName(1, stepGit), 0, result(t, steps.GitResult{Commit: "c1b1b1b1"}))
	ar := waitStatus(t, ns, experiment, "round 1's verdict", func(s v1alpha1.AutoResearchStatus) bool { return s.CompletedRounds == 1 })
	if ar.Status.Best.Value != "0.8" || ar.Status.Best.Commit != "c1b1b1b1" {
		t.Errorf("best %+v, want candidate b's 0.8", ar.Status.Best)
	}
	var records []string
	for _, h := range ar.Status.History[1:] {
		records = append(records, h.Candidate+":"+string(h.Verdict)+":"+h.Strategy)
	}
	if want := []string{"a:superseded:idea a", "b:improved:idea b"}; !slices.Equal(records, want) {
		t.Errorf("round 1's records %q, want %q", records, want)
	}
}

// TestCandidatesThatEndTogether ends a round's four Researchers one right
// after another, and its four compliance checks while the operator is
// down, so that one pass finds several of them finished and no event
// follows that pass: the operator still sees every one, and the round
// trains.
func TestCandidatesThatEndTogether(t *testing.T) {
	requireEnvtest(t)
	ns := newNamespace(t)
	m := startManager(t)
	createExperiment(t, ns, func(s *v1alpha1.AutoResearchSpec) {
		s.Candidates = 4
		s.MaxRounds = 1
	})
	initWorkspace(t, ns)
	baseline(t, ns, "1.000")
	candidates := []string{"a", "b", "c", "d"}
	name := func(c, step string) string { return experiment + "-r1" + c + "-" + step }
	for _, c := range candidates {
		finishPod(t, ns, name(c, stepResearcher), 0, "")
	}
	for _, c := range candidates {
		waitPod(t, ns, name(c, stepCompliance))
	}
	m.stop()
	for _, c := range candidates {
		finishPod(t, ns, name(c, stepCompliance), 0, result(t, steps.ComplianceResult{Strategy: "idea " + c, Candidate: "cafe000" + c}))
	}
	startManager(t)
	for _, c := range candidates {
		waitJob(t, ns, name(c, stepTrain))
	}
}

// TestRestartAtEveryStepOfCandidates is TestRestartAtEveryStep for rounds
// of three candidates: a new manager as soon as each child of each
// candidate appears, and between rounds, finds what the old one made, with
// the children of the other candidates made or ended meanwhile. No child
// is created twice, and every round has one record per candidate, none
// lost and none twice.
func TestRestartAtEveryStepOfCandidates(t *testing.T) {
	requireEnvtest(t)
	ns := newNamespace(t)
	m := startManager(t)
	createExperiment(t, ns, func(s *v1alpha1.AutoResearchSpec) {
		s.Candidates = 3
		s.MaxRounds = 2
	})
	initWorkspace(t, ns)
	baseline(t, ns, "1.000")
	r := newRestarter(t, ns, m)
	candidates := []string{"a", "b", "c"}
	values := [][]string{{"0.9", "0.8", "1.1"}, {"0.85", "0.7", "0.75"}}
	for i, vs := range values {
		n := i + 1
		name := func(c, step string) string { return fmt.Sprintf("%s-r%d%s-%s", experiment, n, c, step) }
		for _, c := range candidates {
			r.pod(name(c, stepResearcher), "")
		}
		for _, c := range candidates {
			r.pod(name(c, stepCompliance), result(t, steps.ComplianceResult{Strategy: "idea " + c, Candidate: fmt.Sprintf("cafe%d00%s", n, c)}))
		}
		for _, c := range candidates {
			r.job(name(c, stepTrain), result(t, trainOK()))
		}
		for k, c := range candidates {
			r.job(name(c, stepEval), result(t, evalValue(vs[k])))
		}
		r.pod(podName(n, stepGit), result(t, steps.GitResult{Commit: fmt.Sprintf("c%dc%dc%d", n, n, n)}))
		r.at(experiment, &v1alpha1.AutoResearch{})
	}
	ar := waitStatus(t, ns, experiment, "the end", func(s v1alpha1.AutoResearchStatus) bool { return s.Phase == v1alpha1.PhaseSucceeded })
	var records []string
	for _, h := range ar.Status.History[1:] {
		records = append(records, fmt.Sprintf("%d%s:%s", h.Round, h.Candidate, h.Verdict))
	}
	want := []string{"1a:superseded", "1b:improved", "1c:not_improved", "2a:not_improved", "2b:improved", "2c:superseded"}
	if !slices.Equal(records, want) {
		t.Errorf("records %q, want %q", records, want)
	}
	if ar.Status.Best.Value != "0.7" {
		t.Errorf("best %+v, want round 2's candidate b, 0.7", ar.Status.Best)
	}
	r.noneMadeTwice()
}

// TestPipelinedRoundOnACluster plays spec.pipeline: round 1's Researcher
// pod starts while the baseline trains, and round 2's on its own copy
// while round 1 trains; once round 1 commits a new best, round 2's
// finished check, made on the old best, is made again, carried onto the
// new one, and round 2 trains.
func TestPipelinedRoundOnACluster(t *testing.T) {
	requireEnvtest(t)
	ns := newNamespace(t)
	startManager(t)
	createExperiment(t, ns, func(s *v1alpha1.AutoResearchSpec) {
		s.Pipeline = ptr.To(true)
		s.MaxRounds = 2
	})
	initWorkspace(t, ns)
	waitJob(t, ns, experiment+"-r0-train-1")
	waitPod(t, ns, podName(1, stepResearcher))
	baseline(t, ns, "1.000")
	finishPod(t, ns, podName(1, stepResearcher), 0, "")
	finishPod(t, ns, podName(1, stepCompliance), 0, result(t, steps.ComplianceResult{Strategy: "idea 1", Candidate: "cand1"}))
	waitJob(t, ns, podName(1, stepTrain))

	researcher := waitPod(t, ns, podName(2, stepResearcher))
	var mounts []string
	for _, m := range researcher.Spec.Containers[0].VolumeMounts {
		if m.Name == volumeWorkspace {
			mounts = append(mounts, m.SubPath)
		}
	}
	if want := []string{"candidates/r2"}; !slices.Equal(mounts, want) {
		t.Errorf("round 2's Researcher, started early, mounts %q of the workspace, want only its copy %q", mounts, want)
	}
	if prepare := strings.Join(researcher.Spec.InitContainers[0].Args, " "); strings.Contains(prepare, "--prepare-worktree") || !strings.Contains(prepare, "--candidate-root=/workspace/candidates/r2") {
		t.Errorf("round 2's preparation %q: want its copy made and the worktree, which round 1 uses, left alone", prepare)
	}
	finishPod(t, ns, podName(2, stepResearcher), 0, "")
	old := waitPod(t, ns, podName(2, stepCompliance))
	if old.Annotations[AnnotationBase] != "start0000000000" {
		t.Errorf("round 2's check names base %q, want the start", old.Annotations[AnnotationBase])
	}
	finishPod(t, ns, podName(2, stepCompliance), 0, result(t, steps.ComplianceResult{Strategy: "idea 2", Candidate: "cand2-old"}))

	finishJob(t, ns, podName(1, stepTrain), 0, result(t, trainOK()))
	finishJob(t, ns, podName(1, stepEval), 0, result(t, evalValue("0.9")))
	finishPod(t, ns, podName(1, stepGit), 0, result(t, steps.GitResult{Commit: "c1c1c1c1c1"}))

	var again *corev1.Pod
	eventually(t, "round 2's check made again on round 1's commit", func() (bool, error) {
		pod := &corev1.Pod{}
		err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: podName(2, stepCompliance)}, pod)
		again = pod
		return err == nil && pod.UID != old.UID, client.IgnoreNotFound(err)
	})
	if args := strings.Join(again.Spec.Containers[0].Args, " "); !strings.Contains(args, "--base=c1c1c1c1c1") || !strings.Contains(args, "--seal-base=start0000000000") {
		t.Errorf("round 2's new check args %q: want it sealed on the start and carried onto c1c1c1c1c1", args)
	}
	finishPod(t, ns, podName(2, stepCompliance), 0, result(t, steps.ComplianceResult{Candidate: "cand2-new"}))
	train := waitJob(t, ns, podName(2, stepTrain))
	if init := strings.Join(train.Spec.Template.Spec.InitContainers[len(train.Spec.Template.Spec.InitContainers)-1].Args, " "); !strings.Contains(init, "--commit=cand2-new") {
		t.Errorf("round 2 trains %q, want the carried candidate", init)
	}
	for _, e := range eventReasons(t, ns) {
		if e == reasonStepRetried {
			t.Errorf("events %v: the check made again is no failure to warn of", eventReasons(t, ns))
		}
	}
}

// TestQueuedCandidate plays a round of three candidates whose queue admits
// the training of two: once those two are trained, the round goes on
// without the third, whose Job is recorded queued and deleted, never
// waited for. The three Researchers end at once, and each is seen.
func TestQueuedCandidate(t *testing.T) {
	requireEnvtest(t)
	ns := newNamespace(t)
	startManager(t)
	createExperiment(t, ns, func(s *v1alpha1.AutoResearchSpec) {
		s.Candidates = 3
		s.MaxRounds = 1
		s.QueueName = "gpu-queue"
	})
	initWorkspace(t, ns)
	baseline(t, ns, "1.000")

	name := func(c, step string) string { return experiment + "-r1" + c + "-" + step }
	cands := []string{"a", "b", "c"}
	for _, c := range cands {
		finishPod(t, ns, name(c, stepResearcher), 0, "")
	}
	for _, c := range cands {
		finishPod(t, ns, name(c, stepCompliance), 0, result(t, steps.ComplianceResult{Strategy: "idea " + c, Candidate: "cafe000" + c}))
	}
	queued := waitJob(t, ns, name("c", stepTrain))
	waitStatus(t, ns, experiment, "the wait for admission", func(s v1alpha1.AutoResearchStatus) bool {
		return s.CurrentRound != nil && strings.Contains(s.CurrentRound.Waiting, "waits for admission to queue gpu-queue")
	})
	// The queue admits a's and b's Jobs, as Kueue does.
	admit := func(job string) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			j := waitJob(t, ns, job)
			j.Spec.Suspend = ptr.To(false)
			return k8s.Update(context.Background(), j)
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []string{stepTrain, stepEval} {
		// Both are admitted before either ends: b is never the one left
		// waiting while the others are done.
		admit(name("a", step))
		admit(name("b", step))
		msg := result(t, trainOK())
		if step == stepEval {
			msg = result(t, evalValue("0.9"))
		}
		for _, c := range []string{"a", "b"} {
			finishJob(t, ns, name(c, step), 0, msg)
		}
	}
	finishPod(t, ns, podName(1, stepGit), 0, result(t, steps.GitResult{Commit: "c1a1a1a1"}))
	ar := waitStatus(t, ns, experiment, "round 1's verdict", func(s v1alpha1.AutoResearchStatus) bool { return s.CompletedRounds == 1 })
	var records []string
	for _, h := range ar.Status.History[1:] {
		records = append(records, h.Candidate+":"+string(h.Verdict))
		if h.Candidate == "c" && !strings.Contains(h.Insight, "queue gpu-queue") {
			t.Errorf("candidate c's insight %q does not name the queue", h.Insight)
		}
	}
	if want := []string{"a:improved", "b:superseded", "c:queued"}; !slices.Equal(records, want) {
		t.Errorf("round 1's records %q, want %q", records, want)
	}
	if !absent(t, queued) {
		t.Error("candidate c's queued training Job was left for the queue to start")
	}
}

// TestCombinedCandidateOnACluster plays spec.combine: both candidates of
// the round improve, so a third, their changes together, gets a check pod
// that merges their sealed commits, and training and evaluation Jobs of its
// own, which read the experiment's hashes from the first candidate's
// ConfigMap, as it has no Researcher and no ConfigMap of its own.
func TestCombinedCandidateOnACluster(t *testing.T) {
	requireEnvtest(t)
	ns := newNamespace(t)
	startManager(t)
	createExperiment(t, ns, func(s *v1alpha1.AutoResearchSpec) {
		s.Candidates = 2
		s.Combine = ptr.To(true)
		s.MaxRounds = 1
	})
	initWorkspace(t, ns)
	baseline(t, ns, "1.000")

	name := func(c, step string) string { return experiment + "-r1" + c + "-" + step }
	values := map[string]string{"a": "0.9", "b": "0.8", "c": "0.7"}
	trainCandidates(t, ns, "a", "b")
	for _, c := range []string{"a", "b"} {
		finishJob(t, ns, name(c, stepEval), 0, result(t, evalValue(values[c])))
	}
	check := waitPod(t, ns, name("c", stepCompliance))
	if args := strings.Join(check.Spec.Containers[0].Args, " "); !strings.Contains(args, "--combine=cafe000a,cafe000b") || strings.Contains(args, "--candidate-root") {
		t.Errorf("the combination's check args %q: want it to merge a's and b's commits, with no Researcher's copy", args)
	}
	finishPod(t, ns, name("c", stepCompliance), 0, result(t, steps.ComplianceResult{Candidate: "cafe000c"}))
	finishJob(t, ns, name("c", stepTrain), 0, result(t, trainOK()))
	eval := waitJob(t, ns, name("c", stepEval))
	var hashes string
	for _, v := range eval.Spec.Template.Spec.Volumes {
		if v.Name == volumeHashes && v.ConfigMap != nil {
			hashes = v.ConfigMap.Name
		}
	}
	if hashes != experiment+"-r1a-prompt" {
		t.Errorf("the combination's evaluation reads the hashes from ConfigMap %q, want the first candidate's", hashes)
	}
	finishJob(t, ns, name("c", stepEval), 0, result(t, evalValue(values["c"])))
	git := waitPod(t, ns, podName(1, stepGit))
	if args := strings.Join(git.Spec.Containers[0].Args, " "); !strings.Contains(args, "--candidate=cafe000c") {
		t.Errorf("git pod args %q: want the combination's commit", args)
	}
	finishPod(t, ns, podName(1, stepGit), 0, result(t, steps.GitResult{Commit: "c1c1c1c1"}))
	ar := waitStatus(t, ns, experiment, "round 1's verdict", func(s v1alpha1.AutoResearchStatus) bool { return s.CompletedRounds == 1 })
	var records []string
	for _, h := range ar.Status.History[1:] {
		records = append(records, h.Candidate+":"+string(h.Verdict)+":"+h.Strategy)
	}
	if want := []string{"a:superseded:idea a", "b:superseded:idea b", "c:improved:1a + 1b together"}; !slices.Equal(records, want) {
		t.Errorf("round 1's records %q, want %q", records, want)
	}
}

// TestConfirmRunsOnACluster plays spec.acceptance.confirmRuns in a round of
// two: the candidate that improves trains and evaluates again in Jobs of
// its own, named for its run and writing a log of their own, while the
// other waits; the round commits it at the mean of its runs.
func TestConfirmRunsOnACluster(t *testing.T) {
	requireEnvtest(t)
	ns := newNamespace(t)
	startManager(t)
	createExperiment(t, ns, func(s *v1alpha1.AutoResearchSpec) {
		s.Candidates = 2
		s.MaxRounds = 1
		s.Acceptance.ConfirmRuns = ptr.To[int32](1)
	})
	initWorkspace(t, ns)
	baseline(t, ns, "1.000")
	name := func(c, step string) string { return experiment + "-r1" + c + "-" + step }
	trainCandidates(t, ns, "a", "b")
	finishJob(t, ns, name("a", stepEval), 0, result(t, evalValue("1.2")))
	finishJob(t, ns, name("b", stepEval), 0, result(t, evalValue("0.8")))

	train := waitJob(t, ns, name("b", stepTrain)+"-2")
	var dirs []string
	for _, job := range []string{name("b", stepTrain), name("b", stepTrain) + "-2"} {
		for _, m := range waitJob(t, ns, job).Spec.Template.Spec.Containers[0].VolumeMounts {
			if m.Name == volumeWorkspace && strings.HasPrefix(m.SubPath, "logs/") {
				dirs = append(dirs, m.SubPath)
			}
		}
	}
	// Neither run's log directory holds the other's: the second sees
	// nothing the first left, and the first cannot plant anything where
	// the second will look.
	if len(dirs) != 2 || strings.HasPrefix(dirs[0]+"/", dirs[1]+"/") || strings.HasPrefix(dirs[1]+"/", dirs[0]+"/") {
		t.Errorf("candidate b's two runs mount the log directories %q, want one of its own each", dirs)
	}
	if init := strings.Join(train.Spec.Template.Spec.InitContainers[len(train.Spec.Template.Spec.InitContainers)-1].Args, " "); !strings.Contains(init, "--commit=cafe000b") {
		t.Errorf("candidate b's second run checks out %q, want its own commit", init)
	}
	finishJob(t, ns, name("b", stepTrain)+"-2", 0, result(t, trainOK()))
	finishJob(t, ns, name("b", stepEval)+"-2", 0, result(t, evalValue("0.9")))
	git := waitPod(t, ns, podName(1, stepGit))
	if args := strings.Join(git.Spec.Containers[0].Args, " "); !strings.Contains(args, "cafe000b") {
		t.Errorf("git pod args %q: want candidate b's commit", args)
	}
	finishPod(t, ns, podName(1, stepGit), 0, result(t, steps.GitResult{Commit: "c1b1b1b1"}))
	ar := waitStatus(t, ns, experiment, "round 1's verdict", func(s v1alpha1.AutoResearchStatus) bool { return s.CompletedRounds == 1 })
	if ar.Status.Best.Value != "0.85" || ar.Status.Best.Commit != "c1b1b1b1" {
		t.Errorf("best %+v, want candidate b at the mean of its runs, 0.85", ar.Status.Best)
	}
	err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name("a", stepTrain) + "-2"}, &batchv1.Job{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("candidate a, which did not improve, ran again (%v)", err)
	}
}

// trainCandidates ends round 1's Researchers, checks and training of
// candidates, each step for all of them in turn; candidate c's idea is
// "idea c" and its commit cafe000c.
func trainCandidates(t *testing.T, ns string, candidates ...string) {
	t.Helper()
	name := func(c, step string) string { return experiment + "-r1" + c + "-" + step }
	for _, c := range candidates {
		finishPod(t, ns, name(c, stepResearcher), 0, "")
	}
	for _, c := range candidates {
		finishPod(t, ns, name(c, stepCompliance), 0, result(t, steps.ComplianceResult{Strategy: "idea " + c, Candidate: "cafe000" + c}))
	}
	for _, c := range candidates {
		finishJob(t, ns, name(c, stepTrain), 0, result(t, trainOK()))
	}
}
