package controllers

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/supervisor"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

const (
	// GPUResource is what training and evaluation pods request.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
	// runAsUser is the non-root user every step pod runs as.
	runAsUser = 65532
	// deadlineBuffer is added to the time limit for Job deadlines, as the
	// seed adds 30 s to its training timeout.
	deadlineBuffer = 30 * time.Second
	// startAllowance is what a Job's deadline also leaves for what comes
	// before its command: the init container (the tools, the checkout and
	// the training outputs) and, without Kueue, waiting for a GPU. The step
	// wrapper holds the command to its time limit; the deadline is only a
	// backstop.
	startAllowance = 10 * time.Minute
	// ownStepDeadline bounds the operator's own steps (the file check, the
	// git step) from their pod's start: none of them takes minutes, and one
	// that hangs is made anew rather than waited for forever.
	ownStepDeadline = 30 * time.Minute
	// cloneDeadline bounds preparing the workspace, which clones the source.
	cloneDeadline = 2 * time.Hour
	// The step wrapper stops the user's process group before the Job's
	// deadline, so that it still reports the timeout itself.
	wrapperBuffer = 20 * time.Second
	wrapperGrace  = 5 * time.Second
	// projectBinary is the autoresearch binary in the operator's image.
	projectBinary = steps.ImageBinary
	// defaultWorkspaceSize of the workspace claim.
	defaultWorkspaceSize = "10Gi"

	volumeWorkspace    = "workspace"
	volumeTools        = "autoresearch-tools"
	volumePrompt       = "prompt"
	volumeHashes       = "fixed-hashes"
	promptKey          = "prompt.md"
	hashesKey          = "fixed-hashes.json"
	volumeResults      = "results"
	volumeGitCreds     = "git-credentials"
	hashesMount        = "/etc/autoresearch-hashes"
	resultsMount       = "/results"
	gitCredsMount      = "/etc/git-credentials"
	volumeOutputSecret = "output-credentials"
	outputSecretMount  = "/etc/autoresearch-output"
	volumeHome         = "home"
	volumeShm          = "shm"
	// volumeHoldout is spec.holdout.volume in the holdout's pod, and
	// volumeHoldoutRun the emptyDir at holdoutScratch that holds its copy
	// of the candidate (holdoutCheckout) and its log.
	volumeHoldout    = "holdout"
	volumeHoldoutRun = "holdout-run"
	holdoutScratch   = "/autoresearch-holdout"
	holdoutCheckout  = "checkout"
	// homeDir is a writable HOME for the non-root user in images that
	// have none for it.
	homeDir  = "/home/autoresearch"
	shmMount = "/dev/shm"
)

// childBuilder makes the children of one experiment.
type childBuilder struct {
	ar    *v1alpha1.AutoResearch
	image string
	// resources are the requests and limits of the containers that run
	// the operator's image.
	resources corev1.ResourceRequirements
}

func (b childBuilder) worktree() steps.Worktree {
	return steps.Worktree{Dir: steps.WorktreeDir, Subdir: string(b.ar.Spec.Source.Subdir), Name: b.ar.Name, Caches: v1alpha1.Strings(b.ar.Spec.Workspace.Caches)}
}

// experimentDir is the experiment directory inside the worktree.
func (b childBuilder) experimentDir() string {
	return path.Join(steps.WorktreeDir, string(b.ar.Spec.Source.Subdir))
}

func (b childBuilder) meta(name string, n int32, step string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: b.ar.Namespace, Labels: childLabels(b.ar, n, step)}
}

func (b childBuilder) workspaceClaim() *corev1.PersistentVolumeClaim {
	ws := b.ar.Spec.Workspace
	size := resource.MustParse(defaultWorkspaceSize)
	if ws.Size != nil {
		size = *ws.Size
	}
	modes := ws.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: b.meta(workspaceClaimName(b.ar), 0, "workspace"),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      modes,
			StorageClassName: ws.StorageClassName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	claim.Labels[LabelExperimentUID] = string(b.ar.UID)
	return claim
}

