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
// +kubebuilder:validation:XValidation:rule="!self.fixed.files.exists(f, f in self.variable.files)",message="a file cannot be both fixed and variable: remove it from fixed.files or variable.files"
// +kubebuilder:validation:XValidation:rule="!has(self.kernelTargets) || size(self.kernelTargets) == 0 || size(self.fixed.files) > 0",message="kernelTargets need their baseline modules listed in fixed.files"
type AutoResearchSpec struct {
	// ResearchQuestion is what the experiment tries to find out, shown to every Researcher.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	ResearchQuestion string `json:"researchQuestion"`

	// MaxRounds is the number of research rounds to run. Raising it on a
	// finished experiment continues it; lowering it below the current round
	// ends the experiment after the current round.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MaxRounds int32 `json:"maxRounds"`

	// Target ends the experiment as soon as the best metric reaches it. A
	// decimal string such as "0.95".
	// +optional
	Target *Decimal `json:"target,omitempty"`

	// Baseline is the metric of the unmodified code. When its value is not
	// given, round 0 measures it.
	// +optional
	Baseline *BaselineSpec `json:"baseline,omitempty"`

	// Acceptance decides when a candidate counts as improved rather than noise.
	// +optional
	Acceptance AcceptanceSpec `json:"acceptance,omitempty"`

	// PlateauRounds is the number of consecutive rounds without improvement
	// after which the experiment warns of a plateau. It never stops the loop.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	PlateauRounds int32 `json:"plateauRounds,omitempty"`

	// Fixed holds the files nobody may change and the training limits.
	Fixed FixedSpec `json:"fixed"`

	// Variable holds the files the Researcher may change.
	Variable VariableSpec `json:"variable"`

	// Train is how a candidate is trained.
	Train TrainSpec `json:"train"`

	// Eval is the fixed evaluation: the only source of the metric.
	Eval EvalSpec `json:"eval"`

	// Profile turns on profile-first mode: the Researcher profiles before it
	// designs a strategy.
	// +optional
	Profile *ProfileSpec `json:"profile,omitempty"`

	// KernelTargets are functions whose new version must match a fixed
	// reference numerically; checked during compliance.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	KernelTargets []KernelTarget `json:"kernelTargets,omitempty"`

	// Researcher is the coding agent that edits the variable files each round.
	Researcher ResearcherSpec `json:"researcher"`

	// Source is where the experiment's repository comes from (cluster only;
	// the local runner uses the repository that holds the experiment file).
	// +optional
	Source SourceSpec `json:"source,omitempty"`

	// Workspace is where the experiment's worktree lives.
	// +optional
	Workspace WorkspaceSpec `json:"workspace,omitempty"`

	// Guidance holds notes from the human on the loop. Every Researcher sees
	// them; the round that first sees a note records it in its Note column.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=2048
	// +listType=atomic
	Guidance []string `json:"guidance,omitempty"`

	// Suspend pauses the loop after the current step: no new step starts,
	// a running one finishes.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// QueueName is the Kueue LocalQueue that admits the training and
	// evaluation Jobs.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	QueueName string `json:"queueName,omitempty"`

	// HistoryLimit is how many recent rounds status.history keeps. The full
	// ledger stays in git (experiences.md, results.tsv).
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	HistoryLimit int32 `json:"historyLimit,omitempty"`
}

// BaselineSpec is the metric of the unmodified code.
type BaselineSpec struct {
	// Value is the known baseline metric. When empty, round 0 measures it.
	// +optional
	Value Decimal `json:"value,omitempty"`

	// Runs is how many times round 0 trains and evaluates the unmodified
	// code; their standard deviation is the noise level.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	Runs int32 `json:"runs,omitempty"`
}

// AcceptanceSpec sets the margin a candidate must beat the best by: the
// larger of MinDelta and NoiseFactor × the baseline's standard deviation.
type AcceptanceSpec struct {
	// MinDelta is the smallest improvement that counts, as a decimal string.
	// +optional
	// +kubebuilder:default="0"
	MinDelta NonNegativeDecimal `json:"minDelta,omitempty"`

	// NoiseFactor multiplies the baseline's standard deviation, as a decimal string.
	// +optional
	// +kubebuilder:default="2"
	NoiseFactor NonNegativeDecimal `json:"noiseFactor,omitempty"`
}

