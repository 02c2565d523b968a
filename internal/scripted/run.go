package scripted

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// ExhaustedStrategy is the Strategy of a round beyond the end of the plan,
// which changes nothing.
const ExhaustedStrategy = "scripted plan exhausted: no change"

// commandWaitDelay bounds how long a cancelled command may keep its output
// open through children it left behind.
const commandWaitDelay = 5 * time.Second

// ExitError is returned when the step asks the Researcher to fail with an
// exit code.
type ExitError struct {
	Code int
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("scripted researcher exits with code %d", e.Code)
}

// Run plays the plan's step for round (1-based) in dir, the experiment
// directory, appends the round's Strategy row to the experiences file (a
// relative path is taken from dir) and writes a human-readable log to out.
//
// A failing edit leaves every file as it was and returns an error naming the
// file and the text it looked for. A step with an exit code returns an
// *ExitError after doing everything else. When ctx ends first, Run returns
// its error without the Strategy row or "Code ready".
//
// In a round of several candidates, candidate (a, b, …) plays its own
// step of the round's Candidates.
func Run(ctx context.Context, plan Plan, round int, candidate, dir, experiencesPath string, out io.Writer) error {
	if round < 1 {
		return fmt.Errorf("round %d: rounds start at 1", round)
	}
	if experiencesPath == "" {
		return errors.New("no experiences file given")
	}
	if !filepath.IsAbs(experiencesPath) {
		experiencesPath = filepath.Join(dir, experiencesPath)
	}
	step := Step{Strategy: ExhaustedStrategy}
	if round <= len(plan.Rounds) {
		step = plan.Rounds[round-1].For(candidate)
	}
	if err := step.Validate(); err != nil {
		return fmt.Errorf("round %d: %w", round, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := play(ctx, step, round, dir, experiencesPath, out); err != nil {
		return fmt.Errorf("round %d: %w", round, err)
	}
	if step.ExitCode != 0 {
		logf(out, "exit code %d\n", step.ExitCode)
		return &ExitError{Code: step.ExitCode}
	}
	logf(out, "Code ready\n")
	return nil
}

func play(ctx context.Context, step Step, round int, dir, experiencesPath string, out io.Writer) error {
	logf(out, "round %d: %s\n", round, step.Strategy)
	// os.Root keeps every file operation inside dir, symbolic links included.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()

	if err := applyEdits(root, step.Edits, out); err != nil {
		return err
	}
	for _, w := range step.Write {
		if err := writeFile(root, w); err != nil {
			return err
		}
		logf(out, "write %s (%d bytes)\n", w.File, len(w.Content))
	}
	for _, name := range step.Delete {
		if _, err := root.Lstat(name); err != nil {
			return fmt.Errorf("delete %s: %w", name, err)
		}
		if err := root.RemoveAll(name); err != nil {
			return fmt.Errorf("delete %s: %w", name, err)
		}
		logf(out, "delete %s\n", name)
	}
	for _, command := range step.Run {
		runCommand(ctx, dir, command, out)
	}
	if err := sleep(ctx, step.Sleep.Duration, out); err != nil {
		return err
	}
	return workspace.AppendStrategy(experiencesPath, round, step.Strategy)
}

// applyEdits applies all edits in memory before writing any file, so that
// a plan error never leaves a half-edited tree behind.
func applyEdits(root *os.Root, edits []Edit, out io.Writer) error {
	type editedFile struct {
		name    string
		content string
		mode    os.FileMode
	}
	var files []*editedFile
	byName := map[string]*editedFile{}
	var log []string
	for _, e := range edits {
		name := filepath.Clean(e.File)
		f := byName[name]
		if f == nil {
			info, err := root.Stat(name)
			if err != nil {
				return fmt.Errorf("edit %s: %w", e.File, err)
			}
			data, err := root.ReadFile(name)
			if err != nil {
				return fmt.Errorf("edit %s: %w", e.File, err)
			}
			f = &editedFile{name: name, content: string(data), mode: info.Mode().Perm()}
			byName[name] = f
			files = append(files, f)
		}
		switch n := strings.Count(f.content, e.Old); n {
		case 1:
		case 0:
			return fmt.Errorf("edit %s: %q not found", e.File, e.Old)
		default:
			return fmt.Errorf("edit %s: %q occurs %d times, want exactly once", e.File, e.Old, n)
		}
		f.content = strings.Replace(f.content, e.Old, e.New, 1)
		log = append(log, fmt.Sprintf("edit %s: %q -> %q", e.File, e.Old, e.New))
	}
	for _, f := range files {
		if err := root.WriteFile(f.name, []byte(f.content), f.mode); err != nil {
			return fmt.Errorf("edit %s: %w", f.name, err)
		}
	}
	for _, line := range log {
		logf(out, "%s\n", line)
	}
	return nil
}

func writeFile(root *os.Root, w FileContent) error {
	if parent := filepath.Dir(w.File); parent != "." {
		if err := root.MkdirAll(parent, 0o755); err != nil {
			return fmt.Errorf("write %s: %w", w.File, err)
		}
	}
	if err := root.WriteFile(w.File, []byte(w.Content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", w.File, err)
	}
	return nil
}

// logf writes a line of the Researcher's log, which is its standard
// output. A line lost to a failed write changes nothing about the round:
// the supervisor goes by the exit code, the tree and the ledger, not by
// this log.
func logf(out io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(out, format, args...)
}

// runCommand runs one shell command; its failure is part of the scenario
// (e.g. a refused git write), so it is reported, not returned.
func runCommand(ctx context.Context, dir, command string, out io.Writer) {
	logf(out, "run: %s\n", command)
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = commandWaitDelay
	if err := cmd.Run(); err != nil {
		logf(out, "run: %s: %v (ignored)\n", command, err)
	}
}

// sleep waits for d; a Researcher whose context ends never reports its work.
func sleep(ctx context.Context, d time.Duration, out io.Writer) error {
	if d > 0 {
		logf(out, "sleep %s\n", d)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return ctx.Err()
}