// podSpec is the restricted, token-less base of every step pod.
func (b childBuilder) podSpec(containers ...corev1.Container) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](runAsUser),
			RunAsGroup:     ptr.To[int64](runAsUser),
			FSGroup:        ptr.To[int64](runAsUser),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: containers,
		Volumes: []corev1.Volume{{
			Name: volumeWorkspace,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: workspaceClaimName(b.ar),
			}},
		}},
	}
}

func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// container is a step container that writes its result to the
// termination message and mounts the whole workspace.
func container(name, image string, args []string) corev1.Container {
	return corev1.Container{
		Name:                     name,
		Image:                    image,
		Command:                  args[:1],
		Args:                     args[1:],
		SecurityContext:          restricted(),
		TerminationMessagePath:   steps.TerminationMessagePath,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts:             []corev1.VolumeMount{{Name: volumeWorkspace, MountPath: steps.WorkspaceMount}},
	}
}

// ownContainer is a step container in the operator's image.
func (b childBuilder) ownContainer(name string, args []string) corev1.Container {
	c := container(name, b.image, args)
	c.Resources = *b.resources.DeepCopy()
	return c
}

// installTools has init, an init container of the operator's image, also
// copy the autoresearch binary into an emptyDir, from where the pod's
// user's image runs the step wrapper; the pod pays for one container
// start, not two.
func installTools(spec *corev1.PodSpec, init *corev1.Container) {
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: volumeTools, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	init.Args = steps.WithTools(init.Args)
	init.VolumeMounts = append(init.VolumeMounts, corev1.VolumeMount{Name: volumeTools, MountPath: steps.ToolsMount})
}

// withHome gives the container a writable HOME on an emptyDir; an env
// entry named HOME that follows, or a template's, overrides it.
func withHome(spec *corev1.PodSpec, c *corev1.Container) {
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: volumeHome, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volumeHome, MountPath: homeDir})
	c.Env = append([]corev1.EnvVar{{Name: "HOME", Value: homeDir}}, c.Env...)
}

func withTools(c corev1.Container) corev1.Container {
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volumeTools, MountPath: steps.ToolsMount, ReadOnly: true})
	return c
}

// pod is a step pod; one whose spec sets no deadline gets ownStepDeadline.
func (b childBuilder) pod(name string, n int32, step string, spec corev1.PodSpec) *corev1.Pod {
	if spec.ActiveDeadlineSeconds == nil {
		spec.ActiveDeadlineSeconds = ptr.To(seconds(ownStepDeadline))
	}
	return &corev1.Pod{ObjectMeta: b.meta(name, n, step), Spec: spec}
}

// initPod clones the source and prepares the worktree.
func (b childBuilder) initPod() *corev1.Pod {
	s := b.ar.Spec
	opts := steps.InitOptions{
		Worktree:  b.worktree(),
		Repo:      steps.SourceDir,
		Metric:    s.Eval.Metric,
		MaxRounds: s.MaxRounds,
		Fixed:     v1alpha1.Strings(s.Fixed.Files),
	}
	if g := s.Source.Git; g != nil {
		opts.CloneURL, opts.Ref = g.URL, g.Ref
	}
	if p := s.Source.PVC; p != nil && p.Path != "" {
		opts.Repo = path.Join(steps.WorkspaceMount, p.Path)
	}
	c := b.ownContainer(stepInit, steps.InitArgs(projectBinary, opts))
	spec := b.podSpec(c)
	if g := s.Source.Git; g != nil && g.CredentialsSecret != "" {
		spec.Containers[0].Env = []corev1.EnvVar{
			secretEnv("GIT_USERNAME", g.CredentialsSecret, "username"),
			secretEnv("GIT_PASSWORD", g.CredentialsSecret, "password"),
		}
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: volumeGitCreds, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: g.CredentialsSecret, Optional: ptr.To(true), DefaultMode: ptr.To[int32](0o400),
		}}})
		spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: volumeGitCreds, MountPath: gitCredsMount, ReadOnly: true})
	}
	spec.ActiveDeadlineSeconds = ptr.To(seconds(cloneDeadline))
	return b.pod(initPodName(b.ar), 0, stepInit, spec)
}

