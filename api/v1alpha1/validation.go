package v1alpha1

import (
	"cmp"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The API server enforces the CRD's OpenAPI and CEL rules, which come from
// the markers on these types. Validate states the same rules in Go, so that
// the local runner and the operator judge a protocol alike, and the few that
// no CEL rule can state exactly or within the API server's cost limit: how
// many capture groups eval.pattern has, whether a glob in fixed.files
// matches a variable file, and whether an environment variable's name is one
// a pod takes.
// The engine runs Validate before anything else, so what only it refuses
// fails the experiment with InvalidSpec at once.

var (
	decimalRE     = regexp.MustCompile(`^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]{1,2})?$`)
	metricNameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-]*$`)
	functionRefRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$`)
)

// Limits, as the markers give them.
const (
	maxRounds           = 100000
	maxConstraints      = 32
	maxConstraintLength = 512
	maxVariableFiles    = 64
	maxGPUs             = 64
	maxKernelTargets    = 32
	maxHistoryLimit     = 100
)

// Validate reports every rule the spec breaks, in the order of its fields.
func (s *AutoResearchSpec) Validate() field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	required := func(fp *field.Path, value, what string) {
		if strings.TrimSpace(value) == "" {
			errs = append(errs, field.Required(fp, "must not be blank: "+what))
		}
	}
	required(p.Child("researchQuestion"), s.ResearchQuestion, "say what the experiment tries to find out")
	if s.MaxRounds < 1 || s.MaxRounds > maxRounds {
		errs = append(errs, field.Invalid(p.Child("maxRounds"), s.MaxRounds, fmt.Sprintf("must be between 1 and %d", maxRounds)))
	}
	if s.Target != "" {
		errs = append(errs, s.Target.Validate(p.Child("target"))...)
	}
	if s.Baseline != nil {
		errs = append(errs, s.Baseline.validate(p.Child("baseline"))...)
	}
	errs = append(errs, s.Acceptance.MinDelta.Validate(p.Child("acceptance", "minDelta"))...)
	errs = append(errs, s.Acceptance.NoiseFactor.Validate(p.Child("acceptance", "noiseFactor"))...)
	errs = append(errs, s.Acceptance.MinImprovement.Validate(p.Child("acceptance", "minImprovement"))...)
	if c := s.Acceptance.ConfirmRuns; c != nil && (*c < 0 || *c > 10) {
		errs = append(errs, field.Invalid(p.Child("acceptance", "confirmRuns"), *c, "must be between 0 and 10"))
	}
	errs = append(errs, s.Budget.validate(p.Child("budget"))...)
	errs = append(errs, s.Plateau.validate(p.Child("plateau"))...)
	for i, f := range s.Fixed.Files {
		errs = append(errs, f.Validate(p.Child("fixed", "files").Index(i))...)
	}
	errs = append(errs, duplicates(p.Child("fixed", "files"), s.Fixed.Files)...)
	errs = append(errs, validateConstraints(p.Child("fixed", "constraints"), s.Fixed.Constraints)...)
	errs = append(errs, s.Fixed.TimeLimit.Validate(p.Child("fixed", "timeLimit"))...)
	if s.Fixed.EpochLimit < 0 {
		errs = append(errs, field.Invalid(p.Child("fixed", "epochLimit"), s.Fixed.EpochLimit, "must not be negative"))
	}
	switch n := len(s.Variable.Files); {
	case n == 0:
		errs = append(errs, field.Required(p.Child("variable", "files"), "list the files the Researcher may change"))
	case n > maxVariableFiles:
		errs = append(errs, field.TooMany(p.Child("variable", "files"), n, maxVariableFiles))
	}
	errs = append(errs, validatePaths(p.Child("variable", "files"), s.Variable.Files)...)
	errs = append(errs, s.validateFixedCoversNoVariable(p.Child("fixed", "files"))...)
	required(p.Child("train", "command"), s.Train.Command, "give the command that trains a candidate")
	errs = append(errs, s.validateOutputs(p.Child("train", "outputs"))...)
	if g := s.Train.GPUs; g != nil && (*g < 0 || *g > maxGPUs) {
		errs = append(errs, field.Invalid(p.Child("train", "gpus"), *g, fmt.Sprintf("must be between 0 and %d", maxGPUs)))
	}
	errs = append(errs, validateEnv(p.Child("train", "env"), s.Train.Env)...)
	errs = append(errs, validateTolerations(p.Child("train", "tolerations"), s.Train.Tolerations)...)
	if s.Train.Shm != nil && s.Train.Shm.Sign() <= 0 {
		errs = append(errs, field.Invalid(p.Child("train", "shm"), s.Train.Shm.String(), "must be a positive size such as 8Gi"))
	}
	errs = append(errs, validatePodTemplate(p.Child("train", "podTemplate"), s.Train.PodTemplate, "train", false)...)
	errs = append(errs, validatePodTemplate(p.Child("eval", "podTemplate"), s.Eval.PodTemplate, "eval", false)...)
	errs = append(errs, s.Eval.validate(p.Child("eval"))...)
	errs = append(errs, s.Holdout.validate(p.Child("holdout"))...)
	if h := s.Holdout; h != nil && h.Volume != nil && h.Volume.PersistentVolumeClaim != nil && s.Source.PVC != nil && h.Volume.PersistentVolumeClaim.ClaimName == s.Source.PVC.ClaimName {
		errs = append(errs, field.Invalid(p.Child("holdout", "volume", "persistentVolumeClaim", "claimName"), h.Volume.PersistentVolumeClaim.ClaimName,
			"the holdout's claim may not be the workspace claim, which every Researcher mounts: keep the holdout's data on a claim of its own"))
	}
	if s.Profile != nil {
		required(p.Child("profile", "command"), s.Profile.Command, "give the command that profiles the training code")
		if s.Profile.ExpectedRuntime != nil {
			errs = append(errs, s.Profile.ExpectedRuntime.Validate(p.Child("profile", "expectedRuntime"))...)
		}
	}
	errs = append(errs, s.validateCombine(p.Child("combine"))...)
	errs = append(errs, validateKernelTargets(p.Child("kernelTargets"), s.KernelTargets)...)
	if len(s.KernelTargets) > 0 && len(s.Fixed.Files) == 0 {
		errs = append(errs, field.Forbidden(p.Child("kernelTargets"), "kernelTargets need their baseline modules listed in fixed.files"))
	}
	required(p.Child("researcher", "command"), s.Researcher.Command, "give the command that starts the Researcher")
	errs = append(errs, validateEnv(p.Child("researcher", "env"), s.Researcher.Env)...)
	if s.Researcher.Timeout != nil {
		errs = append(errs, s.Researcher.Timeout.Validate(p.Child("researcher", "timeout"))...)
	}
	errs = append(errs, validatePodTemplate(p.Child("researcher", "podTemplate"), s.Researcher.PodTemplate, "researcher", true)...)
	errs = append(errs, s.Source.validate(p.Child("source"))...)
	errs = append(errs, s.Workspace.validate(p.Child("workspace"))...)
	errs = append(errs, s.Output.validate(p.Child("output"))...)
	if s.HistoryLimit < 0 || s.HistoryLimit > maxHistoryLimit {
		errs = append(errs, field.Invalid(p.Child("historyLimit"), s.HistoryLimit, fmt.Sprintf("must be between 1 and %d", maxHistoryLimit)))
	}
	return errs
}

