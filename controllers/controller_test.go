package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

const experiment = "exp"

// createExperiment applies an experiment like a user's kubectl apply.
func createExperiment(t *testing.T, ns string, edit func(*v1alpha1.AutoResearchSpec)) {
	t.Helper()
	ar := builder.MakeAutoResearch(experiment, ns).
		Question("Does a cosine schedule lower val_bpb?").MaxRounds(3).
		Fixed("prepare.py", "eval.py").
		Train("python train.py", "pytorch/pytorch:2.5.1").GPUs(2).
		Edit(func(s *v1alpha1.AutoResearchSpec) {
			s.Train.NodeSelector = map[string]string{"gpu": "h100"}
			s.Train.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}
		}).
		Researcher("claude -p \"$(cat $AUTORESEARCH_PROMPT_FILE)\"", "agents/claude:1").
		ResearcherEnv(corev1.EnvVar{Name: "ANTHROPIC_API_KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "llm"}, Key: "key",
		}}}).
		GitSource("https://example.com/r.git", "main", "exp").
		Obj()
	if edit != nil {
		edit(&ar.Spec)
	}
	if err := k8s.Create(context.Background(), ar); err != nil {
		t.Fatal(err)
	}
}

func podName(n int, step string) string { return fmt.Sprintf("%s-r%d-%s", experiment, n, step) }

// initWorkspace ends the init pod as a clone that succeeded.
func initWorkspace(t *testing.T, ns string) {
	t.Helper()
	finishPod(t, ns, experiment+"-init", 0, result(t, steps.WorkspaceResult{
		Branch: "autoresearch/" + experiment, StartCommit: "start0000000000", FixedHashes: map[string]string{"eval.py": "aa", "prepare.py": "bb"},
	}))
}

// baseline ends round 0 with the given value.
func baseline(t *testing.T, ns, value string) {
	t.Helper()
	finishJob(t, ns, experiment+"-r0-train-1", 0, result(t, steps.TrainResult{ProcessResult: steps.ProcessResult{DurationMS: 2000}}))
	finishJob(t, ns, experiment+"-r0-eval-1", 0, result(t, steps.EvalResult{ProcessResult: steps.ProcessResult{DurationMS: 1000}, Found: true, Value: value}))
}

// playRound ends round n's steps up to its git step: the Researcher,
// compliance, training and evaluation, each with the given outcome.
type roundPlay struct {
	researcherExit    int32
	researcherMessage string
	compliance        steps.ComplianceResult
	train             *steps.TrainResult
	eval              *steps.EvalResult
}

func playRound(t *testing.T, ns string, n int, p roundPlay) {
	t.Helper()
	finishPod(t, ns, podName(n, stepResearcher), p.researcherExit, p.researcherMessage)
	if p.researcherExit != 0 {
		return
	}
	finishPod(t, ns, podName(n, stepCompliance), 0, result(t, p.compliance))
	if p.train == nil {
		return
	}
	finishJob(t, ns, podName(n, stepTrain), int32(p.train.ExitCode), result(t, p.train))
	if p.eval == nil {
		return
	}
	finishJob(t, ns, podName(n, stepEval), int32(p.eval.ExitCode), result(t, p.eval))
}

func trainOK() *steps.TrainResult {
	return &steps.TrainResult{ProcessResult: steps.ProcessResult{DurationMS: 60_000}, FinalLoss: "1.2"}
}

func evalValue(v string) *steps.EvalResult {
	return &steps.EvalResult{ProcessResult: steps.ProcessResult{DurationMS: 5_000}, Found: true, Value: v}
}

func TestExperimentRoundByRound(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	createExperiment(t, ns, nil)

	startWorkspace(t, ns)
	measureBaseline(t, ns)
	playImprovedRound1(t, ns)

	// Round 2: the eval finds no metric.
	playRound(t, ns, 2, roundPlay{train: trainOK(), eval: &steps.EvalResult{ProcessResult: steps.ProcessResult{ExitCode: 1, Tail: "Traceback"}}})
	finishPod(t, ns, podName(2, stepGit), 0, result(t, steps.GitResult{}))

	// Round 3: not better; the last round ends the experiment.
	playRound(t, ns, 3, roundPlay{train: trainOK(), eval: evalValue("0.95")})
	finishPod(t, ns, podName(3, stepGit), 0, result(t, steps.GitResult{}))
	ar := waitStatus(t, ns, experiment, "the end", func(s v1alpha1.AutoResearchStatus) bool { return s.Phase == v1alpha1.PhaseSucceeded })
	checkSucceeded(t, ns, ar)
	// Children of rounds before the previous one are cleaned up.
	eventually(t, "round 1's pods and prompt to go", func() (bool, error) {
		return absent(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName(1, stepResearcher)}}) &&
			absent(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: experiment + "-r1-prompt"}}), nil
	})

	retryFailedFinish(t, ns)

	// Deleting the experiment drops its metric series.
	if err := k8s.Delete(context.Background(), ar); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the experiment's metric series to go", func() (bool, error) {
		return len(experimentSeriesIn(t, ns)) == 0, nil
	})
}