func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key, Optional: ptr.To(true),
	}}}
}

// roundConfigMap holds a round's prompt and the fixed files' hashes that
// its evaluation verifies; in a round of several, a candidate's.
func (b childBuilder) roundConfigMap(a round.Action, prompt string) (*corev1.ConfigMap, error) {
	hashes, err := json.Marshal(steps.HashMap(b.ar.Status.Workspace.FixedFileHashes))
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: b.meta(promptConfigMapName(b.ar, a), a.Round, stepResearcher),
		Data:       map[string]string{promptKey: prompt, hashesKey: string(hashes)},
	}, nil
}

// researcherPod runs the untrusted Researcher: no service-account token,
// the worktree writable, the git directory read-only, the prompt from a
// ConfigMap, API keys only through the spec's secret references, and
// researcher.podTemplate merged over it.
func (b childBuilder) researcherPod(a round.Action) (*corev1.Pod, error) {
	s := b.ar.Spec
	prepare := b.ownContainer("prepare", steps.PrepareArgs(projectBinary, steps.PrepareOptions{
		Worktree: b.worktree(), Round: a.Round, Base: a.BaseCommit, Ledger: a.Ledger,
		Candidate: candidate(a), CandidateRoot: b.candidateRoot(a), Prepare: a.Candidates > 0 && a.Candidate == 0 && !a.Early,
	}))
	image := s.Researcher.Image
	if image == "" {
		image = b.image
	}
	researcher := withTools(corev1.Container{
		Name:                     stepResearcher,
		Image:                    image,
		Command:                  []string{steps.Binary, "researcher-init", s.Researcher.Command},
		WorkingDir:               b.experimentDir(),
		Resources:                s.Researcher.Resources,
		EnvFrom:                  s.Researcher.EnvFrom,
		SecurityContext:          restricted(),
		TerminationMessagePath:   steps.TerminationMessagePath,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Env: append([]corev1.EnvVar{
			{Name: "AUTORESEARCH_PROMPT_FILE", Value: steps.PromptFile},
			{Name: "AUTORESEARCH_ROUND", Value: strconv.Itoa(int(a.Round))},
			{Name: "AUTORESEARCH_EXPERIMENT", Value: b.ar.Name},
			{Name: "AUTORESEARCH_EXPERIENCES", Value: path.Join(b.experimentDir(), workspace.ExperiencesFile)},
			{Name: "AUTORESEARCH_RESULT_FILE", Value: steps.TerminationMessagePath},
			{Name: "AUTORESEARCH_FIXED_FILES", Value: strings.Join(v1alpha1.Strings(s.Fixed.Files), ",")},
			{Name: "PATH", Value: steps.ToolsMount + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		}, s.Researcher.Env...),
		VolumeMounts: []corev1.VolumeMount{
			{Name: volumeWorkspace, MountPath: steps.WorktreeDir, SubPath: "worktree"},
			{Name: volumeWorkspace, MountPath: steps.GitDir, SubPath: workspaceSubPath(steps.GitDir), ReadOnly: true},
			{Name: volumePrompt, MountPath: steps.PromptMount, ReadOnly: true},
		},
	})
	if root := b.candidateRoot(a); root != "" {
		// A candidate of a round of several, or of one started early, sees
		// its own copy of the base commit's files as the worktree, and
		// nothing else of the workspace: no git directory, no other
		// candidate, not the worktree the round before may still use.
		if a.Candidates > 0 {
			researcher.Env = append(researcher.Env, corev1.EnvVar{Name: "AUTORESEARCH_CANDIDATE", Value: candidate(a)})
		}
		researcher.VolumeMounts = []corev1.VolumeMount{
			{Name: volumeWorkspace, MountPath: steps.WorktreeDir, SubPath: workspaceSubPath(root)},
			{Name: volumePrompt, MountPath: steps.PromptMount, ReadOnly: true},
			{Name: volumeTools, MountPath: steps.ToolsMount, ReadOnly: true},
		}
	}
	spec := b.podSpec(researcher)
	withHome(&spec, &spec.Containers[0])
	installTools(&spec, &prepare)
	spec.InitContainers = []corev1.Container{prepare}
	spec.ActiveDeadlineSeconds = ptr.To(seconds(s.ResearcherTimeout()))
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: volumePrompt, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: promptConfigMapName(b.ar, a)},
		Items:                []corev1.KeyToPath{{Key: promptKey, Path: path.Base(steps.PromptFile)}},
	}}})
	pod := b.pod(childName(b.ar, a), a.Round, stepResearcher, spec)
	t, err := mergePodTemplate(corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels}, Spec: pod.Spec}, s.Researcher.PodTemplate, true)
	if err != nil {
		return nil, err
	}
	pod.Labels, pod.Annotations, pod.Spec = t.Labels, t.Annotations, t.Spec
	return pod, nil
}