func (b *BaselineSpec) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if b.Value != "" {
		errs = append(errs, b.Value.Validate(p.Child("value"))...)
	}
	if b.Runs < 0 || b.Runs > 20 {
		errs = append(errs, field.Invalid(p.Child("runs"), b.Runs, "must be between 1 and 20"))
	}
	return errs
}

// validateFixedCoversNoVariable refuses a fixed pattern that names or
// matches a variable file, or a directory that holds one.
func (s *AutoResearchSpec) validateFixedCoversNoVariable(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, f := range s.Fixed.Files {
		for _, v := range s.Variable.Files {
			if string(f) == string(v) || f.Matches(string(v)) {
				errs = append(errs, field.Invalid(p.Index(i), f, fmt.Sprintf("covers variable file %s, which cannot be both fixed and variable: remove it from fixed.files or variable.files", v)))
				break
			}
		}
	}
	return errs
}

// validateOutputs refuses a training output that is not a clean path or
// that overlaps a fixed or variable file, which the evaluation must run as
// sealed.
func (s *AutoResearchSpec) validateOutputs(p *field.Path) field.ErrorList {
	errs := validatePaths(p, s.Train.Outputs)
	for i, o := range s.Train.Outputs {
		overlaps := func(f string) bool {
			return f == string(o) || strings.HasPrefix(f, string(o)+"/") || strings.HasPrefix(string(o), f+"/")
		}
		for _, f := range s.Fixed.Files {
			if overlaps(strings.TrimSuffix(string(f), "/")) || f.Matches(string(o)) {
				errs = append(errs, field.Invalid(p.Index(i), o, fmt.Sprintf("overlaps fixed %s: the evaluation runs fixed files as sealed, never as training left them", f)))
			}
		}
		for _, v := range s.Variable.Files {
			if overlaps(string(v)) {
				errs = append(errs, field.Invalid(p.Index(i), o, fmt.Sprintf("overlaps variable file %s: the evaluation runs it as sealed, never as training left it", v)))
			}
		}
	}
	return errs
}

