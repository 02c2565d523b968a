package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// CandidateRefPrefix starts the supervisor's refs that keep every round's
// candidate, kept or not.
const CandidateRefPrefix = "refs/autoresearch/candidates/"

// CandidateRef is the ref that keeps round's sealed candidate:
// refs/autoresearch/candidates/<experiment>/r<round>, so that experiments
// that share a repository keep theirs apart.
func (w *Workspace) CandidateRef(round int32) string {
	return CandidateRefOf(w.name(), round)
}

// CandidateRefOf is experiment's CandidateRef of round.
func CandidateRefOf(experiment string, round int32) string {
	return CandidateRefPrefix + experiment + "/r" + strconv.Itoa(int(round))
}

// CandidateRefNamed is the ref that keeps candidate (a, b, …) of a round
// of several: …/r<round><candidate>.
func (w *Workspace) CandidateRefNamed(round int32, candidate string) string {
	return w.CandidateRef(round) + candidate
}

// CandidatesPrefix starts the refs of this experiment's candidates.
func (w *Workspace) CandidatesPrefix() string {
	return CandidateRefPrefix + w.name() + "/"
}

// withIndex runs fn with a throwaway index file, so that the supervisor's
// own staging never touches, nor trusts, the worktree's index, whose flags
// (assume-unchanged, skip-worktree) a Researcher can set. The file lies in
// w.Temp.
func (w *Workspace) withIndex(fn func(env []string) error) (err error) {
	dir, err := w.tempDir("autoresearch-index-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	return fn([]string{"GIT_INDEX_FILE=" + filepath.Join(dir, "index")})
}

// tempDir makes a temporary directory of the supervisor's in w.Temp, or
// in the system's temporary directory where w.Temp is empty.
func (w *Workspace) tempDir(pattern string) (string, error) {
	if w.Temp != "" {
		if err := os.MkdirAll(w.Temp, 0o700); err != nil {
			return "", err
		}
	}
	return os.MkdirTemp(w.Temp, pattern)
}

// Seal freezes the worktree's files as they are now — what .gitignore does
// not exclude — into a commit on base, with the ledger as base has it, and
// points w.CandidateRef(round) at it. The candidate is then what compliance
// judges, what training and evaluation run and what a kept round commits;
// nothing a process does to the worktree afterwards reaches any of them.
func (w *Workspace) Seal(ctx context.Context, round int32, base string) (string, error) {
	return w.seal(ctx, w.Root, nil, w.CandidateRef(round), fmt.Sprintf("autoresearch: round %d candidate", round), base)
}

// SealDir is Seal for candidate (a, b, …) of a round of several, whose
// Researcher worked in dir, a plain copy of the repository's files without
// a git directory: dir's files are sealed on base and kept on
// w.CandidateRefNamed(round, candidate).
func (w *Workspace) SealDir(ctx context.Context, round int32, candidate, base, dir string) (string, error) {
	gitDir, err := git(ctx, w.Root, "rev-parse", "--path-format=absolute", "--git-dir")
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	env := []string{"GIT_DIR=" + strings.TrimSpace(gitDir), "GIT_WORK_TREE=" + abs}
	return w.seal(ctx, abs, env, w.CandidateRefNamed(round, candidate), fmt.Sprintf("autoresearch: round %d candidate %s", round, candidate), base)
}

// Carry makes candidate's change to its parent anew on onto, a descendant
// of that parent, by a three-way merge, points w.CandidateRefNamed(round,
// name) at the new commit and returns it. When the change conflicts with
// what onto changed, it returns the conflicting files instead.
func (w *Workspace) Carry(ctx context.Context, round int32, name, candidate, onto string) (string, []string, error) {
	out, err := w.mergeTree(ctx, onto, candidate)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && exit.ExitCode() == 1 && len(lines) > 1 {
		return "", lines[1:], nil
	}
	if err != nil {
		return "", nil, err
	}
	commit, err := w.commitTree(ctx, lines[0], onto, fmt.Sprintf("autoresearch: round %d candidate %s, carried onto %s", round, name, text.ShortCommit(onto)))
	if err != nil {
		return "", nil, err
	}
	if _, err := git(ctx, w.Root, "update-ref", w.CandidateRefNamed(round, name), commit); err != nil {
		return "", nil, err
	}
	return commit, nil, nil
}

// mergeTree merges theirs into ours with git merge-tree --write-tree, in
// an empty work tree of its own: git takes the attributes that choose a
// merge driver (merge=union, …) from the work tree, where a Researcher may
// leave a .gitattributes that no commit holds, and that would join two
// conflicting changes.
func (w *Workspace) mergeTree(ctx context.Context, ours, theirs string) (out string, err error) {
	gitDir, err := git(ctx, w.Root, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", err
	}
	empty, err := w.tempDir("autoresearch-merge-")
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(empty)) }()
	env := []string{"GIT_DIR=" + strings.TrimSpace(gitDir), "GIT_WORK_TREE=" + empty}
	return gitEnv(ctx, empty, env, "merge-tree", "--write-tree", "--name-only", "--no-messages", ours, theirs)
}

