package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Direction says whether a larger or a smaller metric value is better.
// +kubebuilder:validation:Enum=maximize;minimize
type Direction string

const (
	DirectionMaximize Direction = "maximize"
	DirectionMinimize Direction = "minimize"
)

// AutoResearchSpec is the research protocol: what to improve, which files are
// fixed and which may change, how to train and how the fixed evaluation
// measures the result.
// +kubebuilder:validation:XValidation:rule="!has(self.fixed.files) || !self.fixed.files.map(f, f.endsWith('/') ? f : f + '/').exists(d, self.variable.files.exists(v, (v + '/').startsWith(d)))",message="a file cannot be both fixed and variable: fixed.files names a variable file or a directory that holds one; remove it from fixed.files or variable.files",fieldPath=".fixed.files"
// +kubebuilder:validation:XValidation:rule="!has(self.train.outputs) || !self.train.outputs.exists(o, (has(self.fixed.files) && self.fixed.files.exists(f, f == o || f.startsWith(o + '/') || o.startsWith(f.endsWith('/') ? f : f + '/'))) || (has(self.variable.files) && self.variable.files.exists(f, f == o || f.startsWith(o + '/') || o.startsWith(f + '/'))))",message="train.outputs may not hold or lie inside a fixed or variable file: the evaluation runs those as sealed, never as training left them",fieldPath=".train.outputs"
// +kubebuilder:validation:XValidation:rule="self.fixed == oldSelf.fixed",message="fixed cannot change once the experiment exists: the baseline and every verdict were measured under it; start a new experiment instead",fieldPath=".fixed"
// +kubebuilder:validation:XValidation:rule="self.train.command == oldSelf.train.command && (has(self.train.outputs) ? self.train.outputs : []) == (has(oldSelf.train.outputs) ? oldSelf.train.outputs : [])",message="train.command and train.outputs cannot change once the experiment exists: the baseline and every verdict were measured under it; start a new experiment instead",fieldPath=".train"
// +kubebuilder:validation:XValidation:rule="self.eval.command == oldSelf.eval.command && self.eval.metric == oldSelf.eval.metric && self.eval.direction == oldSelf.eval.direction && has(self.eval.pattern) == has(oldSelf.eval.pattern) && (!has(self.eval.pattern) || self.eval.pattern == oldSelf.eval.pattern)",message="eval.command, eval.metric, eval.direction and eval.pattern cannot change once the experiment exists: they are the measure of every verdict; start a new experiment instead",fieldPath=".eval"
// +kubebuilder:validation:XValidation:rule="has(self.baseline) == has(oldSelf.baseline) && (!has(self.baseline) || self.baseline == oldSelf.baseline)",message="baseline cannot change once the experiment exists; start a new experiment instead",fieldPath=".baseline"
// +kubebuilder:validation:XValidation:rule="self.source == oldSelf.source",message="source cannot change once the experiment exists: the experiment's repository comes from it; start a new experiment instead",fieldPath=".source"
// +kubebuilder:validation:XValidation:rule="self.workspace == oldSelf.workspace",message="workspace cannot change once the experiment exists: the experiment's repository lives there; start a new experiment instead",fieldPath=".workspace"
// +kubebuilder:validation:XValidation:rule="!has(self.combine) || !self.combine || (has(self.candidates) && self.candidates >= 2 && self.candidates <= 15)",message="combine needs candidates from 2 to 15: it adds a candidate to a round in which two or more improved",fieldPath=".combine"
// +kubebuilder:validation:XValidation:rule="!has(self.kernelTargets) || size(self.kernelTargets) == 0 || (has(self.fixed.files) && size(self.fixed.files) > 0)",message="kernelTargets need their baseline modules listed in fixed.files",fieldPath=".kernelTargets"
// +kubebuilder:validation:XValidation:rule="has(self.holdout) == has(oldSelf.holdout) && (!has(self.holdout) || self.holdout == oldSelf.holdout)",message="holdout cannot change once the experiment exists: the holdout values candidates are held to were measured under it; start a new experiment instead",fieldPath=".holdout"
// +kubebuilder:validation:XValidation:rule="!has(self.holdout) || !has(self.holdout.volume) || !has(self.holdout.volume.persistentVolumeClaim) || !has(self.source.pvc) || self.holdout.volume.persistentVolumeClaim.claimName != self.source.pvc.claimName",message="the holdout's claim may not be the workspace claim, which every Researcher mounts: keep the holdout's data on a claim of its own",fieldPath=".holdout.volume.persistentVolumeClaim.claimName"
type AutoResearchSpec struct {
	// researchQuestion is what the experiment tries to find out, shown to every Researcher.
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="must not be blank: say what the experiment tries to find out"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +required
	ResearchQuestion string `json:"researchQuestion,omitempty"`

	// maxRounds is the number of research rounds to run. Raising it on a
	// finished experiment continues it; lowering it below the current round
	// ends the experiment after the current round.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +required
	MaxRounds int32 `json:"maxRounds,omitempty"`

	// candidates is how many candidates every round tries at once, each
	// by its own Researcher on its own copy of the best code, told which
	// direction is its own, and each complianced, trained and evaluated on
	// its own GPU. The round commits the best candidate that beats the best
	// by more than the noise margin; every candidate keeps its verdict and
	// its ledger row (3a, 3b, …). The baseline is one candidate.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	// +kubebuilder:default=1
	// +optional
	Candidates int32 `json:"candidates,omitempty"`

	// pipeline starts the next round's Researchers once this round's
	// candidates are checked, while they train, from the best code known
	// then, so that GPUs do not wait for Researchers. When this round
	// commits a new best, each of the next round's candidates is carried
	// onto it by a three-way merge and checked again; one whose change
	// conflicts with the new best is stale, and not trained.
	// +optional
	Pipeline *bool `json:"pipeline,omitempty"`

	// combine adds a candidate to a round in which two or more candidates
	// improved: their changes applied together by a three-way merge onto
	// the round's base, checked, trained and evaluated as any candidate,
	// ranked with the others, and named by the next letter (3c after 3a
	// and 3b). When the changes conflict, it is a conflict and not trained.
	// Needs candidates from 2 to 15.
	// +optional
	Combine *bool `json:"combine,omitempty"`

	// target ends the experiment as soon as the best metric reaches it. A
	// decimal string such as "0.95".
	// +optional
	Target Decimal `json:"target,omitempty"`

	// baseline is the metric of the unmodified code. When its value is not
	// given, round 0 measures it.
	// +optional
	Baseline *BaselineSpec `json:"baseline,omitempty"`

	// acceptance decides when a candidate counts as improved rather than noise.
	// +optional
	Acceptance AcceptanceSpec `json:"acceptance"`

	// budget caps what the experiment may spend; the loop stops before a
	// round that would go past one, with reason BudgetExhausted. Raising
	// the budget continues it.
	// +optional
	Budget *BudgetSpec `json:"budget,omitempty"`

	// plateau says when rounds without improvement make a plateau, and
	// whether the experiment then warns and goes on or stops.
	// +optional
	// +kubebuilder:default={}
	Plateau *PlateauSpec `json:"plateau,omitempty"`

	// fixed holds the files nobody may change, the constraints the
	// Researcher must keep and the training limits.
	// +required
	Fixed FixedSpec `json:"fixed"`

	// variable holds the files the Researcher may change.
	// +required
	Variable VariableSpec `json:"variable,omitzero"`

	// train is how a candidate is trained.
	// +required
	Train TrainSpec `json:"train,omitzero"`

	// eval is the fixed evaluation: the only source of the metric.
	// +required
	Eval EvalSpec `json:"eval,omitzero"`

	// holdout is a second evaluation the Researcher never sees: it runs for
	// every candidate the evaluation judges improved, and a candidate whose
	// holdout value is worse by more than the tolerance than the best that
	// kept code has measured (status.holdout.peak) is overfit and rolled
	// back. Its command, data and output stay out of the
	// Researcher's reach; only the verdict says overfit. On a cluster it
	// needs volume, which only the holdout's own pod mounts.
	// +optional
	Holdout *HoldoutSpec `json:"holdout,omitempty"`

	// profile turns on profile-first mode: the Researcher profiles before it
	// designs a strategy.
	// +optional
	Profile *ProfileSpec `json:"profile,omitempty"`

	// kernelTargets are functions whose new version must match a fixed
	// reference numerically; checked during compliance.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	KernelTargets []KernelTarget `json:"kernelTargets,omitempty"`

	// researcher is the coding agent that edits the variable files each round.
	// +required
	Researcher ResearcherSpec `json:"researcher,omitzero"`

	// source is where the experiment's repository comes from (cluster only;
	// the local runner uses the repository that holds the experiment file).
	// The empty default lets the rule that freezes it compare an omitted
	// source too.
	// +optional
	// +kubebuilder:default={}
	Source SourceSpec `json:"source"` //nolint:kubeapilinter // defaulted to {} for the rule that freezes it; Go clients always write it.

	// workspace is where the experiment's worktree lives. The empty default
	// lets the rule that freezes it compare an omitted workspace too.
	// +optional
	// +kubebuilder:default={}
	Workspace WorkspaceSpec `json:"workspace"` //nolint:kubeapilinter // defaulted to {} for the rule that freezes it; Go clients always write it.

	// output is where the experiment's results go besides its workspace.
	// +optional
	Output *OutputSpec `json:"output,omitempty"`

	// guidance holds notes from the human on the loop. Every Researcher sees
	// them; the round that first sees a note records it in its Note column.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=2048
	// +listType=atomic
	Guidance []string `json:"guidance,omitempty"`

	// suspend pauses the loop after the current step: no new step starts,
	// a running one finishes.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// queueName is the Kueue LocalQueue that admits the training and
	// evaluation Jobs, each candidate's a workload of its own. A round of
	// several goes on with the candidates the queue admitted: one whose Job
	// still waits once the others are done with the step is queued.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:MinLength=1
	QueueName string `json:"queueName,omitempty"`

	// historyLimit is how many recent rounds status.history keeps. The full
	// ledger stays in git (experiences.md, results.tsv).
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	HistoryLimit int32 `json:"historyLimit,omitempty"`
}

