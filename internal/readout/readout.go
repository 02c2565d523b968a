// Package readout carries files and git output from an experiment's
// workspace volume to a client outside the cluster through a pod's log:
// the request a reader pod serves, the serving, and the framing that
// survives the kubelet's log path, which keeps text lines only and merges
// stdout with stderr.
package readout

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Request is what a reader pod reads, in order.
type Request struct {
	Items []Item `json:"items"`
}

// Item is one thing to read, under its Name in the output. Exactly one of
// File, List, Diff and Bundle is set; paths are relative to the volume.
type Item struct {
	Name string `json:"name"`
	// File is a file whose bytes to read.
	File string `json:"file,omitempty"`
	// List is a directory whose entries to list, one name a line.
	List string `json:"list,omitempty"`
	// Diff is a git diff between two commits.
	Diff *Diff `json:"diff,omitempty"`
	// Bundle is a git bundle of an experiment branch.
	Bundle *Bundle `json:"bundle,omitempty"`
}

// Diff is `git diff From To -- Files...` of the repository whose git
// directory is GitDir, with Files relative to its experiment directory
// Subdir. It reads the repository's own git directory, never a worktree's:
// the worktree's .git file is the Researcher's to rewrite while its step
// runs.
type Diff struct {
	GitDir string   `json:"gitDir"`
	Subdir string   `json:"subdir,omitempty"`
	From   string   `json:"from"`
	To     string   `json:"to"`
	Files  []string `json:"files,omitempty"`
}

// Bundle is the branch autoresearch/<Experiment> of the repository whose
// git directory is GitDir, and with Candidates the experiment's sealed
// candidates too.
type Bundle struct {
	GitDir     string `json:"gitDir"`
	Experiment string `json:"experiment"`
	Candidates bool   `json:"candidates,omitempty"`
}

// Validate refuses a request that names a path outside the volume, a
// revision that git could take for an option, or an item that is not
// exactly one thing.
func (r Request) Validate() error {
	if len(r.Items) == 0 {
		return fmt.Errorf("the request reads nothing")
	}
	seen := map[string]bool{}
	for _, it := range r.Items {
		if it.Name == "" || seen[it.Name] {
			return fmt.Errorf("item %q: every item needs a name of its own", it.Name)
		}
		seen[it.Name] = true
		var paths []string
		kinds := 0
		if it.File != "" {
			kinds++
			paths = append(paths, it.File)
		}
		if it.List != "" {
			kinds++
			paths = append(paths, it.List)
		}
		if d := it.Diff; d != nil {
			kinds++
			if d.GitDir == "" {
				return noGitDir(it.Name)
			}
			paths = append(paths, d.GitDir)
			if d.Subdir != "" {
				paths = append(paths, d.Subdir)
			}
			for _, rev := range []string{d.From, d.To} {
				if rev == "" || strings.HasPrefix(rev, "-") {
					return fmt.Errorf("item %s: %q is not a revision", it.Name, rev)
				}
			}
			paths = append(paths, d.Files...)
		}
		if b := it.Bundle; b != nil {
			kinds++
			if b.GitDir == "" {
				return noGitDir(it.Name)
			}
			paths = append(paths, b.GitDir)
			if b.Experiment == "" {
				return fmt.Errorf("item %s: the bundle names no experiment", it.Name)
			}
		}
		if kinds != 1 {
			return fmt.Errorf("item %s: set exactly one of file, list, diff and bundle", it.Name)
		}
		for _, p := range paths {
			if !filepath.IsLocal(filepath.FromSlash(p)) {
				return fmt.Errorf("item %s: %q is not a path inside the volume", it.Name, p)
			}
		}
	}
	return nil
}

// noGitDir is the error of a diff or a bundle that names no git
// directory, as a plugin older than the reader sends them.
func noGitDir(item string) error {
	return fmt.Errorf("item %s names no git directory: the kubectl plugin and the reader pod's image are of different versions; use the plugin of the operator's version, or give it that operator's image with --image", item)
}
