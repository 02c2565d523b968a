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
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

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
	// gitStateFile keeps the repository's git machinery as the round found
	// it; tamperFile what FinishResearch had to undo of it.
	gitStateFile = "git-state.json"
	tamperFile   = "git-tampering"
	// forgeryFile names the ledger files the Researcher changed beyond its
	// Strategy row; backupForgeryFile the files of the backup itself that
	// it changed.
	forgeryFile       = "ledger-forgery"
	backupForgeryFile = "backup-forgery"
)

// Backup is a round's ledger backup as PrepareRound wrote it, kept in
// memory by a caller that outlives the Researcher, as the local runner
// does: there the Researcher can write the state directory, and
// FinishResearch then restores the backup itself before using it.
type Backup struct {
	files map[string][]byte
}

// ReadBackup reads the backup PrepareRound wrote for round.
func ReadBackup(stateDir string, round int32) (*Backup, error) {
	dir := backupDir(stateDir, round)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	b := &Backup{files: map[string][]byte{}}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		b.files[e.Name()] = data
	}
	return b, nil
}

// restore puts the backup in dir back as b holds it, and names what it had
// to change.
func (b *Backup) restore(dir string) ([]string, error) {
	var changed []string
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if _, ok := b.files[e.Name()]; !ok {
			changed = append(changed, e.Name())
			if err := workspace.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return nil, err
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(b.files)) {
		p := filepath.Join(dir, name)
		if now, err := workspace.ReadRegularFile(p, workspace.MaxLedgerBytes); err == nil && string(now) == string(b.files[name]) {
			continue
		}
		changed = append(changed, name)
		if err := workspace.RemoveAll(p); err != nil {
			return nil, err
		}
		if err := workspace.WriteFileAtomic(p, b.files[name]); err != nil {
			return nil, err
		}
	}
	slices.Sort(changed)
	return changed, nil
}

