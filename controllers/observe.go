package controllers

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// world is what the reconciler found of an experiment's children.
type world struct {
	pods map[string]*corev1.Pod
	jobs map[string]*batchv1.Job
	// jobPods are the pods of each Job, by Job name.
	jobPods map[string][]*corev1.Pod
	// now is when the world was read.
	now time.Time
}

// stepFailure is a child that ended without a result the engine can use,
// through no fault of the candidate: it is deleted and created again.
type stepFailure struct {
	name   string
	reason string
	// outdated says that the child does what the round no longer asks
	// for, which is no failure: it is made anew without a warning.
	outdated bool
	// neverRan says that the child's command never started: it waited,
	// and is made anew at once however often that happens.
	neverRan bool
}

// observe turns the state of the children that perform the actions in
// progress into the engine's observation: the first child that broke, or
// else the first that finished; a Tick while all still run. The others
// are seen in the reconciles that follow.
func observe(ar *v1alpha1.AutoResearch, spec *v1alpha1.AutoResearchSpec, w world) (round.Observation, *stepFailure) {
	tick := round.Observation{Kind: round.ObserveTick}
	for _, a := range round.CurrentActions(spec, &ar.Status) {
		obs, failure := observeAction(ar, a, w)
		if failure != nil || obs.Kind != round.ObserveTick {
			return obs, failure
		}
	}
	return tick, nil
}

// observeAction is what the child that performs a says of it.
func observeAction(ar *v1alpha1.AutoResearch, a round.Action, w world) (round.Observation, *stepFailure) {
	tick := round.Observation{Kind: round.ObserveTick}
	name := childName(ar, a)
	if a.Type == round.ActionRunTrain || a.Type == round.ActionRunEval || a.Type == round.ActionRunHoldout {
		if queued(ar, a, w.jobs[name]) {
			return round.Observation{Kind: round.ObserveQueued, Round: a.Round, Candidate: a.Candidate}, nil
		}
		if podsBehind(w.jobs[name], w.jobPods[name], w.now) {
			return tick, nil
		}
		if f := stoppedBeforeItsTime(w.jobs[name], w.jobPods[name]); f != nil {
			return tick, f
		}
		if f := lostItsPod(w.jobs[name], w.jobPods[name]); f != nil {
			return tick, f
		}
		return observeGPUStep(a, w.jobs[name], w.jobPods[name]), nil
	}
	pod := w.pods[name]
	if pod != nil && a.Type == round.ActionCheckCompliance && pod.Annotations[AnnotationBase] != a.BaseCommit {
		// Checked on an older best, which the round has moved on from
		// (spec.pipeline): the check is made again on the new one.
		return tick, &stepFailure{name: name, reason: "the check was made on an older best", outdated: true}
	}
	if !podFinished(pod) {
		return tick, nil
	}
	if pod.Status.Phase == corev1.PodFailed && (pod.DeletionTimestamp != nil || disrupted(pod)) {
		return tick, &stepFailure{name: name, reason: "the pod was deleted or disrupted before it finished, which is the cluster's doing, never a verdict"}
	}
	obs := round.Observation{Round: a.Round, Candidate: a.Candidate}
	switch a.Type {
	case round.ActionPrepareWorkspace:
		return observeWorkspace(pod), nil
	case round.ActionRunResearcher:
		obs.Kind = round.ObserveResearcherFinished
		obs.Researcher = observeResearcher(pod)
	case round.ActionCheckCompliance:
		// The file check, in the operator's image, says what the candidate
		// is and which rules it broke; the parity container, which runs the
		// candidate's kernels, adds its parity line and nothing else.
		var res steps.ComplianceResult
		check := containerTerminated(pod, stepCompliance)
		if check == nil {
			return tick, &stepFailure{name: name, reason: "the compliance check ended without a result: " + podProblem(pod, nil)}
		}
		if err := steps.Decode(check.Message, &res); err != nil {
			return tick, &stepFailure{name: name, reason: "the compliance check ended without a result: " + podProblem(pod, err)}
		}
		res.Parity = ""
		if parity := containerTerminated(pod, containerParity); parity != nil && res.Violation == "" && !res.NoChange {
			var pr steps.ComplianceResult
			if err := steps.Decode(parity.Message, &pr); err != nil || parity.ExitCode != 0 {
				res.Parity = fmt.Sprintf("PARITY_FAIL kind=crash detail=the parity check ended with exit code %d and no result", parity.ExitCode)
			} else {
				res.Parity = pr.Parity
			}
		}
		obs.Kind = round.ObserveComplianceChecked
		obs.Compliance = &round.ComplianceResult{Strategy: res.Strategy, Violation: res.Violation, Parity: res.Parity, Advisory: res.Advisory, NoChange: res.NoChange, Candidate: res.Candidate, Conflict: res.Conflict}
	case round.ActionCommit, round.ActionRollback, round.ActionFinish:
		var res steps.GitResult
		if pod.Status.Phase != corev1.PodSucceeded {
			return tick, &stepFailure{name: name, reason: fmt.Sprintf("the %s step failed: %s", actionStep(a.Type), podProblem(pod, nil))}
		}
		if err := steps.Decode(lastTerminated(pod).Message, &res); err != nil {
			return tick, &stepFailure{name: name, reason: fmt.Sprintf("the %s step ended without a result: %s", actionStep(a.Type), podProblem(pod, err))}
		}
		obs.Commit = res.Commit
		if p := res.Push; p != nil {
			obs.Push = &round.PushResult{Commit: p.Commit, Error: p.Error}
		}
		obs.Kind = map[round.ActionType]round.ObservationKind{
			round.ActionCommit: round.ObserveCommitted, round.ActionRollback: round.ObserveRolledBack, round.ActionFinish: round.ObserveFinished,
		}[a.Type]
	default:
		return tick, nil
	}
	return obs, nil
}