// Combine applies the changes of candidates, each sealed on base, together
// by three-way merges, commits the result on base, points
// w.CandidateRefNamed(round, name) at it and returns it. When the changes
// conflict, it returns the conflicting files instead.
func (w *Workspace) Combine(ctx context.Context, round int32, name, base string, candidates []string) (string, []string, error) {
	baseCommit, err := revParse(ctx, w.Root, base)
	if err != nil {
		return "", nil, err
	}
	if len(candidates) < 2 {
		return "", nil, fmt.Errorf("combining %d candidates: need two or more", len(candidates))
	}
	merged := candidates[0]
	for _, c := range candidates {
		parent, err := revParse(ctx, w.Root, c+"^")
		if err != nil || parent != baseCommit {
			return "", nil, fmt.Errorf("candidate %s was not sealed on %s", text.ShortCommit(c), text.ShortCommit(baseCommit))
		}
	}
	for _, c := range candidates[1:] {
		// Every candidate's parent is base, so base is each merge's base.
		out, err := w.mergeTree(ctx, merged, c)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && exit.ExitCode() == 1 && len(lines) > 1 {
			return "", lines[1:], nil
		}
		if err != nil {
			return "", nil, err
		}
		if merged, err = w.commitTree(ctx, lines[0], merged, "autoresearch: combining candidates"); err != nil {
			return "", nil, err
		}
	}
	tree, err := git(ctx, w.Root, "rev-parse", "--verify", merged+"^{tree}")
	if err != nil {
		return "", nil, err
	}
	commit, err := w.commitTree(ctx, tree, baseCommit, fmt.Sprintf("autoresearch: round %d candidate %s, combining %d candidates", round, name, len(candidates)))
	if err != nil {
		return "", nil, err
	}
	if _, err := git(ctx, w.Root, "update-ref", w.CandidateRefNamed(round, name), commit); err != nil {
		return "", nil, err
	}
	return commit, nil, nil
}

