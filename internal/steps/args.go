package steps

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// The in-pod commands' command lines are built here, next to the results
// they write, so that the operator and the commands cannot disagree on a
// flag: the tests run every builder's output through the real commands.

// Steps of `autoresearch exec`.
const (
	StepTrain  = "train"
	StepEval   = "eval"
	StepParity = "parity"
	// StepHoldout runs the hidden holdout evaluation as eval runs an
	// evaluation, but its result carries no tail of the output.
	StepHoldout = "holdout"
)

// Git steps of `autoresearch workspace`.
const (
	GitCommit   = "commit"
	GitRollback = "rollback"
)

// Worktree names an experiment's worktree on the workspace volume.
type Worktree struct {
	// Dir is the worktree; WorktreeDir when empty.
	Dir string
	// Subdir is the experiment directory inside it; "." for the top level.
	Subdir string
	// Name is the experiment's; its branch is autoresearch/<name>.
	Name string
	// Caches are the ignored paths a rollback keeps (spec.workspace.caches).
	Caches []string
}

func (w Worktree) args() []string {
	args := flags(
		"worktree", cmp.Or(w.Dir, WorktreeDir),
		"subdir", cmp.Or(w.Subdir, "."),
		"name", w.Name,
	)
	for _, c := range w.Caches {
		args = append(args, "--cache="+c)
	}
	return args
}

// ExecOptions are the flags of `autoresearch exec`, the step wrapper that
// runs a user command in a user's image.
type ExecOptions struct {
	// Step is StepTrain, StepEval, StepHoldout or StepParity.
	Step  string
	Round int32
	// Workdir is the experiment directory the command runs in.
	Workdir string
	// Timeout sends SIGTERM to the command's process group, and Grace
	// later SIGKILL; Grace defaults to 30 s.
	Timeout time.Duration
	Grace   time.Duration
	// TimeLimit and EpochLimit reach the command as AUTORESEARCH_TIME_LIMIT
	// and AUTORESEARCH_EPOCH_LIMIT.
	TimeLimit  time.Duration
	EpochLimit string
	// Metric and Pattern find the metric in an evaluation's output, and
	// Readings the readings spec.eval.constraints limit.
	Metric   string
	Pattern  string
	Readings []string
	// FixedHashesFile is a JSON object of fixed file → SHA-256, relative to
	// Workdir, that an evaluation verifies before it runs.
	FixedHashesFile string
	// Targets are the kernel parity targets, run with Python.
	Targets []v1alpha1.KernelTarget
	Python  string
	// ComplianceFile is the ComplianceResult of `workspace check` that the
	// parity step completes.
	ComplianceFile string
	// LogPath keeps the full output; LogPath(Round, Step) when empty.
	LogPath string
	// ResultPath is where the result goes; TerminationMessagePath when empty.
	ResultPath string
	// Command is the user command, e.g. ["sh", "-c", spec.train.command].
	Command []string
}

// ExecArgs is the command line of `autoresearch exec`.
func ExecArgs(binary string, o ExecOptions) []string {
	args := []string{binary, "exec"}
	args = append(args, flags(
		"step", o.Step,
		"round", strconv.Itoa(int(o.Round)),
		"workdir", o.Workdir,
		"timeout", duration(o.Timeout),
		"grace", duration(o.Grace),
		"time-limit", duration(o.TimeLimit),
		"epoch-limit", o.EpochLimit,
		"metric", o.Metric,
		"pattern", o.Pattern,
		"readings", strings.Join(o.Readings, ","),
		"fixed-hashes", o.FixedHashesFile,
		"python", o.Python,
		"compliance", o.ComplianceFile,
		"log", o.LogPath,
		"result", o.ResultPath,
	)...)
	if len(o.Targets) > 0 {
		args = append(args, "--targets="+mustJSON(o.Targets))
	}
	if len(o.Command) > 0 {
		args = append(append(args, "--"), o.Command...)
	}
	return args
}

// InitOptions are the flags of `autoresearch workspace init`, which clones
// the source when asked and creates the worktree.
type InitOptions struct {
	Worktree
	// Repo is the repository's clone; SourceDir when empty.
	Repo string
	// CloneURL, when set, is cloned into Repo unless Repo already has a
	// clone; Ref is then checked out. The credentials come from the
	// environment (GIT_USERNAME, GIT_PASSWORD) or from SSHKeyFile.
	CloneURL   string
	Ref        string
	SSHKeyFile string
	Metric     string
	MaxRounds  int32
	// Fixed are the fixed files to hash.
	Fixed      []string
	ResultPath string
}