func (e *EvalSpec) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !metricNameRE.MatchString(e.Metric) {
		errs = append(errs, field.Invalid(p.Child("metric"), e.Metric, "must be the name the eval command prints the metric under, such as val_bpb: a letter or _, then letters, digits, '_', '.' and '-'"))
	}
	if e.Direction != DirectionMaximize && e.Direction != DirectionMinimize {
		errs = append(errs, field.NotSupported(p.Child("direction"), e.Direction, []Direction{DirectionMaximize, DirectionMinimize}))
	}
	if strings.TrimSpace(e.Command) == "" {
		errs = append(errs, field.Required(p.Child("command"), "must not be blank: give the fixed evaluation command"))
	}
	if e.Pattern != "" {
		// As the metric reader takes it: a group named value, or else
		// exactly one capture group.
		re, err := regexp.Compile(e.Pattern)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(p.Child("pattern"), e.Pattern, "invalid regular expression: "+err.Error()))
		case re.SubexpIndex("value") > 0:
		case re.NumSubexp() == 0:
			errs = append(errs, field.Invalid(p.Child("pattern"), e.Pattern, "needs a capture group around the value, such as val_bpb=([0-9.]+)"))
		case re.NumSubexp() > 1:
			errs = append(errs, field.Invalid(p.Child("pattern"), e.Pattern, fmt.Sprintf("needs a capture group named value, as in (?P<value>[0-9.]+), to say which of its %d groups holds the value", re.NumSubexp())))
		}
	}
	if e.Timeout != nil {
		errs = append(errs, e.Timeout.Validate(p.Child("timeout"))...)
	}
	return append(errs, validateConstraintsOf(p.Child("constraints"), e.Constraints)...)
}

// The rules of spec.output.git.url, as the CRD's CEL rules have them; the
// second holds for spec.source.git.url too.
var (
	gitOutputURLRE      = regexp.MustCompile(`^(https?|ssh)://[^/]+/.|^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/]`)
	gitOutputPasswordRE = regexp.MustCompile(`^[a-z]+://[^/@]*:[^/@]*@`)
)