// awaitsAdmission reports a Job Kueue has not admitted: the operator made
// it suspended, for Kueue to start once it has the quota.
func awaitsAdmission(job *batchv1.Job) bool {
	return job != nil && job.Labels[LabelKueueQueue] != "" && job.Spec.Suspend != nil && *job.Spec.Suspend
}

// queued reports a's Job waiting for admission when the round would wait
// for the queue alone (round.Queueable).
func queued(ar *v1alpha1.AutoResearch, a round.Action, job *batchv1.Job) bool {
	cr := ar.Status.CurrentRound
	return awaitsAdmission(job) && cr != nil && cr.Number == a.Round && round.Queueable(cr, a.Candidate)
}

// podLag bounds how long a finished Job waits for its pods to reach the
// cache; a pod deleted before the cache saw it never does.
const podLag = 15 * time.Second

// podsBehind reports a finished training or evaluation Job whose ended
// pods the cache has not seen yet: Jobs and pods come through separate
// watches, so a Job can be seen complete while its pod still looks
// running, and its result would be read as missing. A Job its deadline
// ended has pods the Job controller deleted, which need not end.
func podsBehind(job *batchv1.Job, pods []*corev1.Pod, now time.Time) bool {
	if !jobFinished(job) {
		return false
	}
	end := jobCondition(job, batchv1.JobComplete)
	if end == nil {
		end = jobCondition(job, batchv1.JobFailed)
	}
	if end.Reason == batchv1.JobReasonDeadlineExceeded || now.Sub(end.LastTransitionTime.Time) > podLag {
		return false
	}
	var succeeded, failed int32
	for _, p := range pods {
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			succeeded++
		case corev1.PodFailed:
			failed++
		}
	}
	return succeeded < job.Status.Succeeded || failed < job.Status.Failed
}

// stoppedBeforeItsTime is a training or evaluation Job that its deadline
// ended before its command ever ran: the deadline counts from the Job's
// start, and waiting for a GPU, for admission or for an image is not the
// candidate's doing, so the Job is made anew rather than judged. The
// deadline leaves startAllowance for that; a command that did run and was
// stopped by the deadline is judged, so that a candidate the kubelet keeps
// evicting cannot be retried forever.
func stoppedBeforeItsTime(job *batchv1.Job, pods []*corev1.Pod) *stepFailure {
	if job == nil {
		return nil
	}
	failed := jobCondition(job, batchv1.JobFailed)
	if failed == nil || failed.Reason != batchv1.JobReasonDeadlineExceeded {
		return nil
	}
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil || cs.State.Terminated != nil && !cs.State.Terminated.StartedAt.IsZero() {
				return nil
			}
		}
	}
	return &stepFailure{name: job.Name, neverRan: true,
		reason: job.Name + " reached its deadline before its command ran: it waited for a GPU, admission or its image, which is never a verdict"}
}

