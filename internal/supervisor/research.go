// Package supervisor holds the supervisor's operations on an experiment's
// workspace: creating it, preparing a round and taking the ledger back after
// the Researcher, the compliance and kernel parity checks, reading what
// training and evaluation logs say, the git step and the ledger rows.
//
// The local runner calls these functions in process; on Kubernetes the
// autoresearch binary's in-pod step commands call the same ones, so that both
// adapters run one implementation of the loop's rules.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// Files of a round's ledger backup, in stateDir/round-<N>/ledger-backup,
// besides copies of workspace.ExperiencesFile and workspace.ResultsFile.
const (
	// baseFile names the commit the backup was taken at; it is written last,
	// so that a backup without it is incomplete and not used.
	baseFile = "base"
	// strategyFile keeps the Strategy FinishResearch took, so that a retried
	// check returns it after the ledger has already been restored.
	strategyFile = "strategy"
)

// PrepareRound records ledger first when it is not nil (the baseline's row,
// which no git step writes), puts the worktree back on base for the
// Researcher of round, whatever an earlier attempt left, and keeps a backup
// of the ledger in stateDir for FinishResearch. A round that starts again at
// the same base gets the ledger of its first attempt back, so that what a
// failed Researcher wrote into it does not survive into the retry.
func PrepareRound(ctx context.Context, ws *workspace.Workspace, round int32, base, stateDir string, ledger *steps.LedgerUpdate) error {
	if ledger != nil {
		if err := Record(ctx, ws, *ledger); err != nil {
			return err
		}
	}
	if err := ws.Rollback(ctx, base); err != nil {
		return err
	}
	dir := backupDir(stateDir, round)
	if err := os.Remove(filepath.Join(dir, strategyFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	saved, err := os.ReadFile(filepath.Join(dir, baseFile))
	switch {
	case err == nil && string(saved) == base:
		return restoreLedger(ws, dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return backUpLedger(ws, dir, base)
}

// FinishResearch returns the Strategy the Researcher wrote into the ledger
// for round and puts the ledger back as PrepareRound saved it: the ledger is
// the supervisor's, and the Strategy is all a Researcher adds to it. Called
// again for the same attempt, it returns the same Strategy.
func FinishResearch(ws *workspace.Workspace, round int32, stateDir string) (string, error) {
	dir := backupDir(stateDir, round)
	if _, err := os.Stat(filepath.Join(dir, baseFile)); err != nil {
		return "", fmt.Errorf("no ledger backup of round %d in %s: the round was not prepared: %w", round, dir, err)
	}
	p := filepath.Join(dir, strategyFile)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		data = []byte(workspace.StrategyFrom(ws.ExperiencesPath(), int(round)))
		err = workspace.WriteFileAtomic(p, data)
	}
	if err != nil {
		return "", err
	}
	return string(data), restoreLedger(ws, dir)
}

func backupDir(stateDir string, round int32) string {
	return filepath.Join(stateDir, "round-"+strconv.Itoa(int(round)), "ledger-backup")
}

func ledgerFiles(ws *workspace.Workspace) map[string]string {
	return map[string]string{workspace.ExperiencesFile: ws.ExperiencesPath(), workspace.ResultsFile: ws.ResultsPath()}
}

func backUpLedger(ws *workspace.Workspace, dir, base string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, baseFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for name, p := range ledgerFiles(ws) {
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("backing up the ledger: %w", err)
		}
		if err := workspace.WriteFileAtomic(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	return workspace.WriteFileAtomic(filepath.Join(dir, baseFile), []byte(base))
}

func restoreLedger(ws *workspace.Workspace, dir string) error {
	for name, p := range ledgerFiles(ws) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("restoring the ledger: %w", err)
		}
		if err := workspace.WriteFileAtomic(p, data); err != nil {
			return err
		}
	}
	return nil
}
