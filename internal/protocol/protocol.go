// Package protocol converts the seed's research protocol file,
// autoresearch-protocol.md, into an AutoResearch object. It reads both
// layouts the file has had: the current one of `key: value` lines under
// short headings, and the older one of prose sections whose fixed and
// variable files are matched against the repository. It names every spec
// field it could not find, says which values it guessed and from what, and
// renders the result as YAML with those gaps and guesses as comments.
package protocol

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// Layouts of the protocol file.
const (
	LayoutCurrent = "current"
	LayoutOlder   = "older"
)

// DescriptionAnnotation holds the protocol's title, which the object's name
// can only carry in slug form.
const DescriptionAnnotation = "autoresearch.dev/description"

// Result is an imported protocol.
type Result struct {
	// Object is filled as far as the file allows; never nil.
	Object *v1alpha1.AutoResearch
	// Missing lists the fields that could not be found or read, as YAML
	// paths such as "spec.eval.metric", in the order of the spec.
	Missing []string
	// Inferred holds one sentence per value that was guessed, and per value
	// of the file that could not be used, each starting with the YAML path
	// it is about: "spec.fixed.files: evaluate.py inferred from ...".
	Inferred []string
	// Unenforced holds one sentence per fixed constraint that compliance
	// cannot check, each starting with its YAML path, such as
	// "spec.fixed.constraints[0]: ...", and saying how to enforce it.
	Unenforced []string
	// Layout is LayoutCurrent or LayoutOlder.
	Layout string
}

// Parse reads the text of a protocol file in the repository repo. Parse
// fails only for text that is not a protocol at all.
func Parse(text string, repo Repo) (Result, error) {
	doc := parseDocument(text)
	if !doc.recognised() {
		return Result{Object: newObject()}, errors.New(`not an autoresearch protocol: found no "# Autoresearch Protocol" title, no known section and no known key`)
	}
	b := &builder{doc: doc, repo: newRepository(repo), obj: newObject()}
	b.build()
	sortByField(b.missing, func(s string) string { return s })
	sortByField(b.notes, notePath)
	return Result{Object: b.obj, Missing: b.missing, Inferred: b.notes, Unenforced: b.unenforcedNotes, Layout: doc.layout()}, nil
}

func newObject() *v1alpha1.AutoResearch {
	return &v1alpha1.AutoResearch{TypeMeta: metav1.TypeMeta{
		APIVersion: v1alpha1.GroupVersion.String(),
		Kind:       "AutoResearch",
	}}
}