// BaselineSpec is the metric of the unmodified code.
type BaselineSpec struct {
	// value is the known baseline metric, judged against from round 1 on;
	// round 0 still trains and evaluates the unmodified code once, as a
	// preflight that fails the experiment if that does not work. When
	// empty, round 0 measures the baseline.
	// +optional
	Value Decimal `json:"value,omitempty"`

	// runs is how many times round 0 trains and evaluates the unmodified
	// code; their standard deviation is the noise level. A given value
	// runs once.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	Runs int32 `json:"runs,omitempty"`
}

// BudgetSpec caps what an experiment spends. A round starts only when
// what is used plus what a round has used on average stays within every
// budget set.
// +kubebuilder:validation:XValidation:rule="has(self.deadline) || has(self.gpuHours) || has(self.researcherTokens) || has(self.cost)",message="set deadline, gpuHours, researcherTokens or cost, or leave budget out"
type BudgetSpec struct {
	// deadline is the wall-clock time after which no round starts.
	// +optional
	Deadline *metav1.Time `json:"deadline,omitempty"`

	// gpuHours caps the GPU time of training and evaluation (GPUs × hours),
	// as a decimal string.
	// +optional
	GPUHours NonNegativeDecimal `json:"gpuHours,omitempty"`

	// researcherTokens caps the tokens (input and output) the Researchers
	// report.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ResearcherTokens int64 `json:"researcherTokens,omitempty"`

	// cost caps the spend in US dollars, as a decimal string: what the
	// Researchers report plus GPU hours at gpuHourPrice.
	// +optional
	Cost NonNegativeDecimal `json:"cost,omitempty"`

	// gpuHourPrice is the price of one GPU for an hour in US dollars, as a
	// decimal string; without it GPU time costs nothing.
	// +optional
	GPUHourPrice NonNegativeDecimal `json:"gpuHourPrice,omitempty"`
}

// PlateauAction is what a plateau does.
// +kubebuilder:validation:Enum=Warn;Stop
type PlateauAction string

const (
	// PlateauWarn warns every plateau.rounds rounds without improvement and
	// goes on.
	PlateauWarn PlateauAction = "Warn"
	// PlateauStop ends the experiment, with reason Plateau, after
	// plateau.rounds rounds without improvement.
	PlateauStop PlateauAction = "Stop"
)

// PlateauSpec says when rounds without improvement make a plateau and what
// it does.
type PlateauSpec struct {
	// rounds is the number of consecutive rounds without improvement that
	// make a plateau.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	Rounds int32 `json:"rounds,omitempty"`

	// action on a plateau: Warn (the default) warns and goes on; Stop ends
	// the experiment with reason Plateau. Raising rounds, or setting Warn,
	// continues an experiment a plateau stopped.
	// +optional
	// +kubebuilder:default=Warn
	Action PlateauAction `json:"action,omitempty"`
}

// AcceptanceSpec sets the margin a candidate must beat the best by: the
// largest of MinDelta, NoiseFactor × the baseline's standard deviation and
// MinImprovement × the best value.
type AcceptanceSpec struct {
	// minDelta is the smallest improvement that counts, as a decimal string.
	// +optional
	// +kubebuilder:default="0"
	MinDelta NonNegativeDecimal `json:"minDelta,omitempty"`

	// noiseFactor multiplies the baseline's standard deviation, as a decimal string.
	// +optional
	// +kubebuilder:default="2"
	NoiseFactor NonNegativeDecimal `json:"noiseFactor,omitempty"`

	// minImprovement is the smallest improvement that counts, as a fraction
	// of the best value so far: "0.01" asks a candidate to beat the best by
	// 1%. Unset or "0", only minDelta and the noise count.
	// +optional
	MinImprovement NonNegativeDecimal `json:"minImprovement,omitempty"`

	// confirmRuns is how many more times a candidate that improves trains
	// and evaluates, each run from a fresh checkout, before it counts: it is
	// judged on the mean of its runs, against a margin that takes the
	// larger of the baseline's and its own standard deviation. A candidate
	// whose training is random on purpose gets no lucky draw kept. 0 judges
	// a candidate on its one run.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	ConfirmRuns *int32 `json:"confirmRuns,omitempty"`
}

