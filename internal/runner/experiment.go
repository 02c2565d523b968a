// Package runner runs the research loop on one machine: it performs the round
// engine's actions with a git worktree and local processes, keeps the loop's
// state next to the worktree, and reports progress as it goes.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/schema"
	"github.com/autoresearch-dev/autoresearch-operator/internal/supervisor"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// Experiment is an AutoResearch object read from a file, with where it lives.
type Experiment struct {
	Object *v1alpha1.AutoResearch
	// File is the absolute path of the experiment file.
	File string
	// Repo is the top level of the git repository holding the file.
	Repo string
	// Subdir is the experiment directory relative to Repo, slash-separated.
	Subdir string
	// Worktree is where the experiment's worktree lives.
	Worktree string
}

// LoadExperiment reads, defaults and validates an experiment file. worktree
// overrides spec.workspace.path; both default to ../autoresearch-<name> next
// to the repository, as the seed does.
func LoadExperiment(ctx context.Context, file, worktree string) (*Experiment, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, err
	}
	obj, err := ParseExperiment(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	dir := filepath.Dir(abs)
	top, err := workspace.Git(ctx, dir, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%s is not inside a git repository: the loop works on a worktree of the repository holding the experiment (run `git init && git add -A && git commit -m baseline` there first)", dir)
	}
	top, err = filepath.EvalSymlinks(top)
	if err != nil {
		return nil, err
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	sub, err := filepath.Rel(top, realDir)
	if err != nil {
		return nil, err
	}
	if worktree == "" {
		worktree = obj.Spec.Workspace.Path
		if worktree != "" && !filepath.IsAbs(worktree) {
			worktree = filepath.Join(dir, worktree)
		}
	}
	if worktree == "" {
		worktree = filepath.Join(filepath.Dir(top), "autoresearch-"+obj.Name)
	}
	worktree, err = filepath.Abs(worktree)
	if err != nil {
		return nil, err
	}
	return &Experiment{Object: obj, File: abs, Repo: top, Subdir: filepath.ToSlash(sub), Worktree: worktree}, nil
}

// ParseExperiment decodes an AutoResearch object strictly, then defaults
// and judges it as the API server would (the CRD's schema and CEL rules),
// then by the rules no schema can express.
func ParseExperiment(data []byte) (*v1alpha1.AutoResearch, error) {
	obj := &v1alpha1.AutoResearch{}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return nil, fmt.Errorf("not a valid AutoResearch: %w", err)
	}
	if obj.APIVersion != v1alpha1.GroupVersion.String() || obj.Kind != "AutoResearch" {
		return nil, fmt.Errorf("expected apiVersion %s and kind AutoResearch, got %q and %q", v1alpha1.GroupVersion, obj.APIVersion, obj.Kind)
	}
	if obj.Name == "" {
		return nil, fmt.Errorf("metadata.name is required: it names the worktree and the experiment branch")
	}
	// Integers as int64, not float64, as the API server decodes them: the
	// CEL rules compare them to integers.
	var raw map[string]any
	js, err := yaml.YAMLToJSON(data)
	if err == nil {
		err = utiljson.Unmarshal(js, &raw)
	}
	if err != nil {
		return nil, fmt.Errorf("not a valid AutoResearch: %w", err)
	}
	if err := schema.Default(raw); err != nil {
		return nil, err
	}
	errs, err := schema.Validate(context.Background(), raw)
	if err != nil {
		return nil, err
	}
	if len(errs) == 0 {
		defaulted, err := json.Marshal(raw)
		if err != nil {
			return nil, err
		}
		obj = &v1alpha1.AutoResearch{}
		if err := json.Unmarshal(defaulted, obj); err != nil {
			return nil, fmt.Errorf("not a valid AutoResearch: %w", err)
		}
		errs = obj.Spec.Validate()
	}
	if len(errs) > 0 {
		return nil, invalidProtocol(errs)
	}
	return obj, nil
}

// invalidProtocol lists every broken rule on a line of its own.
func invalidProtocol(errs field.ErrorList) error {
	var b strings.Builder
	b.WriteString("invalid protocol:")
	for _, e := range errs {
		b.WriteString("\n  " + e.Error())
	}
	return errors.New(b.String())
}

// StateDir is the supervisor's directory inside the worktree.
func (x *Experiment) StateDir() string {
	return filepath.Join(x.Worktree, filepath.FromSlash(x.Subdir), ".autoresearch")
}

// AddNote appends a guidance note that the next round's Researcher sees and
// whose Note column records it.
func (x *Experiment) AddNote(note string) error {
	note = strings.Join(strings.Fields(note), " ")
	if note == "" {
		return fmt.Errorf("the note is empty")
	}
	if _, err := os.Stat(x.Worktree); err != nil {
		return fmt.Errorf("the experiment has not started (no worktree at %s): put the note in spec.guidance of %s instead", x.Worktree, x.File)
	}
	if err := os.MkdirAll(x.StateDir(), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(x.StateDir(), notesFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, note); err != nil {
		return errors.Join(err, f.Close())
	}
	return f.Close()
}

// Notes returns the guidance added with AddNote, oldest first.
func (x *Experiment) Notes() ([]string, error) {
	data, err := os.ReadFile(filepath.Join(x.StateDir(), notesFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var notes []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			notes = append(notes, line)
		}
	}
	return notes, nil
}

// Saved is what a local run left behind: its status and ledger.
type Saved struct {
	Status v1alpha1.AutoResearchStatus
	Ledger workspace.Ledger
	Notes  []string
}

// LoadSaved reads the state of an experiment that has run here; ok is false
// when it has not started.
func (x *Experiment) LoadSaved() (saved Saved, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(x.StateDir(), stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return saved, false, nil
	}
	if err != nil {
		return saved, false, err
	}
	if err := json.Unmarshal(data, &saved.Status); err != nil {
		return saved, false, err
	}
	if err := x.withHoldout(&saved.Status); err != nil {
		return saved, false, err
	}
	// The ledger as the supervisor last wrote it: the worktree's is the
	// running Researcher's to rewrite.
	ledger := supervisor.PublishedLedger(x.StateDir(), workspace.ExperiencesFile)
	if _, err := os.Lstat(ledger); errors.Is(err, fs.ErrNotExist) {
		// No round has started yet, or one started before the supervisor
		// published its ledger.
		ledger = filepath.Join(x.Worktree, filepath.FromSlash(x.Subdir), workspace.ExperiencesFile)
	}
	saved.Ledger, err = workspace.ReadLedger(ledger)
	if err != nil {
		return saved, false, err
	}
	saved.Notes, err = x.Notes()
	return saved, true, err
}