// compliancePod checks the changed files in the operator's image and, when
// the protocol has kernel targets, their parity in the training image. It
// names the commit it checks on, which a round started early can move on
// from while its check exists.
func (b childBuilder) compliancePod(a round.Action) *corev1.Pod {
	pod := b.checkPod(a)
	pod.Annotations = map[string]string{AnnotationBase: a.BaseCommit}
	return pod
}

func (b childBuilder) checkPod(a round.Action) *corev1.Pod {
	s := b.ar.Spec
	// The check needs nothing of the hidden holdout, and a pod that runs
	// the candidate's kernels is told nothing of it.
	checked := *s.DeepCopy()
	checked.Holdout = nil
	opts := steps.CheckOptions{
		Worktree: b.worktree(), Round: a.Round, Base: a.BaseCommit, Start: b.ar.Status.Workspace.StartCommit, Spec: &checked,
		Candidate: candidate(a), CandidateRoot: b.candidateRoot(a), SealBase: a.SealBase, Combine: a.Combine,
	}
	if len(s.KernelTargets) == 0 {
		return b.pod(childName(b.ar, a), a.Round, stepCompliance, b.podSpec(b.ownContainer(stepCompliance, steps.CheckArgs(projectBinary, opts))))
	}
	opts.AlsoWrite = path.Join(resultsMount, "compliance.json")
	check := b.ownContainer(stepCompliance, steps.CheckArgs(projectBinary, opts))
	check.VolumeMounts = append(check.VolumeMounts, corev1.VolumeMount{Name: volumeResults, MountPath: resultsMount})
	parity := container(containerParity, b.trainImage(), steps.ExecArgs(steps.Binary, steps.ExecOptions{
		Step: steps.StepParity, Round: a.Round, Workdir: b.experimentDir(), Timeout: s.ParityTimeout(),
		Targets: s.KernelTargets, Python: "python3", ComplianceFile: opts.AlsoWrite,
	}))
	// Parity runs in the training environment, its image and its env, on
	// the candidate as sealed, and sees nothing else of the workspace.
	parity.Env = s.Train.Env
	parity.VolumeMounts = []corev1.VolumeMount{
		{Name: volumeWorkspace, MountPath: steps.WorktreeDir, SubPath: workspaceSubPath(b.runDir(a, supervisor.RunParity))},
		{Name: volumeResults, MountPath: resultsMount},
	}
	parity = withTools(parity)
	spec := b.podSpec(parity)
	installTools(&spec, &check)
	spec.InitContainers = append(spec.InitContainers, check)
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: volumeResults, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	// The parity check runs the candidate's kernels under the evaluation's
	// time limit.
	spec.ActiveDeadlineSeconds = ptr.To(seconds(s.EvalTimeout() + ownStepDeadline))
	return b.pod(childName(b.ar, a), a.Round, stepCompliance, spec)
}

func (b childBuilder) trainImage() string {
	if b.ar.Spec.Train.Image != "" {
		return b.ar.Spec.Train.Image
	}
	return b.image
}

func (b childBuilder) evalImage() string {
	if b.ar.Spec.Eval.Image != "" {
		return b.ar.Spec.Eval.Image
	}
	return b.trainImage()
}

