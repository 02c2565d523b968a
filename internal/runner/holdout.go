package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/supervisor"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// The hidden holdout, locally. The supervisor's state directory lies in the
// worktree, where the Researcher reads it, so nothing of the holdout goes
// there: not its spec (protocol.json keeps an empty spec.holdout, which
// says only that there is one), not its values (state.json has no
// status.holdout) and not its output. All of that lives in
// spec.holdout.dir/.autoresearch/<name>: holdout.json, and each holdout
// run's checkout and log.

// holdoutFile holds the holdout's spec as the experiment started with it,
// and status.holdout.
const holdoutFile = "holdout.json"

// holdoutState is what holdoutFile holds.
type holdoutState struct {
	Spec   *v1alpha1.HoldoutSpec   `json:"spec,omitempty"`
	Status *v1alpha1.HoldoutStatus `json:"status,omitempty"`
}

// HoldoutStateDir is where the supervisor keeps the holdout's state and runs
// of the experiment, "" without a holdout.
func (x *Experiment) HoldoutStateDir() string {
	h := x.Object.Spec.Holdout
	if h == nil {
		return ""
	}
	return filepath.Join(h.Dir, ".autoresearch", x.Object.Name)
}

// readHoldout reads the holdout's saved state; a zero one when there is
// none.
func (x *Experiment) readHoldout() (holdoutState, error) {
	var s holdoutState
	dir := x.HoldoutStateDir()
	if dir == "" {
		return s, nil
	}
	data, err := os.ReadFile(filepath.Join(dir, holdoutFile))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("reading the holdout's state: %w", err)
	}
	return s, nil
}

// writeHoldout saves the holdout's state; with protocol, the holdout's spec
// as the one in force.
func (x *Experiment) writeHoldout(st *v1alpha1.HoldoutStatus, protocol bool) error {
	dir := x.HoldoutStateDir()
	if dir == "" {
		return nil
	}
	saved, err := x.readHoldout()
	if err != nil {
		return err
	}
	saved.Status = st
	if protocol || saved.Spec == nil {
		saved.Spec = x.Object.Spec.Holdout
	}
	data, err := json.MarshalIndent(saved, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return workspace.WriteFileAtomic(filepath.Join(dir, holdoutFile), data)
}

// withHoldout fills in what the state directory does not hold of the
// holdout: status.holdout from its own file.
func (x *Experiment) withHoldout(st *v1alpha1.AutoResearchStatus) error {
	saved, err := x.readHoldout()
	if err != nil {
		return err
	}
	st.Holdout = saved.Status
	return nil
}

// startedHoldout puts back into started, the protocol the experiment
// started with, the holdout spec that protocol.json only marks.
func (x *Experiment) startedHoldout(started *v1alpha1.AutoResearchSpec) error {
	if started.Holdout == nil {
		return nil
	}
	saved, err := x.readHoldout()
	if err != nil {
		return err
	}
	// A holdout whose state is gone (or moved with spec.holdout.dir) is
	// another holdout.
	started.Holdout = saved.Spec
	if started.Holdout == nil {
		started.Holdout = &v1alpha1.HoldoutSpec{}
	}
	return nil
}

// checkHoldoutFile refuses an experiment file that names a holdout and is
// tracked in the repository: every checkout, the Researcher's worktree
// first, would hold it; and a holdout directory that is missing, or that
// holds or lies in the repository or the worktree, where the steps that
// may not see it work.
func (x *Experiment) checkHoldoutFile(ctx context.Context) error {
	h := x.Object.Spec.Holdout
	if h == nil {
		return nil
	}
	if err := x.checkHoldoutDir(h.Dir); err != nil {
		return err
	}
	rel, err := filepath.Rel(x.Repo, x.File)
	if err != nil {
		return err
	}
	if _, err := workspace.Git(ctx, x.Repo, nil, "ls-files", "--error-unmatch", "--", rel); err == nil {
		return fmt.Errorf("%s names a hidden holdout (spec.holdout) but is tracked in the repository, where every Researcher reads it: "+
			"untrack it (git rm --cached %s, and ignore it) or keep the experiment file out of git", x.File, rel)
	}
	return nil
}

// checkHoldoutDir refuses a holdout directory that is not a directory on
// this machine, or that is, holds or lies in the repository or the
// worktree: every other step gets it hidden, which would hide their files.
func (x *Experiment) checkHoldoutDir(dir string) error {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("spec.holdout.dir %s is not a directory on this machine: it holds the holdout's command files and data", dir)
	}
	for _, p := range []struct{ what, path string }{{"repository", x.Repo}, {"worktree", x.Worktree}} {
		if overlaps(dir, p.path) {
			return fmt.Errorf("spec.holdout.dir %s and the experiment's %s %s lie one in the other: the holdout must be out of every other step's sight, "+
				"in a directory of its own outside both", dir, p.what, p.path)
		}
	}
	return nil
}