func (s *SourceSpec) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Git != nil && s.PVC != nil {
		errs = append(errs, field.Forbidden(p, "takes either git or pvc, not both"))
	}
	if g := s.Git; g != nil && gitOutputPasswordRE.MatchString(g.URL) {
		errs = append(errs, field.Invalid(p.Child("git"), "<redacted>", "url must not hold a password or token: the clone keeps its url in a git directory the Researcher reads; put it in the Secret that credentialsSecret names"))
	}
	if s.Subdir != "" {
		errs = append(errs, s.Subdir.Validate(p.Child("subdir"))...)
	}
	return errs
}

func (o *OutputSpec) validate(p *field.Path) field.ErrorList {
	if o == nil {
		return nil
	}
	if o.Git == nil {
		return field.ErrorList{field.Required(p, "set git, or leave output out")}
	}
	var errs field.ErrorList
	g, gp := o.Git, p.Child("git")
	switch {
	case g.URL == "":
		errs = append(errs, field.Required(gp.Child("url"), "the remote repository to push to"))
	case !gitOutputURLRE.MatchString(g.URL):
		errs = append(errs, field.Invalid(gp, g.URL, "url must be an https://, http:// or ssh:// URL, or user@host:path"))
	case gitOutputPasswordRE.MatchString(g.URL):
		errs = append(errs, field.Invalid(gp, "<redacted>", "url must not hold a password or token: put it in the Secret that secretRef names, under the key token"))
	}
	if g.SecretRef != nil && g.SecretRef.Name == "" {
		errs = append(errs, field.Required(gp.Child("secretRef", "name"), "the Secret with the push credentials"))
	}
	return errs
}

func (h *HoldoutSpec) validate(p *field.Path) field.ErrorList {
	if h == nil {
		return nil
	}
	var errs field.ErrorList
	if strings.TrimSpace(h.Command) == "" {
		errs = append(errs, field.Required(p.Child("command"), "the holdout evaluation command"))
	}
	if h.Metric != "" && !metricNameRE.MatchString(h.Metric) {
		errs = append(errs, field.Invalid(p.Child("metric"), h.Metric, "must be the name the holdout command prints its metric under, such as val_bpb: a letter or _, then letters, digits, '_', '.' and '-'"))
	}
	if h.Pattern != "" {
		if re, err := regexp.Compile(h.Pattern); err != nil {
			errs = append(errs, field.Invalid(p.Child("pattern"), h.Pattern, "invalid regular expression: "+err.Error()))
		} else if re.NumSubexp() < 1 {
			errs = append(errs, field.Invalid(p.Child("pattern"), h.Pattern, "needs a capture group around the value"))
		}
	}
	if h.Tolerance != "" {
		errs = append(errs, h.Tolerance.Validate(p.Child("tolerance"))...)
	}
	if !strings.HasPrefix(h.Dir, "/") || len(h.Dir) < 2 {
		errs = append(errs, field.Invalid(p.Child("dir"), h.Dir, "dir must be an absolute path outside the repository"))
	}
	if h.Timeout != nil {
		errs = append(errs, h.Timeout.Validate(p.Child("timeout"))...)
	}
	return append(errs, h.validateVolume(p)...)
}

// holdoutReservedDirs are the paths the holdout's pod uses itself; its
// volume may not be mounted at or under one.
var holdoutReservedDirs = append(slices.Clone(ReservedMountPaths), "/home/autoresearch", "/dev", "/proc", "/sys")

// holdoutMountDirRE is a clean absolute path: no empty, "." or ".."
// segment, no trailing slash.
var holdoutMountDirRE = regexp.MustCompile(`^(/[A-Za-z0-9_][A-Za-z0-9._-]*)+$`)