// gpuJob runs training or evaluation: the step wrapper in the user's image,
// the GPU requested, a deadline, no retries for candidate failures, and
// disruptions (preemption, eviction) ignored so that they never become a
// verdict; train.podTemplate, and for the evaluation eval.podTemplate,
// merged over its pod.
func (b childBuilder) gpuJob(a round.Action) (*batchv1.Job, error) {
	s := b.ar.Spec
	step := actionStep(a.Type)
	opts := steps.ExecOptions{
		Step: step, Round: a.Round, Workdir: b.experimentDir(),
		TimeLimit: s.Fixed.TimeLimit.Duration, EpochLimit: s.EpochLimitString(),
		Timeout: s.Fixed.TimeLimit.Duration + wrapperBuffer, Grace: wrapperGrace,
	}
	switch {
	case a.Sample > 0 && a.Round > 0:
		// A run that confirms a candidate's improvement gets a log
		// directory of its own beside the round's, never inside it: the
		// first run writes the round's (or its candidate's), and would
		// leave its lucky checkpoint in a directory there for the
		// confirming runs to find.
		opts.LogPath = path.Join(steps.LogsDir, fmt.Sprintf("round-%d-run-%d", a.Round, a.Sample), candidate(a), step+".log")
	case a.Sample > 0:
		opts.LogPath = steps.LogPath(a.Round, fmt.Sprintf("%s-%d", step, a.Sample))
	case a.Candidates > 0:
		opts.LogPath = steps.LogPath(a.Round, path.Join(candidate(a), step))
	}
	command, image := s.Train.Command, b.trainImage()
	limit := s.Fixed.TimeLimit.Duration
	if a.Type == round.ActionRunEval {
		command, image, limit = s.Eval.Command, b.evalImage(), s.EvalTimeout()
		opts.Timeout = limit + wrapperBuffer
		opts.Metric, opts.Pattern, opts.Readings = s.Eval.Metric, s.Eval.Pattern, s.Eval.ConstraintReadings()
		if a.Round > 0 {
			// Round 0 runs the code as the workspace was hashed.
			opts.FixedHashesFile = path.Join(hashesMount, hashesKey)
		}
	}
	opts.Command = []string{"/bin/sh", "-c", command}
	if opts.LogPath == "" {
		opts.LogPath = steps.LogPath(a.Round, step)
	}
	c := container(step, image, steps.ExecArgs(steps.Binary, opts))
	// The step sees its own fresh checkout as the worktree and the round's
	// logs, nothing else of the workspace: not the git directory, not the
	// supervisor's state, not the Researcher's worktree.
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: volumeWorkspace, MountPath: steps.WorktreeDir, SubPath: workspaceSubPath(b.runDir(a, step))},
		{Name: volumeWorkspace, MountPath: path.Dir(opts.LogPath), SubPath: workspaceSubPath(path.Dir(opts.LogPath))},
	}
	spec := b.gpuPodSpec(c)
	checkout := b.checkoutInit(a, step, path.Dir(opts.LogPath))
	installTools(&spec, &checkout)
	spec.InitContainers = append(spec.InitContainers, checkout)
	if opts.FixedHashesFile != "" {
		// The hashes are the experiment's, in each candidate's ConfigMap
		// alike; the first candidate's always exists, and the one
		// spec.combine adds, which has no Researcher, has none of its own.
		first := a
		first.Candidate = 0
		spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: volumeHashes, MountPath: hashesMount, ReadOnly: true})
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: volumeHashes, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: promptConfigMapName(b.ar, first)},
			Items:                []corev1.KeyToPath{{Key: hashesKey, Path: hashesKey}},
		}}})
	}
	return b.userStepJob(a, step, spec, limit)
}

