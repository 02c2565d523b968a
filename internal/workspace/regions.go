package workspace

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
)

// Fixed regions are the parts of variable files that the Researcher may not
// change: from a line holding RegionBegin to the next line holding
// RegionEnd, both lines included, in any comment syntax. A line holding
// both is a region of one line. The text of every region, their number and
// their order must stay as the start commit has them.
const (
	RegionBegin = "autoresearch:fixed-begin"
	RegionEnd   = "autoresearch:fixed-end"
	// regionMarker is what both markers start with.
	regionMarker = "autoresearch:fixed-"
)

// Region is a fixed region of a file.
type Region struct {
	// Path is the file, relative to the experiment directory.
	Path string
	// Start and End are the lines of its markers, counted from 1.
	Start, End int
	// Begin is the line of its begin marker, trimmed.
	Begin string
	// text is the region's lines, markers included, as they are.
	text string
}

// Lines is the region's line range, such as "10-14".
func (r Region) Lines() string {
	if r.Start == r.End {
		return fmt.Sprint(r.Start)
	}
	return fmt.Sprintf("%d-%d", r.Start, r.End)
}

// parseRegions finds the fixed regions of a file's content. Markers that
// do not pair up are an error naming the line.
func parseRegions(file, content string) ([]Region, error) {
	var regions []Region
	lines := strings.Split(content, "\n")
	open := -1
	for i, line := range lines {
		begin, end := strings.Contains(line, RegionBegin), strings.Contains(line, RegionEnd)
		switch {
		case open >= 0 && begin:
			return nil, fmt.Errorf("the begin marker on line %d comes before the end of the region that begins on line %d", i+1, open+1)
		case begin && end:
			regions = append(regions, Region{Path: file, Start: i + 1, End: i + 1, Begin: strings.TrimSpace(line), text: line})
		case begin:
			open = i
		case end && open < 0:
			return nil, fmt.Errorf("the end marker on line %d has no begin marker before it", i+1)
		case end:
			regions = append(regions, Region{
				Path: file, Start: open + 1, End: i + 1, Begin: strings.TrimSpace(lines[open]),
				text: strings.Join(lines[open:i+1], "\n"),
			})
			open = -1
		}
	}
	if open >= 0 {
		return nil, fmt.Errorf("the begin marker on line %d has no end marker after it", open+1)
	}
	return regions, nil
}

// FixedRegions returns the fixed regions of the files of commit inside the
// experiment directory, fixed files (which are whole) left out, sorted by
// file and line. Markers that do not pair up are an error: the protocol is
// broken until the start commit fixes them.
func (w *Workspace) FixedRegions(ctx context.Context, commit string, fixed []string) ([]Region, error) {
	marked, err := w.filesWithMarkers(ctx, commit)
	if err != nil {
		return nil, err
	}
	var regions []Region
	for _, rel := range marked {
		if _, ok := MatchAnyPattern(fixed, rel); ok {
			continue
		}
		content, err := w.blob(ctx, commit, rel)
		if err != nil {
			return nil, err
		}
		r, err := parseRegions(rel, content)
		if err != nil {
			return nil, fmt.Errorf("fixed region markers of %s: %w", rel, err)
		}
		regions = append(regions, r...)
	}
	return regions, nil
}

// filesWithMarkers lists, sorted, the files of commit inside the
// experiment directory that hold a region marker.
func (w *Workspace) filesWithMarkers(ctx context.Context, commit string) ([]string, error) {
	args := []string{"grep", "-l", "-z", "-F", "--no-textconv", "-e", regionMarker, commit, "--"}
	if w.Subdir != "." {
		args = append(args, ":(literal)"+w.Subdir)
	}
	out, err := git(ctx, w.Root, args...)
	if err != nil {
		// git grep exits 1 when nothing matches.
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 1 && strings.TrimSpace(out) == "" {
			return nil, nil
		}
		return nil, err
	}
	var files []string
	for _, f := range splitNUL(out) {
		s := w.side(strings.TrimPrefix(f, commit+":"))
		if s.inside && !supervisorOwned(s) {
			files = append(files, s.rel)
		}
	}
	sort.Strings(files)
	return files, nil
}

// blob is the content of rel, relative to the experiment directory, in commit.
func (w *Workspace) blob(ctx context.Context, commit, rel string) (string, error) {
	return git(ctx, w.Root, "cat-file", "blob", commit+":"+w.repoPath(rel))
}

// checkRegions compares the fixed regions of every changed file that has
// markers in base or in cand. Fixed files are the fixed patterns' rule.
func (w *Workspace) checkRegions(ctx context.Context, base, cand string, changes []treeChange, fixed []string) ([]Violation, error) {
	inBase, err := w.filesWithMarkers(ctx, base)
	if err != nil {
		return nil, err
	}
	inCand, err := w.filesWithMarkers(ctx, cand)
	if err != nil {
		return nil, err
	}
	marked := map[string]bool{}
	for _, f := range append(inBase, inCand...) {
		marked[f] = true
	}
	var out []Violation
	for _, c := range changes {
		if !c.inside || !marked[c.rel] {
			continue
		}
		if _, ok := MatchAnyPattern(fixed, c.rel); ok {
			continue
		}
		var before, after string
		if c.kind != ChangeAdded {
			if before, err = w.blob(ctx, base, c.rel); err != nil {
				return nil, err
			}
		}
		if c.kind != ChangeDeleted {
			if after, err = w.blob(ctx, cand, c.rel); err != nil {
				return nil, err
			}
		}
		if reason := compareRegions(c.rel, c.kind, before, after); reason != "" {
			out = append(out, Violation{Path: c.rel, Reason: reason})
		}
	}
	return out, nil
}

// compareRegions says how the fixed regions of file changed from before
// to after, "" if they did not; the first difference only.
func compareRegions(file string, kind ChangeKind, before, after string) string {
	old, err := parseRegions(file, before)
	if err != nil {
		return fmt.Sprintf("fixed region markers of %s are broken in the base: %v; the protocol needs them fixed in the start commit", file, err)
	}
	if kind == ChangeDeleted {
		if len(old) == 0 {
			return ""
		}
		return fmt.Sprintf("deleted %s, which holds fixed region 1 (lines %s); fixed regions may not change", file, old[0].Lines())
	}
	cur, err := parseRegions(file, after)
	if err != nil {
		return fmt.Sprintf("fixed region markers of %s no longer pair up: %v; fixed regions may not change", file, err)
	}
	for i := range max(len(old), len(cur)) {
		switch {
		case i >= len(cur):
			return fmt.Sprintf("fixed region %d of %s (lines %s in the base) was removed; fixed regions may not change", i+1, file, old[i].Lines())
		case i >= len(old):
			return fmt.Sprintf("fixed region %d of %s (lines %s) was added; only the start commit marks fixed regions", i+1, file, cur[i].Lines())
		case old[i].text != cur[i].text:
			return fmt.Sprintf("fixed region %d of %s (lines %s in the base) changed; fixed regions may not change", i+1, file, old[i].Lines())
		}
	}
	return ""
}