func (h *HoldoutSpec) validateVolume(p *field.Path) field.ErrorList {
	v := h.Volume
	if v == nil {
		return nil
	}
	var errs field.ErrorList
	set := 0
	for _, ok := range []bool{v.ConfigMap != nil, v.Secret != nil, v.PersistentVolumeClaim != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		errs = append(errs, field.Invalid(p.Child("volume"), "", "set exactly one of configMap, secret and persistentVolumeClaim"))
	}
	reserved := slices.ContainsFunc(holdoutReservedDirs, func(r string) bool { return MountPathsOverlap(h.Dir, r) })
	if !holdoutMountDirRE.MatchString(h.Dir) || reserved {
		errs = append(errs, field.Invalid(p.Child("dir"), h.Dir, "with a volume, dir is where the holdout's pod mounts it: a clean absolute path such as /holdout, not at, under or above "+
			"/workspace, /autoresearch-tools, /autoresearch-holdout, /etc/autoresearch, /etc/autoresearch-hashes, /home/autoresearch, /dev, /proc or /sys, which the pod uses itself"))
	}
	return errs
}

func validateConstraintsOf(p *field.Path, constraints []EvalConstraint) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, c := range constraints {
		cp := p.Index(i)
		if !metricNameRE.MatchString(c.Metric) {
			errs = append(errs, field.Invalid(cp.Child("metric"), c.Metric, "must be the name the eval command prints the reading under, such as memory_gb: a letter or _, then letters, digits, '_', '.' and '-'"))
		}
		if seen[c.Metric] {
			errs = append(errs, field.Duplicate(cp.Child("metric"), c.Metric))
		}
		seen[c.Metric] = true
		if c.Min == "" && c.Max == "" {
			errs = append(errs, field.Required(cp, "set min, max or both"))
		}
		if c.Min != "" {
			errs = append(errs, c.Min.Validate(cp.Child("min"))...)
		}
		if c.Max != "" {
			errs = append(errs, c.Max.Validate(cp.Child("max"))...)
		}
	}
	return errs
}

// workspaceAccessModes are the access modes a workspace claim may ask
// for: the experiment writes its repository there.
var workspaceAccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteMany, corev1.ReadWriteOncePod}

func (w *WorkspaceSpec) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if w.Size != nil && w.Size.Sign() <= 0 {
		errs = append(errs, field.Invalid(p.Child("size"), w.Size.String(), "must be a positive size such as 10Gi"))
	}
	if c := w.StorageClassName; c != nil && len(validation.IsDNS1123Subdomain(*c)) > 0 {
		errs = append(errs, field.Invalid(p.Child("storageClassName"), *c, "must be the name of a StorageClass: lowercase letters, digits, '-' and '.', such as fast-ssd"))
	}
	if r := w.ReclaimPolicy; r != "" && r != ReclaimRetain && r != ReclaimDelete {
		errs = append(errs, field.NotSupported(p.Child("reclaimPolicy"), r, []ReclaimPolicy{ReclaimRetain, ReclaimDelete}))
	}
	for i, m := range w.AccessModes {
		if !slices.Contains(workspaceAccessModes, m) {
			errs = append(errs, field.NotSupported(p.Child("accessModes").Index(i), m, workspaceAccessModes))
		}
	}
	return append(errs, validatePaths(p.Child("caches"), w.Caches)...)
}

// validateEnv refuses a name that a pod would refuse. No CRD rule can: the
// API server cannot bound the cost of one on a name of unbounded length.
func validateEnv(p *field.Path, env []corev1.EnvVar) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		if len(validation.IsRelaxedEnvVarName(e.Name)) > 0 {
			errs = append(errs, field.Invalid(p.Index(i).Child("name"), e.Name, "must be an environment variable name such as WANDB_API_KEY: printable ASCII characters other than '='"))
		}
	}
	return errs
}

// validateTolerations refuses what a pod would refuse, as the CRD rules on
// train.tolerations do.
func validateTolerations(p *field.Path, tolerations []corev1.Toleration) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		switch t.Operator {
		case "", corev1.TolerationOpExists, corev1.TolerationOpEqual:
		default:
			errs = append(errs, field.Invalid(p.Index(i), t.Operator, "operator must be Exists or Equal"))
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.Invalid(p.Index(i), t.Effect, "effect must be NoSchedule, PreferNoSchedule or NoExecute, or empty for all three"))
		}
		if t.Operator == corev1.TolerationOpExists && t.Value != "" {
			errs = append(errs, field.Invalid(p.Index(i), t.Value, "a toleration with operator Exists takes no value"))
		}
	}
	return errs
}