// gpuPodSpec is the pod of a step that runs c, a user's command in a
// user's image through the step wrapper, with training's environment: its
// variables, resources and GPUs, shared memory, nodes and tolerations.
func (b childBuilder) gpuPodSpec(c corev1.Container) corev1.PodSpec {
	s := b.ar.Spec
	c = withTools(c)
	c.WorkingDir = b.experimentDir()
	c.Env = append(slices.Clone(s.Train.Env), c.Env...)
	c.Resources = *s.Train.Resources.DeepCopy()
	if n := ptr.Deref(s.Train.GPUs, 0); n > 0 {
		gpus := *resource.NewQuantity(int64(n), resource.DecimalSI)
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		c.Resources.Limits[GPUResource] = gpus
		c.Resources.Requests[GPUResource] = gpus
	}
	spec := b.podSpec(c)
	withHome(&spec, &spec.Containers[0])
	if shm := s.Train.Shm; shm != nil {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: volumeShm, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(shm.DeepCopy()),
		}}})
		spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: volumeShm, MountPath: shmMount})
	}
	spec.NodeSelector = s.Train.NodeSelector
	spec.Tolerations = s.Train.Tolerations
	return spec
}

// userStepJob is the Job of a step that runs a user's command: a deadline,
// no retries for candidate failures, and disruptions ignored; the pod
// templates merged over spec, and Kueue's queue.
func (b childBuilder) userStepJob(a round.Action, step string, spec corev1.PodSpec, limit time.Duration) (*batchv1.Job, error) {
	s := b.ar.Spec
	meta := b.meta(childName(b.ar, a), a.Round, step)
	job := &batchv1.Job{
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(seconds(limit + deadlineBuffer + startAllowance)),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			}}},
		},
	}
	template, err := b.stepTemplate(corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(meta.Labels)}, Spec: spec}, step)
	if err != nil {
		return nil, err
	}
	job.Spec.Template = template
	if q := s.QueueName; q != "" {
		job.Labels[LabelKueueQueue] = q
		job.Spec.Suspend = ptr.To(true)
	}
	return job, nil
}

// stepTemplate merges train.podTemplate over a training, evaluation or
// holdout pod and then, for the evaluation and the holdout, which runs in
// the evaluation's environment, eval.podTemplate. In those pods
// train.podTemplate's container named train, and eval.podTemplate's named
// eval, patch the step's container.
func (b childBuilder) stepTemplate(t corev1.PodTemplateSpec, step string) (corev1.PodTemplateSpec, error) {
	s := b.ar.Spec
	c := &t.Spec.Containers[0]
	c.Name = steps.StepTrain
	t, err := mergePodTemplate(t, s.Train.PodTemplate, false)
	if err != nil || step == steps.StepTrain {
		return t, err
	}
	t.Spec.Containers[0].Name = steps.StepEval
	if t, err = mergePodTemplate(t, s.Eval.PodTemplate, false); err != nil {
		return t, err
	}
	t.Spec.Containers[0].Name = step
	return t, nil
}

// runDir is where the train or eval step of a checks out its code.
func (b childBuilder) runDir(a round.Action, step string) string {
	return filepath.ToSlash(supervisor.RunDir(steps.StateDir, a.Round, a.Sample, supervisor.CandidateStep(step, candidate(a))))
}

// candidateRoot is where the Researcher of a's candidate works in a round
// of several or started early; "" in a round of one that works in the
// worktree.
func (b childBuilder) candidateRoot(a round.Action) string {
	// The candidate spec.combine adds has no Researcher, and no copy.
	if (a.Candidates == 0 && !a.Early) || len(a.Combine) > 0 {
		return ""
	}
	return path.Join(steps.CandidatesDir, "r"+label(a))
}