// lostItsPod is a failed training or evaluation Job whose pods were all
// deleted or disrupted before they ended on their own: nothing says the
// candidate failed. A Job its deadline ended is stoppedBeforeItsTime's to
// judge, and one whose pods are gone says nothing either way: it is judged.
func lostItsPod(job *batchv1.Job, pods []*corev1.Pod) *stepFailure {
	if job == nil || len(pods) == 0 {
		return nil
	}
	if failed := jobCondition(job, batchv1.JobFailed); failed == nil || failed.Reason == batchv1.JobReasonDeadlineExceeded {
		return nil
	}
	for _, p := range pods {
		if !podFinished(p) || (p.DeletionTimestamp == nil && !disrupted(p)) {
			return nil
		}
	}
	return &stepFailure{name: job.Name, reason: job.Name + " failed after its pod was deleted or disrupted, which is the cluster's doing, never a verdict"}
}

// disrupted reports a pod the cluster took away for reasons of its own:
// preemption, a node taint, the eviction API or garbage collection. The
// kubelet's own termination (a pod over its ephemeral storage, node
// pressure) may be the candidate's doing, and is judged.
func disrupted(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			switch c.Reason {
			case "PreemptionByScheduler", "DeletionByTaintManager", "EvictionByEvictionAPI", "DeletionByPodGC":
				return true
			}
		}
	}
	return false
}

// evictedByTheKubelet is a pod of a Job that the kubelet evicted for the
// node's pressure: for its disk (an emptyDir, its logs, its writable
// layer) or its memory, which the eviction manager takes from the pods
// that use the most of it beyond their requests. Training that fills the
// node's disk gets itself evicted, and the Job, which ignores disruptions,
// would run it again: a candidate that retried until it was lucky, or
// resumed from what it left on the workspace, would be judged on a run
// longer than the protocol's. It is the candidate's failure. A node's
// shutdown, which the kubelet reports with the same condition, is not.
func evictedByTheKubelet(pods []*corev1.Pod) *corev1.Pod {
	for _, p := range pods {
		if p.Status.Phase != corev1.PodFailed || p.Status.Reason != reasonEvicted || p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonTerminationByKubelet {
				return p
			}
		}
	}
	return nil
}

// wait is why a step's pod has not started: the event's type and reason,
// and the words a user reads.
type wait struct {
	eventType, reason, message string
	// refusal is a child the API server refused to create.
	refusal bool
}

// blockedReasons are the container states that need someone to act: a
// missing Secret or ConfigMap, an image that cannot be pulled.
var blockedReasons = []string{
	"CreateContainerConfigError", "CreateContainerError", "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
}

// waitReason says why a step's pods wait to start; the zero wait when none
// does.
func waitReason(pods []*corev1.Pod) wait {
	for _, p := range pods {
		if p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return wait{eventType: corev1.EventTypeNormal, reason: reasonQueued, message: fmt.Sprintf("%s waits to be scheduled: %s", p.Name, cmp.Or(c.Message, c.Reason))}
			}
		}
		for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil && slices.Contains(blockedReasons, w.Reason) {
				return wait{eventType: corev1.EventTypeWarning, reason: reasonStepBlocked, message: fmt.Sprintf("%s cannot start its container %s: %s: %s", p.Name, cs.Name, w.Reason, w.Message)}
			}
		}
	}
	return wait{}
}

