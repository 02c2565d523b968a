// Package round is the research loop's state machine. Given the protocol, the
// current status and what an adapter observed, Next returns the new status and
// the actions to perform. It never touches git, processes or an API server:
// the local runner and the Kubernetes reconciler are adapters around it.
package round

import (
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/prompt"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// ActionType names what an adapter must do.
type ActionType string

const (
	// ActionPrepareWorkspace creates the worktree and experiment branch,
	// records the fixed files' hashes and writes the ledger headers.
	ActionPrepareWorkspace ActionType = "PrepareWorkspace"
	// ActionRunResearcher restores the worktree to the action's BaseCommit
	// (keeping the ledger) and runs the Researcher on it.
	ActionRunResearcher ActionType = "RunResearcher"
	// ActionCheckCompliance checks the changed files and kernel parity.
	ActionCheckCompliance ActionType = "CheckCompliance"
	// ActionRunTrain runs the training command under the time limit.
	ActionRunTrain ActionType = "RunTrain"
	// ActionRunEval verifies the fixed files' hashes, then runs the fixed
	// evaluation command.
	ActionRunEval ActionType = "RunEval"
	// ActionRunHoldout runs the hidden holdout evaluation (spec.holdout)
	// of the candidate that the evaluation judged improved, or of the
	// baseline, on the outputs of the training run its evaluation used.
	// What it prints reaches no file, variable or prompt a Researcher can
	// read.
	ActionRunHoldout ActionType = "RunHoldout"
	// ActionCommit commits the candidate with Message.
	ActionCommit ActionType = "Commit"
	// ActionRollback restores BaseCommit, keeping the ledger.
	ActionRollback ActionType = "Rollback"
	// ActionReportRound tells the human that a round has its final record;
	// the ledger row was written by the step that carried it.
	ActionReportRound ActionType = "ReportRound"
	// ActionWarn tells the human something that does not stop the loop.
	ActionWarn ActionType = "Warn"
	// ActionFinish writes the ledger's final header and commits the ledger.
	// It is repeated until ObserveFinished reports the ledger commit.
	ActionFinish ActionType = "Finish"
)

// Action is one thing for an adapter to do. Actions whose result the engine
// waits for (workspace, researcher, compliance, train, eval, commit,
// rollback, finish) come last in a batch; the others are done in order
// before. CurrentAction rebuilds the waited-for action from the status, so
// an adapter that lost it (a restart, a failed create) never guesses.
type Action struct {
	Type      ActionType
	Round     int32
	Candidate int32
	// Candidates is how many candidates the round has when it has
	// several, 0 for one: then each Researcher works on a copy of the base
	// commit of its own, and each candidate's steps run in directories of
	// their own.
	Candidates int32
	// Sample is the baseline run index, from 1.
	Sample int32
	// BaseCommit is the commit the round started from.
	BaseCommit string
	// SealBase, on CheckCompliance, is the commit the candidate's
	// Researcher started from when the round's BaseCommit has moved on
	// since (spec.pipeline): the candidate is sealed on SealBase, then
	// carried onto BaseCommit by a three-way merge, and checked there.
	SealBase string
	// Combine, on CheckCompliance of the candidate spec.combine added to
	// the round, is the sealed commits of the candidates whose changes it
	// applies together, each on BaseCommit: they are merged there, and the
	// merge is sealed and checked as the candidate.
	Combine []string
	// Early says that the round was started while the round before it
	// trained (spec.pipeline): its Researchers work on copies of their own,
	// and its steps leave the worktree, which that round still uses, alone.
	Early bool
	// Code is the commit whose files RunTrain and RunEval run, each in a
	// fresh checkout, and whose files Commit commits: the candidate as
	// sealed, or BaseCommit for the baseline.
	Code string
	// Prompt is what the Researcher's prompt is made from; set on
	// RunResearcher.
	Prompt *prompt.Data
	// Ledger is what the step writes to experiences.md and results.tsv: on
	// Commit and Rollback the round's row with the header as it stands after
	// the round, on Finish the final header, and on the first round's
	// RunResearcher the baseline's row, which no git step of its own writes.
	Ledger *steps.LedgerUpdate
	// Message is the commit message, warning or final report line.
	Message string
	// Reason is a CamelCase reason for events.
	Reason string
	// Record is the finished round's entry; set on ReportRound.
	Record *v1alpha1.RoundRecord
	// Tasks is the finished round's S1–S6 task list, with the Git and
	// Termination outcomes that the status no longer holds once the next
	// round starts; set on ReportRound.
	Tasks []string
}

// ObservationKind names what an adapter saw.
type ObservationKind string

const (
	// ObserveTick reports nothing new: the spec may have changed, or a
	// running step is still running.
	ObserveTick ObservationKind = "Tick"
	// ObserveResumed reports that the adapter restarted after an
	// interruption and nothing of the current step survived.
	ObserveResumed            ObservationKind = "Resumed"
	ObserveWorkspaceReady     ObservationKind = "WorkspaceReady"
	ObserveWorkspaceFailed    ObservationKind = "WorkspaceFailed"
	ObserveResearcherFinished ObservationKind = "ResearcherFinished"
	ObserveComplianceChecked  ObservationKind = "ComplianceChecked"
	ObserveTrainFinished      ObservationKind = "TrainFinished"
	ObserveEvalFinished       ObservationKind = "EvalFinished"
	ObserveHoldoutFinished    ObservationKind = "HoldoutFinished"
	// ObserveQueued reports that the training or evaluation Job of the
	// observation's candidate still waits for admission to spec.queueName
	// while Queueable holds: the round goes on without it.
	ObserveQueued     ObservationKind = "Queued"
	ObserveCommitted  ObservationKind = "Committed"
	ObserveRolledBack ObservationKind = "RolledBack"
	// ObserveFinished reports the commit holding the final ledger.
	ObserveFinished ObservationKind = "Finished"
	// ObserveRebaseline reports that the user accepted a changed measure
	// (Changed lists what changed) for an experiment under way: nothing of
	// the current step survived, and the adapter put the worktree back on
	// BestCommit. The baseline is measured again there before the next
	// round.
	ObserveRebaseline ObservationKind = "Rebaseline"
)

// Observation is the result of the action the engine waits for.
type Observation struct {
	Kind      ObservationKind
	Round     int32
	Candidate int32

	Workspace  *WorkspaceResult
	Researcher *ResearcherResult
	Compliance *ComplianceResult
	Train      *TrainResult
	Eval       *EvalResult
	Holdout    *HoldoutResult
	// Commit is the commit an ActionCommit made, or the ledger commit an
	// ActionFinish made.
	Commit string
	// Push is how the push to spec.output.git after an ActionCommit or
	// ActionFinish went; nil when none was made.
	Push *PushResult
	// Error explains a failed workspace preparation.
	Error string
	// Waiting, on a Tick, says why the running step has not started: its
	// pod waits to be scheduled or cannot start a container. Waiting is
	// shown, never judged.
	Waiting string
	// Changed lists the parts of the protocol a rebaseline follows.
	Changed []string
}

// PushResult is how a push to spec.output.git went.
type PushResult struct {
	// Commit is what the remote's branch holds after a push that succeeded.
	Commit string
	// Error is why the push failed.
	Error string
}

// ProcessExit is how a user process ended.
type ProcessExit struct {
	ExitCode int
	TimedOut bool
	Duration time.Duration
	// Tail is the end of the process's output, for insights.
	Tail string
}

// Failed reports whether the process did not succeed.
func (p ProcessExit) Failed() bool { return p.TimedOut || p.ExitCode != 0 }

// WorkspaceResult describes a prepared workspace.
type WorkspaceResult struct {
	Path string
	// ClaimName is the claim that holds the workspace on a cluster.
	ClaimName   string
	Branch      string
	StartCommit string
	FixedHashes []v1alpha1.FileHash
	// FixedRegions are the fixed regions of the variable files at the start.
	FixedRegions []v1alpha1.FixedRegion
}

// ResearcherResult is what a Researcher run produced.
type ResearcherResult struct {
	Exit     ProcessExit
	Strategy string
	Usage    v1alpha1.Usage
}

// ComplianceResult is the verdict of the compliance step.
type ComplianceResult struct {
	// Strategy is the Researcher's strategy when the adapter learns it only
	// while checking compliance, as the operator does.
	Strategy string
	// Violation summarises the file rules broken; empty when none.
	Violation string
	// Parity is the PARITY_FAIL line of a failed kernel; empty when all pass.
	Parity string
	// Advisory notes go into the Insight without failing the round.
	Advisory string
	// NoChange says that the candidate changed no file: there is nothing
	// to train or evaluate.
	NoChange bool
	// Candidate is the commit the supervisor sealed the candidate as, before
	// it checked it.
	Candidate string
	// Conflict names the files where a candidate carried onto a new best
	// (Action.SealBase) conflicts with it; the candidate is stale.
	Conflict string
}

// TrainResult is how training ended.
type TrainResult struct {
	Exit ProcessExit
	// Divergence explains a run that printed FAIL or a NaN loss.
	Divergence string
	// FinalLoss is the last loss training printed, if any.
	FinalLoss string
	// MemoryGB is the peak memory training reported, if any.
	MemoryGB string
}

// EvalResult is what the fixed evaluation printed.
type EvalResult struct {
	Exit ProcessExit
	// Found reports whether the metric was printed.
	Found bool
	// Value is the metric as printed.
	Value string
	// FixedFilesChanged lists fixed files whose hash differs from the start;
	// the evaluation did not run when it is not empty.
	FixedFilesChanged []string
	// Readings are the readings spec.eval.constraints limit, by name, as
	// the evaluation printed them last; one it did not print is missing.
	Readings map[string]string
}

// HoldoutResult is what the hidden holdout evaluation printed.
type HoldoutResult struct {
	// Exit is how the command ended; its Tail never reaches a verdict.
	Exit ProcessExit
	// Found reports whether the holdout metric was printed.
	Found bool
	// Value is the holdout metric as printed.
	Value string
}