// holdoutJob runs the hidden holdout evaluation in the evaluation's
// image and environment. An init container in the operator's image, with
// the workspace mounted read-only, copies the candidate and the outputs of
// the training run the evaluation measured into an emptyDir; the holdout's
// container sees that copy as the worktree, holdout.volume read-only at
// holdout.dir, and nothing of the workspace. It writes its log into the
// emptyDir and nowhere else, so that no later step, and no Researcher,
// reads what it printed; its metric comes back alone in the termination
// message.
func (b childBuilder) holdoutJob(a round.Action) (*batchv1.Job, error) {
	s := b.ar.Spec
	h := s.Holdout
	if h == nil || h.Volume == nil {
		return nil, fmt.Errorf("the holdout has no volume to bring its files to its pod")
	}
	limit := s.HoldoutTimeout()
	c := container(stepHoldout, b.evalImage(), steps.ExecArgs(steps.Binary, steps.ExecOptions{
		Step: steps.StepHoldout, Round: a.Round, Workdir: b.experimentDir(),
		TimeLimit: s.Fixed.TimeLimit.Duration, EpochLimit: s.EpochLimitString(),
		Timeout: limit + wrapperBuffer, Grace: wrapperGrace,
		Metric: s.HoldoutMetric(), Pattern: h.Pattern,
		LogPath: path.Join(holdoutScratch, "holdout.log"),
		Command: []string{"/bin/sh", "-c", h.Command},
	}))
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: volumeHoldoutRun, MountPath: steps.WorktreeDir, SubPath: holdoutCheckout},
		{Name: volumeHoldoutRun, MountPath: holdoutScratch},
		{Name: volumeHoldout, MountPath: h.Dir, ReadOnly: true},
	}
	c.Env = []corev1.EnvVar{{Name: "AUTORESEARCH_HOLDOUT_DIR", Value: h.Dir}}
	spec := b.gpuPodSpec(c)
	checkout := b.ownContainer("checkout", steps.CheckoutArgs(projectBinary, steps.CheckoutOptions{
		Worktree: b.worktree(), Commit: a.Code, Dest: path.Join(holdoutScratch, holdoutCheckout),
		Trained: b.runDir(a, steps.StepTrain), Outputs: v1alpha1.Strings(s.Train.Outputs),
	}))
	checkout.VolumeMounts = []corev1.VolumeMount{
		{Name: volumeWorkspace, MountPath: steps.WorkspaceMount, ReadOnly: true},
		{Name: volumeHoldoutRun, MountPath: holdoutScratch},
	}
	installTools(&spec, &checkout)
	spec.InitContainers = append(spec.InitContainers, checkout)
	spec.Volumes = append(spec.Volumes,
		corev1.Volume{Name: volumeHoldoutRun, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: volumeHoldout, VolumeSource: holdoutVolumeSource(h.Volume)},
	)
	job, err := b.userStepJob(a, stepHoldout, spec, limit)
	if err != nil {
		return nil, err
	}
	writeOnlyInPod(&job.Spec.Template.Spec)
	return job, nil
}

// writeOnlyInPod makes every mount in spec read-only but those of its
// emptyDirs, which die with the pod: a claim that train.podTemplate or
// eval.podTemplate mount writable for a dataset is read-only to the
// holdout, whose candidate code would otherwise leave the holdout's data
// there for a later training run, and so a later Researcher, to read.
func writeOnlyInPod(spec *corev1.PodSpec) {
	inPod := map[string]bool{}
	for _, v := range spec.Volumes {
		inPod[v.Name] = v.EmptyDir != nil
	}
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			for j := range containers[i].VolumeMounts {
				m := &containers[i].VolumeMounts[j]
				m.ReadOnly = m.ReadOnly || !inPod[m.Name]
			}
		}
	}
}

