package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
	"github.com/autoresearch-dev/autoresearch-operator/internal/prompt"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/supervisor"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

const (
	stateFile  = "state.json"
	notesFile  = "notes.txt"
	resultFile = "researcher-result.json"
	// maxResultBytes bounds what is read of the Researcher's result file.
	maxResultBytes = 1 << 20
	// protocolFile keeps the protocol the experiment started with, or the
	// one a rebaseline accepted, whose measure
	// (spec.AutoResearchSpec.FrozenChanges) may not change.
	protocolFile = "protocol.json"
	// DefaultGrace is the buffer past the time limit before a process is
	// stopped (the seed's time_limit + 30 s), and again before it is killed.
	DefaultGrace = 30 * time.Second
)

// Options configure a local run.
type Options struct {
	// Out receives progress and reports.
	Out io.Writer
	// Verbose also streams the user processes' output to Out.
	Verbose bool
	// Stop, when closed, ends the run after the current step.
	Stop <-chan struct{}
	// Grace is the buffer past a time limit before SIGTERM; KillGrace the
	// time between SIGTERM and SIGKILL. Both default to DefaultGrace.
	Grace, KillGrace time.Duration
	// Python runs kernel parity checks; defaults to python3.
	Python string
	// Now is the clock; defaults to time.Now.
	Now func() time.Time
	// Rebaseline accepts a measure that changed since the experiment
	// started: the new protocol becomes the one in force, and the baseline
	// is measured again on the best code before the next round.
	Rebaseline bool
	// GPUs are the devices the candidates of a round train and evaluate
	// on, one each in turn, as CUDA_VISIBLE_DEVICES; none sets nothing.
	GPUs []string
	// Writable are directories that training and evaluation write besides
	// their checkout and scratch — a dataset cache, a scratch disk — where
	// the rest of the machine is read-only to them. What training writes
	// there, evaluation may read: no tool that evaluation runs belongs
	// there.
	Writable []string
	// ResearcherHome is the Researchers' HOME, an existing directory. By
	// default it is a directory of the experiment's own, and the user's
	// home is read-only to them; naming the user's home lets them use the
	// agents' settings and logins there, and write it, where what they
	// write outlives the run (docs/security.md).
	ResearcherHome string
	// OutputUsername and OutputToken answer the https server of
	// spec.output.git; without a token the push uses git's own means over
	// ssh (the user's ssh agent, keys and known hosts) and none over https.
	OutputUsername, OutputToken string
	// RequireIsolation refuses to run unless every step gets read-only
	// mounts and dies with everything it started, and the holdout's step
	// a network of its own: the guards that only the machine's namespaces
	// give, and which are otherwise warned about and gone.
	RequireIsolation bool
}

// Local runs one experiment on this machine.
type Local struct {
	x      *Experiment
	spec   v1alpha1.AutoResearchSpec
	opts   Options
	status v1alpha1.AutoResearchStatus
	ws     *workspace.Workspace
	out    *reporter
	// toolEnv is the tool environment of training and evaluation, fixed
	// when the run starts.
	toolEnv []string
	// toolchains are the toolchain files above the steps' checkouts as the
	// experiment's first run found them (startingToolchains).
	toolchains map[string]string
	// path is the PATH of every step (stepPath), fixed when the run
	// starts.
	path []string
	// home is the Researchers' HOME (researcherHome).
	home string
	// tools are the directories of the tools that training and evaluation
	// run, read-only to Researchers (toolDirs).
	tools []string
	// rebaselined says that save must record the protocol in force anew.
	rebaselined bool
	// gitState is the repository's git machinery as the round's training
	// found it, kept in memory: training runs code the Researcher wrote, as
	// the runner's user, and what it changes of git must be undone before
	// the supervisor runs git again. nil when no round is in training.
	gitState *workspace.GitState
	// mu guards status against the actions that run while the engine
	// takes the results of others, and what the candidates of a round
	// share: gitState and candidates.
	mu sync.Mutex
	// candidates is what the candidates of the round in progress share.
	candidates candidateRound
}