// FixedSpec holds what the Researcher may never change.
type FixedSpec struct {
	// files are the fixed files, relative to the experiment directory: a
	// file, a directory with everything under it ("eval/"), or a glob
	// ("eval/**", "*.py"; "**" matches any number of directories). The
	// evaluation code must be among them. Nothing they match may change,
	// and no file may be added under them.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	Files []PathPattern `json:"files,omitempty"`

	// constraints are the protocol's fixed conditions in words, such as
	// "random seed 42 in train.py" or "the data split is 90/10". The
	// Researcher's prompt lists them as constraints to keep. Compliance
	// enforces only what fixed files and fixed regions hold: a constraint
	// on code in a variable file is checked only once fixed-region markers
	// wrap that code.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:XValidation:rule="self.trim() != ''",message="must not be blank: state the constraint in words, or remove the entry"
	Constraints []string `json:"constraints,omitempty"`

	// timeLimit is how long training may run, e.g. "5m".
	// +required
	TimeLimit Duration `json:"timeLimit"`

	// epochLimit is the number of epochs training may run, passed to the
	// training command; omitted, training has no epoch limit.
	// +optional
	// +kubebuilder:validation:Minimum=1
	EpochLimit int32 `json:"epochLimit,omitempty"`
}

// VariableSpec holds what the Researcher may change.
type VariableSpec struct {
	// files are the files the Researcher may modify, relative to the
	// experiment directory. New helper files are allowed too. The bound
	// keeps the rule that compares them with every fixed pattern within
	// the API server's cost limit.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +required
	Files []RelativePath `json:"files,omitempty"`

	// range describes, in words, what may be adjusted.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:MinLength=1
	Range string `json:"range,omitempty"`
}

// TrainSpec is how a candidate is trained.
type TrainSpec struct {
	// command is the fixed training command, run with `sh -c` in the
	// experiment directory.
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="must not be blank: give the command that trains a candidate"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +required
	Command string `json:"command,omitempty"`

	// outputs are the paths, relative to the experiment directory, that
	// training writes and the evaluation reads, such as a checkpoint
	// directory. Training and evaluation each run in a fresh checkout of the
	// candidate's sealed commit; these are the only files that pass from the
	// one to the other. Anything else the evaluation reads it must make with
	// fixed code (run the prepare step in the eval command too).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	Outputs []RelativePath `json:"outputs,omitempty"`

	// image runs training in a cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image,omitempty"`

	// gpus is the number of nvidia.com/gpu a training or evaluation pod requests.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	GPUs *int32 `json:"gpus,omitempty"`

	// env is added to the training and evaluation containers.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Env []corev1.EnvVar `json:"env,omitempty"`

	// resources of the training and evaluation containers; the GPU request
	// comes from GPUs.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources"`

	// nodeSelector constrains where training and evaluation run.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations of the training and evaluation pods.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +kubebuilder:validation:items:XValidation:rule="!has(self.operator) || self.operator in ['Exists', 'Equal']",message="operator must be Exists or Equal"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.effect) || self.effect in ['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute']",message="effect must be NoSchedule, PreferNoSchedule or NoExecute, or empty for all three"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.operator) || self.operator != 'Exists' || !has(self.value) || self.value == ''",message="a toleration with operator Exists takes no value"
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// shm mounts a memory-backed emptyDir of this size at /dev/shm in the
	// training and evaluation containers, which PyTorch's data loader
	// workers need beyond the runtime's 64Mi default.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).isGreaterThan(quantity('0'))",message="must be a positive size such as 8Gi"
	Shm *resource.Quantity `json:"shm,omitempty"`

	// podTemplate is a partial pod template merged over the training pod,
	// and then the evaluation pod, as a strategic merge patch: volumes,
	// affinity, priorityClassName, runtimeClassName, serviceAccountName,
	// imagePullSecrets and the like. Its container named train patches the
	// step's container (in the evaluation pod too); the operator's command,
	// image, security context and mounts always win. README.md lists what
	// may be overridden.
	// +optional
	PodTemplate *PodTemplate `json:"podTemplate,omitempty"`
}

// EvalSpec is the fixed evaluation and the metric it prints.
type EvalSpec struct {
	// metric is the name of the metric the command prints, e.g. val_bpb.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z_][A-Za-z0-9_.-]*$')",message="must be the name the eval command prints the metric under, such as val_bpb: a letter or _, then letters, digits, '_', '.' and '-'"
	// +required
	Metric string `json:"metric,omitempty"`

	// direction says whether larger or smaller is better.
	// +required
	Direction Direction `json:"direction,omitempty"`

	// command is the fixed evaluation command, run with `sh -c` in the
	// experiment directory. Its output is the only source of the metric.
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="must not be blank: give the fixed evaluation command"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +required
	Command string `json:"command,omitempty"`

	// pattern is a regular expression with one capture group (or a group
	// named value) that finds the metric when the output does not print
	// `metric: value` or `metric=value`. The first rule compiles the
	// pattern, which fails the rule with the parser's error when it is not
	// a regular expression; the second finds an opening parenthesis that is
	// not escaped and starts a capture group. Only Validate counts the
	// groups exactly.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="''.matches(self) || !''.matches(self)",message="must be a regular expression (RE2 syntax) with a capture group around the value, such as val_bpb=([0-9.]+)"
	// +kubebuilder:validation:XValidation:rule=`self.matches('(^|[^\\\\])(\\\\\\\\)*[(]([^?]|[?]P?<)')`,message="must have a capture group around the value, such as val_bpb=([0-9.]+)"
	Pattern string `json:"pattern,omitempty"`

	// image runs evaluation in a cluster; defaults to the training image.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image,omitempty"`

	// timeout bounds the evaluation; defaults to the training time limit.
	// +optional
	Timeout *Duration `json:"timeout,omitempty"`

	// constraints are limits on secondary readings the evaluation prints
	// (`memory_gb: 38.2`): a candidate that breaks one, or whose evaluation
	// does not print the reading, is constraint_failed whatever its metric.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=metric
	Constraints []EvalConstraint `json:"constraints,omitempty"`

	// podTemplate is merged over the evaluation pod after train.podTemplate,
	// as a strategic merge patch; its container named eval patches the
	// step's container.
	// +optional
	PodTemplate *PodTemplate `json:"podTemplate,omitempty"`
}

