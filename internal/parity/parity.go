// Package parity owns the kernel parity check of the compliance step: a
// fixed Python program compares, for each kernel target of the protocol,
// the candidate's function (new module) against the baseline on the
// baseline's fixture, and the package turns the program's output into a
// verdict.
//
// The program is the seed's Step 2 check, run once for every target, so
// that every baseline is measured before any candidate's code runs. Its
// report lines are the contract:
//
//	PARITY_OK target=<name>                                   (stdout, each target; exit 0)
//	PARITY_FAIL target=<name> kind=<kind> detail=<detail>     (stderr, the first failure; exit 1)
//
// where kind is signature, shape (shape, dtype or non-tensor output),
// numerical, or error (the module does not import or a call raises).
package parity

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

//go:embed parity.py
var script string

// Kinds of parity failure, as printed by the script after "kind=".
const (
	KindSignature = "signature"
	KindShape     = "shape"
	KindNumerical = "numerical"
	KindError     = "error"
)

const (
	okPrefix   = "PARITY_OK"
	failPrefix = "PARITY_FAIL"
	// tailLimit bounds the output kept in the detail of a crash, so that an
	// Insight stays one readable line.
	tailLimit = 300
)

// Target is one kernel parity target of the protocol. Modules are given as
// "module:function", importable from the experiment directory. Atol and Rtol
// are decimal strings; both empty means torch's per-dtype defaults.
type Target struct {
	Name           string
	NewModule      string
	BaselineModule string
	Fixture        string
	Atol           string
	Rtol           string
}

// Failure is a failed parity check.
type Failure struct {
	Target string
	Kind   string
	Detail string
	// Line is the whole PARITY_FAIL line; it goes into the round's Insight.
	Line string
}

// scriptInput is the JSON the script reads from argv[1]; the field names are
// shared with parity.py.
type scriptInput struct {
	Dir     string        `json:"dir"`
	Targets []targetInput `json:"targets"`
}

type targetInput struct {
	Name           string `json:"name"`
	NewModule      string `json:"new_module"`
	BaselineModule string `json:"baseline_module"`
	Fixture        string `json:"fixture"`
	Atol           string `json:"atol"`
	Rtol           string `json:"rtol"`
}

// Script returns the Python parity program.
func Script() string { return script }

// Command returns the argv that checks the targets in dir, an absolute
// path, with the given Python interpreter. The targets travel as JSON in an
// argument, never as Python source. -B keeps the check from leaving
// __pycache__ directories in the worktree, where they would show up as
// untracked files.
func Command(python string, targets []Target, dir string) []string {
	in := scriptInput{Dir: dir, Targets: []targetInput{}}
	for _, t := range targets {
		in.Targets = append(in.Targets, targetInput(t))
	}
	data, err := json.Marshal(in)
	if err != nil {
		// A struct of strings always marshals.
		panic(fmt.Sprintf("parity: marshal target: %v", err))
	}
	return []string{python, "-B", "-c", script, string(data)}
}

// Validate reports a target that cannot be checked because the protocol
// itself is wrong, as opposed to a candidate that fails the check.
func (t Target) Validate() error {
	var errs []error
	// The report lines are split on spaces, so a name must not hold any.
	if t.Name == "" || strings.ContainsFunc(t.Name, unicode.IsSpace) {
		errs = append(errs, errors.New("name must be non-empty and without spaces"))
	}
	for _, f := range []struct{ field, spec string }{
		{"newModule", t.NewModule},
		{"baselineModule", t.BaselineModule},
		{"fixture", t.Fixture},
	} {
		if module, attr, ok := strings.Cut(f.spec, ":"); !ok || module == "" || attr == "" {
			errs = append(errs, fmt.Errorf("%s %q is not of the form module:function", f.field, f.spec))
		}
	}
	if (t.Atol == "") != (t.Rtol == "") {
		errs = append(errs, errors.New("atol and rtol must be set together"))
	}
	for _, f := range []struct{ field, value string }{{"atol", t.Atol}, {"rtol", t.Rtol}} {
		if f.value == "" {
			continue
		}
		if v, err := strconv.ParseFloat(f.value, 64); err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			errs = append(errs, fmt.Errorf("%s %q is not a finite non-negative decimal", f.field, f.value))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("kernel target %q: %w", t.Name, errors.Join(errs...))
	}
	return nil
}

