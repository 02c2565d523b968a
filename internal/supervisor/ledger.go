package supervisor

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// GitStep ends a round: it commits exactly the files of candidate, the
// round's sealed commit on base, with message (action steps.GitCommit), or
// rolls the worktree back to base keeping the ledger (steps.GitRollback),
// then records the round's ledger row and publishes the ledger in stateDir;
// a kept round's ledger is committed on top of its code. Nothing is taken
// from the worktree, which a process of the round may have changed since
// the candidate was sealed. Both are safe to repeat: a commit made before
// an interruption (HEAD has moved past base) is not made twice. It returns
// the commit HEAD is on.
func GitStep(ctx context.Context, ws *workspace.Workspace, stateDir, action, base, candidate, message string, ledger steps.LedgerUpdate) (string, error) {
	commit, err := gitStep(ctx, ws, action, base, candidate, message)
	if err != nil {
		return "", err
	}
	if err := Record(ctx, ws, stateDir, ledger); err != nil {
		return commit, err
	}
	if err := publish(ws, stateDir); err != nil || action != steps.GitCommit {
		return commit, err
	}
	msg := "autoresearch: ledger"
	if ledger.Round != nil {
		msg = fmt.Sprintf("autoresearch: ledger of round %d", ledger.Round.Round)
	}
	if _, err := ws.CommitLedger(ctx, msg); err != nil {
		return "", err
	}
	return ws.Head(ctx)
}

func gitStep(ctx context.Context, ws *workspace.Workspace, action, base, candidate, message string) (string, error) {
	switch action {
	case steps.GitCommit:
		head, err := ws.Head(ctx)
		if err != nil || head != base {
			return head, err
		}
		return ws.CommitCandidate(ctx, base, candidate, message)
	case steps.GitRollback:
		if err := ws.Rollback(ctx, base); err != nil {
			return "", err
		}
		return ws.Head(ctx)
	}
	return "", fmt.Errorf("unknown git step %q", action)
}

// Record writes the ledger header of u to experiences.md and, when u has a
// round, that round's row there and in results.tsv, to the ledger as the
// supervisor last published it in stateDir. The row's commit, when
// empty, is HEAD's. Recording a round again with the same verdict rewrites
// its experiences.md row but adds no second results.tsv line, so that a
// retried step leaves the ledger as one run would.
func Record(ctx context.Context, ws *workspace.Workspace, stateDir string, u steps.LedgerUpdate) error {
	_, err := record(ctx, ws, stateDir, u)
	return err
}

// Finish records u, which carries the final status, publishes the ledger
// in stateDir and commits it. It returns the ledger as committed and the
// commit HEAD is on.
func Finish(ctx context.Context, ws *workspace.Workspace, stateDir string, u steps.LedgerUpdate) (workspace.Ledger, string, error) {
	ledger, err := record(ctx, ws, stateDir, u)
	if err != nil {
		return ledger, "", err
	}
	if err := publish(ws, stateDir); err != nil {
		return ledger, "", err
	}
	if _, err := ws.CommitLedger(ctx, fmt.Sprintf("autoresearch: ledger after round %d (%s)", u.Rounds, u.Status)); err != nil {
		return ledger, "", err
	}
	head, err := ws.Head(ctx)
	return ledger, head, err
}

func record(ctx context.Context, ws *workspace.Workspace, stateDir string, u steps.LedgerUpdate) (workspace.Ledger, error) {
	if err := adoptPublished(ws, stateDir); err != nil {
		return workspace.Ledger{}, err
	}
	ledger, err := workspace.ReadLedger(ws.ExperiencesPath())
	if err != nil {
		return ledger, err
	}
	ledger.Metric, ledger.Status = u.Metric, u.Status
	ledger.Rounds, ledger.MaxRounds = int(u.Rounds), int(u.MaxRounds)
	if u.Best != "" {
		ledger.Best, ledger.BestRound = u.Best, int(u.BestRound)
	}
	if u.Round == nil {
		return ledger, workspace.WriteLedger(ws.ExperiencesPath(), ledger)
	}
	rows := append([]steps.LedgerRound{*u.Round}, u.Others...)
	var fresh []steps.LedgerRound
	for _, r := range rows {
		recorded := slices.ContainsFunc(ledger.Rows, func(row workspace.LedgerRow) bool {
			return row.Round == int(r.Round) && row.Candidate == r.Candidate && row.Verdict != "" && row.Verdict == r.Verdict
		})
		if !recorded {
			fresh = append(fresh, r)
		}
		ledger.Upsert(workspace.NewLedgerRow(u.Metric, r))
	}
	if err := workspace.WriteLedger(ws.ExperiencesPath(), ledger); err != nil {
		return ledger, err
	}
	// results.tsv keeps the rounds in order: a row of an earlier round
	// (the baseline's, which a pipelined round's git step writes) comes
	// first.
	slices.SortStableFunc(fresh, func(a, b steps.LedgerRound) int { return cmp.Compare(a.Round, b.Round) })
	for _, r := range fresh {
		commit, memory := r.Commit, ""
		if r.Round == u.Round.Round && r.Candidate == u.Round.Candidate {
			memory = u.MemoryGB
		}
		if commit == "" {
			if commit, err = ws.Head(ctx); err != nil {
				return ledger, err
			}
		}
		if err := workspace.AppendResult(ws.ResultsPath(), u.Metric, resultRow(r, commit, memory)); err != nil {
			return ledger, err
		}
	}
	return ledger, nil
}

// resultRow is a round's results.tsv line as karpathy's autoresearch writes
// it: kept rounds are keep, rounds whose code failed to run are crash with
// value 0, the rest discard; the description says why a round was not kept.
func resultRow(r steps.LedgerRound, commit, memoryGB string) workspace.ResultRow {
	value, status := r.Value, "discard"
	switch v1alpha1.Verdict(r.Verdict) {
	case v1alpha1.VerdictImproved, v1alpha1.VerdictBaseline:
		status = "keep"
	case v1alpha1.VerdictTrainFailed, v1alpha1.VerdictTrainTimeout, v1alpha1.VerdictEvalFailed, v1alpha1.VerdictResearcherFailed:
		status, value = "crash", "0"
	}
	description := r.Strategy
	if status != "keep" {
		description = strings.TrimSpace(fmt.Sprintf("%s [%s]", r.Strategy, r.Verdict))
	}
	return workspace.ResultRow{Commit: commit, Value: value, MemoryGB: memoryGB, Status: status, Description: description}
}
