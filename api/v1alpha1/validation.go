package v1alpha1

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The API server enforces these rules with the CRD's CEL and OpenAPI
// validation; Validate applies the same rules where no API server runs (the
// local runner), so that a protocol is judged the same everywhere.

var (
	decimalRE    = regexp.MustCompile(`^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$`)
	metricNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-]*$`)
	moduleRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$`)
)

// Validate reports every rule the spec breaks, one per line.
func (s *AutoResearchSpec) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("spec.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if strings.TrimSpace(s.ResearchQuestion) == "" {
		bad("researchQuestion", "required: say what the experiment tries to find out")
	}
	if s.MaxRounds < 1 {
		bad("maxRounds", "must be at least 1, got %d", s.MaxRounds)
	}
	if s.Target != nil && !decimalRE.MatchString(*s.Target) {
		bad("target", "must be a decimal number such as 0.95, got %q", *s.Target)
	}
	if b := s.Baseline; b != nil {
		if b.Value != "" && !decimalRE.MatchString(b.Value) {
			bad("baseline.value", "must be a decimal number such as 0.95, got %q", b.Value)
		}
		if b.Runs < 0 || b.Runs > 20 {
			bad("baseline.runs", "must be between 1 and 20, got %d", b.Runs)
		}
	}
	for field, v := range map[string]string{"acceptance.minDelta": s.Acceptance.MinDelta, "acceptance.noiseFactor": s.Acceptance.NoiseFactor} {
		if v != "" && (!decimalRE.MatchString(v) || strings.HasPrefix(v, "-")) {
			bad(field, "must be a non-negative decimal number, got %q", v)
		}
	}
	if s.PlateauRounds < 0 {
		bad("plateauRounds", "must be at least 1, got %d", s.PlateauRounds)
	}
	if s.Fixed.TimeLimit.Duration < time.Second {
		bad("fixed.timeLimit", "must be a duration of at least 1s such as 90s, 5m or 1h30m")
	}
	if s.Fixed.EpochLimit < 0 {
		bad("fixed.epochLimit", "must not be negative")
	}
	if len(s.Variable.Files) == 0 {
		bad("variable.files", "required: list the files the Researcher may change")
	}
	checkFiles := func(field string, files []string) {
		for _, f := range files {
			if f == "" || path.IsAbs(f) || strings.HasPrefix(path.Clean(f), "..") {
				bad(field, "%q must be a relative path inside the experiment directory", f)
			}
		}
	}
	checkFiles("fixed.files", s.Fixed.Files)
	checkFiles("variable.files", s.Variable.Files)
	for _, f := range s.Fixed.Files {
		for _, v := range s.Variable.Files {
			if path.Clean(f) == path.Clean(v) {
				bad("fixed.files", "%q is both fixed and variable: remove it from fixed.files or variable.files", f)
			}
		}
	}
	if strings.TrimSpace(s.Train.Command) == "" {
		bad("train.command", "required: the command that trains a candidate")
	}
	if s.Train.GPUs < 0 {
		bad("train.gpus", "must not be negative, got %d", s.Train.GPUs)
	}
	if !metricNameRE.MatchString(s.Eval.Metric) {
		bad("eval.metric", "required: the metric name the eval command prints, such as val_bpb")
	}
	if s.Eval.Direction != DirectionMaximize && s.Eval.Direction != DirectionMinimize {
		bad("eval.direction", "must be maximize or minimize, got %q", s.Eval.Direction)
	}
	if strings.TrimSpace(s.Eval.Command) == "" {
		bad("eval.command", "required: the fixed evaluation command")
	}
	if s.Eval.Pattern != "" {
		if re, err := regexp.Compile(s.Eval.Pattern); err != nil {
			bad("eval.pattern", "invalid regular expression: %v", err)
		} else if re.NumSubexp() < 1 {
			bad("eval.pattern", "needs a capture group around the value")
		}
	}
	if s.Eval.Timeout != nil && s.Eval.Timeout.Duration < time.Second {
		bad("eval.timeout", "must be at least 1s")
	}
	if s.Researcher.Timeout != nil && s.Researcher.Timeout.Duration < time.Second {
		bad("researcher.timeout", "must be at least 1s")
	}
	if strings.TrimSpace(s.Researcher.Command) == "" {
		bad("researcher.command", "required: the coding agent to run each round")
	}
	if s.Profile != nil && strings.TrimSpace(s.Profile.Command) == "" {
		bad("profile.command", "required when profile is set")
	}
	seen := map[string]bool{}
	for i, k := range s.KernelTargets {
		field := fmt.Sprintf("kernelTargets[%d]", i)
		if k.Name == "" || seen[k.Name] {
			bad(field+".name", "must be set and unique, got %q", k.Name)
		}
		seen[k.Name] = true
		for sub, v := range map[string]string{"newModule": k.NewModule, "baselineModule": k.BaselineModule, "fixture": k.Fixture} {
			if !moduleRE.MatchString(v) {
				bad(field+"."+sub, "must look like module:function, got %q", v)
			}
		}
		for sub, v := range map[string]string{"atol": k.Atol, "rtol": k.Rtol} {
			if v != "" && !decimalRE.MatchString(v) {
				bad(field+"."+sub, "must be a decimal number, got %q", v)
			}
		}
	}
	if s.Source.Git != nil && s.Source.PVC != nil {
		bad("source", "takes either git or pvc, not both")
	}
	return errors.Join(errs...)
}

// Default fills the optional fields the CRD defaults, so that the local
// runner sees the same spec an API server would store.
func (s *AutoResearchSpec) Default() {
	if s.PlateauRounds == 0 {
		s.PlateauRounds = 5
	}
	if s.HistoryLimit == 0 {
		s.HistoryLimit = 20
	}
	if s.Acceptance.MinDelta == "" {
		s.Acceptance.MinDelta = "0"
	}
	if s.Acceptance.NoiseFactor == "" {
		s.Acceptance.NoiseFactor = "2"
	}
	if s.Baseline != nil && s.Baseline.Runs == 0 {
		s.Baseline.Runs = 1
	}
	for i := range s.KernelTargets {
		if s.KernelTargets[i].Atol == "" {
			s.KernelTargets[i].Atol = "1e-5"
		}
		if s.KernelTargets[i].Rtol == "" {
			s.KernelTargets[i].Rtol = "1.3e-6"
		}
	}
}

// ResearcherTimeout is the Researcher's time budget: researcher.timeout, or
// twice the training time limit as the seed's per-round timer.
func (s *AutoResearchSpec) ResearcherTimeout() time.Duration {
	if s.Researcher.Timeout != nil {
		return s.Researcher.Timeout.Duration
	}
	return 2 * s.Fixed.TimeLimit.Duration
}

// EvalTimeout bounds one evaluation: eval.timeout, or the training time limit.
func (s *AutoResearchSpec) EvalTimeout() time.Duration {
	if s.Eval.Timeout != nil {
		return s.Eval.Timeout.Duration
	}
	return s.Fixed.TimeLimit.Duration
}

// EpochLimitString is the epoch limit as the environment passes it, "" for none.
func (s *AutoResearchSpec) EpochLimitString() string {
	if s.Fixed.EpochLimit == 0 {
		return ""
	}
	return strconv.Itoa(int(s.Fixed.EpochLimit))
}