// HoldoutSpec is the hidden holdout evaluation.
// +kubebuilder:validation:XValidation:rule="self.dir.startsWith('/')",message="dir must be an absolute path outside the repository"
// +kubebuilder:validation:XValidation:rule="!has(self.volume) || (self.dir.matches('^(/[A-Za-z0-9_][A-Za-z0-9._-]*)+$') && !['/workspace', '/autoresearch-tools', '/autoresearch-holdout', '/etc/autoresearch', '/etc/autoresearch-hashes', '/home/autoresearch', '/dev', '/proc', '/sys'].exists(p, self.dir == p || self.dir.startsWith(p + '/') || p.startsWith(self.dir + '/')))",message="with a volume, dir is where the holdout's pod mounts it: a clean absolute path such as /holdout, not at, under or above /workspace, /autoresearch-tools, /autoresearch-holdout, /etc/autoresearch, /etc/autoresearch-hashes, /home/autoresearch, /dev, /proc or /sys, which the pod uses itself",fieldPath=".dir"
type HoldoutSpec struct {
	// command is the holdout evaluation, run with `sh -c` in a fresh
	// checkout of the candidate with training's outputs, as eval.command
	// is; AUTORESEARCH_HOLDOUT_DIR names dir. Only the supervisor reads its
	// output; on a cluster the output stays in the holdout pod's log.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +required
	Command string `json:"command,omitempty"`

	// metric is the name of the value the command prints; defaults to
	// eval.metric. Better is eval.direction.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z_][A-Za-z0-9_.-]*$')",message="must be the name the holdout command prints its metric under, such as val_bpb: a letter or _, then letters, digits, '_', '.' and '-'"
	Metric string `json:"metric,omitempty"`

	// pattern finds the metric as eval.pattern does.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:MinLength=1
	Pattern string `json:"pattern,omitempty"`

	// tolerance is how much worse than the best holdout value that kept
	// code has measured (status.holdout.peak) a candidate's may be before
	// it is overfit, in the metric's units.
	// +optional
	// +kubebuilder:default="0"
	Tolerance NonNegativeDecimal `json:"tolerance,omitempty"`

	// dir is an absolute path outside the repository holding the holdout
	// command's files and data; locally the supervisor keeps the holdout's
	// logs and values there too. On a cluster it is where volume is
	// mounted, read-only, in the holdout's pod. No other step is told it.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=4096
	// +required
	Dir string `json:"dir,omitempty"`

	// volume holds the holdout's command files and data on a cluster: a
	// ConfigMap, a Secret or a PersistentVolumeClaim, mounted read-only at
	// dir in the holdout's pod and in no other. Required on a cluster;
	// `autoresearch run` reads dir on the machine and ignores it.
	// +optional
	Volume *HoldoutVolume `json:"volume,omitempty"`

	// timeout bounds the holdout evaluation; defaults to eval's.
	// +optional
	Timeout *Duration `json:"timeout,omitempty"`
}

// HoldoutVolume is where the hidden holdout's files come from on a
// cluster: exactly one of a ConfigMap, a Secret or a claim.
// +kubebuilder:validation:XValidation:rule="[has(self.configMap), has(self.secret), has(self.persistentVolumeClaim)].filter(x, x).size() == 1",message="set exactly one of configMap, secret and persistentVolumeClaim"
type HoldoutVolume struct {
	// configMap holds the holdout's files as keys, such as holdout.sh and
	// holdout.csv.
	// +optional
	ConfigMap *corev1.ConfigMapVolumeSource `json:"configMap,omitempty"`
	// secret holds them as a Secret's keys.
	// +optional
	Secret *corev1.SecretVolumeSource `json:"secret,omitempty"`
	// persistentVolumeClaim holds them on a claim, mounted read-only
	// whatever its readOnly says. It may not be the experiment's
	// workspace, which every Researcher mounts.
	// +optional
	PersistentVolumeClaim *corev1.PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
}

// EvalConstraint is a limit on one reading of the evaluation's output.
// +kubebuilder:validation:XValidation:rule="has(self.min) || has(self.max)",message="set min, max or both"
type EvalConstraint struct {
	// metric is the name of the reading, printed as `name: value`.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z_][A-Za-z0-9_.-]*$')",message="must be the name the eval command prints the reading under, such as memory_gb: a letter or _, then letters, digits, '_', '.' and '-'"
	// +required
	Metric string `json:"metric,omitempty"`

	// min is the smallest value allowed, as a decimal string.
	// +optional
	Min Decimal `json:"min,omitempty"`

	// max is the largest value allowed, as a decimal string.
	// +optional
	Max Decimal `json:"max,omitempty"`
}

// ProfileSpec turns on profile-first mode.
type ProfileSpec struct {
	// command prints a profile of the training code.
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="must not be blank: give the command that profiles the training code"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +required
	Command string `json:"command,omitempty"`

	// expectedRuntime is how long the profile command is expected to take.
	// +optional
	ExpectedRuntime *Duration `json:"expectedRuntime,omitempty"`
}

// KernelTarget is a function that must keep numerical parity with a fixed
// reference implementation.
type KernelTarget struct {
	// name identifies the target in verdicts.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	Name string `json:"name,omitempty"`

	// newModule is the candidate function as `module:function`, in a variable file.
	// +required
	NewModule FunctionRef `json:"newModule"`

	// baselineModule is the reference function as `module:function`, in a fixed file.
	// +required
	BaselineModule FunctionRef `json:"baselineModule"`

	// fixture is a zero-argument function returning (args, kwargs), as `module:function`.
	// +required
	Fixture FunctionRef `json:"fixture"`

	// atol is the absolute tolerance, as a decimal string.
	// +optional
	// +kubebuilder:default="1e-5"
	Atol NonNegativeDecimal `json:"atol,omitempty"`

	// rtol is the relative tolerance, as a decimal string.
	// +optional
	// +kubebuilder:default="1.3e-6"
	Rtol NonNegativeDecimal `json:"rtol,omitempty"`
}

// ResearcherSpec is the coding agent that edits the variable files.
type ResearcherSpec struct {
	// command starts the Researcher, run with `sh -c` in the experiment
	// directory. It reads its prompt from $AUTORESEARCH_PROMPT_FILE.
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="must not be blank: give the command that starts the Researcher"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +required
	Command string `json:"command,omitempty"`

	// image runs the Researcher in a cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image,omitempty"`

	// env of the Researcher; API keys belong in secretKeyRef entries.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Env []corev1.EnvVar `json:"env,omitempty"`

	// envFrom of the Researcher.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// resources of the Researcher container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources"`

	// timeout bounds one Researcher run; defaults to twice the training time limit.
	// +optional
	Timeout *Duration `json:"timeout,omitempty"`

	// podTemplate is merged over the Researcher pod as a strategic merge
	// patch; its container named researcher patches the Researcher's
	// container. The Researcher never gets a service account's token: the
	// template may not name a service account or project a token.
	// +optional
	PodTemplate *PodTemplate `json:"podTemplate,omitempty"`
}