// startWorkspace checks the workspace's claim and clone, and ends the clone.
func startWorkspace(t *testing.T, ns string) {
	t.Helper()
	claim := &corev1.PersistentVolumeClaim{}
	eventually(t, "the workspace claim", func() (bool, error) {
		err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: experiment + "-workspace"}, claim)
		return err == nil, err
	})
	if got := claim.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("10Gi")) != 0 {
		t.Errorf("claim size %s, want the 10Gi default", got.String())
	}
	init := waitPod(t, ns, experiment+"-init")
	checkOwnPod(t, init)
	if args := strings.Join(init.Spec.Containers[0].Args, " "); !strings.Contains(args, "https://example.com/r.git") {
		t.Errorf("init pod args %q do not clone the source", args)
	}
	initWorkspace(t, ns)
}

// measureBaseline plays round 0, the baseline on the GPU, with the value 1.
func measureBaseline(t *testing.T, ns string) {
	t.Helper()
	train := waitJob(t, ns, experiment+"-r0-train-1")
	checkGPUJob(t, train, 930)
	baseline(t, ns, "1.000")
	ar := waitStatus(t, ns, experiment, "the baseline", func(s v1alpha1.AutoResearchStatus) bool { return s.Baseline != nil && s.Baseline.Value != "" })
	if ar.Status.Baseline.Value != "1" || ar.Status.Best.Value != "1" {
		t.Errorf("baseline %+v, best %+v; want 1", ar.Status.Baseline, ar.Status.Best)
	}
}

// playImprovedRound1 plays round 1, in which the untrusted Researcher's
// cosine schedule improves val_bpb to 0.9, and checks its children, status
// and event.
func playImprovedRound1(t *testing.T, ns string) {
	t.Helper()
	researcher := waitPod(t, ns, podName(1, stepResearcher))
	checkResearcherPod(t, researcher)
	prompt := &corev1.ConfigMap{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: experiment + "-r1-prompt"}, prompt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prompt.Data["prompt.md"], "This is Round 1 of 3.") || !strings.Contains(prompt.Data["prompt.md"], "val_bpb=1") {
		t.Errorf("round 1 prompt lacks its round or the baseline:\n%s", prompt.Data["prompt.md"])
	}
	playRound(t, ns, 1, roundPlay{compliance: steps.ComplianceResult{Strategy: "cosine schedule", Candidate: "cafe1111"}, train: trainOK(), eval: evalValue("0.9")})
	checkSealedJob(t, waitJob(t, ns, podName(1, stepTrain)), "train", "cafe1111")
	eval := waitJob(t, ns, podName(1, stepEval))
	checkSealedJob(t, eval, "eval", "cafe1111")
	if args := strings.Join(eval.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--fixed-hashes=") {
		t.Errorf("round 1 eval does not verify the fixed files: %s", args)
	}
	if v := eval.Spec.Template.Spec.Volumes; v[len(v)-1].ConfigMap == nil || v[len(v)-1].ConfigMap.Name != experiment+"-r1-prompt" {
		t.Errorf("round 1 eval does not mount the round's hashes: %+v", v)
	}
	git := waitPod(t, ns, podName(1, stepGit))
	checkOwnPod(t, git)
	if args := strings.Join(git.Spec.Containers[0].Args, " "); !strings.Contains(args, "autoresearch: round 1 — val_bpb=0.9 (improved)") || !strings.Contains(args, "--candidate=cafe1111") {
		t.Errorf("git pod args %q lack the commit message or the sealed candidate", args)
	}
	finishPod(t, ns, podName(1, stepGit), 0, result(t, steps.GitResult{Commit: "c1c1c1c1c1"}))
	ar := waitStatus(t, ns, experiment, "round 1's verdict", func(s v1alpha1.AutoResearchStatus) bool { return s.CompletedRounds == 1 })
	if ar.Status.Best.Value != "0.9" || ar.Status.Best.Commit != "c1c1c1c1c1" || ar.Status.LastVerdict != v1alpha1.VerdictImproved {
		t.Errorf("after round 1: best %+v, last verdict %s", ar.Status.Best, ar.Status.LastVerdict)
	}
	if h := ar.Status.History[1]; h.Strategy != "cosine schedule" || h.Durations.Train == nil {
		t.Errorf("round 1 history %+v lacks the strategy or the durations", h)
	}
	if !hasEvent(t, ns, experiment, "Improved", "Round 1/3: val_bpb=0.9 — improved (committed c1c1c1c)") {
		t.Errorf("no Improved event; events: %v", eventReasons(t, ns))
	}
}