func validateKernelTargets(p *field.Path, targets []KernelTarget) field.ErrorList {
	var errs field.ErrorList
	if len(targets) > maxKernelTargets {
		errs = append(errs, field.TooMany(p, len(targets), maxKernelTargets))
	}
	seen := map[string]bool{}
	for i, k := range targets {
		fp := p.Index(i)
		switch {
		case k.Name == "":
			errs = append(errs, field.Required(fp.Child("name"), "name the kernel"))
		case seen[k.Name]:
			errs = append(errs, field.Duplicate(fp.Child("name"), k.Name))
		}
		seen[k.Name] = true
		errs = append(errs, k.NewModule.Validate(fp.Child("newModule"))...)
		errs = append(errs, k.BaselineModule.Validate(fp.Child("baselineModule"))...)
		errs = append(errs, k.Fixture.Validate(fp.Child("fixture"))...)
		errs = append(errs, k.Atol.Validate(fp.Child("atol"))...)
		errs = append(errs, k.Rtol.Validate(fp.Child("rtol"))...)
	}
	return errs
}

// validateConstraints checks the fixed constraints as their CRD rules do,
// and refuses a blank one, which would tell the Researcher nothing.
func validateConstraints(p *field.Path, constraints []string) field.ErrorList {
	var errs field.ErrorList
	if len(constraints) > maxConstraints {
		errs = append(errs, field.TooMany(p, len(constraints), maxConstraints))
	}
	for i, c := range constraints {
		switch {
		case strings.TrimSpace(c) == "":
			errs = append(errs, field.Required(p.Index(i), "must not be blank: state the constraint in words, or remove the entry"))
		case utf8.RuneCountInString(c) > maxConstraintLength:
			errs = append(errs, field.TooLong(p.Index(i), c, maxConstraintLength))
		}
	}
	return errs
}

func validatePaths(p *field.Path, paths []RelativePath) field.ErrorList {
	var errs field.ErrorList
	for i, f := range paths {
		errs = append(errs, f.Validate(p.Index(i))...)
	}
	return append(errs, duplicates(p, paths)...)
}

// duplicates refuses a value that a list, a set in the CRD, holds twice.
func duplicates[T comparable](p *field.Path, values []T) field.ErrorList {
	var errs field.ErrorList
	seen := map[T]bool{}
	for i, v := range values {
		if seen[v] {
			errs = append(errs, field.Duplicate(p.Index(i), v))
		}
		seen[v] = true
	}
	return errs
}

// Validate checks the decimal as its CRD rule does.
func (d Decimal) Validate(p *field.Path) field.ErrorList {
	if !decimalRE.MatchString(string(d)) {
		return field.ErrorList{field.Invalid(p, d, "must be a finite decimal number such as 0.95 or -1.5e-3, with an exponent of at most two digits")}
	}
	return nil
}

// Validate checks the decimal, when set, as its CRD rule does.
func (d NonNegativeDecimal) Validate(p *field.Path) field.ErrorList {
	if d != "" && (!decimalRE.MatchString(string(d)) || strings.HasPrefix(string(d), "-")) {
		return field.ErrorList{field.Invalid(p, d, "must be a finite non-negative decimal number such as 0.001 or 1e-5, with an exponent of at most two digits")}
	}
	return nil
}

// Validate checks the duration as its CRD rule does.
func (d Duration) Validate(p *field.Path) field.ErrorList {
	if d.Duration < time.Second || d.Duration > MaxDuration {
		return field.ErrorList{field.Invalid(p, d.Duration.String(), "must be a duration from 1s to 168h such as 90s, 5m or 1h30m")}
	}
	return nil
}