// Run runs the experiment until it finishes, fails, is suspended or is
// stopped, and returns its final status. An interrupted run resumes where it
// stopped the next time Run is called with the same experiment.
func Run(ctx context.Context, x *Experiment, opts Options) (v1alpha1.AutoResearchStatus, error) {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	// The candidates of a round report, and stream, at once.
	opts.Out = &lockedWriter{w: opts.Out}
	if opts.Grace == 0 {
		opts.Grace = DefaultGrace
	}
	if opts.KillGrace == 0 {
		opts.KillGrace = DefaultGrace
	}
	if opts.Python == "" {
		opts.Python = "python3"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := checkResearcherHome(x, opts.ResearcherHome); err != nil {
		return v1alpha1.AutoResearchStatus{}, err
	}
	if opts.RequireIsolation {
		if err := isolated(x.Object.Spec.Holdout != nil); err != nil {
			return v1alpha1.AutoResearchStatus{}, err
		}
	}
	unlock, err := lockExperiment(x)
	if err != nil {
		return v1alpha1.AutoResearchStatus{}, err
	}
	defer unlock()
	l := &Local{x: x, spec: x.Object.Spec, opts: opts, out: &reporter{w: opts.Out}, toolEnv: measuredToolEnv(ctx)}
	l.home = researcherHome(x, opts)
	l.path = stepPath(ReadOnlyMounts(), l.home)
	l.toolEnv = append(l.toolEnv, versionPins(ctx, l.path, filepath.Join(x.Repo, filepath.FromSlash(x.Subdir)))...)
	if ReadOnlyMounts() {
		l.tools = toolDirs(ctx, l.path, l.home)
	}
	err = l.run(ctx)
	return l.status, err
}

func (l *Local) run(ctx context.Context) error {
	if err := l.x.checkHoldoutFile(ctx); err != nil {
		return err
	}
	for _, w := range l.opts.Writable {
		if fi, err := os.Stat(w); err != nil || !fi.IsDir() || !filepath.IsAbs(w) {
			return fmt.Errorf("writable %q: not the absolute path of a directory", w)
		}
	}
	obs, err := l.load(ctx)
	if err != nil {
		return err
	}
	if l.toolchains, err = startingToolchains(l.x.StateDir()); err != nil {
		return err
	}
	if err := l.x.withHoldout(&l.status); err != nil {
		return err
	}
	l.out.start(l)
	l.out.printf("Steps are contained by %s.\n", Containment())
	if w := ContainmentWarning(); w != "" {
		l.out.warn(w)
	}
	if w := MountsWarning(); w != "" {
		l.out.warn(w)
	}
	if s := l.spec; s.Train.PodTemplate != nil || s.Eval.PodTemplate != nil || s.Researcher.PodTemplate != nil || s.Train.Shm != nil {
		l.out.warn("podTemplate and train.shm shape pods in a cluster; the local runner ignores them")
	}
	if ptr.Deref(l.spec.Pipeline, false) && !ReadOnlyMounts() {
		// The next round's Researchers would work beside the round that
		// trains, which without mounts only restore-and-judge guards, one
		// round at a time.
		l.out.warn("spec.pipeline needs read-only mounts for its steps, which this machine does not allow (run as root, or allow user namespaces); the rounds run one after another")
		l.spec.Pipeline = nil
	}
	if l.spec.Holdout != nil && !OfflineSteps() {
		l.out.warn("the holdout's step runs on the machine's network, since this machine allows it no network namespace (run as root, or allow user namespaces): " +
			"candidate code it runs can send the holdout's data where a later Researcher reads it")
	}
	if h := l.spec.Holdout; h != nil && h.Volume != nil {
		l.out.warn("holdout.volume brings the holdout's files to its pod on a cluster; the local runner ignores it and reads them from holdout.dir on this machine")
	}
	return l.loop(ctx, obs)
}

// result is what one action performed in the background gave.
type result struct {
	action round.Action
	obs    *round.Observation
	err    error
}

// loop feeds observations to the engine until nothing is in progress. The
// actions whose results the engine waits for run at once, one goroutine
// each, as the candidates of a round do; each result goes to the engine as
// it comes. The other actions are done in order before.
func (l *Local) loop(ctx context.Context, obs round.Observation) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result)
	inFlight := 0
	// abort stops what is still running, which the next run starts again.
	abort := func(err error) error {
		cancel()
		for ; inFlight > 0; inFlight-- {
			<-results
		}
		return err
	}
	for {
		stopping := l.stopRequested()
		out, err := l.next(obs, stopping)
		if err != nil {
			return abort(err)
		}
		for _, a := range out.Actions {
			if !waitedFor(a.Type) {
				if _, err := l.perform(ctx, a); err != nil {
					return abort(actionError(a, err))
				}
				continue
			}
			inFlight++
			go func(a round.Action) {
				o, err := l.perform(ctx, a)
				results <- result{action: a, obs: o, err: err}
			}(a)
		}
		if inFlight == 0 {
			l.out.stopped(l, stopping)
			return nil
		}
		r := <-results
		inFlight--
		if r.err != nil {
			return abort(actionError(r.action, r.err))
		}
		obs = *r.obs
	}
}

// waitedFor reports whether the engine waits for the result of an action
// of type t.
func waitedFor(t round.ActionType) bool {
	return t != round.ActionReportRound && t != round.ActionWarn
}

func actionError(a round.Action, err error) error {
	//nolint:staticcheck // ST1005: R4 is how the task lines and the status name round 4.
	return fmt.Errorf("R%d %s: %w", a.Round, a.Type, err)
}