// PrepareRound records ledger first when it is not nil (the baseline's row,
// which no git step writes), puts the worktree back on base for the
// Researcher of round, whatever an earlier attempt left, and keeps a backup
// of the ledger and of the repository's git machinery in stateDir for
// FinishResearch; it removes the checkouts that earlier rounds trained and
// evaluated in. A round that starts again at the same base gets the ledger
// and the git machinery of its first attempt back before git runs, so that
// nothing a failed Researcher planted survives into the retry; any other
// gets the ledger as the supervisor last published it.
func PrepareRound(ctx context.Context, ws *workspace.Workspace, round int32, base, stateDir string, ledger *steps.LedgerUpdate) error {
	dir := backupDir(stateDir, round)
	saved, err := os.ReadFile(filepath.Join(dir, baseFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	retry := err == nil && string(saved) == base
	if err := removeRuns(stateDir); err != nil {
		return err
	}
	if retry {
		if _, err := restoreGitState(ctx, ws, dir); err != nil {
			return err
		}
	}
	// The round's ledger starts from the supervisor's, whatever a
	// Researcher of a stopped run left in the worktree.
	if err := adoptPublished(ws, stateDir); err != nil {
		return err
	}
	if ledger != nil {
		if err := Record(ctx, ws, stateDir, *ledger); err != nil {
			return err
		}
	}
	if err := ws.Rollback(ctx, base); err != nil {
		return err
	}
	for _, name := range []string{strategyFile, tamperFile, forgeryFile, backupForgeryFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if retry {
		err = restoreLedger(ws, dir)
	} else {
		err = backUp(ctx, ws, dir, base)
	}
	if err != nil {
		return err
	}
	return publish(ws, stateDir)
}

// FinishResearch puts back what the Researcher of round may not change —
// the repository's git machinery, then the ledger — as PrepareRound saved
// them, and returns the Strategy the Researcher wrote into the ledger: the
// ledger is the supervisor's, and the Strategy is all a Researcher adds to
// it. saved, when not nil, is the backup as ReadBackup read it before the
// Researcher started; the backup is put back as it was first. What had to
// be undone of the backup and of the git machinery, and which ledger files
// the Researcher changed beyond its Strategy row, are kept for
// CheckCompliance. Called again for the same attempt, it returns the same
// Strategy and keeps the same record.
func FinishResearch(ctx context.Context, ws *workspace.Workspace, round int32, stateDir string, saved *Backup) (string, error) {
	dir := backupDir(stateDir, round)
	if saved != nil {
		forged, err := saved.restore(dir)
		if err != nil {
			return "", err
		}
		if err := writeRecord(dir, backupForgeryFile, forged); err != nil {
			return "", err
		}
		if len(forged) > 0 {
			// What the backup now has is the record for a retried check.
			saved.files[backupForgeryFile] = []byte(strings.Join(forged, ", "))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, baseFile)); err != nil {
		return "", fmt.Errorf("no ledger backup of round %d in %s: the round was not prepared: %w", round, dir, err)
	}
	undone, err := restoreGitState(ctx, ws, dir)
	if err != nil {
		return "", err
	}
	if err := writeRecord(dir, tamperFile, undone); err != nil {
		return "", err
	}
	forged, err := ledgerForgery(ws, dir, round)
	if err != nil {
		return "", err
	}
	if err := writeRecord(dir, forgeryFile, forged); err != nil {
		return "", err
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

// tampering is what FinishResearch had to undo of round's git machinery
// and ledger, as a compliance violation; "" when nothing.
func tampering(stateDir string, round int32) (string, error) {
	var reasons []string
	for _, f := range []struct{ name, reason string }{
		{backupForgeryFile, "the Researcher changed the supervisor's ledger backup (restored): "},
		{tamperFile, "the Researcher changed git itself, which only the supervisor may do (undone): "},
		{forgeryFile, "the Researcher edited the supervisor's ledger beyond its Strategy row (restored): "},
	} {
		data, err := os.ReadFile(filepath.Join(backupDir(stateDir, round), f.name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		reasons = append(reasons, f.reason+string(data))
	}
	return strings.Join(reasons, "; "), nil
}

// ledgerForgery names the ledger files the Researcher of round changed
// beyond the Strategy row it may add to experiences.md.
func ledgerForgery(ws *workspace.Workspace, dir string, round int32) ([]string, error) {
	var forged []string
	saved, err := os.ReadFile(filepath.Join(dir, workspace.ResultsFile))
	if err != nil {
		return nil, err
	}
	if now, err := workspace.ReadRegularFile(ws.ResultsPath(), workspace.MaxLedgerBytes); err != nil || string(now) != string(saved) {
		forged = append(forged, workspace.ResultsFile)
	}
	before, err := workspace.ReadLedger(filepath.Join(dir, workspace.ExperiencesFile))
	if err != nil {
		return nil, err
	}
	after, err := workspace.ReadLedger(ws.ExperiencesPath())
	if err != nil || !sameLedgerBesides(before, after, int(round)) {
		forged = append(forged, workspace.ExperiencesFile)
	}
	return forged, nil
}

// sameLedgerBesides reports whether two ledgers differ at most in the rows
// of round.
func sameLedgerBesides(a, b workspace.Ledger, round int) bool {
	others := func(l workspace.Ledger) []workspace.LedgerRow {
		return slices.DeleteFunc(slices.Clone(l.Rows), func(r workspace.LedgerRow) bool { return r.Round == round })
	}
	ra, rb := others(a), others(b)
	a.Rows, b.Rows = nil, nil
	return reflect.DeepEqual(a, b) && slices.Equal(ra, rb)
}

// keepCandidateRef adds round's candidate ref, which the supervisor made
// after the round's git state was saved, to that state: a check that runs
// again restores it instead of taking it for the Researcher's.
func keepCandidateRef(ws *workspace.Workspace, stateDir string, round int32, candidate string) error {
	dir := backupDir(stateDir, round)
	saved, err := readGitState(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no Researcher ran: nothing will be restored
	}
	if err != nil {
		return err
	}
	saved.Refs[ws.CandidateRef(round)] = candidate
	data, err := json.Marshal(saved)
	if err != nil {
		return err
	}
	return workspace.WriteFileAtomic(filepath.Join(dir, gitStateFile), data)
}

// RestoreGitState puts back the repository's git machinery as round's
// backup in stateDir keeps it, from after its Researcher, and says what it
// undid.
func RestoreGitState(ctx context.Context, ws *workspace.Workspace, stateDir string, round int32) ([]string, error) {
	return restoreGitState(ctx, ws, backupDir(stateDir, round))
}

// SaveGitState keeps st as round's git state in stateDir, for
// RestoreGitState.
func SaveGitState(stateDir string, round int32, st workspace.GitState) error {
	dir := backupDir(stateDir, round)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return workspace.WriteFileAtomic(filepath.Join(dir, gitStateFile), data)
}

// SavedGitState says whether stateDir keeps a git state for round.
func SavedGitState(stateDir string, round int32) bool {
	_, err := os.Stat(filepath.Join(backupDir(stateDir, round), gitStateFile))
	return err == nil
}

// RestoreGitLink puts back the worktree's .git file and its git
// directory's links as round's backup saved them, before the Researcher,
// and says what it undid: the git step runs after a Researcher that failed
// or timed out, which no compliance check followed, and a Researcher whose
// pod mounts the git directory read-only can change only the .git file of
// the worktree it writes, which git would then follow to a repository of
// its own. A round whose Researchers worked on copies of their own saved
// no git state, and nothing is put back.
func RestoreGitLink(ws *workspace.Workspace, stateDir string, round int32) ([]string, error) {
	dir := backupDir(stateDir, round)
	if _, err := os.Stat(filepath.Join(dir, gitStateFile)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	saved, err := readGitState(dir)
	if err != nil {
		return nil, err
	}
	return ws.RestoreGitLink(saved)
}

// restoreGitState puts back the git machinery saved in dir and says what it
// undid.
func restoreGitState(ctx context.Context, ws *workspace.Workspace, dir string) ([]string, error) {
	saved, err := readGitState(dir)
	if err != nil {
		return nil, err
	}
	return ws.RestoreGitState(ctx, saved)
}

// readGitState reads the git machinery a round's backup in dir keeps.
func readGitState(dir string) (workspace.GitState, error) {
	var saved workspace.GitState
	data, err := os.ReadFile(filepath.Join(dir, gitStateFile))
	if err != nil {
		return saved, fmt.Errorf("the round's git state: %w", err)
	}
	if err := json.Unmarshal(data, &saved); err != nil {
		return saved, fmt.Errorf("the round's git state: %w", err)
	}
	return saved, nil
}

// writeRecord keeps in dir, under name, what FinishResearch had to undo,
// for CheckCompliance; nothing when there was nothing.
func writeRecord(dir, name string, items []string) error {
	if len(items) == 0 {
		return nil
	}
	return workspace.WriteFileAtomic(filepath.Join(dir, name), []byte(strings.Join(items, ", ")))
}

// BackupDir is where the round's ledger backup is kept, with what else
// FinishResearch restores from.
func BackupDir(stateDir string, round int32) string { return backupDir(stateDir, round) }

func backupDir(stateDir string, round int32) string {
	return filepath.Join(stateDir, "round-"+strconv.Itoa(int(round)), "ledger-backup")
}

func ledgerFiles(ws *workspace.Workspace) map[string]string {
	return map[string]string{workspace.ExperiencesFile: ws.ExperiencesPath(), workspace.ResultsFile: ws.ResultsPath()}
}

// backUp saves the ledger and the git machinery in dir, base last.
func backUp(ctx context.Context, ws *workspace.Workspace, dir, base string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	st, err := ws.SnapshotGitState(ctx)
	if err != nil {
		return err
	}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := workspace.WriteFileAtomic(filepath.Join(dir, gitStateFile), data); err != nil {
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
		if err := replaceLedgerFile(p, data); err != nil {
			return err
		}
	}
	return nil
}

// replaceLedgerFile makes the ledger file at p hold data, whatever the
// Researcher left at p: a directory there would refuse the rename that
// writes the file, every round after.
func replaceLedgerFile(p string, data []byte) error {
	if now, err := workspace.ReadRegularFile(p, workspace.MaxLedgerBytes); err == nil && string(now) == string(data) {
		return nil
	}
	if err := workspace.RemoveAll(p); err != nil {
		return err
	}
	return workspace.WriteFileAtomic(p, data)
}

// PrepareCandidate gives the Researcher of a candidate of a round of
// several its own copy of base's files in root, which it empties first,
// with the ledger as the worktree has it: a plain directory without a git
// directory, so that a Researcher working there reaches neither the
// repository nor the other candidates. Copies that earlier rounds left
// beside root go.
func PrepareCandidate(ctx context.Context, ws *workspace.Workspace, round int32, base, root string) error {
	parent := filepath.Dir(root)
	entries, err := os.ReadDir(parent)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	prefix := "r" + strconv.Itoa(int(round))
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if ok && (rest == "" || len(rest) == 1 && rest[0] >= 'a' && rest[0] <= 'p') {
			continue
		}
		if err := workspace.RemoveAll(filepath.Join(parent, e.Name())); err != nil {
			return err
		}
	}
	if err := ws.Checkout(ctx, base, root); err != nil {
		return err
	}
	dir := filepath.Join(root, filepath.FromSlash(ws.Subdir))
	for _, name := range []string{workspace.ExperiencesFile, workspace.ResultsFile} {
		data, err := os.ReadFile(filepath.Join(ws.Dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			// The first candidate's preparation is putting it back.
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