// Validate checks the reference as its CRD rule does.
func (f FunctionRef) Validate(p *field.Path) field.ErrorList {
	if !functionRefRE.MatchString(string(f)) {
		return field.ErrorList{field.Invalid(p, f, "must name a function as module:function, such as kernels.attention:flash_forward")}
	}
	return nil
}

// Validate checks the path as its CRD rule does.
func (r RelativePath) Validate(p *field.Path) field.ErrorList {
	s := string(r)
	if s == "" || path.IsAbs(s) || path.Clean(s) != s || s == "." || strings.HasPrefix(s, "../") || s == ".." {
		return field.ErrorList{field.Invalid(p, s, "must be a clean relative path inside the experiment directory, such as train/main.go (no leading /, no . or .. segments, no //)")}
	}
	return nil
}

// Validate checks the pattern as its CRD rule does, and that its glob
// syntax is sound, which no CRD rule can check.
func (r PathPattern) Validate(p *field.Path) field.ErrorList {
	s := string(r)
	dir := strings.TrimSuffix(s, "/")
	if dir == "" || path.IsAbs(s) || path.Clean(dir) != dir || dir == "." || dir == ".." || strings.HasPrefix(dir, "../") {
		return field.ErrorList{field.Invalid(p, s, "must be a clean relative path or glob inside the experiment directory, such as eval.py, eval/ or eval/**/*.py (no leading /, no . or .. segments, no //)")}
	}
	for _, seg := range strings.Split(dir, "/") {
		if strings.Contains(seg, "**") && seg != "**" {
			return field.ErrorList{field.Invalid(p, s, "** must be a whole path segment, such as eval/**/*.py")}
		}
		if _, err := path.Match(seg, ""); err != nil {
			return field.ErrorList{field.Invalid(p, s, `is not a valid glob: close each [ with ] and put a character after each \, such as data/[a-c]*.csv`)}
		}
	}
	return nil
}

// Matches reports whether the slash path rel, relative to the experiment
// directory, is one the pattern names or lies under one.
func (r PathPattern) Matches(rel string) bool {
	pat := strings.Split(strings.TrimSuffix(string(r), "/"), "/")
	segs := strings.Split(rel, "/")
	for n := len(segs); n >= 1; n-- {
		if matchSegments(pat, segs[:n]) {
			return true
		}
	}
	return false
}