// next feeds one observation to the engine and saves the new status. While
// stopping, the engine sees the loop suspended, so it records the step that
// just finished and starts nothing new.
func (l *Local) next(obs round.Observation, stopping bool) (round.Output, error) {
	spec := *l.spec.DeepCopy()
	notes, err := l.x.Notes()
	if err != nil {
		return round.Output{}, err
	}
	spec.Guidance = append(spec.Guidance, notes...)
	if stopping {
		spec.Suspend = ptr.To(true)
	}
	prev := l.status
	out := round.Next(round.Input{Spec: &spec, Status: l.status, Generation: 1, Observation: obs, Now: l.opts.Now()})
	l.mu.Lock()
	l.status = out.Status
	l.mu.Unlock()
	if err := l.save(); err != nil {
		return out, err
	}
	l.out.progress(l, prev, out.Status, out.Actions)
	return out, nil
}

func (l *Local) stopRequested() bool {
	select {
	case <-l.opts.Stop:
		return true
	default:
		return false
	}
}

// load restores the saved status, or rebuilds it from the ledger of a
// worktree whose state file is gone, and says how the engine should start.
func (l *Local) load(ctx context.Context) (round.Observation, error) {
	data, err := os.ReadFile(filepath.Join(l.x.StateDir(), stateFile))
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &l.status); err != nil {
			return round.Observation{}, fmt.Errorf("reading the saved state: %w (delete %s to rebuild it from experiences.md)", err, filepath.Join(l.x.StateDir(), stateFile))
		}
		changed, err := l.checkProtocol()
		if err != nil {
			return round.Observation{}, err
		}
		if err := l.openWorkspace(); err != nil {
			return round.Observation{}, err
		}
		if len(changed) > 0 {
			return l.rebaseline(ctx, changed)
		}
		return round.Observation{Kind: round.ObserveResumed}, nil
	case !errors.Is(err, os.ErrNotExist):
		return round.Observation{}, err
	}
	if _, err := os.Stat(l.x.Worktree); err == nil {
		if err := l.rebuildFromLedger(ctx); err != nil {
			return round.Observation{}, err
		}
		return round.Observation{Kind: round.ObserveResumed}, nil
	}
	return round.Observation{Kind: round.ObserveTick}, nil
}