// checkSucceeded checks the experiment that ran its three rounds: its
// history, finish pod, condition, metrics and events.
func checkSucceeded(t *testing.T, ns string, ar *v1alpha1.AutoResearch) {
	t.Helper()
	got := []v1alpha1.Verdict{}
	for _, h := range ar.Status.History {
		got = append(got, h.Verdict)
	}
	want := []v1alpha1.Verdict{v1alpha1.VerdictBaseline, v1alpha1.VerdictImproved, v1alpha1.VerdictEvalFailed, v1alpha1.VerdictNotImproved}
	if !slices.Equal(got, want) {
		t.Errorf("history verdicts %v, want %v", got, want)
	}
	finish := waitPod(t, ns, podName(3, stepFinish))
	if args := strings.Join(finish.Spec.Containers[0].Args, " "); !strings.Contains(args, "completed") {
		t.Errorf("finish pod args %q lack the final ledger status", args)
	}
	if c := condition(ar, v1alpha1.ConditionSucceeded); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonMaxRoundsReached || c.ObservedGeneration != ar.Generation {
		t.Errorf("Succeeded condition %+v, want True MaxRoundsReached at generation %d", c, ar.Generation)
	}
	// The metrics follow the status the reconciler stored.
	eventually(t, "the metrics of the three rounds", func() (bool, error) {
		series := experimentSeriesIn(t, ns)
		return series[`autoresearch_rounds_total{verdict="improved"}`] == 1 &&
			series[`autoresearch_rounds_total{verdict="not_improved"}`] == 1 &&
			series[`autoresearch_best_metric{metric="val_bpb"}`] == 0.9, fmt.Errorf("series %v", series)
	})
	if !hasEvent(t, ns, experiment, "EvalFailed", "never used") {
		t.Errorf("no EvalFailed event; events: %v", eventReasons(t, ns))
	}
}

// retryFailedFinish fails the finish pod, which is made again, and ends the
// new one, which records the ledger's commit.
func retryFailedFinish(t *testing.T, ns string) {
	t.Helper()
	finishPod(t, ns, podName(3, stepFinish), 1, "git: index.lock exists")
	eventually(t, "the failed finish pod to be replaced", func() (bool, error) {
		pod := &corev1.Pod{}
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: podName(3, stepFinish)}, pod)
		return err == nil && pod.Status.Phase == corev1.PodPending, client.IgnoreNotFound(err)
	})
	finishPod(t, ns, podName(3, stepFinish), 0, result(t, steps.GitResult{Commit: "1edge4"}))
	waitStatus(t, ns, experiment, "the final ledger commit", func(st v1alpha1.AutoResearchStatus) bool { return st.LedgerCommit == "1edge4" })
}