// ParseOutput judges the check of targets from its combined output and
// exit code. It returns nil only when the script printed PARITY_OK for
// every target and exited 0. Otherwise it returns the first PARITY_FAIL
// line for one of the targets, or, when the script died without one (a
// crash, a kill, an exit from the candidate's own code), a kind=error
// failure of the first target without a PARITY_OK line, carrying the tail
// of the output.
func ParseOutput(targets []Target, output string, exitCode int) *Failure {
	ok := map[string]bool{}
	for line := range strings.Lines(output) {
		line = strings.TrimSpace(line)
		if f := parseFailLine(line); f != nil && slices.ContainsFunc(targets, func(t Target) bool { return t.Name == f.Target }) {
			return f
		}
		if name, found := strings.CutPrefix(line, okPrefix+" target="); found {
			ok[name] = true
		}
	}
	if len(targets) == 0 {
		return nil
	}
	first := targets[0]
	for _, t := range targets {
		if !ok[t.Name] {
			first = t
			break
		}
	}
	if ok[first.Name] && exitCode == 0 {
		return nil
	}
	detail := fmt.Sprintf("exit code %d without a parity verdict", exitCode)
	if tail := outputTail(output); tail != "" {
		detail += ": " + tail
	}
	return &Failure{
		Target: first.Name,
		Kind:   KindError,
		Detail: detail,
		Line:   fmt.Sprintf("%s target=%s kind=%s detail=%s", failPrefix, first.Name, KindError, detail),
	}
}

// parseFailLine parses "PARITY_FAIL target=<name> kind=<kind> detail=<rest>".
// Target names and kinds hold no spaces; the detail is the rest of the line.
func parseFailLine(line string) *Failure {
	rest, ok := strings.CutPrefix(line, failPrefix+" target=")
	if !ok {
		return nil
	}
	name, rest, ok := strings.Cut(rest, " kind=")
	if !ok {
		return nil
	}
	kind, detail, ok := strings.Cut(rest, " detail=")
	if !ok {
		return nil
	}
	return &Failure{Target: name, Kind: kind, Detail: detail, Line: line}
}

// outputTail returns the last tailLimit bytes of output on one line.
func outputTail(output string) string {
	tail := strings.Join(strings.Fields(output), " ")
	if len(tail) > tailLimit {
		tail = "…" + tail[len(tail)-tailLimit:]
	}
	return tail
}

// Check runs the parity check of every target in dir and returns the first
// failure, or nil when all pass. The error is for problems that say nothing
// about the candidate: an invalid target, an interpreter that does not
// start, or a cancelled context.
func Check(ctx context.Context, python, dir string, targets []Target) (*Failure, error) {
	return CheckWith(ctx, Exec, python, dir, targets)
}

// Run runs the check, argv in dir, and returns its output and exit code;
// the error is for a check that could not run.
type Run func(ctx context.Context, argv []string, dir string) (output string, exitCode int, err error)

// Exec runs a check as a plain child process.
func Exec(ctx context.Context, argv []string, dir string) (string, int, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return out.String(), exitErr.ExitCode(), nil
	}
	return out.String(), 0, err
}

// CheckWith is Check with each target's check run by run, as the local
// runner runs it: contained like any step, since it runs candidate code.
func CheckWith(ctx context.Context, run Run, python, dir string, targets []Target) (*Failure, error) {
	for _, t := range targets {
		if err := t.Validate(); err != nil {
			return nil, err
		}
	}
	// The script resolves modules from the directory it is given, which must
	// not depend on its own working directory.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("parity check: %w", err)
	}
	if len(targets) == 0 {
		return nil, nil
	}
	// One program checks every target: each candidate's code runs after
	// every baseline was measured, so that what it writes in the checkout
	// reaches none of them.
	out, exitCode, err := run(ctx, Command(python, targets, dir), dir)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, fmt.Errorf("parity check: %w", ctxErr)
	}
	if err != nil {
		return nil, fmt.Errorf("parity check: run %s: %w", python, err)
	}
	return ParseOutput(targets, out, exitCode), nil
}
