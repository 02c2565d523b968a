package workspace

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// ChangeKind is how a file changed.
type ChangeKind string

// Kinds of file changes.
const (
	ChangeModified ChangeKind = "modified"
	ChangeAdded    ChangeKind = "added"
	ChangeDeleted  ChangeKind = "deleted"
	ChangeRenamed  ChangeKind = "renamed"
)

// FileChange is a file that differs from the round's base commit.
type FileChange struct {
	// Path is relative to the experiment directory, or, for a file outside
	// it, relative to the worktree root.
	Path string
	Kind ChangeKind
	// From is the old path of a renamed file, relative in the same way.
	From string
}

// Violation is a change the protocol forbids.
type Violation struct {
	// Path is the file, as in FileChange; "" for a change of git history.
	Path string
	// Reason says what was done, as a sentence fit for the round's insight.
	Reason string
}

// ComplianceReport is what a round changed and which of it is forbidden.
type ComplianceReport struct {
	// Changes are the changes against the base commit, sorted by path. The
	// ledger files and .autoresearch/ are left out: the supervisor restores
	// or rewrites them anyway.
	Changes    []FileChange
	Violations []Violation
	// EvalLike are new code files whose names look like evaluation code.
	EvalLike []string
	// HeadMoved says how HEAD or the branch left the base commit; "" if they did not.
	HeadMoved string
}

// OK reports whether the round kept to the protocol.
func (r ComplianceReport) OK() bool { return len(r.Violations) == 0 }

// maxSummaryReasons bounds Summary to one readable line.
const maxSummaryReasons = 5

// Summary is a one-line account of the violations, "" when there are none.
func (r ComplianceReport) Summary() string {
	reasons := make([]string, 0, len(r.Violations))
	for _, v := range r.Violations {
		reasons = append(reasons, v.Reason)
	}
	if len(reasons) > maxSummaryReasons {
		return fmt.Sprintf("%s; and %d more", strings.Join(reasons[:maxSummaryReasons], "; "), len(reasons)-maxSummaryReasons)
	}
	return strings.Join(reasons, "; ")
}

// CheckCompliance compares candidate, the round's sealed commit (Seal),
// with base, the commit the round started from, and checks that the
// worktree's HEAD and branch are still on base. Fixed and variable files
// are named relative to the experiment directory.
//
// Forbidden are: a change of HEAD or of the branch; any change to a fixed
// file; modifying, deleting or renaming a tracked file that is not a
// variable file (files outside the experiment directory and .gitignore
// included); deleting or renaming a variable file; a new code file whose
// name looks like evaluation code; a symbolic link; and a file that
// configures git. New files are otherwise allowed helpers.
func (w *Workspace) CheckCompliance(ctx context.Context, base, candidate string, fixed, variable []string) (ComplianceReport, error) {
	return w.checkCompliance(ctx, base, candidate, fixed, variable, true)
}

// CheckChanges is CheckCompliance for a candidate whose Researcher worked
// in a copy of its own, never in the worktree: it judges the change from
// base to candidate alone. The worktree's HEAD is the supervisor's, which
// may have moved on meanwhile, as when spec.pipeline checks the next
// round's candidates while this round commits.
func (w *Workspace) CheckChanges(ctx context.Context, base, candidate string, fixed, variable []string) (ComplianceReport, error) {
	return w.checkCompliance(ctx, base, candidate, fixed, variable, false)
}

func (w *Workspace) checkCompliance(ctx context.Context, base, candidate string, fixed, variable []string, worktree bool) (ComplianceReport, error) {
	baseCommit, err := revParse(ctx, w.Root, base)
	if err != nil {
		return ComplianceReport{}, fmt.Errorf("compliance base: %w", err)
	}
	cand, err := revParse(ctx, w.Root, candidate)
	if err != nil {
		return ComplianceReport{}, fmt.Errorf("compliance candidate: %w", err)
	}
	var report ComplianceReport
	if worktree {
		if report.HeadMoved, err = w.headMoved(ctx, baseCommit); err != nil {
			return ComplianceReport{}, err
		}
	}
	if report.HeadMoved != "" {
		report.Violations = append(report.Violations, Violation{
			Reason: "git history changed: " + report.HeadMoved + " (only the supervisor may run git write commands)",
		})
	}
	changes, err := w.changesBetween(ctx, baseCommit, cand)
	if err != nil {
		return ComplianceReport{}, err
	}
	rules := newFileRules(fixed, variable)
	for _, c := range changes {
		report.Changes = append(report.Changes, c.FileChange)
		if v, ok := rules.judge(c); ok {
			report.Violations = append(report.Violations, v)
		} else if v, ok := judgeFileType(c); ok {
			report.Violations = append(report.Violations, v)
		}
		if c.Kind == ChangeAdded && rules.evalLike(c.to) {
			report.EvalLike = append(report.EvalLike, c.Path)
		}
	}
	if err := w.checkPristine(ctx, baseCommit, cand, fixed, variable, &report); err != nil {
		return ComplianceReport{}, err
	}
	return report, nil
}