// SourceSpec is where the experiment's repository comes from in a cluster.
// +kubebuilder:validation:XValidation:rule="!(has(self.git) && has(self.pvc))",message="source takes either git or pvc, not both"
type SourceSpec struct {
	// git clones a repository into the workspace.
	// +optional
	Git *GitSource `json:"git,omitempty"`

	// pvc uses a repository already on an existing claim.
	// +optional
	PVC *PVCSource `json:"pvc,omitempty"`

	// subdir is the experiment directory inside the repository.
	// +optional
	Subdir RelativePath `json:"subdir,omitempty"`
}

// GitSource is a repository to clone.
// +kubebuilder:validation:XValidation:rule="!self.url.matches('^[a-z]+://[^/@]*:[^/@]*@')",message="url must not hold a password or token: the clone keeps its url in a git directory the Researcher reads; put it in the Secret that credentialsSecret names"
type GitSource struct {
	// url of the repository.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +required
	URL string `json:"url,omitempty"`

	// ref is the branch, tag or commit to start from.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:MinLength=1
	Ref string `json:"ref,omitempty"`

	// credentialsSecret names a Secret with `username`/`password` or
	// `ssh-privatekey` for the clone.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:MinLength=1
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
}

// OutputSpec is where the experiment's results go besides its workspace.
// +kubebuilder:validation:MinProperties=1
type OutputSpec struct {
	// git pushes the experiment branch to a remote repository after every
	// committed round and at the end.
	// +optional
	Git *GitOutput `json:"git,omitempty"`
}

// GitOutput is a remote repository that receives the experiment branch,
// autoresearch/<name>, never forced: a remote branch that went its own way
// refuses the push. A push that fails leaves the round as it is; the next
// commit or the end pushes again.
// +kubebuilder:validation:XValidation:rule="self.url.matches('^(https?|ssh)://[^/]+/.') || self.url.matches('^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/].*$')",message="url must be an https://, http:// or ssh:// URL, or user@host:path"
// +kubebuilder:validation:XValidation:rule="!self.url.matches('^[a-z]+://[^/@]*:[^/@]*@')",message="url must not hold a password or token: put it in the Secret that secretRef names, under the key token"
type GitOutput struct {
	// url of the remote repository: https://host/path (a token from the
	// Secret), ssh://git@host/path or git@host:path (an SSH key from the
	// Secret).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +required
	URL string `json:"url,omitempty"`

	// secretRef names a Secret in the experiment's namespace with the
	// credentials: `token` (and optionally `username`) for https, or
	// `ssh-privatekey` and `known_hosts` for ssh. Only the operator's git
	// step pods mount it; the Researcher, training and evaluation never see
	// it. Locally (`autoresearch run`) it is not read: see the README.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`

	// candidates also pushes every round's sealed candidate,
	// refs/autoresearch/candidates/<name>/r<N>, kept or not.
	// +optional
	Candidates *bool `json:"candidates,omitempty"`
}

// SecretReference names a Secret in the experiment's namespace.
type SecretReference struct {
	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name,omitempty"`
}

// PVCSource is a repository already on a claim.
type PVCSource struct {
	// claimName is the PersistentVolumeClaim holding the repository.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	ClaimName string `json:"claimName,omitempty"`

	// path of the repository inside the claim.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path,omitempty"`
}

// WorkspaceSpec is where the experiment's worktree lives.
type WorkspaceSpec struct {
	// path is the local worktree location; defaults to
	// ../autoresearch-<name> next to the repository.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path,omitempty"`

	// size of the workspace claim in a cluster.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).isGreaterThan(quantity('0'))",message="must be a positive size such as 10Gi"
	Size *resource.Quantity `json:"size,omitempty"`

	// storageClassName of the workspace claim.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="must be the name of a StorageClass: lowercase letters, digits, '-' and '.', such as fast-ssd"
	StorageClassName *string `json:"storageClassName,omitempty"`

	// accessModes of the workspace claim; defaults to ReadWriteOnce. The
	// experiment writes its repository there, so ReadOnlyMany cannot serve.
	// +optional
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:Enum=ReadWriteOnce;ReadWriteMany;ReadWriteOncePod
	// +listType=atomic
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`

	// caches are git-ignored paths of the experiment directory, such as a
	// dataset cache or a virtual environment, that the Researcher's
	// worktree keeps from round to round. Every other ignored file is
	// removed when a round starts, so that nothing one Researcher leaves
	// there reaches the next. Training and evaluation never see the
	// worktree: they run fresh checkouts of the sealed candidate.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	Caches []RelativePath `json:"caches,omitempty"`

	// reclaimPolicy says what becomes of the workspace claim the operator
	// makes when the experiment is deleted. Retain, the default, keeps it,
	// with the branch, the candidates and the ledger, until someone deletes
	// it; an experiment of the same name then refuses to start on it.
	// Delete lets it go with the experiment. A claim named in source.pvc is
	// never the operator's to delete.
	// +optional
	// +kubebuilder:default=Retain
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy,omitempty"`
}

// ReclaimPolicy says whether the workspace claim outlives its experiment.
// +kubebuilder:validation:Enum=Retain;Delete
type ReclaimPolicy string

const (
	ReclaimRetain ReclaimPolicy = "Retain"
	ReclaimDelete ReclaimPolicy = "Delete"
)

// Phase is where the experiment is in its life.
// +kubebuilder:validation:Enum=Pending;Initializing;Baseline;Running;Suspended;Succeeded;Failed
type Phase string

const (
	PhasePending      Phase = "Pending"
	PhaseInitializing Phase = "Initializing"
	PhaseBaseline     Phase = "Baseline"
	PhaseRunning      Phase = "Running"
	PhaseSuspended    Phase = "Suspended"
	PhaseSucceeded    Phase = "Succeeded"
	PhaseFailed       Phase = "Failed"
)

// Step is one step of a round, S1 to S6, or the hidden holdout evaluation
// between S4 and S5, which has no line in the task list.
// +kubebuilder:validation:Enum=Researcher;Compliance;Train;Eval;Holdout;Git;Termination
type Step string

const (
	StepResearcher  Step = "Researcher"
	StepCompliance  Step = "Compliance"
	StepTrain       Step = "Train"
	StepEval        Step = "Eval"
	StepHoldout     Step = "Holdout"
	StepGit         Step = "Git"
	StepTermination Step = "Termination"
)

// ComplianceResult is the outcome of a candidate's compliance check.
// +kubebuilder:validation:Enum=Passed;FilesViolated;ParityFailed
type ComplianceResult string

