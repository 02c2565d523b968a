package workspace

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// A fixed pattern names fixed files relative to the experiment directory:
// a file ("eval.py"), a directory with everything under it ("eval" or
// "eval/"), or a glob matched one path segment at a time with path.Match,
// where a "**" segment matches any number of segments ("eval/**",
// "data/*.py", "**/metrics.go"). A pattern that matches a directory covers
// everything under it.

// MatchPattern reports whether the slash path rel, relative to the
// experiment directory, is pattern or lies under a directory it names.
func MatchPattern(pattern, rel string) bool {
	if strings.TrimSuffix(pattern, "/") == "" {
		return false
	}
	return v1alpha1.PathPattern(pattern).Matches(rel)
}

// MatchAnyPattern reports whether rel matches one of patterns, and which.
func MatchAnyPattern(patterns []string, rel string) (string, bool) {
	for _, p := range patterns {
		if MatchPattern(p, rel) {
			return p, true
		}
	}
	return "", false
}

// matchFoldAny is MatchAnyPattern with case folded, for file systems that
// do not tell "Eval.py" from "eval.py".
func matchFoldAny(patterns []string, rel string) (string, bool) {
	for _, p := range patterns {
		if MatchPattern(strings.ToLower(p), strings.ToLower(rel)) {
			return p, true
		}
	}
	return "", false
}

// IsGlob reports whether pattern holds glob syntax rather than naming one
// file or directory.
func IsGlob(pattern string) bool { return strings.ContainsAny(pattern, `*?[\`) }

// treeEntry is a file of a commit inside the experiment directory.
type treeEntry struct {
	rel  string // relative to the experiment directory
	mode string
	oid  string
}

// listTree lists the files of commit inside the experiment directory, the
// supervisor's own files left out.
func (w *Workspace) listTree(ctx context.Context, commit string) ([]treeEntry, error) {
	args := []string{"ls-tree", "-r", "-z", "--full-tree", commit}
	if w.Subdir != "." {
		args = append(args, "--", ":(literal)"+w.Subdir)
	}
	out, err := git(ctx, w.Root, args...)
	if err != nil {
		return nil, err
	}
	var entries []treeEntry
	for _, line := range splitNUL(out) {
		meta, repoPath, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		fields := strings.Fields(meta)
		if len(fields) != 3 || fields[1] != "blob" {
			continue // a submodule has no files here
		}
		s := w.side(repoPath)
		if !s.inside || supervisorOwned(s) {
			continue
		}
		entries = append(entries, treeEntry{rel: s.rel, mode: fields[0], oid: fields[2]})
	}
	return entries, nil
}

// ExpandFixed returns, sorted, the files of commit that the fixed patterns
// match, relative to the experiment directory. A pattern that matches no
// file is an error: it is a typo, or the evaluation is missing.
func (w *Workspace) ExpandFixed(ctx context.Context, commit string, patterns []string) ([]string, error) {
	entries, err := w.listTree(ctx, commit)
	if err != nil {
		return nil, err
	}
	return expandPatterns(entries, patterns)
}

func expandPatterns(entries []treeEntry, patterns []string) ([]string, error) {
	var files []string
	for _, p := range patterns {
		n := 0
		for _, e := range entries {
			if MatchPattern(p, e.rel) {
				files = append(files, e.rel)
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("fixed %s matches no file in the start commit", p)
		}
	}
	sort.Strings(files)
	return slices.Compact(files), nil
}
