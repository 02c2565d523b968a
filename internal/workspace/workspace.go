// Package workspace owns the experiment's git worktree and the ledger kept in
// it: creating the worktree on the experiment branch, the compliance diff of
// a round against the commit it started from, the supervisor's commits and
// rollbacks, the fixed-file hashes, and the two ledger files, experiences.md
// and results.tsv.
//
// Only the supervisor writes git; it does so through the git command line,
// as the identity "autoresearch <autoresearch@localhost>", without relying on
// any user or repository git config for its commits.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

const (
	// BranchPrefix starts the name of every experiment branch.
	BranchPrefix = "autoresearch/"

	// ExperiencesFile is the experience log, experiences.md, in the
	// experiment directory; ResultsFile is karpathy's results.tsv beside it.
	ExperiencesFile = "experiences.md"
	ResultsFile     = "results.tsv"

	stateDirName  = ".autoresearch"
	gitignoreFile = ".gitignore"
)

// Workspace is an experiment's git worktree.
type Workspace struct {
	// Root is the absolute path of the worktree.
	Root string
	// Dir is the absolute path of the experiment directory inside the worktree.
	Dir string
	// Subdir is Dir relative to Root, slash-separated; "." for the root.
	Subdir string
	// Branch is the experiment branch, "autoresearch/<name>".
	Branch string
	// Caches are the git-ignored paths, relative to Dir, that Rollback
	// keeps.
	Caches []string
	// Temp holds the supervisor's temporary files, its throwaway index
	// above all: a directory that no step writes (where steps get
	// read-only mounts), for steps that run beside the supervisor; the
	// system's temporary directory, which Researchers write, when empty. An index swapped between the two git commands
	// of a checkout would have the checkout hold files no commit does.
	Temp string
}

// Create makes the worktree at worktreePath on a new branch
// "autoresearch/<name>" that starts at srcRepo's HEAD, and returns it with
// warnings for the user. It reuses what exists: a worktree that `git worktree
// list` already shows at worktreePath, or the branch when only the worktree is
// missing. subdir is the experiment directory relative to srcRepo's top level.
func Create(ctx context.Context, srcRepo, subdir, worktreePath, name string) (*Workspace, []string, error) {
	sub, err := cleanSubdir(subdir)
	if err != nil {
		return nil, nil, err
	}
	branch, err := branchName(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	top, err := toplevel(ctx, srcRepo)
	if err != nil {
		return nil, nil, err
	}
	abs, err := filepath.Abs(worktreePath)
	if err != nil {
		return nil, nil, fmt.Errorf("worktree path %s: %w", worktreePath, err)
	}
	branchExists, err := refExists(ctx, top, "refs/heads/"+branch)
	if err != nil {
		return nil, nil, err
	}

	trees, err := listWorktrees(ctx, top)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range trees {
		if !samePath(t.path, abs) {
			continue
		}
		if t.prunable {
			// Its directory is gone; forget it so that it can be added again.
			if _, err := git(ctx, top, "worktree", "prune"); err != nil {
				return nil, nil, err
			}
			break
		}
		return reuse(t, sub, branch, branchExists)
	}

	var warnings []string
	if branchExists {
		if _, err := git(ctx, top, "worktree", "add", abs, branch); err != nil {
			return nil, nil, fmt.Errorf("adding worktree %s on existing branch %s: %w", abs, branch, err)
		}
		warnings = append(warnings, fmt.Sprintf("branch %s already existed: worktree %s continues it rather than starting at HEAD", branch, abs))
	} else {
		if err := checkExperimentDirCommitted(ctx, top, sub); err != nil {
			return nil, nil, err
		}
		if warnings, err = uncommittedWarning(ctx, top); err != nil {
			return nil, nil, err
		}
		if _, err := git(ctx, top, "worktree", "add", "-b", branch, abs, "HEAD"); err != nil {
			return nil, nil, fmt.Errorf("adding worktree %s on new branch %s: %w", abs, branch, err)
		}
	}
	w, err := open(ctx, abs, sub, branch)
	if err != nil {
		return nil, nil, err
	}
	return w, warnings, nil
}

// reuse returns the worktree that git already lists at the requested path.
func reuse(t worktree, sub, branch string, branchExists bool) (*Workspace, []string, error) {
	if !branchExists {
		return nil, nil, fmt.Errorf("%s is already a worktree on %s, and branch %s does not exist: choose another worktree path", t.path, t.describeHead(), branch)
	}
	var warnings []string
	if t.branch != "refs/heads/"+branch {
		warnings = append(warnings, fmt.Sprintf("worktree %s is on %s instead of branch %s: roll it back before the next round", t.path, t.describeHead(), branch))
	}
	w := newWorkspace(t.path, sub, branch)
	if err := requireDir(w.Dir); err != nil {
		return nil, nil, fmt.Errorf("experiment directory: %w", err)
	}
	return w, warnings, nil
}

// Open opens the existing worktree at root for the experiment name, whose
// experiment directory is subdir relative to root.
func Open(root, subdir, name string) (*Workspace, error) {
	ctx := context.Background()
	sub, err := cleanSubdir(subdir)
	if err != nil {
		return nil, err
	}
	branch, err := branchName(ctx, name)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("worktree path %s: %w", root, err)
	}
	return open(ctx, abs, sub, branch)
}