const (
	// CompliancePassed: only allowed files changed, and every kernel kept
	// parity.
	CompliancePassed ComplianceResult = "Passed"
	// ComplianceFilesViolated: a fixed file changed, or a file that is not
	// variable.
	ComplianceFilesViolated ComplianceResult = "FilesViolated"
	// ComplianceParityFailed: a kernel lost numerical parity with its
	// reference.
	ComplianceParityFailed ComplianceResult = "ParityFailed"
)

// Verdict is the outcome of a round.
// +kubebuilder:validation:Enum=baseline;improved;superseded;not_improved;within_noise;no_change;stale;conflict;queued;compliance_failed;parity_failed;train_failed;train_timeout;eval_failed;constraint_failed;overfit;researcher_failed
type Verdict string

const (
	VerdictBaseline Verdict = "baseline"
	VerdictImproved Verdict = "improved"
	// VerdictSuperseded: the candidate beat the best by more than the
	// noise margin, but another candidate of its round beat it; the round
	// committed that one, and this one stays on its candidate ref.
	VerdictSuperseded  Verdict = "superseded"
	VerdictNotImproved Verdict = "not_improved"
	VerdictWithinNoise Verdict = "within_noise"
	// VerdictNoChange: the candidate changed no file, so it was neither
	// trained nor evaluated.
	VerdictNoChange Verdict = "no_change"
	// VerdictStale: the candidate's Researcher started while the round
	// before trained (spec.pipeline), and its change conflicts with the
	// best code that round committed, so it was neither trained nor
	// evaluated.
	VerdictStale Verdict = "stale"
	// VerdictConflict: the candidate spec.combine made of its round's
	// improved candidates could not apply their changes together, as they
	// conflict, so it was neither trained nor evaluated.
	VerdictConflict Verdict = "conflict"
	// VerdictQueued: the candidate's training or evaluation Job waited for
	// admission to spec.queueName while the round's other candidates were
	// done with that step, so the round went on without it.
	VerdictQueued           Verdict = "queued"
	VerdictComplianceFailed Verdict = "compliance_failed"
	VerdictParityFailed     Verdict = "parity_failed"
	VerdictTrainFailed      Verdict = "train_failed"
	VerdictTrainTimeout     Verdict = "train_timeout"
	VerdictEvalFailed       Verdict = "eval_failed"
	// VerdictConstraintFailed: a reading of the evaluation broke one of
	// spec.eval.constraints.
	VerdictConstraintFailed Verdict = "constraint_failed"
	// VerdictOverfit: the evaluation judged the candidate improved, but
	// the hidden holdout evaluation found it worse than the best by more
	// than spec.holdout.tolerance.
	VerdictOverfit          Verdict = "overfit"
	VerdictResearcherFailed Verdict = "researcher_failed"
)

// Condition types.
const (
	ConditionReady       = "Ready"
	ConditionProgressing = "Progressing"
	ConditionSuspended   = "Suspended"
	ConditionSucceeded   = "Succeeded"
	ConditionFailed      = "Failed"
	ConditionDegraded    = "Degraded"
)

// Condition reasons, also used as the reasons of the events that announce
// them.
const (
	ReasonTargetReached    = "TargetReached"
	ReasonMaxRoundsReached = "MaxRoundsReached"
	ReasonPlateau          = "Plateau"
	ReasonRoundInProgress  = "RoundInProgress"
	ReasonSuspendedByUser  = "SuspendedByUser"
	ReasonNotSuspended     = "NotSuspended"
	ReasonNotFinished      = "NotFinished"
	ReasonNoFailure        = "NoFailure"
	ReasonBaselineFailed   = "BaselineFailed"
	ReasonWorkspaceFailed  = "WorkspaceFailed"
	ReasonWorkspaceReady   = "WorkspaceReady"
	ReasonImproving        = "Improving"
	ReasonInitializing     = "Initializing"
	ReasonRoundRestarted   = "RoundRestarted"
	ReasonInvalidSpec      = "InvalidSpec"
	ReasonStepWaiting      = "StepWaiting"
	ReasonBudgetExhausted  = "BudgetExhausted"
	// ReasonPushFailed is the event of a push to spec.output.git that
	// failed.
	ReasonPushFailed = "PushFailed"
)

// AutoResearchStatus is the loop's progress. It stays small: the full ledger
// lives in git (experiences.md and results.tsv).
type AutoResearchStatus struct {
	// conditions are Ready, Progressing, Suspended, Succeeded, Failed and
	// Degraded, each with the generation it reflects.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the spec generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`

	// phase is where the experiment is in its life.
	// +optional
	Phase Phase `json:"phase,omitempty"` //nolint:kubeapilinter // DESIGN §5: kubectl shows a phase beside the conditions.

	// round is the current round; 0 while the baseline is measured.
	// +optional
	Round int32 `json:"round"`

	// completedRounds is the number of rounds with a verdict, baseline excluded.
	// +optional
	CompletedRounds int32 `json:"completedRounds"`

	// gpus is the number of GPUs the experiment's training, evaluation and
	// holdout pods ask for now: spec.train.gpus for each candidate in one
	// of those steps.
	// +optional
	GPUs int32 `json:"gpus"`

	// best is the best committed result so far.
	// +optional
	Best *BestResult `json:"best,omitempty"`

	// baseline is the metric of the unmodified code.
	// +optional
	Baseline *BaselineResult `json:"baseline,omitempty"`

	// lastVerdict is the verdict of the most recent round.
	// +optional
	LastVerdict Verdict `json:"lastVerdict,omitempty"`

	// currentRound is the round in progress.
	// +optional
	CurrentRound *RoundStatus `json:"currentRound,omitempty"`

	// nextRound is the round spec.pipeline started while currentRound's
	// candidates train: its Researchers and checks run, and it waits to
	// train until it becomes the current round.
	// +optional
	NextRound *RoundStatus `json:"nextRound,omitempty"`

	// history holds the baseline's record and the most recent
	// spec.historyLimit rounds, oldest first.
	// +optional
	// +kubebuilder:validation:MaxItems=101
	// +listType=atomic
	History []RoundRecord `json:"history,omitempty"`

	// verdictCounts counts rounds per verdict.
	// +optional
	VerdictCounts map[Verdict]int32 `json:"verdictCounts,omitempty"` //nolint:kubeapilinter // keyed by the closed Verdict enum, read whole.

	// consecutiveNonImprovements counts rounds since the last improvement.
	// +optional
	ConsecutiveNonImprovements int32 `json:"consecutiveNonImprovements"`

	// guidanceSeen is how many spec.guidance notes earlier rounds have seen.
	// +optional
	GuidanceSeen int32 `json:"guidanceSeen"`

	// workspace describes the experiment's worktree.
	// +optional
	Workspace *WorkspaceStatus `json:"workspace,omitempty"`

	// holdout is the hidden holdout's trend, for the user only: no prompt,
	// ledger or history holds it, and on a cluster no Researcher can read
	// the status. Local runs keep it in spec.holdout.dir.
	// +optional
	Holdout *HoldoutStatus `json:"holdout,omitempty"`

	// usage is what the experiment has consumed.
	// +optional
	Usage Usage `json:"usage"`

	// ledgerCommit is the commit that holds the final experiences.md and
	// results.tsv of a finished run; empty while they are being written.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:MinLength=1
	LedgerCommit string `json:"ledgerCommit,omitempty"`

	// output says what reached spec.output.
	// +optional
	Output *OutputStatus `json:"output,omitempty"`

	// message says, in a sentence, what is happening or what went wrong.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:MinLength=1
	Message string `json:"message,omitempty"`
}

