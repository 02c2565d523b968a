// Package prompt renders the prompt that starts a Researcher for one round.
// The wording follows the Researcher prompt of the original loop; the
// template lives in prompt.tmpl.
package prompt

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"text/template"
)

//go:embed prompt.tmpl
var promptTemplate string

var tmpl = template.Must(template.New("prompt").
	Funcs(template.FuncMap{
		"add":      func(a, b int) int { return a + b },
		"codeList": codeList,
		// candidateName names the i-th candidate of a round: a, b, …
		"candidateName": func(i int) string { return string(rune('a' + i)) },
	}).
	Parse(promptTemplate))

// RecentRounds is how many rounds of the experience log a prompt shows, as
// in the original loop.
const RecentRounds = 5

// Data is what the prompt of one round is made from.
type Data struct {
	// Metric is the name of the metric to improve, e.g. "val_bpb".
	Metric string
	// Direction is "minimize" or "maximize".
	Direction string
	// Round is this round's number, starting at 1.
	Round int32
	// MaxRounds is the number of rounds the loop runs.
	MaxRounds int32
	// ResearchQuestion is shown under the opening lines when set.
	ResearchQuestion string
	// FixedFiles must not be modified; VariableFiles may be.
	FixedFiles, VariableFiles []string
	// FixedRegions are the parts of variable files that must not change,
	// each as its file, lines and begin marker, such as
	// "train.py lines 10-14: # autoresearch:fixed-begin seed".
	FixedRegions []string
	// Constraints are the protocol's fixed conditions in words, such as
	// "random seed 42 in train.py", which every change must keep.
	Constraints []string
	// VariableRange describes what may change; "" renders "(not specified)".
	VariableRange string
	// TimeLimit is the training time limit, e.g. "5m0s"; "" omits it.
	TimeLimit string
	// EpochLimit is the training epoch limit; 0 omits it.
	EpochLimit int32
	// ProfileCommand turns on the profile-first discipline when set.
	ProfileCommand string
	// RecentRounds is how many rounds Experiences covers.
	RecentRounds int
	// Experiences is the experience log summary and table snippet as
	// markdown; "" renders "(no rounds yet)".
	Experiences string
	// ExperiencesPath is where the Researcher adds its row, relative to the
	// worktree, e.g. "experiences.md".
	ExperiencesPath string
	// Guidance holds the human's notes for this round.
	Guidance []string
	// Candidate names this Researcher's candidate (a, b, …) in a round of
	// Candidates; both are empty in a round of one.
	Candidate  string
	Candidates int32
	// Directions are the directions the round's candidates were given, in
	// candidate order.
	Directions []string
}

// Render returns the Researcher prompt for d, or an error naming every
// required field that is missing or out of range.
func Render(d Data) (string, error) {
	if err := validate(d); err != nil {
		return "", err
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, normalize(d)); err != nil {
		return "", fmt.Errorf("rendering researcher prompt: %w", err)
	}
	return b.String(), nil
}

func validate(d Data) error {
	var errs []error
	if strings.TrimSpace(d.Metric) == "" {
		errs = append(errs, errors.New("metric is required"))
	}
	if strings.TrimSpace(d.Direction) == "" {
		errs = append(errs, errors.New("direction is required"))
	}
	if d.Round < 1 {
		errs = append(errs, fmt.Errorf("round must be at least 1, got %d", d.Round))
	}
	if d.MaxRounds < 1 {
		errs = append(errs, fmt.Errorf("maxRounds must be at least 1, got %d", d.MaxRounds))
	}
	if d.Round >= 1 && d.MaxRounds >= 1 && d.Round > d.MaxRounds {
		errs = append(errs, fmt.Errorf("round %d is beyond maxRounds %d", d.Round, d.MaxRounds))
	}
	if len(nonEmpty(d.VariableFiles)) == 0 {
		errs = append(errs, errors.New("at least one variable file is required"))
	}
	if strings.TrimSpace(d.ExperiencesPath) == "" {
		errs = append(errs, errors.New("experiences path is required"))
	}
	if d.EpochLimit < 0 {
		errs = append(errs, fmt.Errorf("epoch limit must not be negative, got %d", d.EpochLimit))
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid researcher prompt data: %w", errors.Join(errs...))
	}
	return nil
}

// normalize trims what a human typed so that stray whitespace cannot break
// the markdown structure, and indents multi-line notes under their bullet.
func normalize(d Data) Data {
	d.ResearchQuestion = strings.TrimSpace(d.ResearchQuestion)
	d.VariableRange = strings.TrimSpace(d.VariableRange)
	d.TimeLimit = strings.TrimSpace(d.TimeLimit)
	d.ProfileCommand = strings.TrimSpace(d.ProfileCommand)
	d.Experiences = strings.TrimSpace(d.Experiences)
	d.FixedFiles = nonEmpty(d.FixedFiles)
	d.VariableFiles = nonEmpty(d.VariableFiles)
	d.FixedRegions = nonEmpty(d.FixedRegions)
	d.Constraints = nonEmpty(d.Constraints)
	for i, c := range d.Constraints {
		d.Constraints[i] = strings.Join(strings.Fields(c), " ")
	}
	notes := nonEmpty(d.Guidance)
	for i, note := range notes {
		notes[i] = strings.ReplaceAll(strings.ReplaceAll(note, "\r\n", "\n"), "\n", "\n  ")
	}
	d.Guidance = notes
	return d
}

// nonEmpty returns the trimmed, non-blank entries of list.
func nonEmpty(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// codeList renders file names as a comma-separated list of code spans.
func codeList(files []string) string {
	if len(files) == 0 {
		return "(none)"
	}
	return "`" + strings.Join(files, "`, `") + "`"
}