// judgeFileType refuses what no protocol allows a candidate to add or
// change: a symbolic link, which could make a step read or write a file
// outside its checkout, a file that configures git itself
// (.gitattributes, .gitmodules, .gitignore), which could make git run a
// command or hide a file, a file that a service or tool runs by itself
// (RunsOnItsOwn), and a file that chooses a toolchain
// (ChoosesToolchain), which it may not remove either, nor anything under
// the name of the supervisor's state directory (namesStateDir).
func judgeFileType(c change) (Violation, bool) {
	if namesStateDir(c.to) {
		return Violation{Path: c.Path, Reason: fmt.Sprintf("%s %s, which names the supervisor's state directory; no candidate may hold it", c.Kind, c.Path)}, true
	}
	if ChoosesToolchain(c.Path) {
		return Violation{Path: c.Path, Reason: fmt.Sprintf("%s %s, a file that chooses the interpreter or toolchain that runs the fixed evaluation", c.Kind, c.Path)}, true
	}
	if c.Kind == ChangeDeleted {
		return Violation{}, false
	}
	if strings.HasPrefix(path.Base(c.to.rel), ".git") {
		return Violation{Path: c.Path, Reason: fmt.Sprintf("%s %s, a file that configures git, which only the supervisor may change", c.Kind, c.Path)}, true
	}
	if RunsOnItsOwn(c.Path) {
		return Violation{Path: c.Path, Reason: fmt.Sprintf("%s %s, a file that a CI service or a developer's tool runs by itself once the branch is pushed or checked out", c.Kind, c.Path)}, true
	}
	if c.mode == modeSymlink || c.mode == modeGitlink {
		return Violation{Path: c.Path, Reason: fmt.Sprintf("%s is a symbolic link or a nested repository; a candidate may hold only regular files", c.Path)}, true
	}
	return Violation{}, false
}

// automationDirs and automationFiles are where CI services, forges,
// deploy services, editors, dev containers, hook managers, coding agents
// and directory-environment tools find what they run by themselves, with
// the user's credentials, once a branch is pushed or checked out: a
// workflow there would run the Researcher's code outside every sandbox.
var (
	automationDirs = []string{
		// CI services and forges.
		".github", ".gitlab", ".gitea", ".forgejo", ".circleci", ".buildkite", ".azure-pipelines", ".woodpecker", ".tekton",
		".semaphore", ".builds", ".harness", ".zuul.d", "zuul.d",
		// Hook managers, editors, dev containers, coding agents.
		".husky", ".vscode", ".devcontainer", ".idea", ".claude", ".cursor", ".gemini",
	}
	automationFiles = []string{
		".gitlab-ci.yml", ".travis.yml", "Jenkinsfile", "azure-pipelines.yml", "bitbucket-pipelines.yml",
		".drone.yml", ".drone.yaml", ".drone.jsonnet", ".drone.star", ".woodpecker.yml", ".woodpecker.yaml",
		".cirrus.yml", ".cirrus.star", "appveyor.yml", ".appveyor.yml", "cloudbuild.yaml", "cloudbuild.yml", "cloudbuild.json",
		".build.yml", "buildkite.yml", "buildkite.yaml", "buildspec.yml", "bitrise.yml", "codemagic.yaml", ".taskcluster.yml",
		".zuul.yaml", ".readthedocs.yml", ".readthedocs.yaml", "netlify.toml", "vercel.json",
		".pre-commit-config.yaml", "lefthook.yml", "lefthook.yaml", ".lefthook.yml", ".lefthook.yaml", "lefthook-local.yml",
		".overcommit.yml", ".huskyrc", ".envrc", ".envrc.local", ".devcontainer.json", ".mcp.json", ".aider.conf.yml",
	}
)