// checkProtocol refuses to go on under another measure than the one the
// experiment started with, as the CRD's transition rules do on a cluster,
// unless Options.Rebaseline accepts it: then it returns what changed.
func (l *Local) checkProtocol() ([]string, error) {
	data, err := os.ReadFile(filepath.Join(l.x.StateDir(), protocolFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var started v1alpha1.AutoResearchSpec
	if err := json.Unmarshal(data, &started); err != nil {
		return nil, fmt.Errorf("reading the protocol the experiment started with: %w", err)
	}
	if err := l.x.startedHoldout(&started); err != nil {
		return nil, err
	}
	changed := l.spec.FrozenChanges(&started)
	if len(changed) > 0 && !l.opts.Rebaseline {
		return nil, fmt.Errorf("%s changed since the experiment started, but the baseline and every verdict were measured under the old value; put it back, "+
			"run again with --rebaseline to measure the baseline again on the best code under the new value (the rounds done keep their verdicts), "+
			"or start a new experiment (another metadata.name or --worktree)",
			strings.Join(changed, ", "))
	}
	return changed, nil
}

// rebaseline accepts the changed measure: the worktree goes back on the
// best code, where the engine measures the baseline again, and save records
// the new protocol once the status that measures it is saved.
func (l *Local) rebaseline(ctx context.Context, changed []string) (round.Observation, error) {
	if l.ws != nil {
		if err := l.ws.Rollback(ctx, round.BestCommit(&l.status)); err != nil {
			return round.Observation{}, err
		}
	}
	l.rebaselined = true
	l.out.printf("The measure changed (%s): measuring the baseline again on the best code before the next round; the rounds done keep their verdicts.\n",
		strings.Join(changed, ", "))
	return round.Observation{Kind: round.ObserveRebaseline, Changed: changed}, nil
}

func (l *Local) openWorkspace() error {
	if l.status.Workspace == nil {
		return nil
	}
	ws, err := workspace.Open(l.x.Worktree, l.x.Subdir, l.x.Object.Name)
	if err != nil {
		return fmt.Errorf("the saved state names the worktree %s, but: %w", l.x.Worktree, err)
	}
	l.use(ws)
	return nil
}

// rebuildFromLedger is the seed's recovery from experiences.md alone: the
// rounds with a verdict are done, the best is the committed HEAD.
func (l *Local) rebuildFromLedger(ctx context.Context) error {
	ws, err := workspace.Open(l.x.Worktree, l.x.Subdir, l.x.Object.Name)
	if err != nil {
		return err
	}
	// The ledger as the supervisor last published it, where it did: the
	// worktree's may hold what a Researcher wrote before the run stopped.
	path := supervisor.PublishedLedger(ws.StateDir(), workspace.ExperiencesFile)
	if _, err := os.Lstat(path); err != nil {
		path = ws.ExperiencesPath()
	}
	ledger, err := workspace.ReadLedger(path)
	if err != nil {
		return err
	}
	l.use(ws)
	if ledger.Status == "not_started" || len(ledger.Rows) == 0 {
		return nil
	}
	head, err := ws.Head(ctx)
	if err != nil {
		return err
	}
	start, err := workspace.Git(ctx, ws.Root, nil, "rev-list", "--max-parents=0", "--first-parent", "HEAD")
	if err != nil {
		return err
	}
	// The kept rounds left the fixed files as the start had them: HEAD,
	// which the recovery trusts, names them.
	hashes, regions, err := supervisor.FixedAtStart(ctx, ws, head, v1alpha1.Strings(l.spec.Fixed.Files))
	if err != nil {
		return err
	}
	st := v1alpha1.AutoResearchStatus{
		Phase: v1alpha1.PhaseRunning,
		Workspace: &v1alpha1.WorkspaceStatus{
			Path: ws.Root, Branch: ws.Branch, StartCommit: start, FixedFileHashes: steps.FileHashes(hashes), FixedRegions: regions,
		},
	}
	var rounds []v1alpha1.RoundRecord
	for _, row := range ledger.Rows {
		value := resultValue(row.Result)
		compliance, message := round.ParseComplianceCell(row.Compliance)
		rec := v1alpha1.RoundRecord{
			Round: int32(row.Round), Strategy: row.Strategy, Compliance: compliance, ComplianceMessage: message,
			Value: value, Verdict: v1alpha1.Verdict(row.Verdict), Insight: row.Insight, Note: row.Note,
		}
		switch {
		case row.Round == 0 && value != "":
			st.Baseline = &v1alpha1.BaselineResult{Value: value}
			st.History = append(st.History, rec)
		case row.Round > 0 && row.Verdict != "":
			st.CompletedRounds = int32(row.Round)
			st.LastVerdict = rec.Verdict
			rounds = append(rounds, rec)
		}
	}
	// The prompts of the rounds to come show these, as the history would.
	st.History = append(st.History, rounds[max(0, len(rounds)-int(l.spec.HistoryLimit)):]...)
	if st.Baseline == nil {
		// No baseline yet: measure it again.
		l.status = v1alpha1.AutoResearchStatus{}
		return nil
	}
	st.Round = st.CompletedRounds
	st.Best = &v1alpha1.BestResult{Round: int32(ledger.BestRound), Value: ledger.Best, Commit: head}
	if ledger.Best == "" {
		st.Best = &v1alpha1.BestResult{Value: st.Baseline.Value, Commit: head}
	}
	l.status = st
	l.out.printf("No saved state: rebuilt from %s — %d rounds done, best %s=%s.\n", ws.ExperiencesPath(), st.CompletedRounds, l.spec.Eval.Metric, st.Best.Value)
	return nil
}

func (l *Local) save() error {
	if l.status.Workspace == nil {
		return nil
	}
	// The state directory is the Researcher's to read: the holdout's
	// values go to its own directory.
	st := l.status
	st.Holdout = nil
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := l.x.writeHoldout(l.status.Holdout, l.rebaselined); err != nil {
		return err
	}
	dir := l.x.StateDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := workspace.WriteFileAtomic(filepath.Join(dir, stateFile), data); err != nil {
		return err
	}
	if err := saveToolchains(dir, l.toolchains); err != nil {
		return err
	}
	protocol := filepath.Join(dir, protocolFile)
	if !l.rebaselined {
		if _, err := os.Stat(protocol); !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	spec := *l.x.Object.Spec.DeepCopy()
	if spec.Holdout != nil {
		// Only that there is one: holdout.json keeps it.
		spec.Holdout = &v1alpha1.HoldoutSpec{}
	}
	if data, err = json.Marshal(spec); err != nil {
		return err
	}
	if err := workspace.WriteFileAtomic(protocol, data); err != nil {
		return err
	}
	l.rebaselined = false
	return nil
}

// perform does one action. It returns the observation for actions the
// engine waits on, nil for the others, and an error only when the
// supervisor itself cannot go on (git or the file system failed).
func (l *Local) perform(ctx context.Context, a round.Action) (*round.Observation, error) {
	switch a.Type {
	case round.ActionPrepareWorkspace:
		return l.prepareWorkspace(ctx)
	case round.ActionRunResearcher:
		if ownCopy(a) {
			return l.runCandidateResearcher(ctx, a)
		}
		return l.runResearcher(ctx, a)
	case round.ActionCheckCompliance:
		return l.checkCompliance(ctx, a)
	case round.ActionRunTrain:
		return l.runTrain(ctx, a)
	case round.ActionRunEval:
		return l.runEval(ctx, a)
	case round.ActionRunHoldout:
		return l.runHoldout(ctx, a)
	case round.ActionCommit, round.ActionRollback:
		return l.gitStep(ctx, a)
	case round.ActionReportRound:
		// The progress report already printed the round.
		return nil, nil
	case round.ActionWarn:
		l.out.warn(a.Message)
		return nil, nil
	case round.ActionFinish:
		return l.finish(ctx, a)
	}
	return nil, fmt.Errorf("unknown action %q", a.Type)
}

func (l *Local) prepareWorkspace(ctx context.Context) (*round.Observation, error) {
	ws, res, warnings, err := supervisor.CreateWorkspace(ctx, supervisor.WorkspaceOptions{
		Repo: l.x.Repo, Subdir: l.x.Subdir, Worktree: l.x.Worktree, Name: l.x.Object.Name,
		Metric: l.spec.Eval.Metric, MaxRounds: l.spec.MaxRounds, Fixed: v1alpha1.Strings(l.spec.Fixed.Files),
	})
	for _, w := range warnings {
		l.out.warn(w)
	}
	if err != nil {
		return &round.Observation{Kind: round.ObserveWorkspaceFailed, Error: err.Error()}, nil
	}
	l.use(ws)
	return &round.Observation{Kind: round.ObserveWorkspaceReady, Workspace: &round.WorkspaceResult{
		Path: ws.Root, Branch: res.Branch, StartCommit: res.StartCommit, FixedHashes: steps.FileHashes(res.FixedHashes),
		FixedRegions: res.FixedRegions,
	}}, nil
}

func (l *Local) roundDir(n int32) string {
	return filepath.Join(l.ws.StateDir(), fmt.Sprintf("round-%d", n))
}

func (l *Local) runResearcher(ctx context.Context, a round.Action) (*round.Observation, error) {
	// Every round starts from its base commit, whatever an interrupted run left.
	if err := supervisor.PrepareRound(ctx, l.ws, a.Round, a.BaseCommit, l.ws.StateDir(), a.Ledger); err != nil {
		return nil, err
	}
	// The backup is in the worktree, where the Researcher can write: the
	// runner keeps its own copy until the Researcher is done.
	saved, err := supervisor.ReadBackup(l.ws.StateDir(), a.Round)
	if err != nil {
		return nil, err
	}
	text, err := prompt.Render(*a.Prompt)
	if err != nil {
		return nil, err
	}
	dir := l.roundDir(a.Round)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	promptPath := filepath.Join(dir, "prompt.md")
	if err := os.WriteFile(promptPath, []byte(text), 0o644); err != nil {
		return nil, err
	}
	resultPath := filepath.Join(dir, resultFile)
	_ = os.Remove(resultPath)
	mounts, err := l.researcherMounts(ctx, a.Round)
	if err != nil {
		return nil, err
	}
	researcherEnv, err := l.researcherEnv()
	if err != nil {
		return nil, err
	}
	state, err := os.Stat(l.ws.StateDir())
	if err != nil {
		return nil, err
	}
	exit, err := Process{
		Command: l.spec.Researcher.Command,
		Dir:     l.ws.Dir,
		Env: append(append(append(l.baseEnv(a.Round),
			"AUTORESEARCH_PROMPT_FILE="+promptPath,
			"AUTORESEARCH_EXPERIENCES="+l.ws.ExperiencesPath(),
			"AUTORESEARCH_RESULT_FILE="+resultPath,
			"AUTORESEARCH_LOG_DIR="+dir,
			"AUTORESEARCH_FIXED_FILES="+strings.Join(v1alpha1.Strings(l.spec.Fixed.Files), ","),
		), envVars(l.spec.Researcher.Env)...),
			// Last: a HOME in researcher.env is a pod's.
			researcherEnv...),
		APIKeys:   true,
		Timeout:   l.spec.ResearcherTimeout(),
		KillGrace: l.opts.KillGrace,
		LogPath:   filepath.Join(dir, "researcher.log"),
		Live:      l.live(),
		Mounts:    mounts,
	}.Run(ctx)
	l.removeTemps(dir)
	if err != nil {
		return nil, err
	}
	// The state directory lies in the worktree, which the Researcher
	// writes: one that moved it aside and put a copy at its path would
	// have the supervisor go on with state of its making. The mounts pin
	// it; without them the run stops here.
	if now, err := os.Lstat(l.ws.StateDir()); err != nil || !os.SameFile(state, now) {
		return nil, fmt.Errorf("the supervisor's state directory %s is not the one round %d's Researcher started with: the Researcher moved or replaced it, and the run stops rather than go on with what it holds now", l.ws.StateDir(), a.Round)
	}
	strategy, err := supervisor.FinishResearch(ctx, l.ws, a.Round, l.ws.StateDir(), saved)
	if err != nil {
		return nil, err
	}
	usage, err := readUsage(resultPath)
	if err != nil {
		l.out.warn(err.Error())
	}
	return &round.Observation{Kind: round.ObserveResearcherFinished, Round: a.Round, Researcher: &round.ResearcherResult{
		Exit: exit, Strategy: strategy, Usage: usage,
	}}, nil
}

func (l *Local) checkCompliance(ctx context.Context, a round.Action) (*round.Observation, error) {
	start := l.workspaceStatus().StartCommit
	var res steps.ComplianceResult
	var err error
	switch {
	case len(a.Combine) > 0:
		res, err = supervisor.CheckCombinedCompliance(ctx, l.ws, &l.spec, a.Round, candidateName(a), a.Combine, a.BaseCommit, start, l.ws.StateDir())
		l.keepCombinedRef(a, res.Candidate)
	case ownCopy(a):
		if !a.Early {
			if err := l.finishCandidates(ctx, a); err != nil {
				return nil, err
			}
		}
		name := candidateName(a)
		res, err = supervisor.CheckCandidateCompliance(ctx, l.ws, &l.spec, a.Round, name,
			l.candidateRoot(a.Round, name), a.SealBase, a.BaseCommit, start, l.ws.StateDir())
	default:
		res, err = supervisor.CheckCompliance(ctx, l.ws, &l.spec, a.Round, a.BaseCommit, start, l.ws.StateDir())
	}
	if err != nil {
		return nil, err
	}
	if res.Violation == "" && !res.NoChange {
		res.Violation = plantedToolchains(l.x.StateDir(), l.toolchains)
	}
	if len(l.spec.KernelTargets) > 0 && res.Violation == "" && !res.NoChange && res.Conflict == "" {
		// The parity check runs the candidate as sealed, and contained as
		// any step that runs candidate code.
		run := l.runDir(a, supervisor.RunParity)
		dir, err := supervisor.PrepareRun(ctx, l.ws, res.Candidate, run, "", nil)
		if err != nil {
			return nil, err
		}
		mounts, stepEnv, err := l.stepMounts(ctx, run, cacheCandidate)
		if err != nil {
			return nil, err
		}
		check := func(ctx context.Context, argv []string, dir string) (string, int, error) {
			exit, output, err := Process{
				Command: ShellCommand(argv), Dir: dir, Env: append(append(append(l.baseEnv(a.Round), l.toolEnv...), stepEnv...), envVars(l.spec.Train.Env)...),
				Timeout: l.spec.ParityTimeout() + l.opts.Grace, KillGrace: l.opts.KillGrace,
				LogPath: filepath.Join(l.stepDir(a), "parity.log"), Mounts: mounts,
			}.RunOutput(ctx)
			return output, exit.ExitCode, err
		}
		if err := supervisor.CheckParity(ctx, &res, check, l.opts.Python, dir, l.spec.KernelTargets); err != nil {
			return nil, err
		}
	}
	return &round.Observation{Kind: round.ObserveComplianceChecked, Round: a.Round, Candidate: a.Candidate, Compliance: &round.ComplianceResult{
		Violation: res.Violation, Parity: res.Parity, Advisory: res.Advisory, NoChange: res.NoChange, Candidate: res.Candidate, Conflict: res.Conflict,
	}}, nil
}

func (l *Local) runTrain(ctx context.Context, a round.Action) (*round.Observation, error) {
	if err := l.snapshotGitState(ctx, a); err != nil {
		return nil, err
	}
	logPath := filepath.Join(l.stepDir(a), "train.log")
	if a.Sample > 0 {
		logPath = filepath.Join(l.stepDir(a), fmt.Sprintf("train-%d.log", a.Sample))
	}
	if err := os.MkdirAll(l.stepDir(a), 0o755); err != nil {
		return nil, err
	}
	run := l.runDir(a, supervisor.RunTrain)
	dir, err := supervisor.PrepareRun(ctx, l.ws, a.Code, run, "", nil)
	if err != nil {
		return nil, err
	}
	cache := cacheCandidate
	if a.Code == l.workspaceStatus().StartCommit {
		// The user's own code, which no Researcher wrote, builds the cache
		// that candidates' training starts from.
		cache = cacheTrain
	}
	mounts, stepEnv, err := l.stepMounts(ctx, run, cache)
	if err != nil {
		return nil, err
	}
	limit := l.spec.Fixed.TimeLimit.Duration
	env := append(append(append(append(append(l.baseEnv(a.Round), l.toolEnv...), checkoutToolEnv(dir, run)...), stepEnv...), l.gpuEnv(a)...), "AUTORESEARCH_TIME_LIMIT="+limit.String())
	if e := l.spec.EpochLimitString(); e != "" {
		env = append(env, "AUTORESEARCH_EPOCH_LIMIT="+e)
	}
	exit, output, err := Process{
		Command: l.spec.Train.Command, Dir: dir, Env: append(env, envVars(l.spec.Train.Env)...),
		Timeout: limit + l.opts.Grace, KillGrace: l.opts.KillGrace, LogPath: logPath, Live: l.live(), Mounts: mounts,
	}.RunOutput(ctx)
	if err != nil {
		return nil, err
	}
	res := supervisor.ReadTrainLog(output)
	return &round.Observation{Kind: round.ObserveTrainFinished, Round: a.Round, Candidate: a.Candidate, Train: &round.TrainResult{
		Exit: exit, Divergence: res.Divergence, FinalLoss: res.FinalLoss, MemoryGB: res.MemoryGB,
	}}, nil
}

func (l *Local) runEval(ctx context.Context, a round.Action) (*round.Observation, error) {
	obs := &round.Observation{Kind: round.ObserveEvalFinished, Round: a.Round, Candidate: a.Candidate, Eval: &round.EvalResult{}}
	undone, err := l.trainedGitState(ctx, a)
	if err != nil {
		return nil, err
	}
	if len(undone) > 0 {
		// Training changed git, which is as fixed as the evaluation.
		for _, u := range undone {
			obs.Eval.FixedFilesChanged = append(obs.Eval.FixedFilesChanged, "git: "+u)
		}
		return obs, nil
	}
	trained := l.runDir(a, supervisor.RunTrain)
	run := l.runDir(a, supervisor.RunEval)
	dir, err := supervisor.PrepareRun(ctx, l.ws, a.Code, run, trained, v1alpha1.Strings(l.spec.Train.Outputs))
	if oe := (*workspace.OutputError)(nil); errors.As(err, &oe) {
		// What training left is the candidate's: it is judged, not run.
		obs.Eval.Exit = round.ProcessExit{ExitCode: 1, Tail: oe.Error()}
		return obs, nil
	}
	if err != nil {
		return nil, err
	}
	changed, err := supervisor.ChangedFixedFiles(dir, steps.HashMap(l.workspaceStatus().FixedFileHashes))
	if err != nil {
		return nil, err
	}
	if planted := plantedToolchains(l.x.StateDir(), l.toolchains); planted != "" {
		changed = append(changed, planted)
	}
	if len(changed) > 0 {
		obs.Eval.FixedFilesChanged = changed
		return obs, nil
	}
	logPath := filepath.Join(l.stepDir(a), "eval.log")
	if a.Sample > 0 {
		logPath = filepath.Join(l.stepDir(a), fmt.Sprintf("eval-%d.log", a.Sample))
	}
	mounts, stepEnv, err := l.stepMounts(ctx, run, cacheEval)
	if err != nil {
		return nil, err
	}
	exit, output, err := Process{
		Command: l.spec.Eval.Command, Dir: dir, Env: append(append(append(append(append(l.baseEnv(a.Round), l.toolEnv...), checkoutToolEnv(dir, run)...), stepEnv...), l.gpuEnv(a)...), envVars(l.spec.Train.Env)...),
		Timeout: l.spec.EvalTimeout() + l.opts.Grace, KillGrace: l.opts.KillGrace, LogPath: logPath, Live: l.live(), Mounts: mounts,
	}.RunOutput(ctx)
	if err != nil {
		return nil, err
	}
	if planted := plantedToolchains(l.x.StateDir(), l.toolchains); planted != "" {
		// Planted while the evaluation ran, by a Researcher of the next
		// round beside it: its number is not taken.
		obs.Eval.FixedFilesChanged = []string{planted}
		return obs, nil
	}
	// The metric comes from the output as the supervisor read it: a process
	// of the step could write the log file.
	res, err := supervisor.ReadEvalLog(output, l.spec.Eval.Metric, l.spec.Eval.Pattern, l.spec.Eval.ConstraintReadings())
	if err != nil {
		return nil, err
	}
	obs.Eval.Exit, obs.Eval.Found, obs.Eval.Value, obs.Eval.Readings = exit, res.Found, res.Value, res.Readings
	return obs, nil
}

// gitStep commits or rolls back the round and writes its ledger row.
func (l *Local) gitStep(ctx context.Context, a round.Action) (*round.Observation, error) {
	action, kind := steps.GitRollback, round.ObserveRolledBack
	if a.Type == round.ActionCommit {
		action, kind = steps.GitCommit, round.ObserveCommitted
	}
	l.mu.Lock()
	_, err := l.restoreGitState(ctx, a.Round)
	l.gitState = nil
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	commit, err := supervisor.GitStep(ctx, l.ws, l.ws.StateDir(), action, a.BaseCommit, a.Code, a.Message, *a.Ledger)
	if err != nil {
		return nil, err
	}
	obs := &round.Observation{Kind: kind, Round: a.Round, Candidate: a.Candidate, Commit: commit}
	if action == steps.GitCommit {
		obs.Push = l.push(ctx)
	}
	return obs, nil
}

// push pushes the experiment branch to spec.output.git, if any. A failed
// push is the observation's, never the run's: the next commit or the end
// pushes again.
func (l *Local) push(ctx context.Context) *round.PushResult {
	o := l.spec.Output
	if o == nil || o.Git == nil {
		return nil
	}
	commit, err := supervisor.Push(ctx, l.ws, supervisor.Output{
		URL: o.Git.URL, Candidates: ptr.Deref(o.Git.Candidates, false), Username: l.opts.OutputUsername, Token: l.opts.OutputToken,
	})
	if err != nil {
		return &round.PushResult{Error: supervisor.PushError(err)}
	}
	return &round.PushResult{Commit: commit}
}

// finish writes the final ledger, commits it and prints the final report.
func (l *Local) finish(ctx context.Context, a round.Action) (*round.Observation, error) {
	ledger, commit, err := supervisor.Finish(ctx, l.ws, l.ws.StateDir(), *a.Ledger)
	if err != nil {
		return nil, err
	}
	l.out.final(l, a, ledger)
	return &round.Observation{Kind: round.ObserveFinished, Round: a.Round, Commit: commit, Push: l.push(ctx)}, nil
}

// use makes ws the run's workspace, with the caches its rollbacks keep,
// and its temporary files in the state directory, which no step writes: a
// Researcher writes the machine's temporary directories, and one that runs
// beside the supervisor (spec.pipeline, spec.candidates) would swap its
// throwaway index there.
func (l *Local) use(ws *workspace.Workspace) {
	ws.Caches = v1alpha1.Strings(l.spec.Workspace.Caches)
	ws.Temp = filepath.Join(ws.StateDir(), "tmp")
	l.ws = ws
}

// snapshotGitState keeps the git machinery as a round's training finds
// it: before each run of a round of one, before the first of a round of
// several, whose later runs are held to it too (trainedGitState).
func (l *Local) snapshotGitState(ctx context.Context, a round.Action) error {
	if l.pipelined() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if a.Candidates > 0 {
		l.shared(a).trained = true
		if l.gitState != nil {
			return nil
		}
	}
	st, err := l.ws.SnapshotGitState(ctx)
	if err != nil {
		return err
	}
	if a.Round == 0 {
		// The baseline has no Researcher, whose round keeps a state to go
		// back to after a restart: it keeps the one its training found.
		if err := supervisor.SaveGitState(l.ws.StateDir(), 0, st); err != nil {
			return err
		}
	}
	l.gitState = &st
	return nil
}

// restoreGitState puts back the git machinery as round's training found it,
// and says what it undid. A run that started again after training has no
// snapshot of its own, and restores the one the round keeps from after its
// Researcher, or the baseline's from before its training: the baseline
// that --rebaseline measures again trains code a Researcher wrote. Under
// spec.pipeline, where the supervisor seals the next round while this one
// trains, it has no snapshot to hold the git machinery to, nor the need
// for one: the steps' read-only mounts, which pipelining requires, leave
// them no way to write it.
func (l *Local) restoreGitState(ctx context.Context, round int32) ([]string, error) {
	switch {
	case l.pipelined():
		return nil, nil
	case l.gitState != nil:
		return l.ws.RestoreGitState(ctx, *l.gitState)
	case round > 0 || supervisor.SavedGitState(l.ws.StateDir(), round):
		return supervisor.RestoreGitState(ctx, l.ws, l.ws.StateDir(), round)
	}
	return nil, nil
}

// baseEnv is what every user process gets besides the runner's environment:
// the round, and the PATH of steps (stepPath).
func (l *Local) baseEnv(n int32) []string {
	return []string{
		"AUTORESEARCH_ROUND=" + strconv.Itoa(int(n)), "AUTORESEARCH_EXPERIMENT=" + l.x.Object.Name,
		"PATH=" + strings.Join(l.path, string(os.PathListSeparator)),
	}
}

// pipelined says that rounds overlap (spec.pipeline on a machine that
// allows read-only mounts).
func (l *Local) pipelined() bool { return ptr.Deref(l.spec.Pipeline, false) }

// workspaceStatus is the workspace as the status has it.
func (l *Local) workspaceStatus() *v1alpha1.WorkspaceStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status.Workspace.DeepCopy()
}

// lockedWriter lets processes and goroutines write to one writer at once.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func (l *Local) live() io.Writer {
	if l.opts.Verbose {
		return l.opts.Out
	}
	return nil
}

func readUsage(path string) (v1alpha1.Usage, error) {
	data, err := workspace.ReadRegularFile(path, maxResultBytes)
	if errors.Is(err, os.ErrNotExist) {
		return v1alpha1.Usage{}, nil
	}
	if err != nil {
		return v1alpha1.Usage{}, err
	}
	var r steps.ResearcherReport
	if err := json.Unmarshal(data, &r); err != nil {
		return v1alpha1.Usage{}, fmt.Errorf("ignoring the Researcher's result file %s: %w", path, err)
	}
	return r.Usage(), nil
}

func envVars(vars []corev1.EnvVar) []string {
	var env []string
	for _, v := range vars {
		if v.ValueFrom == nil {
			env = append(env, v.Name+"="+v.Value)
		}
	}
	return env
}

// resultValue takes the number out of a ledger Result cell ("val_bpb=0.99").
func resultValue(cell string) string {
	if i := strings.LastIndexAny(cell, "=:"); i >= 0 {
		cell = cell[i+1:]
	}
	cell = strings.TrimSpace(cell)
	if _, err := metric.ParseDecimal(cell); err != nil {
		return ""
	}
	return cell
}