// InitArgs is the command line of `autoresearch workspace init`.
func InitArgs(binary string, o InitOptions) []string {
	args := append([]string{binary, "workspace", "init"}, o.Worktree.args()...)
	args = append(args, flags(
		"repo", cmp.Or(o.Repo, SourceDir),
		"clone-url", o.CloneURL,
		"ref", o.Ref,
		"ssh-key", o.SSHKeyFile,
		"metric", o.Metric,
		"max-rounds", strconv.Itoa(int(o.MaxRounds)),
		"result", o.ResultPath,
	)...)
	for _, f := range o.Fixed {
		args = append(args, "--fixed="+f)
	}
	return args
}

// PrepareOptions are the flags of `autoresearch workspace prepare`, which
// puts the worktree on the round's base before its Researcher.
type PrepareOptions struct {
	Worktree
	// StateDir keeps the round's ledger backup and the ledger the
	// supervisor publishes; StateDir when empty.
	StateDir string
	Round    int32
	Base     string
	// Ledger, when set, is recorded first: the baseline's row or a round's
	// row that is not written yet.
	Ledger *LedgerUpdate
	// CandidateRoot is where the Researcher works on a copy of base of its
	// own, in a round of several candidates (Candidate names it) or started
	// early; Prepare says that it also puts the worktree back on base, as
	// for a round of one, which the first candidate of a round of several
	// that did not start early does.
	Candidate, CandidateRoot string
	Prepare                  bool
}

// PrepareArgs is the command line of `autoresearch workspace prepare`.
func PrepareArgs(binary string, o PrepareOptions) []string {
	args := append([]string{binary, "workspace", "prepare"}, o.Worktree.args()...)
	args = append(args, flags(
		"state-dir", cmp.Or(o.StateDir, StateDir),
		"round", strconv.Itoa(int(o.Round)),
		"base", o.Base,
		"candidate", o.Candidate,
		"candidate-root", o.CandidateRoot,
	)...)
	if o.Ledger != nil {
		args = append(args, "--ledger="+mustJSON(o.Ledger))
	}
	if o.Prepare {
		args = append(args, "--prepare-worktree")
	}
	return args
}

// CheckOptions are the flags of `autoresearch workspace check`, which takes
// the ledger back from the Researcher and checks compliance.
type CheckOptions struct {
	Worktree
	// StateDir keeps the round's ledger backup and the ledger the
	// supervisor publishes; StateDir when empty.
	StateDir string
	Round    int32
	Base     string
	// Start is the experiment's start commit.
	Start string
	// Spec is the protocol, passed inline; SpecFile, a file holding it as
	// JSON or YAML, is used when Spec is nil.
	Spec     *v1alpha1.AutoResearchSpec
	SpecFile string
	// AlsoWrite is a second copy of the result, for the parity step.
	AlsoWrite  string
	ResultPath string
	// CandidateRoot is where the Researcher worked on a copy of its own, in
	// a round of several candidates (Candidate names it) or started early;
	// SealBase is the commit it started from when Base has moved on since.
	Candidate, CandidateRoot, SealBase string
	// Combine is the sealed commits of the candidates whose changes
	// Candidate applies together.
	Combine []string
}

// CheckArgs is the command line of `autoresearch workspace check`.
func CheckArgs(binary string, o CheckOptions) []string {
	args := append([]string{binary, "workspace", "check"}, o.Worktree.args()...)
	args = append(args, flags(
		"state-dir", cmp.Or(o.StateDir, StateDir),
		"round", strconv.Itoa(int(o.Round)),
		"base", o.Base,
		"start", o.Start,
		"spec-file", o.SpecFile,
		"also-write", o.AlsoWrite,
		"result", o.ResultPath,
		"candidate", o.Candidate,
		"candidate-root", o.CandidateRoot,
		"seal-base", o.SealBase,
		"combine", strings.Join(o.Combine, ","),
	)...)
	if o.Spec != nil {
		args = append(args, "--spec="+mustJSON(o.Spec))
	}
	return args
}