// BestResult is the best committed result.
type BestResult struct {
	// round that produced it; 0 is the baseline.
	// +required
	Round int32 `json:"round"`
	// value of the metric, as a decimal string.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Value string `json:"value"`
	// commit holding the code that produced it.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Commit string `json:"commit,omitempty"`
}

// BaselineResult is the measured or given baseline.
type BaselineResult struct {
	// value is the mean of the samples, or the given baseline.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Value string `json:"value"`
	// stddev of the samples; the noise level.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Stddev string `json:"stddev,omitempty"`
	// samples is the number of runs measured; 0 when the value was given.
	// +optional
	Samples int32 `json:"samples"`
	// values holds the individual measurements; for a given baseline, the
	// preflight's one.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +kubebuilder:validation:items:MaxLength=64
	Values []string `json:"values,omitempty"`
}

// StepState says whether the current step has been started.
// +kubebuilder:validation:Enum=Pending;Running
type StepState string

const (
	StepStatePending StepState = "Pending"
	StepStateRunning StepState = "Running"
)

// RoundStatus is the round in progress.
type RoundStatus struct {
	// number of the round; 0 is the baseline.
	// +required
	Number int32 `json:"number"`
	// step in progress.
	// +required
	Step Step `json:"step,omitempty"`
	// stepState says whether Step has been started.
	// +required
	StepState StepState `json:"stepState,omitempty"`
	// baseCommit is the commit the round starts from.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	BaseCommit string `json:"baseCommit,omitempty"`
	// startTime of the round.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// stepStartTime of the current step.
	// +optional
	StepStartTime *metav1.Time `json:"stepStartTime,omitempty"`
	// timeline says when each of the round's steps started so far, to the
	// microsecond.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Timeline []StepStart `json:"timeline,omitempty"`
	// waiting says why the running step has not started: its pod waits to
	// be scheduled, or cannot start a container (a missing Secret, an
	// image that cannot be pulled). Empty once it runs.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Waiting string `json:"waiting,omitempty"`
	// note holds the guidance first seen by this round; for a baseline
	// measured again, why.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:MinLength=1
	Note string `json:"note,omitempty"`
	// tasks is the round's S1–S6 task list.
	// +optional
	// +kubebuilder:validation:MaxItems=6
	// +listType=atomic
	// +kubebuilder:validation:items:MaxLength=1024
	Tasks []string `json:"tasks,omitempty"`
	// candidates of the round; one today, several when rounds run in parallel.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=index
	Candidates []CandidateStatus `json:"candidates,omitempty"`
}

// CandidateStatus is one candidate change within a round.
type CandidateStatus struct {
	// index of the candidate within the round.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=15
	Index int32 `json:"index"`
	// step the candidate is waiting to start, when it finished the round's
	// step before the other candidates did; empty while it is in the
	// round's step.
	// +optional
	Step Step `json:"step,omitempty"`
	// base is the commit the candidate's Researcher started from, in a
	// round spec.pipeline started early; when the round's baseCommit has
	// moved on since, the candidate is carried onto it before its check.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Base string `json:"base,omitempty"`
	// combines lists the candidates whose changes this one, which
	// spec.combine added to the round, applies together.
	// +optional
	// +kubebuilder:validation:MaxItems=15
	// +listType=set
	// +kubebuilder:validation:items:Minimum=0
	// +kubebuilder:validation:items:Maximum=15
	Combines []int32 `json:"combines,omitempty"`
	// strategy the Researcher chose.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Strategy string `json:"strategy,omitempty"`
	// commit is the candidate as the supervisor sealed it after the
	// Researcher, kept on refs/autoresearch/candidates/r<round>: training and
	// evaluation run a fresh checkout of it, and an improved round commits
	// exactly its files.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Commit string `json:"commit,omitempty"`
	// compliance is the outcome of the compliance check, once known.
	// +optional
	Compliance ComplianceResult `json:"compliance,omitempty"`
	// complianceMessage says which rule a failed check found broken.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:MinLength=1
	ComplianceMessage string `json:"complianceMessage,omitempty"`
	// value of the metric, as a decimal string: the mean of values when it
	// has several.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Value string `json:"value,omitempty"`
	// values are the metric of each run of an improving candidate that
	// spec.acceptance.confirmRuns measures again, in order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=11
	// +kubebuilder:validation:items:MaxLength=64
	Values []string `json:"values,omitempty"`
	// verdict of the candidate, once known.
	// +optional
	Verdict Verdict `json:"verdict,omitempty"`
	// insight explains the verdict.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Insight string `json:"insight,omitempty"`
	// memoryGB is the peak accelerator memory training reported, or the
	// evaluation's memory_gb reading when a constraint asks for it.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	MemoryGB string `json:"memoryGB,omitempty"`
	// readings are the evaluation's readings that spec.eval.constraints
	// limit, as "name=value, …".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Readings string `json:"readings,omitempty"`
	// durations of the candidate's steps.
	// +optional
	Durations StepDurations `json:"durations"`
	// usage of the candidate's Researcher.
	// +optional
	Usage Usage `json:"usage"`
}

// HoldoutStatus is what the hidden holdout evaluation measured.
type HoldoutStatus struct {
	// best is the holdout value of the best code, "" until measured.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Best string `json:"best,omitempty"`
	// bestRound is the round whose code measured best.
	// +optional
	BestRound int32 `json:"bestRound"`
	// peak is the best holdout value that kept code has measured, the
	// baseline's included. A candidate worse than it by more than
	// spec.holdout.tolerance is overfit, so that kept rounds cannot drift
	// away from it a tolerance at a time.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Peak string `json:"peak,omitempty"`
	// readings are the most recent holdout values, oldest first.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	Readings []HoldoutReading `json:"readings,omitempty"`
}

// HoldoutReading is one holdout measurement.
type HoldoutReading struct {
	// round is the round measured; 0 for the baseline.
	// +required
	Round int32 `json:"round"`
	// candidate names the candidate measured in a round of several.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-p]$`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1
	Candidate string `json:"candidate,omitempty"`
	// value is the holdout metric as printed.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Value string `json:"value,omitempty"`
	// verdict is the round's outcome after the holdout.
	// +required
	Verdict Verdict `json:"verdict,omitempty"`
}