// observeGPUStep reads a finished training, evaluation or holdout Job, or
// one whose pod succeeded: the Job controller marks the Job complete a
// second or more after its pod ends, while the GPUs wait, and a pod's
// success is final, so its result is read at once. A failed pod waits for
// the Job, whose failure policy may replace it, but for one the kubelet
// evicted, which is judged at once.
func observeGPUStep(a round.Action, job *batchv1.Job, pods []*corev1.Pod) round.Observation {
	evicted := evictedByTheKubelet(pods)
	if !jobFinished(job) && !slices.ContainsFunc(pods, podSucceeded) && evicted == nil {
		return round.Observation{Kind: round.ObserveTick}
	}
	if evicted != nil {
		// The Job ignores the pod's disruption and would run the
		// candidate again: the operator stops it (judgedButRunning).
		pods = []*corev1.Pod{evicted}
	}
	obs := round.Observation{Round: a.Round, Candidate: a.Candidate}
	switch a.Type {
	case round.ActionRunTrain:
		var res steps.TrainResult
		exit := observeJob(job, pods, &res.ProcessResult, &res)
		evictedExit(&exit, evicted)
		obs.Kind = round.ObserveTrainFinished
		obs.Train = &round.TrainResult{Exit: exit, Divergence: res.Divergence, FinalLoss: res.FinalLoss, MemoryGB: res.MemoryGB}
		return obs
	case round.ActionRunHoldout:
		var res steps.EvalResult
		exit := observeJob(job, pods, &res.ProcessResult, &res)
		evictedExit(&exit, evicted)
		// Whatever a failed pod said is the holdout's, and the user's alone.
		exit.Tail = ""
		obs.Kind = round.ObserveHoldoutFinished
		obs.Holdout = &round.HoldoutResult{Exit: exit, Found: res.Found, Value: res.Value}
		return obs
	}
	var res steps.EvalResult
	exit := observeJob(job, pods, &res.ProcessResult, &res)
	evictedExit(&exit, evicted)
	obs.Kind = round.ObserveEvalFinished
	obs.Eval = &round.EvalResult{Exit: exit, Found: res.Found, Value: res.Value, FixedFilesChanged: res.FixedFilesChanged, Readings: res.Readings}
	return obs
}

// evictedExit makes the exit of a step whose pod the kubelet evicted a
// failure that says so.
func evictedExit(exit *round.ProcessExit, evicted *corev1.Pod) {
	if evicted == nil {
		return
	}
	exit.ExitCode = max(exit.ExitCode, 1)
	exit.Tail = strings.TrimSpace(exit.Tail + "\nevicted by the kubelet: " + evicted.Status.Message)
}

func observeWorkspace(pod *corev1.Pod) round.Observation {
	var res steps.WorkspaceResult
	err := steps.Decode(lastTerminated(pod).Message, &res)
	switch {
	case err != nil:
		return round.Observation{Kind: round.ObserveWorkspaceFailed, Error: podProblem(pod, err)}
	case res.Error != "" || pod.Status.Phase != corev1.PodSucceeded:
		return round.Observation{Kind: round.ObserveWorkspaceFailed, Error: cmp.Or(res.Error, podProblem(pod, nil))}
	}
	return round.Observation{Kind: round.ObserveWorkspaceReady, Workspace: &round.WorkspaceResult{
		Path: steps.WorktreeDir, ClaimName: claimOf(pod), Branch: res.Branch, StartCommit: res.StartCommit, FixedHashes: steps.FileHashes(res.FixedHashes),
		FixedRegions: res.FixedRegions,
	}}
}

// claimOf is the claim that holds a step pod's workspace.
func claimOf(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == volumeWorkspace && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}

func observeResearcher(pod *corev1.Pod) *round.ResearcherResult {
	term := containerTerminated(pod, stepResearcher)
	res := &round.ResearcherResult{Exit: exitOf(pod, term)}
	if term != nil {
		var report steps.ResearcherReport
		if json.Unmarshal([]byte(term.Message), &report) == nil {
			res.Usage = report.Usage()
			res.Exit.Tail = cmp.Or(report.Error, res.Exit.Tail)
		} else {
			res.Exit.Tail = term.Message
		}
	}
	return res
}