// GitOptions are the flags of `autoresearch workspace commit|rollback`: the
// round's git step, then its ledger row.
type GitOptions struct {
	Worktree
	// StateDir is where the ledger is published; StateDir when empty.
	StateDir string
	// Action is GitCommit or GitRollback.
	Action string
	// Base is the commit the round started from.
	Base string
	// Candidate is the round's sealed commit, which GitCommit commits.
	Candidate string
	// Message is the commit message.
	Message    string
	Ledger     LedgerUpdate
	ResultPath string
	// Push, for GitCommit, pushes the branch afterwards.
	Push *PushOptions
}

// PushOptions push the experiment branch to spec.output.git after a git
// step.
type PushOptions struct {
	URL string
	// Candidates also pushes the candidate refs.
	Candidates bool
	// SecretDir is the mounted Secret with the credentials, if any.
	SecretDir string
}

func (p *PushOptions) args() []string {
	if p == nil {
		return nil
	}
	args := flags("push-url", p.URL, "push-secret-dir", p.SecretDir)
	if p.Candidates {
		args = append(args, "--push-candidates")
	}
	return args
}

// GitArgs is the command line of `autoresearch workspace commit|rollback`.
func GitArgs(binary string, o GitOptions) []string {
	args := append([]string{binary, "workspace", o.Action}, o.Worktree.args()...)
	args = append(args, flags(
		"state-dir", cmp.Or(o.StateDir, StateDir),
		"base", o.Base,
		"candidate", o.Candidate,
		"message", o.Message,
		"ledger", mustJSON(o.Ledger),
		"result", o.ResultPath,
	)...)
	return append(args, o.Push.args()...)
}

// WithTools has a workspace step's command line first copy the binary to
// ToolsMount, for a user's container in the same pod to run it from.
func WithTools(args []string) []string {
	return append(slices.Clone(args), "--install-tools="+ToolsMount)
}

// CheckoutOptions are the flags of `autoresearch workspace checkout`, which
// makes the fresh checkout a training or evaluation pod runs in.
type CheckoutOptions struct {
	Worktree
	// Commit is the code to check out.
	Commit string
	// Dest is the checkout, emptied first.
	Dest string
	// Trained is the training checkout whose Outputs, in its experiment
	// directory, an evaluation's checkout gets; empty for training.
	Trained string
	Outputs []string
	// LogDir is made for the step's log, as the step's user: the kubelet
	// would make a missing subPath directory owned by root, which the
	// step could not write to.
	LogDir string
}

// CheckoutArgs is the command line of `autoresearch workspace checkout`.
func CheckoutArgs(binary string, o CheckoutOptions) []string {
	args := append([]string{binary, "workspace", "checkout"}, o.Worktree.args()...)
	args = append(args, flags("commit", o.Commit, "dest", o.Dest, "trained", o.Trained, "log-dir", o.LogDir)...)
	for _, out := range o.Outputs {
		args = append(args, "--output="+out)
	}
	return args
}

// FinishOptions are the flags of `autoresearch workspace finish`, which
// writes the final ledger status and commits the ledger.
type FinishOptions struct {
	Worktree
	// StateDir is where the ledger is published; StateDir when empty.
	StateDir string
	Ledger   LedgerUpdate
	// ResultPath gets a GitResult with the commit HEAD is on.
	ResultPath string
	// Push pushes the branch afterwards.
	Push *PushOptions
}

// FinishArgs is the command line of `autoresearch workspace finish`.
func FinishArgs(binary string, o FinishOptions) []string {
	args := append([]string{binary, "workspace", "finish"}, o.Worktree.args()...)
	args = append(args, flags("state-dir", cmp.Or(o.StateDir, StateDir), "ledger", mustJSON(o.Ledger), "result", o.ResultPath)...)
	return append(args, o.Push.args()...)
}

// flags turns name, value pairs into --name=value arguments, leaving out
// empty values. The = form keeps a value that starts with a dash a value.
func flags(pairs ...string) []string {
	var args []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			args = append(args, "--"+pairs[i]+"="+pairs[i+1])
		}
	}
	return args
}

func duration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// mustJSON encodes the plain data types of this package and the API, which
// JSON can always encode.
func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}