// Every verdict path of the engine, as the status and events show it.
func TestVerdicts(t *testing.T) {
	requireEnvtest(t)
	cases := map[string]struct {
		spec    func(*v1alpha1.AutoResearchSpec)
		play    roundPlay
		verdict v1alpha1.Verdict
		reason  string
		insight string
	}{
		"researcher crash": {
			play:    roundPlay{researcherExit: 2},
			verdict: v1alpha1.VerdictResearcherFailed, reason: "ResearcherFailed", insight: "exited with code 2",
		},
		"researcher out of budget": {
			play:    roundPlay{researcherExit: 2, researcherMessage: `{"inputTokens":9,"outputTokens":3,"error":"the turn budget of 60 is spent"}`},
			verdict: v1alpha1.VerdictResearcherFailed, reason: "ResearcherFailed", insight: "the turn budget of 60 is spent",
		},
		"compliance": {
			play:    roundPlay{compliance: steps.ComplianceResult{Violation: "modified fixed file eval.py"}},
			verdict: v1alpha1.VerdictComplianceFailed, reason: "ComplianceFailed", insight: "modified fixed file eval.py",
		},
		"parity": {
			spec: func(s *v1alpha1.AutoResearchSpec) {
				s.KernelTargets = []v1alpha1.KernelTarget{{Name: "rms", NewModule: "kernels:rms", BaselineModule: "eval:rms", Fixture: "eval:fixture"}}
			},
			play:    roundPlay{compliance: steps.ComplianceResult{Parity: "PARITY_FAIL target=rms kind=numerical detail=x"}},
			verdict: v1alpha1.VerdictParityFailed, reason: "ParityFailed", insight: "PARITY_FAIL target=rms",
		},
		"training crash": {
			play:    roundPlay{train: &steps.TrainResult{ProcessResult: steps.ProcessResult{ExitCode: 137, Tail: "Killed"}}},
			verdict: v1alpha1.VerdictTrainFailed, reason: "TrainFailed", insight: "code 137",
		},
		"training diverged": {
			play:    roundPlay{train: &steps.TrainResult{Divergence: "loss: nan at step 10"}},
			verdict: v1alpha1.VerdictTrainFailed, reason: "TrainFailed", insight: "nan",
		},
		"training timeout": {
			play:    roundPlay{train: &steps.TrainResult{ProcessResult: steps.ProcessResult{ExitCode: 143, TimedOut: true}}},
			verdict: v1alpha1.VerdictTrainTimeout, reason: "TrainTimeout", insight: "time limit",
		},
		"fixed file changed before eval": {
			play:    roundPlay{train: trainOK(), eval: &steps.EvalResult{FixedFilesChanged: []string{"eval.py"}}},
			verdict: v1alpha1.VerdictComplianceFailed, reason: "ComplianceFailed", insight: "eval.py",
		},
		"within noise": {
			play:    roundPlay{train: trainOK(), eval: evalValue("0.9995")},
			verdict: v1alpha1.VerdictWithinNoise, reason: "WithinNoise", insight: "noise",
		},
	}
	ns := newNamespace(t)
	startManager(t)
	i := 0
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			i++
			exp := fmt.Sprintf("v%d", i)
			createNamed(t, ns, exp, func(s *v1alpha1.AutoResearchSpec) {
				s.MaxRounds = 1
				s.Acceptance.MinDelta = "0.001"
				if tc.spec != nil {
					tc.spec(s)
				}
			})
			playNamed(t, ns, exp, tc.play)
			finishPod(t, ns, exp+"-r1-git", 0, result(t, steps.GitResult{}))
			ar := waitStatus(t, ns, exp, "the verdict", func(s v1alpha1.AutoResearchStatus) bool { return s.CompletedRounds == 1 })
			h := ar.Status.History[len(ar.Status.History)-1]
			if h.Verdict != tc.verdict || !strings.Contains(h.Insight, tc.insight) {
				t.Errorf("round 1: %s (%q), want %s with %q", h.Verdict, h.Insight, tc.verdict, tc.insight)
			}
			if !hasEvent(t, ns, exp, tc.reason, "Round 1/1") {
				t.Errorf("no %s event", tc.reason)
			}
			if !strings.Contains(strings.Join(waitPod(t, ns, exp+"-r1-git").Spec.Containers[0].Args, " "), "rollback") {
				t.Errorf("the git step of a %s round does not roll back", tc.verdict)
			}
		})
	}
}

// createNamed and playNamed run an experiment of another name through the
// workspace, the baseline (1.0) and round 1.
func createNamed(t *testing.T, ns, name string, edit func(*v1alpha1.AutoResearchSpec)) {
	t.Helper()
	ar := builder.MakeAutoResearch(name, ns).Question("q").MaxRounds(3).TimeLimit(time.Minute).Obj()
	if edit != nil {
		edit(&ar.Spec)
	}
	if err := k8s.Create(context.Background(), ar); err != nil {
		t.Fatal(err)
	}
	finishPod(t, ns, name+"-init", 0, result(t, steps.WorkspaceResult{StartCommit: "s0", FixedHashes: map[string]string{"eval.py": "aa"}}))
	finishJob(t, ns, name+"-r0-train-1", 0, result(t, steps.TrainResult{}))
	finishJob(t, ns, name+"-r0-eval-1", 0, result(t, steps.EvalResult{Found: true, Value: "1.0"}))
}

