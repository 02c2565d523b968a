package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// GitState is what a round must leave of the repository's git machinery as
// it found it: the worktree's .git file, the configuration, attributes and
// hooks git reads or runs,
// and every ref but the experiment branch (whose moves compliance judges).
// A Researcher that plants a hook or a filter command there would have the
// supervisor run it; one that adds a branch or a tag would leave it in the
// user's repository.
type GitState struct {
	// Files maps a path under the git directories to its content; a path
	// that did not exist is absent.
	Files map[string]GitFile `json:"files"`
	// Refs maps a ref name to its object.
	Refs map[string]string `json:"refs"`
}

// gitLink is the file in a linked worktree that names its git directory.
// Every git command the supervisor runs in the worktree finds the
// repository through it, so it is guarded first: pointed at a repository
// of the Researcher's, it would have the supervisor read that one's
// configuration and seal, commit and roll back there.
const gitLink = ".git"

// GitFile is one guarded file.
type GitFile struct {
	Data []byte      `json:"data"`
	Mode fs.FileMode `json:"mode"`
}

// guardedGitFiles are the files of a git directory that configure what git
// runs or what a commit's history says; hooks/ is guarded whole.
var guardedGitFiles = []string{
	"config", "config.worktree", filepath.Join("info", "attributes"), filepath.Join("info", "grafts"),
	filepath.Join("objects", "info", "alternates"),
}

// worktreeLinks are the files of a linked worktree's own git directory
// that name other places: commondir, the repository's git directory, which
// git finds every config, hook and ref through, and gitdir, the worktree.
// They are guarded with the .git file: pointed at a repository of the
// Researcher's, commondir would have the supervisor snapshot, restore,
// seal and commit there, and stay so.
var worktreeLinks = []string{"commondir", "gitdir"}

// linkPaths are the worktree's .git file and the worktreeLinks of the git
// directory that the .git file, as it is in data, names.
func (w *Workspace) linkPaths(data []byte) []string {
	link := filepath.Join(w.Root, gitLink)
	paths := []string{link}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok {
		return paths
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(w.Root, dir)
	}
	for _, name := range worktreeLinks {
		paths = append(paths, filepath.Join(dir, name))
	}
	return paths
}

// SnapshotGitState records the repository's git machinery.
func (w *Workspace) SnapshotGitState(ctx context.Context) (GitState, error) {
	st := GitState{Files: map[string]GitFile{}, Refs: map[string]string{}}
	var paths []string
	link := filepath.Join(w.Root, gitLink)
	if info, err := os.Lstat(link); err == nil && info.Mode().IsRegular() {
		data, err := os.ReadFile(link)
		if err != nil {
			return st, err
		}
		st.Files[link] = GitFile{Data: data, Mode: info.Mode()}
		paths = w.linkPaths(data)[1:]
	}
	for _, p := range append(paths, w.guardedPaths(ctx)...) {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return st, err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return st, err
		}
		st.Files[p] = GitFile{Data: data, Mode: info.Mode()}
	}
	refs, err := git(ctx, w.Root, "for-each-ref", "--format=%(refname) %(objectname)")
	if err != nil {
		return st, err
	}
	for _, line := range strings.Split(strings.TrimSpace(refs), "\n") {
		if name, obj, ok := strings.Cut(line, " "); ok && name != "refs/heads/"+w.Branch {
			st.Refs[name] = obj
		}
	}
	return st, nil
}

// RestoreGitState puts the repository's git machinery back as saved and
// describes each thing it had to undo; nothing to undo gives nil.
func (w *Workspace) RestoreGitState(ctx context.Context, saved GitState) ([]string, error) {
	undone, err := w.RestoreGitLink(saved)
	if err != nil {
		return undone, err
	}
	now, err := w.SnapshotGitState(ctx)
	if err != nil {
		return undone, err
	}
	for _, p := range sortedKeys(now.Files) {
		if _, ok := saved.Files[p]; !ok {
			undone = append(undone, "added "+w.gitPathName(p))
			if err := os.Remove(p); err != nil {
				return undone, err
			}
		}
	}
	for _, p := range sortedKeys(saved.Files) {
		f := saved.Files[p]
		cur, ok := now.Files[p]
		if ok && string(cur.Data) == string(f.Data) && cur.Mode == f.Mode {
			continue
		}
		undone = append(undone, "changed "+w.gitPathName(p))
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return undone, err
		}
		if err := os.WriteFile(p, f.Data, f.Mode.Perm()); err != nil {
			return undone, err
		}
	}
	for _, ref := range sortedKeys(now.Refs) {
		if _, ok := saved.Refs[ref]; !ok {
			undone = append(undone, "created "+ref)
			if _, err := git(ctx, w.Root, "update-ref", "-d", ref); err != nil {
				return undone, err
			}
		}
	}
	for _, ref := range sortedKeys(saved.Refs) {
		if obj := saved.Refs[ref]; now.Refs[ref] != obj {
			undone = append(undone, "moved or deleted "+ref)
			if _, err := git(ctx, w.Root, "update-ref", ref, obj); err != nil {
				return undone, err
			}
		}
	}
	return undone, nil
}

// RestoreGitLink puts back the worktree's .git file and the links of its
// git directory (worktreeLinks), whatever took their place, before any git
// command reads them, and describes each thing it had to undo.
func (w *Workspace) RestoreGitLink(saved GitState) ([]string, error) {
	link := filepath.Join(w.Root, gitLink)
	f, ok := saved.Files[link]
	if !ok {
		return nil, nil
	}
	var undone []string
	for _, p := range w.linkPaths(f.Data) {
		f, ok := saved.Files[p]
		if !ok {
			continue
		}
		if info, err := os.Lstat(p); err == nil && info.Mode().IsRegular() {
			if data, err := os.ReadFile(p); err == nil && string(data) == string(f.Data) {
				continue
			}
		}
		name := "the worktree's .git file"
		if p != link {
			name = "the worktree's git " + filepath.Base(p)
		}
		undone = append(undone, "changed "+name)
		if err := os.RemoveAll(p); err != nil {
			return undone, err
		}
		if err := os.WriteFile(p, f.Data, f.Mode.Perm()); err != nil {
			return undone, err
		}
	}
	return undone, nil
}

// guardedPaths lists the files SnapshotGitState records: the guarded files
// of the repository's git directory and of the worktree's, and every hook.
func (w *Workspace) guardedPaths(ctx context.Context) []string {
	var paths []string
	for _, dir := range w.gitDirs(ctx) {
		for _, name := range guardedGitFiles {
			paths = append(paths, filepath.Join(dir, name))
		}
		_ = filepath.WalkDir(filepath.Join(dir, "hooks"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				paths = append(paths, p)
			}
			return nil
		})
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// gitDirs are the repository's common git directory and the worktree's own.
func (w *Workspace) gitDirs(ctx context.Context) []string {
	var dirs []string
	for _, arg := range []string{"--git-common-dir", "--absolute-git-dir"} {
		out, err := git(ctx, w.Root, "rev-parse", "--path-format=absolute", arg)
		if err == nil {
			dirs = append(dirs, strings.TrimSpace(out))
		}
	}
	return dirs
}

// gitPathName names a guarded file for a person: "git hook post-commit".
func (w *Workspace) gitPathName(p string) string {
	if dir, name := filepath.Split(p); filepath.Base(dir) == "hooks" {
		return "git hook " + name
	}
	return fmt.Sprintf("git %s", filepath.Base(p))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
