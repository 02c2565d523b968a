// Package parity owns the kernel parity check of the compliance step: for
// each kernel target of the protocol it runs a fixed Python program that
// compares the candidate's function (new module) against the baseline on the
// baseline's fixture, and turns the program's output into a verdict.
//
// The program is the seed's Step 2 check. Its report lines are the contract:
//
//	PARITY_OK target=<name>                                   (stdout, exit 0)
//	PARITY_FAIL target=<name> kind=<kind> detail=<detail>     (stderr, exit 1)
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
	Name           string `json:"name"`
	NewModule      string `json:"new_module"`
	BaselineModule string `json:"baseline_module"`
	Fixture        string `json:"fixture"`
	Atol           string `json:"atol"`
	Rtol           string `json:"rtol"`
	Dir            string `json:"dir"`
}

// Script returns the Python parity program.
func Script() string { return script }

// Command returns the argv that checks one target in dir, an absolute path,
// with the given Python interpreter. The target travels as JSON in an argument, never as
// Python source. -B keeps the check from leaving __pycache__ directories in
// the worktree, where they would show up as untracked files.
func Command(python string, t Target, dir string) []string {
	in, err := json.Marshal(scriptInput{
		Name:           t.Name,
		NewModule:      t.NewModule,
		BaselineModule: t.BaselineModule,
		Fixture:        t.Fixture,
		Atol:           t.Atol,
		Rtol:           t.Rtol,
		Dir:            dir,
	})
	if err != nil {
		// A struct of strings always marshals.
		panic(fmt.Sprintf("parity: marshal target: %v", err))
	}
	return []string{python, "-B", "-c", script, string(in)}
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

// ParseOutput judges one check from its combined output and exit code. It
// returns nil only when the script printed PARITY_OK for this target and
// exited 0. Otherwise it returns the script's PARITY_FAIL line for the
// target, or, when the script died without one (a crash, a kill, an exit
// from the candidate's own code), a kind=error failure carrying the tail of
// the output.
func ParseOutput(t Target, output string, exitCode int) *Failure {
	ok := false
	for line := range strings.Lines(output) {
		line = strings.TrimSpace(line)
		if f := parseFailLine(line); f != nil && f.Target == t.Name {
			return f
		}
		if line == okPrefix+" target="+t.Name {
			ok = true
		}
	}
	if ok && exitCode == 0 {
		return nil
	}
	detail := fmt.Sprintf("exit code %d without a parity verdict", exitCode)
	if tail := outputTail(output); tail != "" {
		detail += ": " + tail
	}
	return &Failure{
		Target: t.Name,
		Kind:   KindError,
		Detail: detail,
		Line:   fmt.Sprintf("%s target=%s kind=%s detail=%s", failPrefix, t.Name, KindError, detail),
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

// Check runs the parity check of every target in dir, in order, and returns
// the first failure, or nil when all pass. The error is for problems that say
// nothing about the candidate: an invalid target, an interpreter that does
// not start, or a cancelled context.
func Check(ctx context.Context, python, dir string, targets []Target) (*Failure, error) {
	return CheckWith(ctx, Exec, python, dir, targets)
}

// Run runs one target's check, argv in dir, and returns its output and exit
// code; the error is for a check that could not run.
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
	for _, t := range targets {
		out, exitCode, err := run(ctx, Command(python, t, dir), dir)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("parity check %q: %w", t.Name, ctxErr)
		}
		if err != nil {
			return nil, fmt.Errorf("parity check %q: run %s: %w", t.Name, python, err)
		}
		if f := ParseOutput(t, out, exitCode); f != nil {
			return f, nil
		}
	}
	return nil, nil
}