// FixedSpec holds what the Researcher may never change.
type FixedSpec struct {
	// Files are the fixed files, relative to the experiment directory. The
	// evaluation code must be among them.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	Files []RelativePath `json:"files,omitempty"`

	// TimeLimit is how long training may run, e.g. "5m".
	TimeLimit Duration `json:"timeLimit"`

	// EpochLimit is the number of epochs training may run, passed to the
	// training command; 0 means no limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	EpochLimit int32 `json:"epochLimit,omitempty"`
}

// VariableSpec holds what the Researcher may change.
type VariableSpec struct {
	// Files are the files the Researcher may modify, relative to the
	// experiment directory. New helper files are allowed too.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	Files []RelativePath `json:"files"`

	// Range describes, in words, what may be adjusted.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Range string `json:"range,omitempty"`
}

// TrainSpec is how a candidate is trained.
type TrainSpec struct {
	// Command is the fixed training command, run with `sh -c` in the
	// experiment directory.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Command string `json:"command"`

	// Image runs training in a cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// GPUs is the number of nvidia.com/gpu a training or evaluation pod requests.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	GPUs *int32 `json:"gpus,omitempty"`

	// Env is added to the training and evaluation containers.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Resources of the training and evaluation containers; the GPU request
	// comes from GPUs.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// NodeSelector constrains where training and evaluation run.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of the training and evaluation pods.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// EvalSpec is the fixed evaluation and the metric it prints.
type EvalSpec struct {
	// Metric is the name of the metric the command prints, e.g. val_bpb.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_.\-]*$`
	Metric string `json:"metric"`

	// Direction says whether larger or smaller is better.
	Direction Direction `json:"direction"`

	// Command is the fixed evaluation command, run with `sh -c` in the
	// experiment directory. Its output is the only source of the metric.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Command string `json:"command"`

	// Pattern is a regular expression with one capture group (or a group
	// named value) that finds the metric when the output does not print
	// `metric: value` or `metric=value`.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Pattern string `json:"pattern,omitempty"`

	// Image runs evaluation in a cluster; defaults to the training image.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// Timeout bounds the evaluation; defaults to the training time limit.
	// +optional
	Timeout *Duration `json:"timeout,omitempty"`
}

// ProfileSpec turns on profile-first mode.
type ProfileSpec struct {
	// Command prints a profile of the training code.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Command string `json:"command"`

	// ExpectedRuntime is how long the profile command is expected to take.
	// +optional
	ExpectedRuntime *Duration `json:"expectedRuntime,omitempty"`
}

// KernelTarget is a function that must keep numerical parity with a fixed
// reference implementation.
type KernelTarget struct {
	// Name identifies the target in verdicts.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`

	// NewModule is the candidate function as `module:function`, in a variable file.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$`
	NewModule string `json:"newModule"`

	// BaselineModule is the reference function as `module:function`, in a fixed file.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$`
	BaselineModule string `json:"baselineModule"`

	// Fixture is a zero-argument function returning (args, kwargs), as `module:function`.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$`
	Fixture string `json:"fixture"`

	// Atol is the absolute tolerance, as a decimal string.
	// +optional
	// +kubebuilder:default="1e-5"
	Atol NonNegativeDecimal `json:"atol,omitempty"`

	// Rtol is the relative tolerance, as a decimal string.
	// +optional
	// +kubebuilder:default="1.3e-6"
	Rtol NonNegativeDecimal `json:"rtol,omitempty"`
}

// ResearcherSpec is the coding agent that edits the variable files.
type ResearcherSpec struct {
	// Command starts the Researcher, run with `sh -c` in the experiment
	// directory. It reads its prompt from $AUTORESEARCH_PROMPT_FILE.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Command string `json:"command"`

	// Image runs the Researcher in a cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// Env of the Researcher; API keys belong in secretKeyRef entries.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Env []corev1.EnvVar `json:"env,omitempty"`

	// EnvFrom of the Researcher.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// Resources of the Researcher container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Timeout bounds one Researcher run; defaults to twice the training time limit.
	// +optional
	Timeout *Duration `json:"timeout,omitempty"`
}

// SourceSpec is where the experiment's repository comes from in a cluster.
// +kubebuilder:validation:XValidation:rule="!(has(self.git) && has(self.pvc))",message="source takes either git or pvc, not both"
type SourceSpec struct {
	// Git clones a repository into the workspace.
	// +optional
	Git *GitSource `json:"git,omitempty"`

	// PVC uses a repository already on an existing claim.
	// +optional
	PVC *PVCSource `json:"pvc,omitempty"`

	// Subdir is the experiment directory inside the repository.
	// +optional
	Subdir RelativePath `json:"subdir,omitempty"`
}

// GitSource is a repository to clone.
type GitSource struct {
	// URL of the repository.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`

	// Ref is the branch, tag or commit to start from.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Ref string `json:"ref,omitempty"`

	// CredentialsSecret names a Secret with `username`/`password` or
	// `ssh-privatekey` for the clone.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
}

// PVCSource is a repository already on a claim.
type PVCSource struct {
	// ClaimName is the PersistentVolumeClaim holding the repository.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName"`

	// Path of the repository inside the claim.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Path string `json:"path,omitempty"`
}

// WorkspaceSpec is where the experiment's worktree lives.
type WorkspaceSpec struct {
	// Path is the local worktree location; defaults to
	// ../autoresearch-<name> next to the repository.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`

	// Size of the workspace claim in a cluster.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the workspace claim.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`

	// AccessModes of the workspace claim; defaults to ReadWriteOnce.
	// +optional
	// +kubebuilder:validation:MaxItems=4
	// +listType=atomic
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
}

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

// Step is one step of a round, S1 to S6.
// +kubebuilder:validation:Enum=Researcher;Compliance;Train;Eval;Git;Termination
type Step string

const (
	StepResearcher  Step = "Researcher"
	StepCompliance  Step = "Compliance"
	StepTrain       Step = "Train"
	StepEval        Step = "Eval"
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
// +kubebuilder:validation:Enum=baseline;improved;not_improved;within_noise;compliance_failed;parity_failed;train_failed;train_timeout;eval_failed;researcher_failed
type Verdict string

const (
	VerdictBaseline         Verdict = "baseline"
	VerdictImproved         Verdict = "improved"
	VerdictNotImproved      Verdict = "not_improved"
	VerdictWithinNoise      Verdict = "within_noise"
	VerdictComplianceFailed Verdict = "compliance_failed"
	VerdictParityFailed     Verdict = "parity_failed"
	VerdictTrainFailed      Verdict = "train_failed"
	VerdictTrainTimeout     Verdict = "train_timeout"
	VerdictEvalFailed       Verdict = "eval_failed"
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
)

// AutoResearchStatus is the loop's progress. It stays small: the full ledger
// lives in git (experiences.md and results.tsv).
type AutoResearchStatus struct {
	// ObservedGeneration is the spec generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is where the experiment is in its life.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// Round is the current round; 0 while the baseline is measured.
	// +optional
	Round int32 `json:"round,omitempty"`

	// CompletedRounds is the number of rounds with a verdict, baseline excluded.
	// +optional
	CompletedRounds int32 `json:"completedRounds,omitempty"`

	// Best is the best committed result so far.
	// +optional
	Best *BestResult `json:"best,omitempty"`

	// Baseline is the metric of the unmodified code.
	// +optional
	Baseline *BaselineResult `json:"baseline,omitempty"`

	// LastVerdict is the verdict of the most recent round.
	// +optional
	LastVerdict Verdict `json:"lastVerdict,omitempty"`

	// CurrentRound is the round in progress.
	// +optional
	CurrentRound *RoundStatus `json:"currentRound,omitempty"`

	// History holds the baseline's record and the most recent
	// spec.historyLimit rounds, oldest first.
	// +optional
	// +kubebuilder:validation:MaxItems=101
	// +listType=atomic
	History []RoundRecord `json:"history,omitempty"`

	// VerdictCounts counts rounds per verdict.
	// +optional
	VerdictCounts map[Verdict]int32 `json:"verdictCounts,omitempty"`

	// ConsecutiveNonImprovements counts rounds since the last improvement.
	// +optional
	ConsecutiveNonImprovements int32 `json:"consecutiveNonImprovements,omitempty"`

	// GuidanceSeen is how many spec.guidance notes earlier rounds have seen.
	// +optional
	GuidanceSeen int32 `json:"guidanceSeen,omitempty"`

	// Workspace describes the experiment's worktree.
	// +optional
	Workspace *WorkspaceStatus `json:"workspace,omitempty"`

	// Usage is what the experiment has consumed.
	// +optional
	Usage Usage `json:"usage,omitempty"`

	// LedgerCommit is the commit that holds the final experiences.md and
	// results.tsv of a finished run; empty while they are being written.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	LedgerCommit string `json:"ledgerCommit,omitempty"`

	// Message says, in a sentence, what is happening or what went wrong.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Message string `json:"message,omitempty"`

	// Conditions: Ready, Progressing, Suspended, Succeeded, Failed, Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// BestResult is the best committed result.
type BestResult struct {
	// Round that produced it; 0 is the baseline.
	Round int32 `json:"round"`
	// Value of the metric, as a decimal string.
	Value string `json:"value"`
	// Commit holding the code that produced it.
	// +optional
	Commit string `json:"commit,omitempty"`
}

// BaselineResult is the measured or given baseline.
type BaselineResult struct {
	// Value is the mean of the samples, or the given baseline.
	Value string `json:"value"`
	// Stddev of the samples; the noise level.
	// +optional
	Stddev string `json:"stddev,omitempty"`
	// Samples is the number of runs measured; 0 when the value was given.
	// +optional
	Samples int32 `json:"samples,omitempty"`
	// Values holds the individual measurements.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
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
	// Number of the round; 0 is the baseline.
	Number int32 `json:"number"`
	// Step in progress.
	Step Step `json:"step"`
	// StepState says whether Step has been started.
	StepState StepState `json:"stepState"`
	// BaseCommit is the commit the round starts from.
	// +optional
	BaseCommit string `json:"baseCommit,omitempty"`
	// StartTime of the round.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// StepStartTime of the current step.
	// +optional
	StepStartTime *metav1.Time `json:"stepStartTime,omitempty"`
	// Note holds the guidance first seen by this round.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Note string `json:"note,omitempty"`
	// Tasks is the round's S1–S6 task list.
	// +optional
	// +kubebuilder:validation:MaxItems=6
	// +listType=atomic
	Tasks []string `json:"tasks,omitempty"`
	// Candidates of the round; one today, several when rounds run in parallel.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=index
	Candidates []CandidateStatus `json:"candidates,omitempty"`
}

// CandidateStatus is one candidate change within a round.
type CandidateStatus struct {
	// Index of the candidate within the round.
	Index int32 `json:"index"`
	// Strategy the Researcher chose.
	// +optional
	Strategy string `json:"strategy,omitempty"`
	// Compliance is the outcome of the compliance check, once known.
	// +optional
	Compliance ComplianceResult `json:"compliance,omitempty"`
	// ComplianceMessage says which rule a failed check found broken.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	ComplianceMessage string `json:"complianceMessage,omitempty"`
	// Value of the metric, as a decimal string.
	// +optional
	Value string `json:"value,omitempty"`
	// Verdict of the candidate, once known.
	// +optional
	Verdict Verdict `json:"verdict,omitempty"`
	// Insight explains the verdict.
	// +optional
	Insight string `json:"insight,omitempty"`
	// MemoryGB is the peak accelerator memory training reported.
	// +optional
	MemoryGB string `json:"memoryGB,omitempty"`
	// Durations of the candidate's steps.
	// +optional
	Durations StepDurations `json:"durations,omitempty"`
	// Usage of the candidate's Researcher.
	// +optional
	Usage Usage `json:"usage,omitempty"`
}

// StepDurations are the wall times of a round's user processes.
type StepDurations struct {
	// Researcher is how long the Researcher ran.
	// +optional
	Researcher *metav1.Duration `json:"researcher,omitempty"`
	// Train is how long training ran, summed over the baseline's runs.
	// +optional
	Train *metav1.Duration `json:"train,omitempty"`
	// Eval is how long evaluation ran, summed over the baseline's runs.
	// +optional
	Eval *metav1.Duration `json:"eval,omitempty"`
}

// RoundRecord is a finished round, as its row in experiences.md says it.
type RoundRecord struct {
	// Round is the round's number; 0 is the baseline.
	Round int32 `json:"round"`
	// Strategy is what the Researcher said it tried.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Strategy string `json:"strategy,omitempty"`
	// Compliance is the outcome of the round's compliance check; empty when
	// the round ended before it.
	// +optional
	Compliance ComplianceResult `json:"compliance,omitempty"`
	// ComplianceMessage says which rule a failed check found broken.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	ComplianceMessage string `json:"complianceMessage,omitempty"`
	// Value is the metric the fixed evaluation printed, as a decimal string;
	// empty when there was none.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Value string `json:"value,omitempty"`
	// Verdict is the round's outcome.
	Verdict Verdict `json:"verdict"`
	// Insight explains the verdict; every non-improvement has one.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Insight string `json:"insight,omitempty"`
	// Note holds the guidance this round was the first to see.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Note string `json:"note,omitempty"`
	// Commit is the commit an improved round made.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Commit string `json:"commit,omitempty"`
	// Durations of the round's user processes.
	// +optional
	Durations StepDurations `json:"durations,omitempty"`
	// CompletionTime is when the round's verdict was recorded.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// WorkspaceStatus describes the experiment's worktree.
type WorkspaceStatus struct {
	// Path of the worktree.
	// +optional
	Path string `json:"path,omitempty"`
	// Branch the experiment commits to.
	// +optional
	Branch string `json:"branch,omitempty"`
	// StartCommit is where the experiment started.
	// +optional
	StartCommit string `json:"startCommit,omitempty"`
	// FixedFileHashes are the SHA-256 sums of the fixed files at the start,
	// verified before every evaluation.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=map
	// +listMapKey=path
	FixedFileHashes []FileHash `json:"fixedFileHashes,omitempty"`
}

// FileHash is a file's SHA-256 sum.
type FileHash struct {
	// Path of the file, relative to the experiment directory.
	// +kubebuilder:validation:MaxLength=512
	Path string `json:"path"`
	// SHA256 is the hex-encoded sum of the file's content.
	// +kubebuilder:validation:MaxLength=64
	SHA256 string `json:"sha256"`
}

// Usage is what the experiment has consumed.
type Usage struct {
	// GPUSeconds of training and evaluation.
	// +optional
	GPUSeconds int64 `json:"gpuSeconds,omitempty"`
	// ResearcherSeconds of Researcher runs.
	// +optional
	ResearcherSeconds int64 `json:"researcherSeconds,omitempty"`
	// InputTokens the Researchers reported.
	// +optional
	InputTokens int64 `json:"inputTokens,omitempty"`
	// OutputTokens the Researchers reported.
	// +optional
	OutputTokens int64 `json:"outputTokens,omitempty"`
	// Cost the Researchers reported, in US dollars, as a decimal string.
	// +optional
	Cost string `json:"cost,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ar,categories=research
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Round",type=integer,JSONPath=`.status.round`
// +kubebuilder:printcolumn:name="Best",type=string,JSONPath=`.status.best.value`
// +kubebuilder:printcolumn:name="Baseline",type=string,JSONPath=`.status.baseline.value`
// +kubebuilder:printcolumn:name="Last Verdict",type=string,JSONPath=`.status.lastVerdict`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Metric",type=string,JSONPath=`.spec.eval.metric`,priority=1
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.currentRound.step`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1

// AutoResearch runs an autonomous research loop on a repository.
type AutoResearch struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AutoResearchSpec   `json:"spec,omitempty"`
	Status AutoResearchStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// AutoResearchList is a list of AutoResearch.
type AutoResearchList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AutoResearch `json:"items"`
}

func init() {
	SchemeBuilder.Register(&AutoResearch{}, &AutoResearchList{})
}