// observeJob reads a finished Job's result from its last pod's termination
// message into res, whose process result is pr, and returns how the user
// process ended.
func observeJob(job *batchv1.Job, pods []*corev1.Pod, pr *steps.ProcessResult, res any) round.ProcessExit {
	var pod *corev1.Pod
	for _, p := range pods {
		if podFinished(p) && (pod == nil || p.CreationTimestamp.After(pod.CreationTimestamp.Time)) {
			pod = p
		}
	}
	exit := round.ProcessExit{}
	var term *corev1.ContainerStateTerminated
	if pod != nil {
		term = lastTerminated(pod)
		exit = exitOf(pod, term)
	}
	if term != nil && steps.Decode(term.Message, res) == nil {
		exit.ExitCode, exit.TimedOut, exit.Tail = pr.ExitCode, pr.TimedOut, pr.Tail
		exit.Duration = time.Duration(pr.DurationMS) * time.Millisecond
		// The step wrapper outlived the process the kernel killed: only
		// the runtime knows why it died, and the insight ends with that.
		if term.Reason == reasonOOMKilled {
			exit.Tail = strings.TrimSpace(exit.Tail + "\n" + oomKilled)
		}
	}
	failed := jobCondition(job, batchv1.JobFailed)
	if failed != nil && failed.Reason == batchv1.JobReasonDeadlineExceeded {
		exit.TimedOut = true
		if exit.Duration == 0 && job.Status.StartTime != nil {
			exit.Duration = failed.LastTransitionTime.Sub(job.Status.StartTime.Time)
		}
	}
	if failed != nil && exit.ExitCode == 0 && !exit.TimedOut {
		exit.ExitCode = 1
		exit.Tail = cmp.Or(exit.Tail, failed.Message)
	}
	return exit
}

const (
	// reasonEvicted is the reason the kubelet's eviction manager gives a
	// pod it evicted.
	reasonEvicted = "Evicted"
	// reasonOOMKilled is the reason a container runtime gives a container
	// in which the kernel killed a process for its memory limit.
	reasonOOMKilled = "OOMKilled"
	oomKilled       = "OOMKilled: a process went over the container's memory limit and the kernel killed it"
)

func exitOf(pod *corev1.Pod, term *corev1.ContainerStateTerminated) round.ProcessExit {
	exit := round.ProcessExit{TimedOut: pod.Status.Reason == "DeadlineExceeded"}
	if term != nil {
		exit.ExitCode = int(term.ExitCode)
		exit.Duration = term.FinishedAt.Sub(term.StartedAt.Time)
		switch term.Reason {
		case "", "Completed", "Error":
		case reasonOOMKilled:
			exit.Tail = oomKilled
		default:
			exit.Tail = term.Reason
		}
	} else if pod.Status.Phase == corev1.PodFailed {
		exit.ExitCode = 1
		exit.Tail = cmp.Or(pod.Status.Message, pod.Status.Reason)
	}
	if exit.TimedOut && pod.Status.StartTime != nil && exit.Duration == 0 {
		exit.Duration = time.Since(pod.Status.StartTime.Time)
	}
	return exit
}

func podFinished(pod *corev1.Pod) bool {
	return pod != nil && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed)
}

func podSucceeded(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded
}

func jobFinished(job *batchv1.Job) bool {
	return job != nil && (jobCondition(job, batchv1.JobComplete) != nil || jobCondition(job, batchv1.JobFailed) != nil)
}

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func containerTerminated(pod *corev1.Pod, name string) *corev1.ContainerStateTerminated {
	for _, cs := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		if cs.Name == name {
			return cs.State.Terminated
		}
	}
	return nil
}

// lastTerminated is the state of the pod's main container: the last one.
func lastTerminated(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	if n := len(pod.Spec.Containers); n > 0 {
		if t := containerTerminated(pod, pod.Spec.Containers[n-1].Name); t != nil {
			return t
		}
	}
	return &corev1.ContainerStateTerminated{}
}

func podProblem(pod *corev1.Pod, err error) string {
	var parts []string
	if err != nil {
		parts = append(parts, err.Error())
	}
	for _, cs := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			parts = append(parts, fmt.Sprintf("container %s exited with code %d: %s", cs.Name, t.ExitCode, strings.TrimSpace(cmp.Or(t.Message, t.Reason))))
		}
	}
	if pod.Status.Message != "" {
		parts = append(parts, pod.Status.Message)
	}
	return strings.Join(parts, "; ")
}