var (
	pythonBinary = regexp.MustCompile(`^(python|python3|python3\.\d+|pypy|pypy3)$`)
	envAssign    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

// builder fills the object field by field and records what it could not.
type builder struct {
	doc     *document
	repo    repository
	obj     *v1alpha1.AutoResearch
	missing []string
	notes   []string
	// unenforcedNotes become Result.Unenforced.
	unenforcedNotes []string
}

func (b *builder) miss(path string) {
	if !slices.Contains(b.missing, path) {
		b.missing = append(b.missing, path)
	}
}

func (b *builder) note(path, format string, args ...any) {
	b.notes = append(b.notes, path+": "+fmt.Sprintf(format, args...))
}

// invalid records a value the file gives that cannot be used.
func (b *builder) invalid(path string, err error) {
	b.miss(path)
	b.note(path, "%v", err)
}

// lookup finds the first of keys in secs. An empty value counts as absent;
// an unfilled template placeholder is recorded as missing with a note.
func (b *builder) lookup(path string, required bool, secs []*section, keys ...string) (field, bool) {
	f, ok := find(secs, keys...)
	switch {
	case !ok || f.value == "":
		if required {
			b.miss(path)
		}
		return f, false
	case isPlaceholder(f.value):
		b.miss(path)
		b.note(path, "%q is still the template's placeholder", f.line)
		return f, false
	}
	return f, true
}

func (b *builder) build() {
	// Eval comes early: target, baseline, files and train read it.
	b.metadata()
	b.researchQuestion()
	b.maxRounds()
	b.eval()
	b.target()
	b.baseline()
	b.files()
	b.constraints()
	b.fixedLimits()
	b.variableRange()
	b.train()
	b.profile()
	b.kernelTargets()
	// The protocol format has no researcher: the coding agent is chosen by
	// whoever runs the experiment.
	b.miss("spec.researcher.command")
}

func (b *builder) metadata() {
	title := b.doc.title
	if title != "" {
		b.obj.Annotations = map[string]string{DescriptionAnnotation: title}
	}
	if name := slug(title); name != "" {
		b.obj.Name = name
		return
	}
	b.miss("metadata.name")
	if title != "" {
		b.note("metadata.name", "the title %q has no letters or digits a name can be made of", title)
	}
}

func (b *builder) researchQuestion() {
	const p = "spec.researchQuestion"
	if f, ok := b.lookup(p, false, b.doc.sectionsOf(kindUnknown, kindQuestion), "research_question", "question"); ok {
		b.obj.Spec.ResearchQuestion = f.value
		return
	}
	for _, s := range b.doc.sectionsOf(kindQuestion) {
		if q := paragraphs(s.lines); q != "" && !isPlaceholder(q) {
			b.obj.Spec.ResearchQuestion = q
			return
		}
	}
	b.miss(p)
}

func (b *builder) maxRounds() {
	const p = "spec.maxRounds"
	f, ok := b.lookup(p, true, b.doc.sectionsOf(kindUnknown, kindTermination), "max_rounds")
	if !ok {
		return
	}
	n, err := parseCount(f.value)
	if err == nil && n < 1 {
		err = fmt.Errorf("%q is not at least 1", f.value)
	}
	if err != nil {
		b.invalid(p, err)
		return
	}
	b.obj.Spec.MaxRounds = n
}

func (b *builder) target() {
	const p = "spec.target"
	f, ok := b.lookup(p, false, b.doc.sectionsOf(kindUnknown, kindTermination), "target")
	if !ok || isNone(stripNote(f.value)) {
		return
	}
	metric, value, err := parseMetricValue(f.value)
	if err != nil {
		b.invalid(p, err)
		return
	}
	b.crossCheckMetric(p, f, metric)
	b.obj.Spec.Target = v1alpha1.Decimal(value)
}

func (b *builder) baseline() {
	const p = "spec.baseline.value"
	f, ok := b.lookup(p, false, b.doc.sectionsOf(kindUnknown, kindEval, kindTermination), "baseline")
	if !ok {
		return
	}
	if isNone(stripNote(f.value)) {
		b.note("spec.baseline", "left out (%q): round 0 measures it", f.line)
		return
	}
	metric, value, err := parseMetricValue(f.value)
	if err != nil {
		b.invalid(p, err)
		return
	}
	b.crossCheckMetric("spec.baseline", f, metric)
	b.obj.Spec.Baseline = &v1alpha1.BaselineSpec{Value: v1alpha1.Decimal(value)}
}

func (b *builder) crossCheckMetric(p string, f field, metric string) {
	if want := b.obj.Spec.Eval.Metric; metric != "" && want != "" && metric != want {
		b.note(p, "%q names the metric %s, but spec.eval.metric is %s; kept the value", f.line, metric, want)
	}
}

// files fills fixed.files and variable.files from `files:` lines or, when a
// section has none, from the file names its prose mentions.
func (b *builder) files() {
	fixed, fixedProse := b.sectionFiles("spec.fixed.files", kindFixed)
	variable, variableProse := b.sectionFiles("spec.variable.files", kindVariable)

	// A file named on both sides stays where it was listed explicitly, and
	// variable when both sides are prose: the Researcher needs it.
	for _, f := range slices.Clone(fixed) {
		if !slices.Contains(variable, f) {
			continue
		}
		switch {
		case fixedProse:
			fixed = slices.DeleteFunc(fixed, func(x string) bool { return x == f })
			b.note("spec.fixed.files", "%s is mentioned under both fixed and variable; kept it variable only", f)
		case variableProse:
			variable = slices.DeleteFunc(variable, func(x string) bool { return x == f })
			b.note("spec.variable.files", "%s is listed as fixed; left it out of the variable files", f)
		default:
			b.note("spec.variable.files", "%s is listed as both fixed and variable; remove it from one", f)
		}
	}

	// Evaluation code is always fixed, so the script the eval command runs
	// joins the fixed files.
	if cmd := b.obj.Spec.Eval.Command; cmd != "" {
		if script, ok := b.repo.resolve(commandScript(cmd)); ok && script != "" {
			switch {
			case slices.Contains(variable, script):
				b.note("spec.variable.files", "%s is run by the eval command %q; evaluation code should be fixed", script, cmd)
			case !slices.Contains(fixed, script):
				fixed = append(fixed, script)
				b.note("spec.fixed.files", "%s added because the eval command %q runs it and evaluation code must stay fixed", script, cmd)
			}
		}
	}

	if len(fixed) == 0 {
		b.miss("spec.fixed.files")
		fixed = nil
	}
	if len(variable) == 0 {
		b.miss("spec.variable.files")
		// An empty list, not nil, so that the YAML shows where to fill in.
		variable = []string{}
	}
	b.obj.Spec.Fixed.Files = cleanPaths[v1alpha1.PathPattern](fixed)
	b.obj.Spec.Variable.Files = cleanPaths[v1alpha1.RelativePath](variable)
}

// sectionFiles reads the files of the sections of kind; prose reports that
// they were picked out of prose rather than listed.
func (b *builder) sectionFiles(p string, kind sectionKind) (files []string, prose bool) {
	secs := b.doc.sectionsOf(kind)
	if f, ok := b.lookup(p, false, secs, "files"); ok {
		return splitFiles(f.value), false
	}
	found, skipped := proseFiles(secs, b.repo)
	for _, m := range found {
		files = append(files, m.file)
		written := ""
		if m.token != "" {
			written = fmt.Sprintf(" (written %s)", m.token)
		}
		b.note(p, "%s%s inferred from %q", m.file, written, m.line)
	}
	if b.repo.known {
		for _, s := range skipped {
			b.note(p, "%s is mentioned but is not in the repository; left out", s)
		}
	}
	return files, true
}

func (b *builder) fixedLimits() {
	secs := b.doc.sectionsOf(kindFixed, kindPressure, kindUnknown)
	const tp = "spec.fixed.timeLimit"
	if f, ok := b.lookup(tp, true, secs, "time_limit"); ok {
		d, unitless, err := parseDuration(f.value)
		if err == nil && d < time.Second {
			err = fmt.Errorf("%q is shorter than 1s", f.value)
		}
		if err != nil {
			b.invalid(tp, fmt.Errorf("%w (write 5m, 300s or 1h30m)", err))
		} else {
			b.obj.Spec.Fixed.TimeLimit = v1alpha1.Duration{Duration: d}
			if unitless {
				b.note(tp, "%q has no unit; read it as seconds", f.line)
			}
		}
	}
	const ep = "spec.fixed.epochLimit"
	if f, ok := b.lookup(ep, false, secs, "epoch_limit"); ok && !isNone(stripNote(f.value)) {
		n, err := parseCount(f.value)
		if err != nil {
			b.invalid(ep, err)
			return
		}
		b.obj.Spec.Fixed.EpochLimit = n
	}
}

// variableRange is the free text of the Variable section: the value of its
// one line besides `files:` (`可调范围: ...`, `adjustable_range: ...`), or
// all of its lines.
func (b *builder) variableRange() {
	var lines []string
	for _, s := range b.doc.sectionsOf(kindVariable) {
		for _, l := range s.lines {
			if strings.TrimSpace(l.text) == "" {
				continue
			}
			if k, _, ok := keyValue(l.text); ok && k == "files" {
				continue
			}
			lines = append(lines, l.text)
		}
	}
	var text string
	switch {
	case len(lines) == 0:
		return
	case len(lines) == 1:
		text = stripBullet(lines[0])
		if _, v, ok := keyValue(lines[0]); ok && v != "" {
			text = v
		}
	default:
		text = dedent(lines)
	}
	if isPlaceholder(text) {
		b.miss("spec.variable.range")
		b.note("spec.variable.range", "%q is still the template's placeholder", text)
		return
	}
	b.obj.Spec.Variable.Range = text
}

func (b *builder) eval() {
	e := &b.obj.Spec.Eval
	secs := b.doc.sectionsOf(kindEval, kindUnknown)
	if f, ok := b.lookup("spec.eval.metric", true, secs, "metric"); ok {
		if m := stripNote(f.value); metricName.MatchString(m) {
			e.Metric = m
		} else {
			b.invalid("spec.eval.metric", fmt.Errorf("%q is not a metric name such as val_bpb", f.value))
		}
	}
	if f, ok := b.lookup("spec.eval.direction", true, secs, "direction"); ok {
		if d, err := parseDirection(f.value); err != nil {
			b.invalid("spec.eval.direction", err)
		} else {
			e.Direction = d
		}
	}
	f, ok := b.lookup("spec.eval.command", false, b.doc.sectionsOf(kindEval), "command", "eval_command")
	if !ok {
		f, ok = b.lookup("spec.eval.command", true, b.doc.sectionsOf(kindUnknown), "eval_command")
	}
	if ok {
		e.Command = f.value
	}
	if f, ok := b.lookup("spec.eval.pattern", false, b.doc.sectionsOf(kindEval), "pattern"); ok {
		e.Pattern = f.value
	}
}

// train takes the train command from the file when it has one; the
// protocol format itself has none, so usually it is guessed from the
// training script and the eval command's interpreter.
func (b *builder) train() {
	const p = "spec.train.command"
	f, ok := b.lookup(p, false, b.doc.sectionsOf(kindTrain), "command", "train_command")
	if !ok {
		f, ok = b.lookup(p, false, b.doc.sectionsOf(kindUnknown, kindFixed, kindVariable, kindEval), "train_command")
	}
	if ok {
		b.obj.Spec.Train.Command = f.value
		return
	}
	script, why := trainingScript(v1alpha1.Strings(b.obj.Spec.Variable.Files), v1alpha1.Strings(b.obj.Spec.Fixed.Files))
	if script == "" {
		b.miss(p)
		return
	}
	interp, fromEval := interpreter(b.obj.Spec.Eval.Command)
	cmd := interp + " " + script
	b.obj.Spec.Train.Command = cmd
	if fromEval {
		why += fmt.Sprintf(", run with the eval command's interpreter %q", interp)
	}
	b.note(p, "%q guessed from %s%s; the protocol has no train command, so check it", cmd, script, why)
}

// trainingScript picks the Python file that trains: one named train*, the
// variable files first, or else the first variable Python file.
func trainingScript(variable, fixed []string) (script, why string) {
	for _, f := range slices.Concat(variable, fixed) {
		if path.Ext(f) == ".py" && strings.HasPrefix(path.Base(f), "train") {
			return f, " (the training script among the protocol's files)"
		}
	}
	for _, f := range variable {
		if path.Ext(f) == ".py" {
			return f, " (the first variable Python file)"
		}
	}
	return "", ""
}

// interpreter returns the part of a command up to its Python interpreter,
// so that "uv run python evaluate.py" gives "uv run python".
func interpreter(cmd string) (string, bool) {
	fields := strings.Fields(cmd)
	for i, f := range fields {
		if isShellOperator(f) {
			break
		}
		if pythonBinary.MatchString(path.Base(f)) {
			return strings.Join(fields[:i+1], " "), true
		}
	}
	return "python", false
}

// commandScript returns the first file a command runs: "python evaluate.py
// --split val" gives "evaluate.py".
func commandScript(cmd string) string {
	for _, f := range strings.Fields(cmd) {
		if isShellOperator(f) {
			break
		}
		f = strings.Trim(f, `"'`)
		if strings.HasPrefix(f, "-") || envAssign.MatchString(f) {
			continue
		}
		if fileToken.FindString(f) == f {
			return f
		}
	}
	return ""
}

func isShellOperator(f string) bool {
	switch f {
	case "&&", "||", ";", "|", ">", ">>", "<":
		return true
	}
	return false
}

func (b *builder) profile() {
	secs := b.doc.sectionsOf(kindProfile)
	const cp, rp = "spec.profile.command", "spec.profile.expectedRuntime"
	cmd, ok := b.lookup(cp, false, secs, "command", "profile_command")
	if !ok {
		cmd, ok = b.lookup(cp, false, b.doc.sectionsOf(kindUnknown), "profile_command")
	}
	if len(secs) == 0 && !ok {
		return
	}
	p := &v1alpha1.ProfileSpec{}
	b.obj.Spec.Profile = p
	if ok {
		p.Command = cmd.value
	} else {
		b.miss(cp)
	}
	if f, ok := b.lookup(rp, false, secs, "expected_runtime"); ok {
		d, unitless, err := parseDuration(f.value)
		if err != nil {
			b.invalid(rp, err)
			return
		}
		p.ExpectedRuntime = &v1alpha1.Duration{Duration: d}
		if unitless {
			b.note(rp, "%q has no unit; read it as seconds", f.line)
		}
	}
}

func (b *builder) kernelTargets() {
	secs := b.doc.sectionsOf(kindKernel)
	entries := parseKernelTargets(secs)
	if len(secs) > 0 && len(entries) == 0 {
		b.note("spec.kernelTargets", "the Kernel Targets section lists no target")
	}
	for i, e := range entries {
		base := fmt.Sprintf("spec.kernelTargets[%d]", i)
		var t v1alpha1.KernelTarget
		var newModule, baselineModule, fixture, atol, rtol string
		for _, f := range []struct {
			key, path string
			dest      *string
			valid     func(string) bool
			want      string
		}{
			{"name", "name", &t.Name, nil, ""},
			{"newmodule", "newModule", &newModule, isFunctionRef, "module:function"},
			{"baselinemodule", "baselineModule", &baselineModule, isFunctionRef, "module:function"},
			{"fixture", "fixture", &fixture, isFunctionRef, "module:function"},
			{"atol", "atol", &atol, isTolerance, "a non-negative decimal number"},
			{"rtol", "rtol", &rtol, isTolerance, "a non-negative decimal number"},
		} {
			p := base + "." + f.path
			v := e.values[f.key]
			optional := f.key == "atol" || f.key == "rtol"
			switch {
			case v == "":
				if !optional {
					b.miss(p)
				}
			case isPlaceholder(v):
				b.miss(p)
				b.note(p, "%q is still the template's placeholder", v)
			case f.valid != nil && !f.valid(v):
				b.invalid(p, fmt.Errorf("%q is not %s", v, f.want))
			default:
				*f.dest = v
			}
		}
		if len(e.unknown) > 0 {
			b.note(base, "ignored %s: not a kernel target field", strings.Join(e.unknown, ", "))
		}
		t.NewModule, t.BaselineModule, t.Fixture = v1alpha1.FunctionRef(newModule), v1alpha1.FunctionRef(baselineModule), v1alpha1.FunctionRef(fixture)
		t.Atol, t.Rtol = v1alpha1.NonNegativeDecimal(atol), v1alpha1.NonNegativeDecimal(rtol)
		b.obj.Spec.KernelTargets = append(b.obj.Spec.KernelTargets, t)
	}
}

// isTolerance reports whether v is a tolerance the API takes.
func isTolerance(v string) bool { return v1alpha1.NonNegativeDecimal(v).Validate(nil) == nil }

// isFunctionRef reports whether v names a function as the API takes it.
func isFunctionRef(v string) bool { return v1alpha1.FunctionRef(v).Validate(nil) == nil }

// cleanPaths writes the protocol's file names as the API wants them:
// "./train.py" becomes "train.py".
func cleanPaths[T ~string](files []string) []T {
	if files == nil {
		return nil
	}
	out := make([]T, len(files))
	for i, f := range files {
		out[i] = T(path.Clean(f))
	}
	return out
}

// fieldOrder is the order of the spec, which Missing and Inferred follow.
var fieldOrder = []string{
	"metadata.name",
	"spec.researchQuestion",
	"spec.maxRounds",
	"spec.target",
	"spec.baseline",
	"spec.fixed.files",
	"spec.fixed.constraints",
	"spec.fixed.timeLimit",
	"spec.fixed.epochLimit",
	"spec.variable.files",
	"spec.variable.range",
	"spec.train.command",
	"spec.eval.metric",
	"spec.eval.direction",
	"spec.eval.command",
	"spec.eval.pattern",
	"spec.profile",
	"spec.kernelTargets",
	"spec.researcher.command",
}

func fieldRank(p string) int {
	rank, best := len(fieldOrder), -1
	for i, f := range fieldOrder {
		if isUnder(p, f) && len(f) > best {
			rank, best = i, len(f)
		}
	}
	return rank
}

// isUnder reports whether path p is prefix or lies below it.
func isUnder(p, prefix string) bool {
	if !strings.HasPrefix(p, prefix) {
		return false
	}
	rest := p[len(prefix):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}

func sortByField(list []string, pathOf func(string) string) {
	slices.SortStableFunc(list, func(a, b string) int {
		return cmp.Compare(fieldRank(pathOf(a)), fieldRank(pathOf(b)))
	})
}

// notePath is the YAML path a note starts with.
func notePath(note string) string {
	p, _, _ := strings.Cut(note, ": ")
	return p
}