// RunsOnItsOwn says whether the file p, slash-separated from the
// repository's root, is one of automationFiles or lies in one of
// automationDirs, in any case.
func RunsOnItsOwn(p string) bool {
	parts := strings.Split(p, "/")
	fold := func(names []string, name string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, name) })
	}
	for _, dir := range parts[:len(parts)-1] {
		if fold(automationDirs, dir) {
			return true
		}
	}
	return fold(automationFiles, parts[len(parts)-1])
}

// ToolchainFiles are the files by which version managers (pyenv, rustup,
// asdf, mise, rbenv, nodenv, nvm, goenv, jenv) choose what their shims run:
// the first one found in the working directory or above it. A candidate
// that adds, changes or removes one chooses the interpreter or the
// toolchain that runs the fixed evaluation (rustup's even names any
// directory as one), whatever the protocol says of it.
var ToolchainFiles = []string{
	".python-version", "rust-toolchain", "rust-toolchain.toml", ".tool-versions", "mise.toml", ".mise.toml",
	".ruby-version", ".node-version", ".nvmrc", ".go-version", ".java-version",
}

// ChoosesToolchain says whether the file p, slash-separated, is one of
// ToolchainFiles or lies in a .cargo directory, whose configuration cargo
// reads from every directory above its own and which names the compiler,
// a wrapper around it and the runner of what it builds.
func ChoosesToolchain(p string) bool {
	return slices.Contains(ToolchainFiles, path.Base(p)) || slices.Contains(strings.Split(path.Dir(p), "/"), ".cargo")
}

// headMoved describes how HEAD and the experiment branch differ from base.
func (w *Workspace) headMoved(ctx context.Context, base string) (string, error) {
	head, err := revParse(ctx, w.Root, "HEAD")
	if err != nil {
		return "", err
	}
	var moved []string
	ref, refErr := git(ctx, w.Root, "symbolic-ref", "-q", "HEAD")
	ref = strings.TrimSpace(ref)
	onBranch := refErr == nil && ref == "refs/heads/"+w.Branch
	switch {
	case refErr != nil:
		moved = append(moved, "HEAD is detached at "+text.ShortCommit(head))
	case !onBranch:
		moved = append(moved, fmt.Sprintf("HEAD is on branch %s instead of %s", strings.TrimPrefix(ref, "refs/heads/"), w.Branch))
	}
	if head != base {
		moved = append(moved, fmt.Sprintf("HEAD moved from %s to %s", text.ShortCommit(base), text.ShortCommit(head)))
	}
	if !onBranch {
		tip, err := revParse(ctx, w.Root, "refs/heads/"+w.Branch)
		switch {
		case err != nil:
			moved = append(moved, fmt.Sprintf("branch %s was deleted", w.Branch))
		case tip != base:
			moved = append(moved, fmt.Sprintf("branch %s moved from %s to %s", w.Branch, text.ShortCommit(base), text.ShortCommit(tip)))
		}
	}
	return strings.Join(moved, "; "), nil
}

// change is a FileChange with what the rules need to know about each side.
type change struct {
	FileChange
	to, from side
	// mode is the git file mode of the new side, such as 100644.
	mode string
}

// Git's file modes of a symbolic link and of a nested repository (a
// gitlink), which a candidate may not hold.
const (
	modeSymlink = "120000"
	modeGitlink = "160000"
)

// side is one path of a change.
type side struct {
	rel    string // relative to the experiment directory, or to the root if outside
	inside bool   // inside the experiment directory
}