func playNamed(t *testing.T, ns, name string, p roundPlay) {
	t.Helper()
	finishPod(t, ns, name+"-r1-researcher", p.researcherExit, p.researcherMessage)
	if p.researcherExit != 0 {
		return
	}
	finishPod(t, ns, name+"-r1-compliance", 0, result(t, p.compliance))
	if p.train == nil {
		return
	}
	finishJob(t, ns, name+"-r1-train", int32(p.train.ExitCode), result(t, p.train))
	if p.eval == nil {
		return
	}
	finishJob(t, ns, name+"-r1-eval", int32(p.eval.ExitCode), result(t, p.eval))
}

func condition(ar *v1alpha1.AutoResearch, typ string) *metav1.Condition {
	for i := range ar.Status.Conditions {
		if ar.Status.Conditions[i].Type == typ {
			return &ar.Status.Conditions[i]
		}
	}
	return nil
}

func eventReasons(t *testing.T, ns string) []string {
	return eventsOf(t, ns, experiment)
}

// eventsOf is the reason and message of every event of the experiment
// named name.
func eventsOf(t *testing.T, ns, name string) []string {
	var out []string
	for _, e := range experimentEvents(t, ns, name) {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}

func containsText(s, sub string) bool { return strings.Contains(s, sub) }

// checkStepPod checks what every pod of the operator must be: restricted,
// without a service-account token, owned by the experiment.
// checkOwnPod checks a pod the operator makes without a Job: it has a
// deadline of its own, so that none hangs forever.
func checkOwnPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	checkStepPod(t, pod)
	if pod.Spec.ActiveDeadlineSeconds == nil {
		t.Errorf("%s has no deadline: a step that hangs would be waited for forever", pod.Name)
	}
}

func checkStepPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	s := pod.Spec
	if s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken {
		t.Errorf("%s mounts a service-account token", pod.Name)
	}
	if sc := s.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s pod security context %+v is not restricted", pod.Name, s.SecurityContext)
	}
	for _, c := range append(slices.Clone(s.InitContainers), s.Containers...) {
		// The user's steps may run the operator's image too, with the
		// spec's resources.
		userStep := slices.Contains([]string{stepTrain, stepEval, stepResearcher, containerParity}, c.Name)
		if c.Image == testImage && !userStep && !equality.Semantic.DeepEqual(c.Resources, DefaultStepResources()) {
			t.Errorf("%s container %s of the operator's image has resources %+v, want the step resources", pod.Name, c.Name, c.Resources)
		}
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("%s container %s security context %+v is not restricted", pod.Name, c.Name, sc)
		}
	}
	if s.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s restart policy %s", pod.Name, s.RestartPolicy)
	}
	owner := metav1.GetControllerOf(pod)
	if pod.Namespace != "" && pod.Labels[LabelExperiment] != "" && (owner == nil || owner.Kind != "AutoResearch") && pod.Labels["batch.kubernetes.io/job-name"] == "" {
		t.Errorf("%s is not owned by its experiment: %+v", pod.Name, pod.OwnerReferences)
	}
}

// checkSealedJob checks that a train or eval Job of round 1 runs a fresh
// checkout of the sealed candidate, made by an init container, and that its
// container sees nothing else of the workspace but the round's logs: not
// the git directory, the supervisor's state or the Researcher's worktree.
func checkSealedJob(t *testing.T, job *batchv1.Job, step, candidate string) {
	t.Helper()
	spec := job.Spec.Template.Spec
	var checkout string
	for _, c := range spec.InitContainers {
		if c.Name == "checkout" {
			checkout = strings.Join(c.Args, " ")
		}
	}
	run := "/workspace/state/runs/r1/" + step
	if !strings.Contains(checkout, "--commit="+candidate) || !strings.Contains(checkout, "--dest="+run) {
		t.Errorf("%s: checkout init container args %q, want the candidate %s checked out into %s", job.Name, checkout, candidate, run)
	}
	// The step's log directory is mounted by subPath: the checkout makes
	// it as the step's user, or the kubelet makes it owned by root.
	if !strings.Contains(checkout, "--log-dir=/workspace/logs/round-1") {
		t.Errorf("%s: checkout %q does not make the step's log directory", job.Name, checkout)
	}
	if step == "eval" && !strings.Contains(checkout, "--trained=/workspace/state/runs/r1/train ") {
		t.Errorf("%s: the evaluation's checkout %q does not get the training outputs", job.Name, checkout)
	}
	var workspace []string
	for _, m := range spec.Containers[0].VolumeMounts {
		if m.Name == volumeWorkspace {
			workspace = append(workspace, m.SubPath+" at "+m.MountPath)
		}
	}
	want := []string{"state/runs/r1/" + step + " at " + steps.WorktreeDir, "logs/round-1 at /workspace/logs/round-1"}
	if !slices.Equal(workspace, want) {
		t.Errorf("%s mounts %q of the workspace, want only %q", job.Name, workspace, want)
	}
}

func checkResearcherPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	checkStepPod(t, pod)
	c := pod.Spec.Containers[0]
	if c.Image != "agents/claude:1" || pod.Spec.ActiveDeadlineSeconds == nil || *pod.Spec.ActiveDeadlineSeconds != 600 {
		t.Errorf("researcher image %s deadline %v; want agents/claude:1 and 2 × 300 s", c.Image, pod.Spec.ActiveDeadlineSeconds)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m, ok := mounts[steps.SourceDir+"/.git"]; !ok || !m.ReadOnly {
		t.Errorf("the git directory is not mounted read-only: %+v", c.VolumeMounts)
	}
	if m, ok := mounts[steps.WorktreeDir]; !ok || m.ReadOnly {
		t.Errorf("the worktree is not mounted writable: %+v", c.VolumeMounts)
	}
	if _, ok := mounts[steps.PromptMount]; !ok {
		t.Errorf("the prompt is not mounted: %+v", c.VolumeMounts)
	}
	if c.WorkingDir != steps.WorktreeDir+"/exp" {
		t.Errorf("working directory %s, want the experiment directory", c.WorkingDir)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["ANTHROPIC_API_KEY"]; e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.Value != "" {
		t.Errorf("the API key does not come from a Secret: %+v", e)
	}
	if env["AUTORESEARCH_PROMPT_FILE"].Value != steps.PromptFile {
		t.Errorf("AUTORESEARCH_PROMPT_FILE = %q", env["AUTORESEARCH_PROMPT_FILE"].Value)
	}
}

func checkGPUJob(t *testing.T, job *batchv1.Job, deadline int64) {
	t.Helper()
	s := job.Spec
	if s.BackoffLimit == nil || *s.BackoffLimit != 0 || s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds != deadline {
		t.Errorf("%s backoffLimit %v deadline %v; want 0 and %d", job.Name, s.BackoffLimit, s.ActiveDeadlineSeconds, deadline)
	}
	if p := s.PodFailurePolicy; p == nil || len(p.Rules) == 0 || p.Rules[0].Action != batchv1.PodFailurePolicyActionIgnore ||
		len(p.Rules[0].OnPodConditions) == 0 || p.Rules[0].OnPodConditions[0].Type != corev1.DisruptionTarget {
		t.Errorf("%s pod failure policy %+v does not ignore disruptions", job.Name, p)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.Name}, Spec: s.Template.Spec}
	checkStepPod(t, pod)
	c := s.Template.Spec.Containers[0]
	if got := c.Resources.Limits[GPUResource]; got.Value() != 2 {
		t.Errorf("%s GPU limit %s, want 2", job.Name, got.String())
	}
	if c.Image != "pytorch/pytorch:2.5.1" || s.Template.Spec.NodeSelector["gpu"] != "h100" || len(s.Template.Spec.Tolerations) != 1 {
		t.Errorf("%s image %s, node selector %v, tolerations %v", job.Name, c.Image, s.Template.Spec.NodeSelector, s.Template.Spec.Tolerations)
	}
	if c.Command[0] != steps.Binary {
		t.Errorf("%s does not run the step wrapper: %v", job.Name, c.Command)
	}
	for k, v := range map[string]string{LabelExperiment: experiment, LabelStep: "train"} {
		if job.Labels[k] != v {
			t.Errorf("%s label %s = %q, want %q", job.Name, k, job.Labels[k], v)
		}
	}
}
