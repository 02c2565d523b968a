package workspace

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The rules of a pristine evaluation judge a candidate commit against the
// round's base commit, reading both trees from git and never the working
// tree: the evaluation that runs must be the start commit's, which takes
// more than leaving the fixed files alone. A new file in a fixed
// directory, a Go file that joins a fixed Go package (its init function
// runs first), a go.mod that replaces a package the evaluation imports, or
// a Python module that shadows an import of the evaluation all change what
// the evaluation does without touching a fixed file.

// treeChange is a file that differs between two commits.
type treeChange struct {
	kind ChangeKind // added, modified or deleted; a rename is a deletion and an addition
	side            // the path, relative to the experiment directory or to the root
	repo string     // the path relative to the repository root
}

// treeChanges lists the files that differ between base and cand in the
// whole repository, the supervisor's own files left out.
func (w *Workspace) treeChanges(ctx context.Context, base, cand string) ([]treeChange, error) {
	out, err := git(ctx, w.Root, "diff", "--name-status", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", base, cand, "--")
	if err != nil {
		return nil, err
	}
	var changes []treeChange
	fields := splitNUL(out)
	for i := 0; i+1 < len(fields); i += 2 {
		c := treeChange{kind: ChangeModified, side: w.side(fields[i+1]), repo: fields[i+1]}
		switch fields[i][0] {
		case 'A':
			c.kind = ChangeAdded
		case 'D':
			c.kind = ChangeDeleted
		}
		if !supervisorOwned(c.side) {
			changes = append(changes, c)
		}
	}
	return changes, nil
}

// CheckPristine judges the candidate commit cand against the base commit
// by the rules of a pristine evaluation: fixed files, directories and
// patterns unchanged and not grown; no new file in the Go package of a
// fixed Go file and no change to the module files that resolve its
// imports; no new Python module that shadows an import of a fixed Python
// file, and no Python start-up file; and fixed regions unchanged. Fixed
// patterns and variable files are relative to the experiment directory.
// Each violation names its rule; a path has at most one.
func (w *Workspace) CheckPristine(ctx context.Context, base, cand string, fixed, variable []string) ([]Violation, error) {
	baseFiles, err := w.listTree(ctx, base)
	if err != nil {
		return nil, err
	}
	changes, err := w.treeChanges(ctx, base, cand)
	if err != nil {
		return nil, err
	}
	p := pristine{fixed: fixed, variable: pathSet(variable), baseDirs: map[string]bool{}}
	for _, e := range baseFiles {
		for d := path.Dir(e.rel); d != "."; d = path.Dir(d) {
			p.baseDirs[d] = true
		}
		if _, ok := MatchAnyPattern(fixed, e.rel); ok {
			p.fixedFiles = append(p.fixedFiles, e)
		}
	}
	var violations []Violation
	violations = append(violations, p.fixedPatterns(changes)...)
	violations = append(violations, p.goPackages(w, changes)...)
	imports, err := w.pythonImports(ctx, p.fixedFiles)
	if err != nil {
		return nil, err
	}
	violations = append(violations, p.pythonShadows(changes, imports)...)
	regions, err := w.checkRegions(ctx, base, cand, changes, fixed)
	if err != nil {
		return nil, err
	}
	violations = append(violations, regions...)
	return onePerPath(violations), nil
}

// onePerPath keeps the first violation of each path.
func onePerPath(violations []Violation) []Violation {
	seen := map[string]bool{}
	out := violations[:0]
	for _, v := range violations {
		if v.Path != "" && seen[v.Path] {
			continue
		}
		seen[v.Path] = true
		out = append(out, v)
	}
	return out
}

// pristine is what the rules know of the base commit.
type pristine struct {
	fixed      []string
	variable   map[string]bool
	fixedFiles []treeEntry     // the base's files that fixed patterns match
	baseDirs   map[string]bool // the directories of the base, relative to the experiment directory
}

// fixedPatterns refuses any change to a file a fixed pattern matches: a
// new file in a fixed directory as much as an edit of a fixed file. A new
// file whose name differs from a fixed one only in case is refused too,
// since a case-insensitive file system takes one for the other.
func (p pristine) fixedPatterns(changes []treeChange) []Violation {
	var out []Violation
	for _, c := range changes {
		if !c.inside {
			continue
		}
		pattern, ok := MatchAnyPattern(p.fixed, c.rel)
		if !ok {
			if pattern, ok := matchFoldAny(p.fixed, c.rel); ok && c.kind == ChangeAdded {
				out = append(out, Violation{Path: c.rel, Reason: fmt.Sprintf(
					"new file %s differs only in case from fixed %s, which a case-insensitive file system takes for the same file; fixed files may not change", c.rel, pattern)})
			}
			continue
		}
		what := "fixed file " + c.rel
		if strings.TrimSuffix(pattern, "/") != c.rel {
			what = fmt.Sprintf("%s, which fixed %s covers", c.rel, pattern)
		}
		var reason string
		switch c.kind {
		case ChangeAdded:
			reason = fmt.Sprintf("new file %s; fixed files, directories and patterns may not change or gain files", what)
		case ChangeDeleted:
			reason = fmt.Sprintf("deleted %s; fixed files may not change", what)
		default:
			reason = fmt.Sprintf("modified %s; fixed files may not change", what)
		}
		out = append(out, Violation{Path: c.rel, Reason: reason})
	}
	return out
}

// goModuleFiles decide where the go command finds the packages a Go file
// imports: a replace directive or a workspace can swap any of them, and a
// vendor directory holds their code.
var goModuleFiles = map[string]bool{"go.mod": true, "go.work": true, "go.work.sum": true}

// goPackages refuses a new file in the directory of a fixed Go file,
// which joins its package (an init function, a file that replaces a
// function by build tags, an assembly file); and, when there are fixed Go
// files, any change to go.mod, go.work or a vendor directory at or above
// one of them, unless that file is a variable file.
func (p pristine) goPackages(w *Workspace, changes []treeChange) []Violation {
	goDirs := map[string]string{} // directory → a fixed Go file in it, relative to the experiment directory
	goDirsFold := map[string]string{}
	var repoDirs []string // the same directories, relative to the repository root
	for _, f := range p.fixedFiles {
		if path.Ext(f.rel) != ".go" {
			continue
		}
		d := path.Dir(f.rel)
		if _, ok := goDirs[d]; !ok {
			goDirs[d] = f.rel
			goDirsFold[strings.ToLower(d)] = f.rel
			repoDirs = append(repoDirs, path.Dir(w.repoPath(f.rel)))
		}
	}
	if len(goDirs) == 0 {
		return nil
	}
	sort.Strings(repoDirs)
	var out []Violation
	for _, c := range changes {
		if c.inside && p.variable[c.rel] {
			continue
		}
		if c.inside && c.kind == ChangeAdded {
			d := path.Dir(c.rel)
			fixedGo, ok := goDirs[d]
			if !ok {
				fixedGo, ok = goDirsFold[strings.ToLower(d)]
			}
			if ok {
				out = append(out, Violation{Path: c.rel, Reason: fmt.Sprintf(
					"new file %s in the Go package of fixed file %s; a file added to a fixed package changes the evaluation", c.rel, fixedGo)})
				continue
			}
		}
		owner, ok := goModuleOwner(c.repo)
		if !ok {
			continue
		}
		for _, d := range repoDirs {
			if owner == "." || d == owner || strings.HasPrefix(d, owner+"/") {
				out = append(out, Violation{Path: c.rel, Reason: fmt.Sprintf(
					"%s %s, which decides the packages that fixed Go code in %s imports; only a variable file of these may change", c.kind, c.rel, w.dirName(d))})
				break
			}
		}
	}
	return out
}

// goModuleOwner returns the directory whose module a module file or a
// vendored file belongs to.
func goModuleOwner(repoPath string) (string, bool) {
	if goModuleFiles[path.Base(repoPath)] {
		return path.Dir(repoPath), true
	}
	segs := strings.Split(repoPath, "/")
	for i, s := range segs[:len(segs)-1] {
		if s == "vendor" {
			if i == 0 {
				return ".", true
			}
			return strings.Join(segs[:i], "/"), true
		}
	}
	return "", false
}

// dirName names a directory, relative to the repository root, as the
// experiment sees it.
func (w *Workspace) dirName(repoDir string) string {
	if repoDir == w.Subdir || repoDir == "." {
		return "the experiment directory"
	}
	return w.side(repoDir).rel + "/"
}

// pythonImports maps each module a fixed Python file imports, as the pair
// of a directory relative to the experiment directory and the top-level
// module name, to that fixed file. The directories are those where a new
// file would shadow the module: the experiment directory (the working
// directory of the commands) and the fixed file's own directory (the script's, first on sys.path); for a relative import,
// the directory it names.
func (w *Workspace) pythonImports(ctx context.Context, fixedFiles []treeEntry) (map[[2]string]string, error) {
	imports := map[[2]string]string{}
	for _, f := range fixedFiles {
		if path.Ext(f.rel) != ".py" {
			continue
		}
		src, err := git(ctx, w.Root, "cat-file", "blob", f.oid)
		if err != nil {
			return nil, err
		}
		dir := path.Dir(f.rel)
		for _, imp := range parsePythonImports(src) {
			var dirs []string
			if imp.level == 0 {
				dirs = []string{".", dir}
			} else {
				d := dir
				for range imp.level - 1 {
					d = path.Dir(d)
				}
				dirs = []string{d}
			}
			for _, d := range dirs {
				key := [2]string{d, imp.name}
				if _, ok := imports[key]; !ok {
					imports[key] = f.rel
				}
			}
		}
	}
	return imports, nil
}

// startupModules run at every Python start-up when Python finds them.
var startupModules = map[string]bool{"sitecustomize": true, "usercustomize": true}

// pythonShadows refuses a new module or package directory that shadows an
// import of a fixed Python file. Where the evaluation's Python looks first
// (the experiment directory and the directory of a fixed Python file) it
// refuses every new module and regular package (one with an __init__):
// fixed code imports modules through the modules it imports, whether or
// not it names them — the standard library's, installed ones, and
// optional ones it tries and goes without when they are missing (torch
// tries dill) — and a module of any such name there would run inside the
// evaluation. Helper code goes in a variable file, or in a subdirectory
// without an __init__.
// Anywhere it refuses a new or changed Python start-up file
// (sitecustomize, usercustomize or a .pth file) and compiled Python, which
// Python may load instead of the source.
func (p pristine) pythonShadows(changes []treeChange, imports map[[2]string]string) []Violation {
	firstDirs := map[string]bool{}
	for _, f := range p.fixedFiles {
		if path.Ext(f.rel) == ".py" {
			firstDirs["."], firstDirs[path.Dir(f.rel)] = true, true
		}
	}
	// shadowed names what a new module name in dir shadows, "" for
	// nothing; a directory without an __init__ (a namespace package)
	// shadows only what fixed code imports, since Python takes any module
	// it finds later on its path before a namespace package.
	shadowed := func(dir, name string, module bool) string {
		if fixed, ok := imports[[2]string{dir, name}]; ok {
			return "module " + name + ", which fixed file " + fixed + " imports"
		}
		switch {
		case !module || !firstDirs[dir]:
			return ""
		case pythonStdlib[name]:
			return "the standard library's module " + name + ", which fixed Python code imports through the modules it imports"
		}
		return "whatever module named " + name + " fixed Python code imports through the modules it imports, or tries to (torch tries dill); " +
			"put helper code in a variable file, or in a subdirectory without an __init__"
	}
	var out []Violation
	for _, c := range changes {
		if c.kind == ChangeDeleted || (c.inside && p.variable[c.rel]) {
			continue
		}
		if v, ok := startupFile(c); ok {
			out = append(out, v)
			continue
		}
		if v, ok := bytecodeFile(c); ok {
			out = append(out, v)
			continue
		}
		if !c.inside || c.kind != ChangeAdded {
			continue
		}
		if name := pythonModuleName(path.Base(c.rel)); name != "" {
			if what := shadowed(path.Dir(c.rel), name, true); what != "" {
				out = append(out, Violation{Path: c.rel, Reason: fmt.Sprintf(
					"new file %s shadows %s; the evaluation must import what the start commit gave it", c.rel, what)})
				continue
			}
		}
		// A new directory named like an imported module is a package, or
		// a namespace package, that Python finds before the module.
		segs := strings.Split(c.rel, "/")
		for i := range len(segs) - 1 {
			dir := strings.Join(segs[:i+1], "/")
			if p.baseDirs[dir] {
				continue
			}
			parent := "."
			if i > 0 {
				parent = strings.Join(segs[:i], "/")
			}
			if what := shadowed(parent, segs[i], i == len(segs)-2 && pythonModuleName(segs[i+1]) == "__init__"); what != "" {
				out = append(out, Violation{Path: c.rel, Reason: fmt.Sprintf(
					"new package directory %s/ (with %s) shadows %s; the evaluation must import what the start commit gave it", dir, c.rel, what)})
			}
			break
		}
	}
	return out
}

// bytecodeFile judges compiled Python: a .pyc or .pyo file, or any file in
// a __pycache__ directory, which Python loads instead of a module's source,
// unchecked when it was compiled so.
func bytecodeFile(c treeChange) (Violation, bool) {
	lower := strings.ToLower(c.rel)
	if !strings.HasSuffix(lower, ".pyc") && !strings.HasSuffix(lower, ".pyo") && !slices.Contains(strings.Split(lower, "/"), "__pycache__") {
		return Violation{}, false
	}
	return Violation{Path: c.rel, Reason: fmt.Sprintf(
		"%s %s, compiled Python, which Python may run instead of a module's source; a candidate may not add or change one", c.kind, c.rel)}, true
}

// startupFile judges a Python start-up file, which runs before any fixed
// code in every Python process that finds it.
func startupFile(c treeChange) (Violation, bool) {
	segs := strings.Split(c.rel, "/")
	last := segs[len(segs)-1]
	if strings.HasSuffix(strings.ToLower(last), ".pth") {
		return Violation{Path: c.rel, Reason: fmt.Sprintf(
			"%s %s, a .pth file, whose import lines Python runs at start-up; a candidate may not add or change one", c.kind, c.rel)}, true
	}
	for i, s := range segs {
		name := s
		if i == len(segs)-1 {
			name = pythonModuleName(s)
		}
		if startupModules[name] {
			return Violation{Path: c.rel, Reason: fmt.Sprintf(
				"%s %s, a %s module, which Python runs at start-up before any fixed code; a candidate may not add or change one", c.kind, c.rel, name)}, true
		}
	}
	return Violation{}, false
}

// pythonModuleSuffixes are the files Python imports a module from.
var pythonModuleSuffixes = []string{".py", ".pyc", ".pyw", ".pyd", ".so"}

// pythonModuleName is the module a file of this name provides, "" for
// none: "torch.py", "torch.pyc" and "torch.cpython-312-x86_64-linux-gnu.so"
// all provide torch.
func pythonModuleName(base string) string {
	for _, s := range pythonModuleSuffixes {
		if strings.HasSuffix(base, s) {
			name, _, _ := strings.Cut(base, ".")
			return name
		}
	}
	return ""
}

// pythonImport is one module a Python file imports: level is the number
// of leading dots of a relative import, name the first module after them.
type pythonImport struct {
	level int
	name  string
}

var (
	pyImportRE  = regexp.MustCompile(`^import\s+(.+)$`)
	pyFromRE    = regexp.MustCompile(`^from\s+(\.*)\s*([A-Za-z_][\w.]*)?\s+import\s+(.+)$`)
	pyDynamicRE = regexp.MustCompile(`(?:import_module|__import__)\(\s*[rbuRBU]?['"]([A-Za-z_][\w.]*)['"]`)
	pyIdentRE   = regexp.MustCompile(`^[A-Za-z_]\w*$`)
)

// parsePythonImports finds the imports of Python source, at any
// indentation: import x, import x.y as z, from x import y, from . import
// y, from ..x import y, and importlib.import_module("x") or
// __import__("x") with a literal name. It reads more than Python would
// (an import inside a string counts), never less.
func parsePythonImports(src string) []pythonImport {
	var out []pythonImport
	for _, m := range pyDynamicRE.FindAllStringSubmatch(src, -1) {
		out = append(out, pythonImport{name: firstModule(m[1])})
	}
	for _, stmt := range pythonStatements(src) {
		if m := pyImportRE.FindStringSubmatch(stmt); m != nil {
			for _, part := range strings.Split(m[1], ",") {
				if f := strings.Fields(part); len(f) > 0 {
					if name := firstModule(f[0]); name != "" {
						out = append(out, pythonImport{name: name})
					}
				}
			}
			continue
		}
		m := pyFromRE.FindStringSubmatch(stmt)
		if m == nil {
			continue
		}
		level := len(m[1])
		if m[2] != "" {
			if name := firstModule(m[2]); name != "" {
				out = append(out, pythonImport{level: level, name: name})
			}
			continue
		}
		// from . import a, b: each name may be a module of the package.
		names := strings.NewReplacer("(", " ", ")", " ").Replace(m[3])
		for _, part := range strings.Split(names, ",") {
			if f := strings.Fields(part); len(f) > 0 && pyIdentRE.MatchString(f[0]) {
				out = append(out, pythonImport{level: level, name: f[0]})
			}
		}
	}
	return out
}

func firstModule(dotted string) string {
	name, _, _ := strings.Cut(dotted, ".")
	if !pyIdentRE.MatchString(name) {
		return ""
	}
	return name
}

// pythonStatements splits source into trimmed logical statements: lines
// joined across brackets and backslashes, comments dropped, split at
// semicolons and after a compound statement's colon ("if x: import y").
func pythonStatements(src string) []string {
	var stmts []string
	var cur strings.Builder
	depth := 0
	flush := func() {
		for _, s := range strings.Split(cur.String(), ";") {
			s = strings.TrimSpace(s)
			// "try: import x", "else: import x" and the like.
			for {
				i := strings.Index(s, ":")
				if i < 0 || !startsCompound(s) {
					break
				}
				s = strings.TrimSpace(s[i+1:])
			}
			if s != "" {
				stmts = append(stmts, s)
			}
		}
		cur.Reset()
	}
	for _, line := range strings.FieldsFunc(src, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		cont := strings.HasSuffix(strings.TrimRight(line, " \t"), `\`)
		line = strings.TrimSuffix(strings.TrimRight(line, " \t"), `\`)
		depth += strings.Count(line, "(") + strings.Count(line, "[") + strings.Count(line, "{") -
			strings.Count(line, ")") - strings.Count(line, "]") - strings.Count(line, "}")
		cur.WriteString(line)
		cur.WriteByte(' ')
		if depth <= 0 && !cont {
			depth = 0
			flush()
		}
	}
	flush()
	return stmts
}

// compoundKeywords begin statements that may carry an import after their colon.
var compoundKeywords = []string{"if ", "elif ", "else", "try", "except", "finally", "with ", "for ", "while ", "def ", "class "}

func startsCompound(s string) bool {
	for _, k := range compoundKeywords {
		if strings.HasPrefix(s, k) {
			return true
		}
	}
	return false
}

// checkPristine adds to report the violations of the pristine rules that
// the file rules did not already find for the same file, judging the
// candidate commit against base.
func (w *Workspace) checkPristine(ctx context.Context, base, cand string, fixed, variable []string, report *ComplianceReport) error {
	violations, err := w.CheckPristine(ctx, base, cand, fixed, variable)
	if err != nil {
		return err
	}
	covered := map[string]bool{}
	for _, v := range report.Violations {
		covered[v.Path] = true
	}
	for _, c := range report.Changes {
		if c.From != "" && covered[c.Path] {
			covered[c.From] = true
		}
	}
	for _, v := range violations {
		if !covered[v.Path] {
			report.Violations = append(report.Violations, v)
		}
	}
	return nil
}