// changesBetween lists the changes from base to candidate, two commits.
func (w *Workspace) changesBetween(ctx context.Context, base, candidate string) ([]change, error) {
	diff, err := git(ctx, w.Root, "diff-tree", "-r", "-z", "-M", "--no-ext-diff", base, candidate, "--")
	if err != nil {
		return nil, err
	}
	var changes []change
	fields := splitNUL(diff)
	for i := 0; i < len(fields); i++ {
		// ":<old mode> <new mode> <old sha> <new sha> <status>", then the path(s).
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) != 5 || i+1 >= len(fields) {
			return nil, fmt.Errorf("git diff-tree: unexpected entry %q", fields[i])
		}
		i++
		c := change{to: w.side(fields[i]), mode: meta[1]}
		switch meta[4][0] {
		case 'A':
			c.Kind = ChangeAdded
		case 'D':
			c.Kind = ChangeDeleted
		case 'R':
			if i+1 >= len(fields) {
				return nil, fmt.Errorf("git diff-tree: rename of %s without a destination", fields[i])
			}
			i++
			c.Kind, c.from, c.to = ChangeRenamed, c.to, w.side(fields[i])
		default: // M and T (type change) alter a tracked file.
			c.Kind = ChangeModified
		}
		changes = append(changes, w.splitIgnored(c)...)
	}
	for i := range changes {
		changes[i].Path = changes[i].to.rel
		changes[i].From = changes[i].from.rel
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes, nil
}

// side places a root-relative path from git relative to the experiment directory.
func (w *Workspace) side(repoPath string) side {
	if w.Subdir == "." {
		return side{rel: repoPath, inside: true}
	}
	if rel, ok := strings.CutPrefix(repoPath, w.Subdir+"/"); ok {
		return side{rel: rel, inside: true}
	}
	return side{rel: repoPath}
}

// splitIgnored drops the supervisor's own files from a change; a rename with
// one of them on one side is left as the other side's addition or deletion.
func (w *Workspace) splitIgnored(c change) []change {
	if c.Kind != ChangeRenamed {
		if supervisorOwned(c.to) {
			return nil
		}
		return []change{c}
	}
	switch fromOwned, toOwned := supervisorOwned(c.from), supervisorOwned(c.to); {
	case fromOwned && toOwned:
		return nil
	case fromOwned:
		return []change{{FileChange: FileChange{Kind: ChangeAdded}, to: c.to, mode: c.mode}}
	case toOwned:
		return []change{{FileChange: FileChange{Kind: ChangeDeleted}, to: c.from}}
	}
	return []change{c}
}

// supervisorOwned reports whether p is a ledger file, which the supervisor
// restores or rewrites after every round.
func supervisorOwned(s side) bool {
	return s.inside && (s.rel == ExperiencesFile || s.rel == ResultsFile)
}

// namesStateDir reports whether p is, or lies in, the supervisor's state
// directory, which git ignores only as a directory: a change there is a
// file or link the Researcher put in its place, where the experiment
// directory has no state of the supervisor's (on a cluster, and in a
// candidate's copy), and which training, the evaluation and the state
// itself would follow once committed.
func namesStateDir(s side) bool {
	return s.inside && (s.rel == stateDirName || strings.HasPrefix(s.rel, stateDirName+"/"))
}

// fileRules judges changes by the protocol's fixed and variable files.
type fileRules struct {
	fixed, variable map[string]bool
	patterns        []string // the fixed patterns
}

func newFileRules(fixed, variable []string) fileRules {
	return fileRules{fixed: pathSet(fixed), variable: pathSet(variable), patterns: fixed}
}

func pathSet(files []string) map[string]bool {
	set := make(map[string]bool, len(files))
	for _, f := range files {
		set[path.Clean(filepath.ToSlash(f))] = true
	}
	return set
}

func (r fileRules) isFixed(s side) bool {
	_, matched := MatchAnyPattern(r.patterns, s.rel)
	return s.inside && (r.fixed[s.rel] || matched)
}
func (r fileRules) isVariable(s side) bool { return s.inside && r.variable[s.rel] }