// holdoutPolicy is a NetworkPolicy that selects the experiment's holdout
// pods and allows them no traffic, in or out: candidate code the holdout
// runs has the holdout's data, and would send it where a later Researcher
// collects it. The operator's labels win over a pod template's, so the
// policy selects every holdout pod. A network plugin that enforces
// NetworkPolicy is what makes it hold.
func (b childBuilder) holdoutPolicy() *networkingv1.NetworkPolicy {
	meta := b.meta(holdoutPolicyName(b.ar), 0, stepHoldout)
	return &networkingv1.NetworkPolicy{
		ObjectMeta: meta,
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{
				LabelManagedBy:  ManagerName,
				LabelExperiment: b.ar.Name,
				LabelStep:       stepHoldout,
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

// holdoutVolumeSource is the pod volume of spec.holdout.volume; a claim is
// attached read-only.
func holdoutVolumeSource(v *v1alpha1.HoldoutVolume) corev1.VolumeSource {
	switch {
	case v.ConfigMap != nil:
		return corev1.VolumeSource{ConfigMap: v.ConfigMap.DeepCopy()}
	case v.Secret != nil:
		return corev1.VolumeSource{Secret: v.Secret.DeepCopy()}
	}
	claim := v.PersistentVolumeClaim.DeepCopy()
	claim.ReadOnly = true
	return corev1.VolumeSource{PersistentVolumeClaim: claim}
}

// checkoutInit makes the step's fresh checkout of the action's code with
// the operator's image, which has git; an evaluation's gets the training
// outputs.
func (b childBuilder) checkoutInit(a round.Action, step, logDir string) corev1.Container {
	o := steps.CheckoutOptions{Worktree: b.worktree(), Commit: a.Code, Dest: b.runDir(a, step), LogDir: logDir}
	if step == steps.StepEval {
		o.Trained = b.runDir(a, steps.StepTrain)
		o.Outputs = v1alpha1.Strings(b.ar.Spec.Train.Outputs)
	}
	return b.ownContainer("checkout", steps.CheckoutArgs(projectBinary, o))
}

// workspaceSubPath is a path under steps.WorkspaceMount as a subPath of
// the workspace volume.
func workspaceSubPath(p string) string {
	return strings.TrimPrefix(p, steps.WorkspaceMount+"/")
}

// gitPod commits or rolls back the round and writes its ledger row.
func (b childBuilder) gitPod(a round.Action) *corev1.Pod {
	action := steps.GitRollback
	if a.Type == round.ActionCommit {
		action = steps.GitCommit
	}
	opts := steps.GitOptions{
		Worktree: b.worktree(), Action: action, Base: a.BaseCommit, Candidate: a.Code, Message: a.Message, Ledger: *a.Ledger,
	}
	if action == steps.GitCommit {
		opts.Push = b.push()
	}
	spec := b.podSpec(b.ownContainer(stepGit, steps.GitArgs(projectBinary, opts)))
	if opts.Push != nil {
		b.mountOutputSecret(&spec)
	}
	return b.pod(childName(b.ar, a), a.Round, stepGit, spec)
}

// finishPod writes the final ledger header and commits the ledger.
func (b childBuilder) finishPod(a round.Action) *corev1.Pod {
	args := steps.FinishArgs(projectBinary, steps.FinishOptions{Worktree: b.worktree(), Ledger: *a.Ledger, Push: b.push()})
	spec := b.podSpec(b.ownContainer(stepFinish, args))
	b.mountOutputSecret(&spec)
	return b.pod(childName(b.ar, a), a.Round, stepFinish, spec)
}

// push is how the git steps push to spec.output.git; nil without one.
func (b childBuilder) push() *steps.PushOptions {
	o := b.ar.Spec.Output
	if o == nil || o.Git == nil {
		return nil
	}
	p := &steps.PushOptions{URL: o.Git.URL, Candidates: ptr.Deref(o.Git.Candidates, false)}
	if o.Git.SecretRef != nil {
		p.SecretDir = outputSecretMount
	}
	return p
}

// mountOutputSecret gives the git step the Secret of spec.output.git. Only
// the operator's git steps mount it: no pod that runs the candidate's or
// the Researcher's code does. A missing Secret or key fails the push, which
// a warning reports, and never the step.
func (b childBuilder) mountOutputSecret(spec *corev1.PodSpec) {
	o := b.ar.Spec.Output
	if o == nil || o.Git == nil || o.Git.SecretRef == nil {
		return
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: volumeOutputSecret, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: o.Git.SecretRef.Name, Optional: ptr.To(true), DefaultMode: ptr.To[int32](0o400),
	}}})
	c := &spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volumeOutputSecret, MountPath: outputSecretMount, ReadOnly: true})
}

func seconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return max(s, 1)
}

func describe(a round.Action) string {
	return fmt.Sprintf("R%d %s", a.Round, a.Type)
}
