// Package round is the research loop's state machine. Given the protocol, the
// current status and what an adapter observed, Next returns the new status and
// the actions to perform. It never touches git, processes or an API server:
// the local runner and the Kubernetes reconciler are adapters around it.
package round

import (
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
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
	// ActionCommit commits the candidate with Message.
	ActionCommit ActionType = "Commit"
	// ActionRollback restores BaseCommit, keeping the ledger.
	ActionRollback ActionType = "Rollback"
	// ActionRecord writes Record as the round's ledger row (experiences.md
	// and results.tsv) with the header taken from the new status.
	ActionRecord ActionType = "Record"
	// ActionWarn tells the human something that does not stop the loop.
	ActionWarn ActionType = "Warn"
	// ActionFinish marks the ledger with the final status and commits it.
	ActionFinish ActionType = "Finish"
)

// Action is one thing for an adapter to do. Actions whose result the engine
// waits for (workspace, researcher, compliance, train, eval, commit,
// rollback) come last in a batch; the others are done in order before.
type Action struct {
	Type      ActionType
	Round     int32
	Candidate int32
	// Sample is the baseline run index, from 1.
	Sample int32
	// BaseCommit is the commit the round started from.
	BaseCommit string
	// Guidance holds every note the Researcher must see.
	Guidance []string
	// Message is the commit message, warning or final report line.
	Message string
	// Reason is a CamelCase reason for events.
	Reason string
	// Record is the round's ledger entry.
	Record *v1alpha1.RoundRecord
	// Tasks is the finished round's S1–S6 task list, with the Git and
	// Termination outcomes that the status no longer holds once the next
	// round starts; set on Record.
	Tasks []string
	// LedgerStatus is the experiences.md status for Finish:
	// completed or target_reached.
	LedgerStatus string
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
	ObserveCommitted          ObservationKind = "Committed"
	ObserveRolledBack         ObservationKind = "RolledBack"
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
	// Commit is the commit an ActionCommit made.
	Commit string
	// Error explains a failed workspace preparation.
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
	Path        string
	Branch      string
	StartCommit string
	FixedHashes []v1alpha1.FileHash
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
}