// StepDurations are the wall times of a round's user processes.
type StepDurations struct {
	// researcher is how long the Researcher ran.
	// +optional
	Researcher *metav1.Duration `json:"researcher,omitempty"`
	// train is how long training ran, summed over the baseline's runs.
	// +optional
	Train *metav1.Duration `json:"train,omitempty"`
	// eval is how long evaluation ran, summed over the baseline's runs.
	// +optional
	Eval *metav1.Duration `json:"eval,omitempty"`
}

// RoundRecord is a finished round, as its row in experiences.md says it.
type RoundRecord struct {
	// round is the round's number; 0 is the baseline.
	// +required
	Round int32 `json:"round"`
	// candidate names the candidate of a round of several: a, b, …
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-p]$`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1
	Candidate string `json:"candidate,omitempty"`
	// strategy is what the Researcher said it tried.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:MinLength=1
	Strategy string `json:"strategy,omitempty"`
	// compliance is the outcome of the round's compliance check; empty when
	// the round ended before it.
	// +optional
	Compliance ComplianceResult `json:"compliance,omitempty"`
	// complianceMessage says which rule a failed check found broken.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:MinLength=1
	ComplianceMessage string `json:"complianceMessage,omitempty"`
	// value is the metric the fixed evaluation printed, as a decimal string;
	// empty when there was none.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:MinLength=1
	Value string `json:"value,omitempty"`
	// verdict is the round's outcome.
	// +required
	Verdict Verdict `json:"verdict,omitempty"`
	// readings are the evaluation's readings that spec.eval.constraints
	// limit, as "name=value, …".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Readings string `json:"readings,omitempty"`
	// insight explains the verdict; every non-improvement has one.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:MinLength=1
	Insight string `json:"insight,omitempty"`
	// note holds the guidance this round was the first to see.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:MinLength=1
	Note string `json:"note,omitempty"`
	// commit is the commit an improved round made.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:MinLength=1
	Commit string `json:"commit,omitempty"`
	// durations of the round's user processes.
	// +optional
	Durations StepDurations `json:"durations"`
	// startTime of the round.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// timeline says when each of the round's steps started, to the
	// microsecond: with durations, the time between steps that no user
	// process ran.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Timeline []StepStart `json:"timeline,omitempty"`
	// completionTime is when the round's verdict was recorded.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// StepStart is when a step of a round started.
type StepStart struct {
	// step that started.
	// +required
	Step Step `json:"step,omitempty"`
	// time it started, to the microsecond.
	// +required
	Time metav1.MicroTime `json:"time,omitzero"`
}

// WorkspaceStatus describes the experiment's worktree.
type WorkspaceStatus struct {
	// path of the worktree.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`
	// claimName is the PersistentVolumeClaim that holds the workspace on a
	// cluster.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName,omitempty"`
	// branch the experiment commits to.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Branch string `json:"branch,omitempty"`
	// startCommit is where the experiment started.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	StartCommit string `json:"startCommit,omitempty"`
	// fixedFileHashes are the SHA-256 sums of the fixed files at the start,
	// verified before every evaluation.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=map
	// +listMapKey=path
	FixedFileHashes []FileHash `json:"fixedFileHashes,omitempty"`
	// fixedRegions are the fixed regions of variable files at the start:
	// the lines from one holding autoresearch:fixed-begin to the next one
	// holding autoresearch:fixed-end, which compliance keeps unchanged.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	FixedRegions []FixedRegion `json:"fixedRegions,omitempty"`
}

// OutputStatus says what reached spec.output.
type OutputStatus struct {
	// pushedCommit is the commit of the experiment branch that the last
	// push that succeeded left on spec.output.git.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	PushedCommit string `json:"pushedCommit,omitempty"`
	// pushTime is when that push happened.
	// +optional
	PushTime *metav1.Time `json:"pushTime,omitempty"`
	// error is why the last push failed; the next commit, or the end,
	// pushes again. Empty once a push succeeds.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Error string `json:"error,omitempty"`
}

// FixedRegion is a fixed region of a variable file.
type FixedRegion struct {
	// path of the file, relative to the experiment directory.
	// +kubebuilder:validation:MaxLength=512
	// +required
	Path string `json:"path"`
	// lines of the region in the start commit, such as "10-14".
	// +kubebuilder:validation:MaxLength=32
	// +required
	Lines string `json:"lines"`
	// begin is the line of its begin marker, shortened.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Begin string `json:"begin,omitempty"`
}

// FileHash is a file's SHA-256 sum.
type FileHash struct {
	// path of the file, relative to the experiment directory.
	// +kubebuilder:validation:MaxLength=512
	// +required
	Path string `json:"path"`
	// sha256 is the hex-encoded sum of the file's content.
	// +kubebuilder:validation:MaxLength=64
	// +required
	SHA256 string `json:"sha256"`
}

// Usage is what the experiment has consumed.
type Usage struct {
	// gpuSeconds of training and evaluation.
	// +optional
	GPUSeconds int64 `json:"gpuSeconds"`
	// researcherSeconds of Researcher runs.
	// +optional
	ResearcherSeconds int64 `json:"researcherSeconds"`
	// inputTokens the Researchers reported.
	// +optional
	InputTokens int64 `json:"inputTokens"`
	// outputTokens the Researchers reported.
	// +optional
	OutputTokens int64 `json:"outputTokens"`
	// cost the Researchers reported, in US dollars, as a decimal string.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Cost string `json:"cost,omitempty"`
	// budget says what is used of each budget set, as "used of budget".
	// +optional
	// +kubebuilder:validation:MaxItems=4
	// +listType=atomic
	// +kubebuilder:validation:items:MaxLength=256
	Budget []string `json:"budget,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ar,categories=research
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Round",type=integer,JSONPath=`.status.round`
// +kubebuilder:printcolumn:name="Best",type=string,JSONPath=`.status.best.value`
// +kubebuilder:printcolumn:name="Baseline",type=string,JSONPath=`.status.baseline.value`
// +kubebuilder:printcolumn:name="Last Verdict",type=string,JSONPath=`.status.lastVerdict`
// +kubebuilder:printcolumn:name="Candidates",type=integer,JSONPath=`.spec.candidates`
// +kubebuilder:printcolumn:name="GPUs",type=integer,JSONPath=`.status.gpus`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Metric",type=string,JSONPath=`.spec.eval.metric`,priority=1
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.currentRound.step`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40",message="metadata.name must be at most 40 characters: the names of the experiment's pods and jobs (<name>-r<round>-researcher) add up to 19 more, within Kubernetes' 63"

// AutoResearch runs an autonomous research loop on a repository.
type AutoResearch struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the research protocol.
	// +required
	Spec AutoResearchSpec `json:"spec,omitzero"`
	// status is the loop's progress, which the operator writes.
	// +optional
	Status AutoResearchStatus `json:"status"`
}

// +kubebuilder:object:root=true

// AutoResearchList is a list of AutoResearch.
type AutoResearchList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AutoResearch `json:"items"`
}