func open(ctx context.Context, root, sub, branch string) (*Workspace, error) {
	top, err := toplevel(ctx, root)
	if err != nil {
		return nil, err
	}
	if !samePath(top, root) {
		return nil, fmt.Errorf("%s is inside the worktree %s, not its top level", root, top)
	}
	exists, err := refExists(ctx, top, "refs/heads/"+branch)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("branch %s does not exist in %s", branch, top)
	}
	w := newWorkspace(top, sub, branch)
	if err := requireDir(w.Dir); err != nil {
		return nil, fmt.Errorf("experiment directory: %w", err)
	}
	return w, nil
}

func newWorkspace(root, sub, branch string) *Workspace {
	return &Workspace{Root: root, Dir: filepath.Join(root, filepath.FromSlash(sub)), Subdir: sub, Branch: branch}
}

// ExperiencesPath is the path of experiences.md.
func (w *Workspace) ExperiencesPath() string { return filepath.Join(w.Dir, ExperiencesFile) }

// ResultsPath is the path of results.tsv.
func (w *Workspace) ResultsPath() string { return filepath.Join(w.Dir, ResultsFile) }

// StateDir is the supervisor's git-ignored scratch directory for logs and state.
func (w *Workspace) StateDir() string { return filepath.Join(w.Dir, stateDirName) }

// name is the experiment name the branch was made from.
func (w *Workspace) name() string { return strings.TrimPrefix(w.Branch, BranchPrefix) }

// repoPath turns a path relative to the experiment directory into one
// relative to the worktree root.
func (w *Workspace) repoPath(rel string) string { return path.Join(w.Subdir, rel) }

func (w *Workspace) ledgerRepoPaths() []string {
	return []string{w.repoPath(ExperiencesFile), w.repoPath(ResultsFile)}
}

