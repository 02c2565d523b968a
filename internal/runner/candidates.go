package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/prompt"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/supervisor"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// A round of several candidates (spec.candidates) runs its candidates at
// once: each Researcher works on a plain copy of the base commit's files of
// its own, without a git directory, and each candidate trains and evaluates
// in checkouts of its own, on the GPUs Options.GPUs gives it. What the
// round's processes could do to the repository is guarded once for the
// round, before and after each step, and held against every candidate.

// candidateRound is what the candidates of one round share.
type candidateRound struct {
	round int32
	base  string
	// saved is the ledger backup PrepareRound took before the round's
	// Researchers; nil until then.
	saved *supervisor.Backup
	// researched says that FinishResearch ran after them.
	researched bool
	// trained says that training ran since the git machinery was last
	// put back; undone is what putting it back undid in the round.
	trained bool
	undone  []string
}

// ownCopy says that a's Researcher works on a copy of its own: in a round
// of several candidates, or in one started early while the worktree is
// still the round before's.
func ownCopy(a round.Action) bool { return a.Candidates > 0 || a.Early }

// candidateName names a's candidate in a round of several, "" in a round
// of one.
func candidateName(a round.Action) string {
	if a.Candidates == 0 {
		return ""
	}
	return round.CandidateName(a.Candidate)
}

// shared is what a's round shares, under l.mu; a new round starts afresh.
func (l *Local) shared(a round.Action) *candidateRound {
	if c := &l.candidates; c.round != a.Round || c.base != a.BaseCommit {
		*c = candidateRound{round: a.Round, base: a.BaseCommit}
	}
	return &l.candidates
}

// candidateRoot is where candidate name of round n keeps its Researcher's
// copy of the repository's files.
func (l *Local) candidateRoot(n int32, name string) string {
	return filepath.Join(l.ws.StateDir(), "candidates", fmt.Sprintf("r%d%s", n, name))
}

// stepDir is where a's logs go: the round's directory, or a directory of
// its candidate's in it.
func (l *Local) stepDir(a round.Action) string {
	if a.Candidates == 0 {
		return l.roundDir(a.Round)
	}
	return filepath.Join(l.roundDir(a.Round), round.CandidateName(a.Candidate))
}

// runDir is where a's step checks out its code.
func (l *Local) runDir(a round.Action, step string) string {
	if a.Candidates > 0 {
		step = supervisor.CandidateStep(step, round.CandidateName(a.Candidate))
	}
	return supervisor.RunDir(l.ws.StateDir(), a.Round, a.Sample, step)
}

// gpuEnv gives a's candidate its GPUs from Options.GPUs, one each in turn.
func (l *Local) gpuEnv(a round.Action) []string {
	if len(l.opts.GPUs) == 0 {
		return nil
	}
	return []string{"CUDA_VISIBLE_DEVICES=" + l.opts.GPUs[int(a.Candidate)%len(l.opts.GPUs)]}
}

// runCandidateResearcher runs the Researcher of one candidate of a round
// of several, or of a round started early, in its own copy of the base
// commit's files. A round started early leaves the worktree, which the
// round before it still uses, as it is.
func (l *Local) runCandidateResearcher(ctx context.Context, a round.Action) (*round.Observation, error) {
	if !a.Early {
		if err := l.prepareCandidates(ctx, a); err != nil {
			return nil, err
		}
	}
	name := candidateName(a)
	root := l.candidateRoot(a.Round, name)
	// The Researcher reads the ledger as it stands, and adds its Strategy
	// row to its own copy.
	if err := supervisor.PrepareCandidate(ctx, l.ws, a.Round, a.BaseCommit, root); err != nil {
		return nil, err
	}
	dir := filepath.Join(root, filepath.FromSlash(l.ws.Subdir))
	text, err := prompt.Render(*a.Prompt)
	if err != nil {
		return nil, err
	}
	logs := l.stepDir(a)
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, err
	}
	promptPath := filepath.Join(logs, "prompt.md")
	if err := os.WriteFile(promptPath, []byte(text), 0o644); err != nil {
		return nil, err
	}
	resultPath := filepath.Join(logs, resultFile)
	mounts, err := l.candidateMounts(ctx, root, logs)
	if err != nil {
		return nil, err
	}
	researcherEnv, err := l.researcherEnv()
	if err != nil {
		return nil, err
	}
	experiences := filepath.Join(dir, workspace.ExperiencesFile)
	exit, err := Process{
		Command: l.spec.Researcher.Command,
		Dir:     dir,
		Env: append(append(append(l.baseEnv(a.Round),
			"AUTORESEARCH_CANDIDATE="+name,
			"AUTORESEARCH_PROMPT_FILE="+promptPath,
			"AUTORESEARCH_EXPERIENCES="+experiences,
			"AUTORESEARCH_RESULT_FILE="+resultPath,
			"AUTORESEARCH_LOG_DIR="+logs,
			"AUTORESEARCH_FIXED_FILES="+strings.Join(v1alpha1.Strings(l.spec.Fixed.Files), ","),
		), envVars(l.spec.Researcher.Env)...),
			// Last: a HOME in researcher.env is a pod's.
			researcherEnv...),
		APIKeys:   true,
		Timeout:   l.spec.ResearcherTimeout(),
		KillGrace: l.opts.KillGrace,
		LogPath:   filepath.Join(logs, "researcher.log"),
		Live:      l.live(),
		Mounts:    mounts,
	}.Run(ctx)
	l.removeTemps(logs)
	if err != nil {
		return nil, err
	}
	usage, err := readUsage(resultPath)
	if err != nil {
		l.out.warn(err.Error())
	}
	return &round.Observation{Kind: round.ObserveResearcherFinished, Round: a.Round, Candidate: a.Candidate, Researcher: &round.ResearcherResult{
		Exit: exit, Strategy: workspace.StrategyFrom(experiences, int(a.Round)), Usage: usage,
	}}, nil
}

