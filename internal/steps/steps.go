// Package steps is the contract between the operator and the commands it
// runs inside pods: the layout of the workspace volume, and the compact JSON
// results the in-pod commands write to their container's termination
// message, so that the operator learns a step's outcome from the Pod status
// without reading logs through the kubelet.
package steps

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// Paths inside every pod that mounts the workspace volume.
const (
	// WorkspaceMount is where the workspace PVC is mounted.
	WorkspaceMount = "/workspace"
	// SourceDir holds the clone of spec.source; its .git directory is the
	// experiment's git directory.
	SourceDir = WorkspaceMount + "/source"
	// GitDir is the experiment's git directory, which holds the branch
	// and every candidate ref.
	GitDir = SourceDir + "/.git"
	// WorktreeDir is the experiment's worktree on the branch autoresearch/<name>.
	WorktreeDir = WorkspaceMount + "/worktree"
	// LogsDir keeps every step's log, out of the Researcher's reach.
	LogsDir = WorkspaceMount + "/logs"
	// CandidatesDir keeps the copies of the base commit that the
	// Researchers of a round of several candidates work on, one each.
	CandidatesDir = WorkspaceMount + "/candidates"
	// StateDir keeps the supervisor's files, such as the ledger backup, and
	// the checkouts training and evaluation run in.
	StateDir = WorkspaceMount + "/state"
	// ToolsMount is where an init container copies the autoresearch binary
	// into pods that run a user's image.
	ToolsMount = "/autoresearch-tools"
	// ImageBinary is the autoresearch binary in the operator's own image.
	ImageBinary = "/autoresearch"
	// Binary is the autoresearch binary inside such pods.
	Binary = ToolsMount + "/autoresearch"
	// PromptMount is where the round's prompt ConfigMap is mounted.
	PromptMount = "/etc/autoresearch"
	// PromptFile is the prompt inside the Researcher pod.
	PromptFile = PromptMount + "/prompt.md"
	// TerminationMessagePath is where results are written.
	TerminationMessagePath = "/dev/termination-log"
	// MaxResultBytes is what the kubelet keeps of a termination message.
	MaxResultBytes = 4096
)

// LogPath is the log of a step of a round, e.g. LogPath(3, "train").
func LogPath(round int32, step string) string {
	return path.Join(LogsDir, "round-"+strconv.Itoa(int(round)), step+".log")
}

// ProcessResult is how a wrapped user command ended.
type ProcessResult struct {
	ExitCode   int   `json:"exitCode"`
	DurationMS int64 `json:"durationMs"`
	TimedOut   bool  `json:"timedOut,omitempty"`
	// Tail is the end of the output, shortened to fit the message.
	Tail string `json:"tail,omitempty"`
}

// TrainResult is written by `autoresearch exec --step train`.
type TrainResult struct {
	ProcessResult
	Divergence string `json:"divergence,omitempty"`
	FinalLoss  string `json:"finalLoss,omitempty"`
	MemoryGB   string `json:"memoryGB,omitempty"`
}

// EvalResult is written by `autoresearch exec --step eval`.
type EvalResult struct {
	ProcessResult
	Found bool   `json:"found"`
	Value string `json:"value,omitempty"`
	// FixedFilesChanged lists fixed files whose hash differs; the command
	// did not run when it is not empty.
	FixedFilesChanged []string `json:"fixedFilesChanged,omitempty"`
	// Readings are the last values the output printed of the readings
	// asked for, by name; one it never printed is missing.
	Readings map[string]string `json:"readings,omitempty"`
}

// WorkspaceResult is written by `autoresearch workspace init`.
type WorkspaceResult struct {
	Branch      string            `json:"branch"`
	StartCommit string            `json:"startCommit"`
	FixedHashes map[string]string `json:"fixedHashes"`
	// FixedRegions are the fixed regions of the variable files.
	FixedRegions []v1alpha1.FixedRegion `json:"fixedRegions,omitempty"`
	Error        string                 `json:"error,omitempty"`
}

// ComplianceResult is written by `autoresearch workspace check`.
type ComplianceResult struct {
	Strategy  string `json:"strategy,omitempty"`
	Violation string `json:"violation,omitempty"`
	Parity    string `json:"parity,omitempty"`
	Advisory  string `json:"advisory,omitempty"`
	// NoChange says that the candidate changed no file.
	NoChange bool `json:"noChange,omitempty"`
	// Candidate is the commit the candidate was sealed as.
	Candidate string `json:"candidate,omitempty"`
	// Conflict names the files where the candidate, carried onto a newer
	// best, conflicts with it.
	Conflict string `json:"conflict,omitempty"`
}

