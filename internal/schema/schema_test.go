package schema

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
)

// TestOneRuleSet holds the CRD's rules and the Go rules together.
func TestOneRuleSet(t *testing.T) {
	for name, tc := range builder.InvalidProtocols() {
		t.Run(name, func(t *testing.T) {
			spec := builder.MakeAutoResearch("demo", "ns").Edit(tc.Edit).SpecObj()
			schemaErrs := validateSpec(t, spec)
			if !mentions(schemaErrs, tc.Field) || !mentions(schemaErrs, tc.Says) {
				t.Errorf("the CRD's rules: %v; want an error on %s saying %q", schemaErrs, tc.Field, tc.Says)
			}
			if goErrs := spec.Validate(); !mentions(goErrs.ToAggregate(), tc.Field) {
				t.Errorf("the Go rules: %v; want an error on %s", goErrs, tc.Field)
			}
		})
	}
	if errs := validateSpec(t, builder.MakeAutoResearch("demo", "ns").SpecObj()); errs != nil {
		t.Errorf("the valid protocol is refused: %v", errs)
	}
}

// TestFixedPatterns checks that fixed files may be directories and globs,
// and that the CRD's rules and the Go rules refuse the same broken ones;
// only the Go rules match a glob against the variable files.
func TestFixedPatterns(t *testing.T) {
	spec := builder.MakeAutoResearch("demo", "ns").Fixed("eval.py", "eval/", "lib", "data/**/*.csv", "*.go", "data/[a-c]?.txt", `x\[1\].txt`, "trainer/").SpecObj()
	if errs := validateSpec(t, spec); errs != nil {
		t.Errorf("the CRD's rules refuse patterns: %v", errs)
	}
	if errs := spec.Validate(); errs != nil {
		t.Errorf("the Go rules refuse patterns: %v", errs)
	}
	for pattern, tc := range map[string]struct {
		msg    string
		goOnly bool
	}{
		"eval/[a-":   {msg: "is not a valid glob"},
		"eval/[]":    {msg: "is not a valid glob"},
		`eval\`:      {msg: "is not a valid glob"},
		"eval/**x/y": {msg: "** must be a whole path segment"},
		"eval/../x":  {msg: "must be a clean relative path or glob"},
		"eval//x":    {msg: "must be a clean relative path or glob"},
		".":          {msg: "must be a clean relative path or glob"},
		"train.py":   {msg: "cannot be both fixed and variable"},
		"*.py":       {msg: "covers variable file train.py", goOnly: true},
	} {
		t.Run(pattern, func(t *testing.T) {
			spec := builder.MakeAutoResearch("demo", "ns").Fixed(v1alpha1.PathPattern(pattern)).SpecObj()
			if errs := spec.Validate(); !mentions(errs.ToAggregate(), "spec.fixed.files") {
				t.Errorf("the Go rules: %v; want %q refused", errs, pattern)
			}
			errs := validateSpec(t, spec)
			if tc.goOnly {
				if errs != nil {
					t.Errorf("the CRD's rules: %v; want it left to the Go rules", errs)
				}
				return
			}
			if !mentions(errs, "spec.fixed.files") || !mentions(errs, tc.msg) {
				t.Errorf("the CRD's rules: %v; want %q", errs, tc.msg)
			}
		})
	}
}

// TestGlobSyntaxIsOneRule checks the CRD's glob rules against the Go
// rules, which ask path.Match, on many patterns made of the characters
// that matter to a glob.
func TestGlobSyntaxIsOneRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = `ab*?[]^-\/`
	for range 2000 {
		b := make([]byte, 1+rng.IntN(10))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		pattern := v1alpha1.PathPattern(b)
		spec := builder.MakeAutoResearch("demo", "ns").Fixed(pattern).SpecObj()
		schemaErr := validateSpec(t, spec)
		// Which globs match train.py only the Go rules ask.
		goErrs := slices.DeleteFunc(spec.Validate(), func(e *field.Error) bool { return strings.Contains(e.Detail, "covers variable file") })
		if (schemaErr == nil) != (len(goErrs) == 0) {
			t.Errorf("fixed %q: the CRD's rules say %v, the Go rules %v", pattern, schemaErr, goErrs)
		}
	}
}

// TestValidateRefusesWhatTheTypesDo checks what only the schema sees: a
// YAML number where the API wants a decimal string.
func TestValidateRefusesWhatTheTypesDo(t *testing.T) {
	obj := objectOf(t, builder.MakeAutoResearch("demo", "ns").SpecObj())
	obj["spec"].(map[string]any)["target"] = 1.0
	errs, err := Validate(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	if !mentions(errs.ToAggregate(), `spec.target: Invalid value: "number": spec.target in body must be of type string`) {
		t.Errorf("errors %v; want a float target refused as the API server refuses it", errs)
	}
}

// TestDefaultSpec checks the defaults the markers give, applied without an
// API server.
func TestDefaultSpec(t *testing.T) {
	spec := builder.MakeAutoResearch("demo", "ns").Edit(func(s *v1alpha1.AutoResearchSpec) {
		s.Baseline = &v1alpha1.BaselineSpec{}
		s.Train.GPUs = ptr(int32(0))
		s.KernelTargets = []v1alpha1.KernelTarget{{Name: "k", NewModule: "m:f", BaselineModule: "r:f", Fixture: "r:x"}}
	}).SpecObj()
	if err := DefaultSpec(spec); err != nil {
		t.Fatal(err)
	}
	type defaults struct {
		PlateauRounds, HistoryLimit, BaselineRuns, GPUs int32
		MinDelta, NoiseFactor, Atol, Rtol               v1alpha1.NonNegativeDecimal
	}
	want := defaults{5, 20, 1, 0, "0", "2", "1e-5", "1.3e-6"}
	got := defaults{spec.Plateau.Rounds, spec.HistoryLimit, spec.Baseline.Runs, *spec.Train.GPUs,
		spec.Acceptance.MinDelta, spec.Acceptance.NoiseFactor, spec.KernelTargets[0].Atol, spec.KernelTargets[0].Rtol}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	omitted := map[string]any{}
	if err := yaml.Unmarshal([]byte("spec: {train: {command: x}}"), &omitted); err != nil {
		t.Fatal(err)
	}
	if err := Default(omitted); err != nil {
		t.Fatal(err)
	}
	if gpus := omitted["spec"].(map[string]any)["train"].(map[string]any)["gpus"]; gpus != int64(1) {
		t.Errorf("train.gpus omitted defaults to %v (%T), want 1", gpus, gpus)
	}
}

func validateSpec(t *testing.T, spec *v1alpha1.AutoResearchSpec) error {
	t.Helper()
	errs, err := Validate(context.Background(), objectOf(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	return errs.ToAggregate()
}

func objectOf(t *testing.T, spec *v1alpha1.AutoResearchSpec) map[string]any {
	t.Helper()
	ar := builder.MakeAutoResearch("demo", "ns").Obj()
	ar.Spec = *spec
	data, err := json.Marshal(ar)
	if err != nil {
		t.Fatal(err)
	}
	// Integers as int64, as the API server decodes them.
	var obj map[string]any
	if err := utiljson.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	delete(obj, "status")
	return obj
}

func mentions(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

func ptr[T any](v T) *T { return &v }

// TestValidateRefusesALongName: the CRD's rule on metadata.name holds
// without an API server too.
func TestValidateRefusesALongName(t *testing.T) {
	obj := objectOf(t, builder.MakeAutoResearch("demo", "ns").SpecObj())
	obj["metadata"].(map[string]any)["name"] = strings.Repeat("a", 41)
	errs, err := Validate(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	if !mentions(errs.ToAggregate(), "metadata.name must be at most 40 characters") {
		t.Errorf("errors %v; want the long name refused", errs)
	}
}

// TestMetricPatterns holds the CRD's rules on eval.pattern and the Go
// rules together: a pattern that is no regular expression, or that has no
// capture group, is refused by both. Only the Go rules count the groups
// exactly; the engine refuses what they alone find before anything runs.
func TestMetricPatterns(t *testing.T) {
	const (
		both   = "both"
		goOnly = "Go only"
		none   = ""
	)
	for pattern, refused := range map[string]string{
		`val_bpb=([0-9.]+)`:                none,
		`(?P<value>[0-9.]+)`:               none,
		`(?<value>[0-9.]+)`:                none,
		`(?i)val_bpb: ([0-9.]+)`:           none,
		`(?:loss|bpb)=([0-9.]+)`:           none,
		`\\([0-9.]+)`:                      none,
		`(?P<name>\w+)=(?P<value>[0-9.]+)`: none,
		`val_bpb: [0-9.]+`:                 both,
		`(?:val_bpb): [0-9.]+`:             both,
		`\(val_bpb\) [0-9.]+`:              both,
		`val_bpb ([0-9.`:                   both,
		`val_bpb [0-9.]+)`:                 both,
		`val_bpb=(?P<value[0-9.]+)`:        both,
		`(val|test)_bpb: ([0-9.]+)`:        goOnly,
		`[(]val_bpb[)] [0-9.]+`:            goOnly,
	} {
		t.Run(pattern, func(t *testing.T) {
			spec := builder.MakeAutoResearch("demo", "ns").Edit(func(s *v1alpha1.AutoResearchSpec) { s.Eval.Pattern = pattern }).SpecObj()
			schemaErr := validateSpec(t, spec)
			goErr := spec.Validate().ToAggregate()
			if got, want := mentions(schemaErr, "spec.eval.pattern"), refused == both; got != want {
				t.Errorf("the CRD's rules: %v; want refused: %v", schemaErr, want)
			}
			if got, want := mentions(goErr, "spec.eval.pattern"), refused != none; got != want {
				t.Errorf("the Go rules: %v; want refused: %v", goErr, want)
			}
			if mentions(schemaErr, "evaluating rule") && !mentions(schemaErr, "must be a regular expression") {
				t.Errorf("the CRD's rules: %v; want the rule's message with the parser's error", schemaErr)
			}
		})
	}
}

// The remotes spec.output.git takes, in both rule sets.
func TestGitOutputURLs(t *testing.T) {
	for _, url := range []string{
		"https://github.com/org/results.git", "http://127.0.0.1:8080/git/results.git",
		"ssh://git@github.com:22/org/results.git", "git@github.com:org/results.git", "https://bot@gitlab.example.com/org/results",
	} {
		spec := builder.MakeAutoResearch("demo", "ns").Edit(func(s *v1alpha1.AutoResearchSpec) {
			s.Output = &v1alpha1.OutputSpec{Git: &v1alpha1.GitOutput{URL: url, SecretRef: &v1alpha1.SecretReference{Name: "push"}, Candidates: ptr(true)}}
		}).SpecObj()
		if errs := validateSpec(t, spec); errs != nil {
			t.Errorf("the CRD's rules refuse %s: %v", url, errs)
		}
		if errs := spec.Validate(); errs != nil {
			t.Errorf("the Go rules refuse %s: %v", url, errs)
		}
	}
}