// seal commits the files of the work tree that git run in dir with env
// sees onto base, and points ref at the commit.
func (w *Workspace) seal(ctx context.Context, dir string, treeEnv []string, ref, message, base string) (string, error) {
	baseCommit, err := revParse(ctx, w.Root, base)
	if err != nil {
		return "", fmt.Errorf("sealing %s: %w", ref, err)
	}
	var commit string
	err = w.withIndex(func(env []string) error {
		env = append(env, treeEnv...)
		if _, err := gitEnv(ctx, dir, env, "read-tree", baseCommit); err != nil {
			return err
		}
		if err := removeSpecialFiles(ctx, dir, env); err != nil {
			return err
		}
		if _, err := gitEnv(ctx, dir, env, "add", "-A", "--", "."); err != nil {
			return refused(ctx, err)
		}
		// The ledger is the supervisor's: the candidate has it as base does.
		if _, err := gitEnv(ctx, dir, env, append([]string{"reset", "-q", baseCommit, "--"}, w.ledgerRepoPaths()...)...); err != nil {
			return err
		}
		tree, err := gitEnv(ctx, dir, env, "write-tree")
		if err != nil {
			return err
		}
		commit, err = w.commitTree(ctx, tree, baseCommit, message)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("sealing %s: %w", ref, err)
	}
	if _, err := git(ctx, w.Root, "update-ref", ref, commit); err != nil {
		return "", err
	}
	return commit, nil
}

// UnsealableError is a seal that git refused for what the Researcher left
// in the work tree — a nested repository without a commit, a path with a
// .git component in any case, a file the supervisor cannot read — which
// is the round's failing, not the experiment's.
type UnsealableError struct{ err error }

func (e *UnsealableError) Error() string {
	return "the candidate cannot be sealed, as git cannot add what the Researcher left: " + e.err.Error()
}

func (e *UnsealableError) Unwrap() error { return e.err }

// refused is err, git add's failure, as an UnsealableError, unless ctx
// ended: a seal stopped by an abort is the run's to retry, not the
// candidate's failing.
func refused(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	return &UnsealableError{err: err}
}

// removeSpecialFiles removes from dir what a Researcher put in place of a
// file of base's — the index env names — that git cannot hold: a named
// pipe, a socket or a device. git add refuses the whole seal for one, so a
// Researcher that left one would fail its round with an error rather than a
// verdict, and, on a cluster, the check again and again. Removed, the file
// is judged as deleted. git passes such files over where base has none.
func removeSpecialFiles(ctx context.Context, dir string, env []string) error {
	out, err := gitEnv(ctx, dir, env, "ls-files", "-z", "--cached", "--", ".")
	if err != nil {
		return err
	}
	for _, p := range strings.Split(out, "\x00") {
		if p == "" {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		info, err := os.Lstat(full)
		if err != nil || info.Mode().Type()&(os.ModeNamedPipe|os.ModeSocket|os.ModeDevice|os.ModeCharDevice) == 0 {
			continue
		}
		if err := os.Remove(full); err != nil {
			return err
		}
	}
	return nil
}

// Checkout writes commit's files into dest, which it empties first, as a
// plain directory: no git directory, nothing untracked, nothing ignored. A
// step that runs there cannot reach the worktree through git, and sees
// nothing a Researcher left outside the commit. dest is git's working tree
// while it writes: git reads the attributes of the files it writes
// (ident, eol, encodings, filters) from the working tree, and in the
// worktree a Researcher may leave a .gitattributes that an ignore rule
// keeps out of every commit.
func (w *Workspace) Checkout(ctx context.Context, commit, dest string) error {
	c, err := revParse(ctx, w.Root, commit)
	if err != nil {
		return err
	}
	gitDir, err := git(ctx, w.Root, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(dest)
	if err != nil {
		return err
	}
	if err := RemoveAll(abs); err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return err
	}
	return w.withIndex(func(env []string) error {
		env = append(env, "GIT_DIR="+strings.TrimSpace(gitDir), "GIT_WORK_TREE="+abs)
		if _, err := gitEnv(ctx, abs, env, "read-tree", c); err != nil {
			return err
		}
		// Parallel checkout (git 2.32 and later) writes the files with as
		// many workers as the machine has cores.
		args := []string{"-c", "checkout.workers=0", "-c", "checkout.thresholdForParallelism=100", "checkout-index", "-a", "-f", "--prefix=" + abs + string(filepath.Separator)}
		if _, err := gitEnv(ctx, abs, env, args...); err != nil {
			return fmt.Errorf("checking out %s into %s: %w", text.ShortCommit(c), abs, err)
		}
		return nil
	})
}

// CommitCandidate moves the experiment branch from base to a commit of
// exactly candidate's files with message, and the worktree with it, keeping
// the ledger's working-tree content as Rollback does. It returns the new
// commit. A candidate that did not start at base, or whose files are not
// base's plus a Researcher's changes, is refused.
func (w *Workspace) CommitCandidate(ctx context.Context, base, candidate, message string) (string, error) {
	baseCommit, err := revParse(ctx, w.Root, base)
	if err != nil {
		return "", err
	}
	cand, err := revParse(ctx, w.Root, candidate)
	if err != nil {
		return "", err
	}
	parent, err := revParse(ctx, w.Root, cand+"^")
	if err != nil || parent != baseCommit {
		return "", fmt.Errorf("candidate %s was not sealed on %s", text.ShortCommit(cand), text.ShortCommit(baseCommit))
	}
	tree, err := git(ctx, w.Root, "rev-parse", "--verify", cand+"^{tree}")
	if err != nil {
		return "", err
	}
	commit, err := w.commitTree(ctx, tree, baseCommit, message)
	if err != nil {
		return "", err
	}
	if err := w.Rollback(ctx, commit); err != nil {
		return "", err
	}
	return commit, nil
}

// commitTree makes a commit of tree on parent as the supervisor, unsigned.
func (w *Workspace) commitTree(ctx context.Context, tree, parent, message string) (string, error) {
	out, err := gitEnv(ctx, w.Root, supervisorEnv(), "-c", "commit.gpgsign=false", "commit-tree", strings.TrimSpace(tree), "-p", parent, "-m", message)
	return strings.TrimSpace(out), err
}

// OutputError is a training output that training made into something the
// evaluation may not get: a link that leads out of its checkout, or a file
// that is not a regular one. It is the candidate's doing, not the
// supervisor's.
type OutputError struct {
	Output string
	Err    error
}

func (e *OutputError) Error() string { return fmt.Sprintf("training output %s: %v", e.Output, e.Err) }

func (e *OutputError) Unwrap() error { return e.Err }

// CopyOutputs copies the training outputs, paths relative to the
// experiment directory, from the experiment directory subdir of the
// checkout trained to to, the experiment directory of the checkout to
// evaluate. An output training did not write is left out; only regular
// files and directories are copied. Every path is opened within the
// checkout trained, the experiment directory too, which training may have
// replaced: a symbolic link that training made to lead out of its
// checkout (to another candidate's, say), or anything but a regular file
// or a directory, is an OutputError.
func CopyOutputs(trained, subdir, to string, outputs []string) error {
	top, err := os.OpenRoot(trained)
	if err != nil {
		return err
	}
	defer top.Close()
	root, err := top.OpenRoot(filepath.FromSlash(subdir))
	if err != nil {
		return &OutputError{Output: "directory " + subdir, Err: err}
	}
	defer root.Close()
	fsys := root.FS()
	for _, o := range outputs {
		rel := path.Clean(filepath.ToSlash(o))
		if !fs.ValidPath(rel) || rel == "." {
			return fmt.Errorf("training output %q is not inside the experiment directory", o)
		}
		if _, err := root.Lstat(rel); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		dst := filepath.Join(to, filepath.FromSlash(rel))
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		err := fs.WalkDir(fsys, rel, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return &OutputError{Output: p, Err: err}
			}
			target := filepath.Join(to, filepath.FromSlash(p))
			switch {
			case d.IsDir():
				return os.MkdirAll(target, 0o755)
			case d.Type().IsRegular():
				return copyFile(root, p, target)
			}
			return &OutputError{Output: p, Err: errors.New("neither a regular file nor a directory")}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies the file at p in root to dst, a new file.
func copyFile(root *os.Root, p, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := root.Open(p)
	if err != nil {
		return &OutputError{Output: p, Err: err}
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		return errors.Join(err, out.Close())
	}
	return out.Close()
}