// GitResult is written by `autoresearch workspace commit|rollback`.
type GitResult struct {
	Commit string `json:"commit,omitempty"`
	// Push is how the push to spec.output.git went, when one was asked.
	Push *PushResult `json:"push,omitempty"`
}

// PushResult is how a push to spec.output.git went: the commit the remote's
// branch holds, or why the push failed. A failed push fails no step.
type PushResult struct {
	Commit string `json:"commit,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Encode marshals a result and shortens its Tail, if any, until it fits a
// termination message.
func Encode(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	for len(data) > MaxResultBytes {
		p := tailOf(v)
		if p == nil || *p == "" {
			return nil, fmt.Errorf("result of %d bytes does not fit a termination message", len(data))
		}
		over := len(data) - MaxResultBytes + 16
		if over >= len(*p) {
			*p = ""
		} else {
			*p = "…" + (*p)[over:]
		}
		if data, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	return data, nil
}

func tailOf(v any) *string {
	switch r := v.(type) {
	case *ProcessResult:
		return &r.Tail
	case *TrainResult:
		return &r.Tail
	case *EvalResult:
		return &r.Tail
	case *ComplianceResult:
		return &r.Violation
	}
	return nil
}

// Decode reads a termination message into a result.
func Decode(message string, v any) error {
	if message == "" {
		return fmt.Errorf("no result in the termination message")
	}
	if err := json.Unmarshal([]byte(message), v); err != nil {
		return fmt.Errorf("malformed result in the termination message: %w", err)
	}
	return nil
}

// ResearcherReport is what a Researcher may write to
// $AUTORESEARCH_RESULT_FILE about its own consumption; on a cluster that
// file is its container's termination message. Every field is optional.
// InputTokens counts cached input tokens too; the cache fields say how
// many of them were read from or written to a prompt cache.
type ResearcherReport struct {
	InputTokens      int64  `json:"inputTokens,omitempty"`
	OutputTokens     int64  `json:"outputTokens,omitempty"`
	CacheReadTokens  int64  `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int64  `json:"cacheWriteTokens,omitempty"`
	Cost             string `json:"cost,omitempty"`
	// Error is why a failed Researcher gave up.
	Error string `json:"error,omitempty"`
}

// Usage is the report's consumption as the API counts it.
func (r ResearcherReport) Usage() v1alpha1.Usage {
	return v1alpha1.Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Cost: r.Cost}
}

// FileHashes are the fixed files' hashes of a WorkspaceResult as the API
// lists them, sorted by path.
func FileHashes(m map[string]string) []v1alpha1.FileHash {
	out := make([]v1alpha1.FileHash, 0, len(m))
	for p, h := range m {
		out = append(out, v1alpha1.FileHash{Path: p, SHA256: h})
	}
	slices.SortFunc(out, func(a, b v1alpha1.FileHash) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// HashMap is the path → SHA-256 map of hashes, as the evaluation step
// verifies them.
func HashMap(hashes []v1alpha1.FileHash) map[string]string {
	m := make(map[string]string, len(hashes))
	for _, h := range hashes {
		m[h.Path] = h.SHA256
	}
	return m
}

// LedgerUpdate is one round's row for experiences.md and results.tsv, with
// the ledger header as it stands after the round. The operator passes it to
// the pod that commits or rolls back the round, so that one pod does both.
type LedgerUpdate struct {
	Metric    string `json:"metric"`
	Best      string `json:"best,omitempty"`
	BestRound int32  `json:"bestRound,omitempty"`
	Rounds    int32  `json:"rounds"`
	MaxRounds int32  `json:"maxRounds"`
	// Status is the experiences.md status: running, completed,
	// target_reached or stopped_by_user.
	Status string `json:"status"`
	// Round, when set, is written as the round's row; its Commit, when
	// empty, is the commit HEAD is on after the git step.
	Round *LedgerRound `json:"round,omitempty"`
	// Others are the rows of the round's other candidates, each with its
	// commit.
	Others   []LedgerRound `json:"others,omitempty"`
	MemoryGB string        `json:"memoryGB,omitempty"`
}

// LedgerRound is a round's row in the ledger.
type LedgerRound struct {
	Round int32 `json:"round"`
	// Candidate names the candidate of a round of several: a, b, …
	Candidate  string `json:"candidate,omitempty"`
	Strategy   string `json:"strategy,omitempty"`
	Compliance string `json:"compliance,omitempty"`
	Value      string `json:"value,omitempty"`
	Verdict    string `json:"verdict"`
	Insight    string `json:"insight,omitempty"`
	Note       string `json:"note,omitempty"`
	Commit     string `json:"commit,omitempty"`
}