// overlaps says whether one of the paths a and b is the other or lies in
// it, as their absolute forms with symbolic links resolved say.
func overlaps(a, b string) bool {
	resolve := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		abs, _ := filepath.Abs(p)
		return abs
	}
	a, b = resolve(a), resolve(b)
	within := func(p, dir string) bool {
		rel, err := filepath.Rel(dir, p)
		return err == nil && filepath.IsLocal(rel)
	}
	return within(a, b) || within(b, a)
}

// runHoldout runs the hidden holdout evaluation in a fresh checkout of the
// code with the outputs of the training run the evaluation measured. The
// checkout and the log lie in the holdout's own directory, never in the
// worktree (the logs in logs/, which no holdout step sees), and nothing the
// command prints is reported but its metric.
func (l *Local) runHoldout(ctx context.Context, a round.Action) (*round.Observation, error) {
	h := l.spec.Holdout
	obs := &round.Observation{Kind: round.ObserveHoldoutFinished, Round: a.Round, Candidate: a.Candidate, Holdout: &round.HoldoutResult{}}
	name := fmt.Sprintf("r%d", a.Round)
	if a.Sample > 0 {
		name = fmt.Sprintf("r%d-s%d", a.Round, a.Sample)
	}
	base := filepath.Join(l.x.HoldoutStateDir(), "runs")
	thisRound := name
	if a.Candidates > 0 {
		// The round's candidates measure theirs at once.
		name += round.CandidateName(a.Candidate)
	}
	run := filepath.Join(base, name)
	// Only this round's holdout checkouts are kept: what candidate code
	// left in an earlier one, with the holdout's data at hand, a later
	// round's holdout would read.
	if err := removeOtherRounds(base, thisRound, run); err != nil {
		return nil, err
	}
	trained := l.runDir(a, supervisor.RunTrain)
	dir, err := supervisor.PrepareRun(ctx, l.ws, a.Code, run, trained, v1alpha1.Strings(l.spec.Train.Outputs))
	if oe := (*workspace.OutputError)(nil); errors.As(err, &oe) {
		obs.Holdout.Exit = round.ProcessExit{ExitCode: 1}
		return obs, nil
	}
	if err != nil {
		return nil, err
	}
	// The candidate's code runs here too: the holdout's data and state are
	// read-only to it, but its own checkout and scratch, and it runs
	// offline, so that it cannot send the data where a later Researcher
	// would find it.
	cache := cacheHoldoutCandidate
	if a.Code == l.workspaceStatus().StartCommit {
		cache = cacheHoldout
	}
	mounts, stepEnv, err := l.experimentMounts(ctx, run, cache, h.Dir)
	if err == nil {
		mounts, err = l.credentialMounts(mounts)
	}
	if err != nil {
		return nil, err
	}
	// Every holdout's log, which candidate code writes with the data at
	// hand, is out of the sight of the holdouts after it, with the rest of
	// the holdout's state (experimentMounts).
	logs := filepath.Join(l.x.HoldoutStateDir(), "logs")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		return nil, err
	}
	exit, output, err := Process{
		Command: h.Command, Dir: dir,
		Env: append(append(append(append(append(l.baseEnv(a.Round), l.toolEnv...), checkoutToolEnv(dir, run)...), stepEnv...), envVars(l.spec.Train.Env)...),
			"AUTORESEARCH_HOLDOUT_DIR="+h.Dir),
		Timeout: l.spec.HoldoutTimeout() + l.opts.Grace, KillGrace: l.opts.KillGrace,
		LogPath: filepath.Join(logs, name+".log"), Mounts: mounts, Offline: true,
	}.RunOutput(ctx)
	if err != nil {
		return nil, err
	}
	res, err := supervisor.ReadEvalLog(output, l.spec.HoldoutMetric(), h.Pattern, nil)
	if err != nil {
		return nil, err
	}
	exit.Tail = ""
	obs.Holdout.Exit, obs.Holdout.Found, obs.Holdout.Value = exit, res.Found, res.Value
	return obs, nil
}

// removeOtherRounds removes from the holdout's runs, base, every checkout
// and scratch but those of the round whose checkouts are named thisRound,
// or thisRound and a candidate's letters; and run's own, which is made
// anew.
func removeOtherRounds(base, thisRound, run string) error {
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		n := e.Name()
		for _, suffix := range []string{".tmp", ".cache"} {
			n = strings.TrimSuffix(n, suffix)
		}
		rest, ok := strings.CutPrefix(n, thisRound)
		if ok && strings.Trim(rest, "abcdefghijklmnopqrstuvwxyz") == "" && filepath.Join(base, n) != run {
			continue
		}
		if err := os.RemoveAll(filepath.Join(base, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
