package supervisor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// publishedDir, in the state directory, holds the ledger as the supervisor
// last wrote it. The worktree's copy is the Researcher's to write while its
// step runs, forged rows and all, until FinishResearch puts it back; what
// `status` and `report` show comes from here.
const publishedDir = "ledger"

// PublishedLedger is the path of the supervisor's copy of the ledger file
// name (workspace.ExperiencesFile or workspace.ResultsFile) in stateDir.
func PublishedLedger(stateDir, name string) string {
	return filepath.Join(stateDir, publishedDir, name)
}

// publish copies the ledger files as they are now into stateDir, for the
// readers of the ledger; it is called right after the supervisor wrote
// them, before any step of the Researcher's runs.
func publish(ws *workspace.Workspace, stateDir string) error {
	if err := os.MkdirAll(filepath.Join(stateDir, publishedDir), 0o755); err != nil {
		return err
	}
	for name, p := range ledgerFiles(ws) {
		dst := PublishedLedger(stateDir, name)
		data, err := workspace.ReadRegularFile(p, workspace.MaxLedgerBytes)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := workspace.WriteFileAtomic(dst, data); err != nil {
			return err
		}
	}
	return nil
}

// adoptPublished puts the ledger files the supervisor last published back
// into the worktree before it writes them again, so that a write starts
// from what the supervisor wrote, whatever a process left in the worktree
// since. Before the first publication the worktree's are the
// supervisor's.
func adoptPublished(ws *workspace.Workspace, stateDir string) error {
	if _, err := os.Lstat(PublishedLedger(stateDir, workspace.ExperiencesFile)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for name, p := range ledgerFiles(ws) {
		data, err := workspace.ReadRegularFile(PublishedLedger(stateDir, name), workspace.MaxLedgerBytes)
		if errors.Is(err, fs.ErrNotExist) {
			if err := workspace.RemoveAll(p); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := replaceLedgerFile(p, data); err != nil {
			return err
		}
	}
	return nil
}