// Init prepares a fresh worktree: the experiment directory's .gitignore
// covers .autoresearch/ and the given artifact patterns, and experiences.md
// (from l, with a row 0 placeholder for the baseline) and the results.tsv
// header exist. Whatever of this is not committed yet is committed as
// "autoresearch: start experiment <name>". Calling it again changes nothing.
func (w *Workspace) Init(ctx context.Context, l Ledger, metric string, ignore []string) error {
	if err := w.requireOnBranch(ctx); err != nil {
		return err
	}
	if err := ensureIgnored(filepath.Join(w.Dir, gitignoreFile), append([]string{stateDirName + "/"}, ignore...)); err != nil {
		return err
	}
	if _, err := os.Stat(w.ExperiencesPath()); errors.Is(err, fs.ErrNotExist) {
		if l.Metric == "" {
			l.Metric = metric
		}
		if !l.hasRound(0) {
			l.Rows = slices.Clone(l.Rows) // the caller's rows stay as they are
			l.Upsert(LedgerRow{Round: 0, Strategy: "baseline"})
		}
		if err := WriteLedger(w.ExperiencesPath(), l); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if _, err := os.Stat(w.ResultsPath()); errors.Is(err, fs.ErrNotExist) {
		if err := WriteFileAtomic(w.ResultsPath(), []byte(resultsHeader(metric))); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	paths := append([]string{w.repoPath(gitignoreFile)}, w.ledgerRepoPaths()...)
	_, err := w.commitPaths(ctx, "autoresearch: start experiment "+w.name(), paths)
	return err
}

// Head returns the full hash of the worktree's HEAD commit.
func (w *Workspace) Head(ctx context.Context) (string, error) {
	return revParse(ctx, w.Root, "HEAD")
}

// CommitLedger commits experiences.md and results.tsv, and nothing else, if
// they changed. It returns the new commit's hash, or "" when there was
// nothing to commit.
func (w *Workspace) CommitLedger(ctx context.Context, message string) (string, error) {
	if err := w.requireOnBranch(ctx); err != nil {
		return "", err
	}
	return w.commitPaths(ctx, message, w.ledgerRepoPaths())
}

// commitPaths commits the given root-relative paths, even ignored ones, if
// they changed; it returns "" when none did. Paths that exist nowhere are
// skipped.
func (w *Workspace) commitPaths(ctx context.Context, message string, paths []string) (string, error) {
	var present []string
	for _, p := range paths {
		if _, err := os.Lstat(filepath.Join(w.Root, filepath.FromSlash(p))); err == nil {
			present = append(present, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	if len(present) == 0 {
		return "", nil
	}
	// The ledger belongs in git even where a user's .gitignore excludes
	// results.tsv, as karpathy's setup does; hence --ignored and add -f.
	status, err := git(ctx, w.Root, append([]string{"status", "--porcelain", "--ignored", "--"}, present...)...)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(status) == "" {
		return "", nil
	}
	if _, err := git(ctx, w.Root, append([]string{"add", "-f", "--"}, present...)...); err != nil {
		return "", err
	}
	// With paths, git commits only them and leaves anything else staged alone.
	args := append(commitArgs(message), "--")
	if _, err := gitEnv(ctx, w.Root, supervisorEnv(), append(args, present...)...); err != nil {
		return "", err
	}
	return w.Head(ctx)
}

// commitArgs are the arguments of a supervisor commit: a user's hooks must
// not veto or rewrite it, and a signing setup must not block an unattended loop.
func commitArgs(message string, extra ...string) []string {
	args := []string{"-c", "commit.gpgsign=false", "commit", "--no-verify", "-m", message}
	return append(args, extra...)
}

// Rollback puts the experiment branch and the worktree back on base, whatever
// the Researcher did with git meanwhile (commits, resets, another branch, a
// detached HEAD, a rebase left half done), and removes untracked files,
// ignored ones too: only .autoresearch/ and the Caches stay. The ledger
// files keep their working-tree content; one the Researcher deleted comes
// back as it is in base.
func (w *Workspace) Rollback(ctx context.Context, base string) error {
	baseCommit, err := revParse(ctx, w.Root, base)
	if err != nil {
		return fmt.Errorf("rollback target %s: %w", base, err)
	}
	saved, err := w.saveLedger()
	if err != nil {
		return err
	}
	if err := w.clearInterruptedGitState(ctx); err != nil {
		return err
	}
	// -f twice: a repository the Researcher made is removed too.
	clean := []string{"clean", "-f", "-f", "-d", "-x", "--exclude=/" + w.repoPath(stateDirName) + "/"}
	for _, c := range w.Caches {
		clean = append(clean, "--exclude=/"+w.repoPath(c))
	}
	steps := [][]string{
		// -B resets the branch even if it was moved, deleted or left for another.
		{"checkout", "-f", "-B", w.Branch, baseCommit},
		{"reset", "--hard", baseCommit},
	}
	for _, args := range steps {
		if _, err := git(ctx, w.Root, args...); err != nil {
			return fmt.Errorf("rollback to %s: %w", text.ShortCommit(baseCommit), err)
		}
	}
	if _, err := git(ctx, w.Root, clean...); err != nil {
		if err := w.removeUntracked(ctx); err != nil {
			return fmt.Errorf("rollback to %s: %w", text.ShortCommit(baseCommit), err)
		}
		if _, err := git(ctx, w.Root, clean...); err != nil {
			return fmt.Errorf("rollback to %s: %w", text.ShortCommit(baseCommit), err)
		}
	}
	return w.restoreLedger(saved)
}

// removeUntracked removes what git clean could not: the untracked files
// and directories of the worktree, ignored ones too, but for the state
// directory and the Caches, with RemoveAll, which reaches below PATH_MAX
// and into directories their owner may not open. A Researcher that left a
// tree git cannot walk would otherwise fail every rollback after it.
func (w *Workspace) removeUntracked(ctx context.Context) error {
	out, err := git(ctx, w.Root, "ls-files", "-z", "--others", "--directory", "--", ".")
	if err != nil {
		return err
	}
	keep := []string{w.repoPath(stateDirName)}
	for _, c := range w.Caches {
		keep = append(keep, w.repoPath(c))
	}
	for _, p := range strings.Split(out, "\x00") {
		p = strings.TrimSuffix(p, "/")
		if p == "" || slices.ContainsFunc(keep, func(k string) bool { return p == k || strings.HasPrefix(p, k+"/") || strings.HasPrefix(k, p+"/") }) {
			continue
		}
		if err := RemoveAll(filepath.Join(w.Root, filepath.FromSlash(p))); err != nil {
			return err
		}
	}
	return nil
}

// savedFile is a ledger file's working-tree content kept across a rollback.
type savedFile struct {
	path string
	data []byte
	mode fs.FileMode
}

func (w *Workspace) saveLedger() ([]savedFile, error) {
	var saved []savedFile
	for _, p := range []string{w.ExperiencesPath(), w.ResultsPath()} {
		info, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !info.Mode().IsRegular() {
			// A Researcher's link or pipe: the checkout puts the
			// committed file back.
			continue
		}
		data, err := ReadRegularFile(p, MaxLedgerBytes)
		if err != nil {
			return nil, err
		}
		saved = append(saved, savedFile{path: p, data: data, mode: info.Mode().Perm()})
	}
	return saved, nil
}

func (w *Workspace) restoreLedger(saved []savedFile) error {
	for _, f := range saved {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f.path, f.data, f.mode); err != nil {
			return fmt.Errorf("restoring %s after rollback: %w", f.path, err)
		}
	}
	return nil
}

// clearInterruptedGitState removes what a Researcher's git command can leave
// behind that would block the supervisor's own: a half-done rebase or am,
// and the index lock of a git process that was killed. No other git process
// runs in this worktree while the supervisor rolls back.
func (w *Workspace) clearInterruptedGitState(ctx context.Context) error {
	for _, name := range []string{"rebase-merge", "rebase-apply", "index.lock"} {
		p, err := git(ctx, w.Root, "rev-parse", "--git-path", name)
		if err != nil {
			return err
		}
		p = strings.TrimSpace(p)
		if !filepath.IsAbs(p) {
			p = filepath.Join(w.Root, p)
		}
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("clearing %s: %w", name, err)
		}
	}
	return nil
}

// requireOnBranch refuses to commit anywhere but on the experiment branch,
// where a commit on a detached HEAD or another branch would be lost.
func (w *Workspace) requireOnBranch(ctx context.Context) error {
	ref, err := git(ctx, w.Root, "symbolic-ref", "-q", "HEAD")
	ref = strings.TrimSpace(ref)
	if err != nil || ref != "refs/heads/"+w.Branch {
		return fmt.Errorf("worktree %s is not on branch %s: roll it back first", w.Root, w.Branch)
	}
	return nil
}

// cleanSubdir normalizes an experiment directory relative to the repository
// top level and refuses one that leaves it.
func cleanSubdir(subdir string) (string, error) {
	sub := path.Clean(filepath.ToSlash(subdir))
	if path.IsAbs(sub) || filepath.IsAbs(subdir) || sub == ".." || strings.HasPrefix(sub, "../") {
		return "", fmt.Errorf("experiment directory %q must be relative to the repository and inside it", subdir)
	}
	return sub, nil
}

// branchName returns the experiment branch for name, if git accepts it.
func branchName(ctx context.Context, name string) (string, error) {
	branch := BranchPrefix + name
	if name == "" {
		return "", errors.New("experiment name is empty")
	}
	if _, err := git(ctx, ".", "check-ref-format", "refs/heads/"+branch); err != nil {
		return "", fmt.Errorf("experiment name %q does not make a valid git branch name %s", name, branch)
	}
	return branch, nil
}

func toplevel(ctx context.Context, dir string) (string, error) {
	if err := requireDir(dir); err != nil {
		return "", err
	}
	out, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		var gerr *gitError
		if errors.As(err, &gerr) && strings.Contains(gerr.stderr, "not a git repository") {
			return "", fmt.Errorf("%s is not a git repository", dir)
		}
		return "", err
	}
	return strings.TrimSpace(out), nil
}

func revParse(ctx context.Context, dir, rev string) (string, error) {
	out, err := git(ctx, dir, "rev-parse", "--verify", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("%s is not a commit: %w", rev, err)
	}
	return strings.TrimSpace(out), nil
}

func refExists(ctx context.Context, dir, ref string) (bool, error) {
	_, err := git(ctx, dir, "show-ref", "--verify", "--quiet", ref)
	if err == nil {
		return true, nil
	}
	var exitErr interface{ ExitCode() int }
	if errors.As(err, &exitErr) && exitErr.ExitCode() == 1 {
		return false, nil
	}
	return false, err
}

// checkExperimentDirCommitted refuses an experiment directory that a worktree
// started at HEAD would not contain.
func checkExperimentDirCommitted(ctx context.Context, top, sub string) error {
	if _, err := revParse(ctx, top, "HEAD"); err != nil {
		return fmt.Errorf("%s has no commit yet: commit the experiment first", top)
	}
	if sub == "." {
		return nil
	}
	out, err := git(ctx, top, "cat-file", "-t", "HEAD:"+sub)
	if err != nil || strings.TrimSpace(out) != "tree" {
		return fmt.Errorf("experiment directory %s is not committed at HEAD of %s: commit it first, the worktree starts from HEAD", sub, top)
	}
	return nil
}

// uncommittedWarning names the files whose changes a worktree made from HEAD
// would not have.
func uncommittedWarning(ctx context.Context, top string) ([]string, error) {
	out, err := git(ctx, top, "status", "--porcelain", "-z", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	var files []string
	fields := splitNUL(out)
	for i := 0; i < len(fields); i++ {
		entry := fields[i]
		if len(entry) < 4 {
			continue
		}
		files = append(files, entry[3:])
		if entry[0] == 'R' || entry[0] == 'C' {
			i++ // the rename's source follows
		}
	}
	if len(files) == 0 {
		return nil, nil
	}
	sort.Strings(files)
	return []string{fmt.Sprintf("uncommitted changes in %s would not be in the worktree: commit them first if the experiment needs them", listNames(files, 5))}, nil
}

// listNames joins up to max names and counts the rest.
func listNames(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}

func requireDir(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// samePath reports whether a and b name the same directory, looking through
// symbolic links such as macOS's /tmp.
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// ensureIgnored appends to the .gitignore at p the patterns it lacks.
func ensureIgnored(p string, patterns []string) error {
	data, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	have := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		have[strings.TrimSpace(line)] = true
	}
	var missing []string
	for _, pat := range patterns {
		pat = strings.TrimSpace(pat)
		if strings.ContainsAny(pat, "\r\n") {
			return fmt.Errorf("ignore pattern %q spans lines", pat)
		}
		if pat != "" && !have[pat] {
			missing = append(missing, pat)
			have[pat] = true
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var b strings.Builder
	b.Write(data)
	if len(data) > 0 && !strings.HasSuffix(string(data), "\n") {
		b.WriteString("\n")
	}
	b.WriteString("# autoresearch: supervisor state and training artifacts\n")
	for _, pat := range missing {
		b.WriteString(pat + "\n")
	}
	return os.WriteFile(p, []byte(b.String()), 0o644)
}
