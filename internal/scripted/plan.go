// Package scripted is a deterministic Researcher for demos and tests: instead
// of a coding agent it replays a plan, one step per round, that edits, writes
// and deletes files, runs commands, sleeps or exits with a chosen code. It
// follows the Researcher contract (the experiment directory as working
// directory, a Strategy row appended to experiences.md, "Code ready" at the
// end) so that the supervisor cannot tell it from a real agent.
package scripted

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// Plan is the whole script: Rounds[0] is played in round 1.
type Plan struct {
	Rounds []Step `json:"rounds"`
}

// Step is what the scripted Researcher does in one round, in this order:
// edits, writes, deletes, commands, sleep, then the Strategy row and either
// "Code ready" or the exit code.
type Step struct {
	// Strategy is the text of the round's Strategy column.
	Strategy string `json:"strategy"`

	// Expect is the verdict the round is meant to get. The scripted
	// Researcher ignores it; it documents the plan and lets tests replay
	// it, since only improved rounds keep their edits.
	Expect v1alpha1.Verdict `json:"expect,omitempty"`

	// Edits replace text in existing files.
	Edits []Edit `json:"edits,omitempty"`

	// Write creates or overwrites files.
	Write []FileContent `json:"write,omitempty"`

	// Delete removes files or directory trees.
	Delete []string `json:"delete,omitempty"`

	// Run holds shell commands run with `sh -c` in the experiment
	// directory, e.g. to attempt git writes in tampering tests. A failing
	// command is reported and otherwise ignored.
	Run []string `json:"run,omitempty"`

	// Sleep delays the end of the step, e.g. to trip the Researcher
	// timeout.
	Sleep metav1.Duration `json:"sleep,omitempty"`

	// ExitCode, when not zero, makes the Researcher fail with this code
	// after everything above, as a crashing agent would.
	ExitCode int `json:"exitCode,omitempty"`

	// Candidates are the steps of a round of several candidates
	// (spec.candidates), candidates[0] for candidate a; a candidate past
	// the list plays the step itself.
	Candidates []Step `json:"candidates,omitempty"`
}

// For is the step candidate (a, b, …; "" in a round of one) plays.
func (s Step) For(candidate string) Step {
	if len(candidate) != 1 {
		return s
	}
	if i := int(candidate[0] - 'a'); i >= 0 && i < len(s.Candidates) {
		return s.Candidates[i]
	}
	return s
}

// Edit replaces the only occurrence of Old in File with New.
type Edit struct {
	File string `json:"file"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// FileContent is a file to write in full.
type FileContent struct {
	File    string `json:"file"`
	Content string `json:"content"`
}

// LoadPlan reads and validates a plan. Unknown fields are errors, so that a
// misspelt key fails loudly instead of silently doing nothing.
func LoadPlan(path string) (Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Plan{}, fmt.Errorf("read plan: %w", err)
	}
	var plan Plan
	if err := yaml.UnmarshalStrict(data, &plan); err != nil {
		return Plan{}, fmt.Errorf("parse plan %s: %w", path, err)
	}
	if err := plan.Validate(); err != nil {
		return Plan{}, fmt.Errorf("plan %s: %w", path, err)
	}
	return plan, nil
}

// Validate checks every step of the plan.
func (p Plan) Validate() error {
	if len(p.Rounds) == 0 {
		return errors.New("rounds: at least one step is required")
	}
	var errs []error
	for i, s := range p.Rounds {
		if err := s.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("rounds[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// expectable are the verdicts a round can get; the baseline is not a round
// the Researcher plays.
var expectable = []v1alpha1.Verdict{
	v1alpha1.VerdictImproved,
	v1alpha1.VerdictNotImproved,
	v1alpha1.VerdictWithinNoise,
	v1alpha1.VerdictComplianceFailed,
	v1alpha1.VerdictParityFailed,
	v1alpha1.VerdictTrainFailed,
	v1alpha1.VerdictTrainTimeout,
	v1alpha1.VerdictEvalFailed,
	v1alpha1.VerdictConstraintFailed,
	v1alpha1.VerdictOverfit,
	v1alpha1.VerdictResearcherFailed,
}

// Validate checks one step: a strategy, known verdict, paths inside the
// experiment directory, a usable exit code.
func (s Step) Validate() error {
	var errs []error
	if s.Strategy == "" {
		errs = append(errs, errors.New("strategy is required"))
	}
	if s.Expect != "" && !slices.Contains(expectable, s.Expect) {
		errs = append(errs, fmt.Errorf("expect: unknown verdict %q (want one of %v)", s.Expect, expectable))
	}
	for i, e := range s.Edits {
		if err := checkPath(e.File); err != nil {
			errs = append(errs, fmt.Errorf("edits[%d].file: %w", i, err))
		}
		if e.Old == "" {
			errs = append(errs, fmt.Errorf("edits[%d].old: must not be empty", i))
		}
	}
	for i, w := range s.Write {
		if err := checkPath(w.File); err != nil {
			errs = append(errs, fmt.Errorf("write[%d].file: %w", i, err))
		}
	}
	for i, d := range s.Delete {
		if err := checkPath(d); err != nil {
			errs = append(errs, fmt.Errorf("delete[%d]: %w", i, err))
		}
	}
	for i, c := range s.Candidates {
		if err := c.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("candidates[%d]: %w", i, err))
		}
	}
	if s.Sleep.Duration < 0 {
		errs = append(errs, fmt.Errorf("sleep: %s is negative", s.Sleep.Duration))
	}
	if s.ExitCode < 0 || s.ExitCode > 255 {
		errs = append(errs, fmt.Errorf("exitCode: %d is not between 0 and 255", s.ExitCode))
	}
	return errors.Join(errs...)
}

// checkPath accepts relative paths that stay inside the experiment
// directory. Fixed files are inside it too and stay allowed: tampering with
// them is what compliance tests need the Researcher to do.
func checkPath(p string) error {
	if !filepath.IsLocal(p) || filepath.Clean(p) == "." {
		return fmt.Errorf("path %q must name a file inside the experiment directory, relative to it", p)
	}
	return nil
}