func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if matchSegments(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], segs[0]); err != nil || !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// Strings are the values of a list of named strings, such as file paths.
func Strings[T ~string](values []T) []string {
	if values == nil {
		return nil
	}
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// FrozenChanges lists the parts of the protocol that differ from old but
// may not change once an experiment exists, because the baseline and every
// verdict were measured under them. The CRD's transition rules refuse the
// same changes on a cluster.
func (s *AutoResearchSpec) FrozenChanges(old *AutoResearchSpec) []string {
	var changed []string
	for _, f := range []struct {
		path     string
		now, was any
	}{
		{"spec.fixed", s.Fixed, old.Fixed},
		{"spec.train.command", s.Train.Command, old.Train.Command},
		{"spec.train.outputs", s.Train.Outputs, old.Train.Outputs},
		{"spec.eval.command", s.Eval.Command, old.Eval.Command},
		{"spec.eval.metric", s.Eval.Metric, old.Eval.Metric},
		{"spec.eval.direction", s.Eval.Direction, old.Eval.Direction},
		{"spec.eval.pattern", s.Eval.Pattern, old.Eval.Pattern},
		{"spec.baseline", s.Baseline, old.Baseline},
		{"spec.source", s.Source, old.Source},
		{"spec.workspace", s.Workspace, old.Workspace},
		{"spec.holdout", s.Holdout, old.Holdout},
	} {
		if !reflect.DeepEqual(f.now, f.was) {
			changed = append(changed, f.path)
		}
	}
	return changed
}

// ConstraintReadings are the names of the readings eval.constraints limit.
func (e *EvalSpec) ConstraintReadings() []string {
	var names []string
	for _, c := range e.Constraints {
		names = append(names, c.Metric)
	}
	return names
}

// PlateauOrDefault is spec.plateau with its defaults filled in: five rounds,
// Warn.
func (s *AutoResearchSpec) PlateauOrDefault() PlateauSpec {
	p := PlateauSpec{Rounds: 5, Action: PlateauWarn}
	if s.Plateau != nil {
		p.Rounds = cmp.Or(s.Plateau.Rounds, p.Rounds)
		p.Action = cmp.Or(s.Plateau.Action, p.Action)
	}
	return p
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

// ParityTimeout bounds the kernel parity check, one program for every
// target: EvalTimeout for each.
func (s *AutoResearchSpec) ParityTimeout() time.Duration {
	return s.EvalTimeout() * time.Duration(max(1, len(s.KernelTargets)))
}

// HoldoutMetric is the name of the holdout's metric: spec.holdout.metric,
// or eval.metric. "" without a holdout.
func (s *AutoResearchSpec) HoldoutMetric() string {
	if s.Holdout == nil {
		return ""
	}
	return cmp.Or(s.Holdout.Metric, s.Eval.Metric)
}

// HoldoutTimeout bounds the holdout evaluation: spec.holdout.timeout, or
// the evaluation's.
func (s *AutoResearchSpec) HoldoutTimeout() time.Duration {
	if s.Holdout != nil && s.Holdout.Timeout != nil {
		return s.Holdout.Timeout.Duration
	}
	return s.EvalTimeout()
}

// EpochLimitString is the epoch limit as the environment passes it, "" for none.
func (s *AutoResearchSpec) EpochLimitString() string {
	if s.Fixed.EpochLimit == 0 {
		return ""
	}
	return strconv.Itoa(int(s.Fixed.EpochLimit))
}

func (b *BudgetSpec) validate(p *field.Path) field.ErrorList {
	if b == nil {
		return nil
	}
	var errs field.ErrorList
	if b.Deadline == nil && b.GPUHours == "" && b.ResearcherTokens == 0 && b.Cost == "" {
		errs = append(errs, field.Required(p, "set deadline, gpuHours, researcherTokens or cost, or leave budget out"))
	}
	for _, d := range []struct {
		name  string
		value NonNegativeDecimal
	}{{"gpuHours", b.GPUHours}, {"cost", b.Cost}, {"gpuHourPrice", b.GPUHourPrice}} {
		if d.value != "" {
			errs = append(errs, d.value.Validate(p.Child(d.name))...)
		}
	}
	if b.ResearcherTokens < 0 {
		errs = append(errs, field.Invalid(p.Child("researcherTokens"), b.ResearcherTokens, "must be at least 1"))
	}
	return errs
}

func (pl *PlateauSpec) validate(p *field.Path) field.ErrorList {
	if pl == nil {
		return nil
	}
	var errs field.ErrorList
	if pl.Rounds < 0 || pl.Rounds > 10000 {
		errs = append(errs, field.Invalid(p.Child("rounds"), pl.Rounds, "must be between 1 and 10000"))
	}
	if pl.Action != "" && pl.Action != PlateauWarn && pl.Action != PlateauStop {
		errs = append(errs, field.NotSupported(p.Child("action"), pl.Action, []PlateauAction{PlateauWarn, PlateauStop}))
	}
	return errs
}

// validateCombine holds spec.combine to the candidates it needs: two or
// more to combine, and room for one more.
func (s *AutoResearchSpec) validateCombine(p *field.Path) field.ErrorList {
	if s.Combine == nil || !*s.Combine || (s.Candidates >= 2 && s.Candidates <= 15) {
		return nil
	}
	return field.ErrorList{field.Invalid(p, true, "combine needs candidates from 2 to 15: it adds a candidate to a round in which two or more improved")}
}