// prepareCandidates prepares the round for its Researchers once: the
// worktree on the base commit with the ledger backed up, as for a round of
// one, and no copies of an earlier attempt.
func (l *Local) prepareCandidates(ctx context.Context, a round.Action) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.shared(a)
	if c.saved != nil {
		return nil
	}
	if err := supervisor.PrepareRound(ctx, l.ws, a.Round, a.BaseCommit, l.ws.StateDir(), a.Ledger); err != nil {
		return err
	}
	saved, err := supervisor.ReadBackup(l.ws.StateDir(), a.Round)
	if err != nil {
		return err
	}
	c.saved = saved
	return nil
}

// finishCandidates puts back, once the round's Researchers are done, what
// none of them may change: the git machinery and the worktree's ledger.
// What it had to undo fails every candidate of the round, since no one of
// them can be told from the others.
func (l *Local) finishCandidates(ctx context.Context, a round.Action) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.shared(a)
	if c.researched {
		return nil
	}
	saved := c.saved
	if saved == nil {
		// The run started again after the Researchers: the backup on disk
		// is all there is.
		var err error
		if saved, err = supervisor.ReadBackup(l.ws.StateDir(), a.Round); err != nil {
			return err
		}
	}
	if _, err := supervisor.FinishResearch(ctx, l.ws, a.Round, l.ws.StateDir(), saved); err != nil {
		return err
	}
	c.researched = true
	return nil
}

// trainedGitState puts the git machinery back as the round's training
// found it, before an evaluation that training ran before, and says what
// it undid in the round: the candidates train at once, so what one changed
// is held against every candidate evaluated after it. Training runs again
// after the first evaluations — the candidate spec.combine makes, the
// runs that confirm an improvement — and is put back after again.
func (l *Local) trainedGitState(ctx context.Context, a round.Action) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a.Candidates == 0 {
		undone, err := l.restoreGitState(ctx, a.Round)
		if a.Round == 0 {
			// The baseline has no git step, which forgets a round's
			// snapshot; the rounds after it take their own.
			l.gitState = nil
		}
		return undone, err
	}
	c := l.shared(a)
	if c.trained {
		undone, err := l.restoreGitState(ctx, a.Round)
		if err != nil {
			return nil, err
		}
		c.trained, c.undone = false, append(c.undone, undone...)
	}
	return c.undone, nil
}

// candidateMounts are a candidate Researcher's: the machine as every
// Researcher sees it (researcherMachine), with temporary directories of
// its own (privateTemps), and everything of the experiment read-only but
// its own copy of the files, its log directory and the Researchers' home.
func (l *Local) candidateMounts(ctx context.Context, root, logs string) ([]Mount, error) {
	common, err := l.gitCommonDir(ctx)
	if err != nil {
		return nil, err
	}
	goEnv, err := l.researcherGoEnvFile()
	if err != nil {
		return nil, err
	}
	temps, err := researcherTemps(logs)
	if err != nil {
		return nil, err
	}
	mounts, err := l.hiding(append(append(l.researcherMachine(),
		Mount{Path: l.x.Repo, ReadOnly: true},
		Mount{Path: common, ReadOnly: true},
		Mount{Path: l.ws.Root, ReadOnly: true},
		Mount{Path: root},
		Mount{Path: logs},
		Mount{Path: goEnv},
	), l.homeAgain()...))
	if err != nil {
		return nil, err
	}
	return l.pinned(privateTemps(append(mounts, commandPaths(l.spec.Researcher.Command, mounts)...), temps)), nil
}

// keepCombinedRef adds the ref of a's candidate, which spec.combine added
// after the round's training took its snapshot of the git machinery, to
// that snapshot, so that the git step keeps it instead of taking it for
// training's doing.
func (l *Local) keepCombinedRef(a round.Action, commit string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gitState != nil && commit != "" {
		l.gitState.Refs[l.ws.CandidateRefNamed(a.Round, candidateName(a))] = commit
	}
}