// judge returns the violation a change is, if it is one.
func (r fileRules) judge(c change) (Violation, bool) {
	p := c.to.rel
	var reason string
	switch c.Kind {
	case ChangeModified:
		switch {
		case r.isFixed(c.to):
			reason = "modified fixed file " + p
		case r.isVariable(c.to):
			// The Researcher's job.
		case !c.to.inside:
			reason = fmt.Sprintf("modified %s outside the experiment directory", p)
		default:
			reason = fmt.Sprintf("modified %s, which is not a variable file", p)
		}
	case ChangeDeleted:
		switch {
		case r.isFixed(c.to):
			reason = "deleted fixed file " + p
		case r.isVariable(c.to):
			reason = fmt.Sprintf("deleted variable file %s, which the train command needs", p)
		case !c.to.inside:
			reason = fmt.Sprintf("deleted %s outside the experiment directory", p)
		default:
			reason = fmt.Sprintf("deleted %s, which is not a variable file", p)
		}
	case ChangeRenamed:
		from := c.from.rel
		switch {
		case r.isFixed(c.from):
			reason = fmt.Sprintf("renamed fixed file %s to %s", from, p)
		case r.isFixed(c.to):
			reason = fmt.Sprintf("renamed %s to fixed file %s", from, p)
		case r.isVariable(c.from):
			reason = fmt.Sprintf("renamed variable file %s to %s, which the train command needs", from, p)
		case !c.from.inside:
			reason = fmt.Sprintf("renamed %s outside the experiment directory to %s", from, p)
		default:
			reason = fmt.Sprintf("renamed %s to %s, but %s is not a variable file", from, p, from)
		}
	case ChangeAdded:
		switch {
		case r.isFixed(c.to):
			reason = "created fixed file " + p
		case r.isVariable(c.to):
			// A variable file the base lacked; the Researcher may write it.
		case r.evalLike(c.to):
			reason = fmt.Sprintf("new file %s looks like evaluation code; evaluation is fixed", p)
		}
	}
	if reason == "" {
		return Violation{}, false
	}
	return Violation{Path: p, Reason: reason}, true
}

// evalLike reports whether a new file, not a fixed or variable one, is named
// like evaluation code, which the Researcher may not write even in new files.
func (r fileRules) evalLike(s side) bool {
	return !r.isFixed(s) && !r.isVariable(s) && looksLikeEvalCode(s.rel)
}

// evalWords start the words of file names that suggest evaluation code:
// eval, evaluate, compute_metrics, metric, accuracy, score and the like.
var evalWords = []string{"eval", "metric", "accurac", "score", "scoring"}

// codeExtensions are the file types that can hold evaluation logic. Data and
// notes the Researcher leaves behind, such as a smoke test's metrics.json,
// are not code. A file without an extension may be a script.
var codeExtensions = map[string]bool{
	"": true, ".py": true, ".pyx": true, ".ipynb": true, ".sh": true, ".bash": true, ".zsh": true,
	".js": true, ".mjs": true, ".cjs": true, ".ts": true, ".go": true, ".rs": true, ".c": true,
	".cc": true, ".cpp": true, ".cxx": true, ".h": true, ".hpp": true, ".cu": true, ".cuh": true,
	".jl": true, ".r": true, ".lua": true, ".rb": true, ".pl": true, ".java": true, ".scala": true,
	".kt": true, ".swift": true, ".m": true, ".mojo": true, ".php": true, ".ps1": true,
}

// looksLikeEvalCode matches whole words of the base name, so that
// "eval_utils.py", "computeMetrics.py" and "scorer.py" match while
// "retrieval.py" and "geometric.py" do not.
func looksLikeEvalCode(p string) bool {
	base := path.Base(p)
	ext := path.Ext(base)
	if ext == base || !codeExtensions[strings.ToLower(ext)] {
		return false
	}
	for _, word := range nameWords(strings.TrimSuffix(base, ext)) {
		for _, prefix := range evalWords {
			if strings.HasPrefix(word, prefix) {
				return true
			}
		}
	}
	return false
}

// nameWords splits a file name into lower-case words at punctuation and at
// camelCase boundaries.
func nameWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			flush()
		}
		cur = append(cur, r)
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	flush()
	return words
}

// HelperFiles returns the files, relative to the experiment directory, that
// HEAD has and start has not: the helper files that earlier rounds added and
// kept. Passed along with the variable files to CheckCompliance, they let
// later rounds change their own helpers, which would otherwise be tracked
// files outside the variable set.
func (w *Workspace) HelperFiles(ctx context.Context, start string) ([]string, error) {
	out, err := git(ctx, w.Root, "diff", "--name-only", "-z", "--no-renames", "--diff-filter=A", start, "HEAD", "--", ":(literal)"+w.Subdir)
	if err != nil {
		return nil, err
	}
	var helpers []string
	for _, p := range splitNUL(out) {
		s := w.side(p)
		if s.inside && !supervisorOwned(s) && s.rel != gitignoreFile {
			helpers = append(helpers, s.rel)
		}
	}
	return helpers, nil
}
