package v1alpha1

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validSpec() AutoResearchSpec {
	return AutoResearchSpec{
		ResearchQuestion: "Does a schedule help?",
		MaxRounds:        3,
		Fixed:            FixedSpec{Files: []string{"eval.py"}, TimeLimit: metav1.Duration{Duration: time.Minute}},
		Variable:         VariableSpec{Files: []string{"train.py"}},
		Train:            TrainSpec{Command: "python train.py"},
		Eval:             EvalSpec{Metric: "val_bpb", Direction: DirectionMinimize, Command: "python eval.py"},
		Researcher:       ResearcherSpec{Command: "agent"},
	}
}

// Validate applies, without an API server, the rules the CRD enforces; the
// controller tests check the CRD's side with the same inputs.
func TestValidate(t *testing.T) {
	cases := map[string]struct {
		edit func(*AutoResearchSpec)
		want string
	}{
		"valid":                 {func(*AutoResearchSpec) {}, ""},
		"missing question":      {func(s *AutoResearchSpec) { s.ResearchQuestion = " " }, "spec.researchQuestion: required"},
		"maxRounds zero":        {func(s *AutoResearchSpec) { s.MaxRounds = 0 }, "spec.maxRounds: must be at least 1"},
		"bad target":            {func(s *AutoResearchSpec) { s.Target = ptr("low") }, "spec.target: must be a decimal number"},
		"bad baseline":          {func(s *AutoResearchSpec) { s.Baseline = &BaselineSpec{Value: "1,5"} }, "spec.baseline.value"},
		"negative noise factor": {func(s *AutoResearchSpec) { s.Acceptance.NoiseFactor = "-1" }, "spec.acceptance.noiseFactor"},
		"short time limit":      {func(s *AutoResearchSpec) { s.Fixed.TimeLimit.Duration = time.Millisecond }, "spec.fixed.timeLimit"},
		"no variable files":     {func(s *AutoResearchSpec) { s.Variable.Files = nil }, "spec.variable.files: required"},
		"absolute path":         {func(s *AutoResearchSpec) { s.Fixed.Files = []string{"/etc/passwd"} }, "must be a relative path"},
		"escaping path":         {func(s *AutoResearchSpec) { s.Variable.Files = []string{"../x.py"} }, "must be a relative path"},
		"fixed and variable":    {func(s *AutoResearchSpec) { s.Variable.Files = []string{"./eval.py"} }, "is both fixed and variable"},
		"no train command":      {func(s *AutoResearchSpec) { s.Train.Command = "" }, "spec.train.command: required"},
		"negative GPUs":         {func(s *AutoResearchSpec) { s.Train.GPUs = -1 }, "spec.train.gpus"},
		"bad metric":            {func(s *AutoResearchSpec) { s.Eval.Metric = "val bpb" }, "spec.eval.metric"},
		"bad direction":         {func(s *AutoResearchSpec) { s.Eval.Direction = "up" }, `must be maximize or minimize, got "up"`},
		"pattern without group": {func(s *AutoResearchSpec) { s.Eval.Pattern = `bpb \d+` }, "needs a capture group"},
		"broken pattern":        {func(s *AutoResearchSpec) { s.Eval.Pattern = `(` }, "invalid regular expression"},
		"no researcher":         {func(s *AutoResearchSpec) { s.Researcher.Command = "" }, "spec.researcher.command: required"},
		"empty profile":         {func(s *AutoResearchSpec) { s.Profile = &ProfileSpec{} }, "spec.profile.command"},
		"kernel module": {func(s *AutoResearchSpec) {
			s.KernelTargets = []KernelTarget{{Name: "k", NewModule: "m", BaselineModule: "r:f", Fixture: "r:x"}}
		}, "newModule: must look like module:function"},
		"duplicate kernel": {func(s *AutoResearchSpec) {
			s.KernelTargets = []KernelTarget{{Name: "k", NewModule: "m:f", BaselineModule: "r:f", Fixture: "r:x"}, {Name: "k", NewModule: "m:f", BaselineModule: "r:f", Fixture: "r:x"}}
		}, "must be set and unique"},
		"git and pvc": {func(s *AutoResearchSpec) {
			s.Source = SourceSpec{Git: &GitSource{URL: "u"}, PVC: &PVCSource{ClaimName: "c"}}
		}, "either git or pvc"},
		"several errors at once":     {func(s *AutoResearchSpec) { s.MaxRounds = 0; s.Eval.Direction = "" }, "spec.eval.direction"},
		"researcher timeout too low": {func(s *AutoResearchSpec) { s.Researcher.Timeout = &metav1.Duration{Duration: time.Millisecond} }, "spec.researcher.timeout"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := validSpec()
			tc.edit(&s)
			err := s.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestDefaultsAndTimeouts(t *testing.T) {
	s := validSpec()
	s.Baseline = &BaselineSpec{}
	s.KernelTargets = []KernelTarget{{Name: "k"}}
	s.Default()
	if s.PlateauRounds != 5 || s.HistoryLimit != 20 || s.Acceptance.MinDelta != "0" || s.Acceptance.NoiseFactor != "2" ||
		s.Baseline.Runs != 1 || s.KernelTargets[0].Atol != "1e-5" || s.KernelTargets[0].Rtol != "1.3e-6" {
		t.Errorf("defaults not applied: %+v", s)
	}
	if got := s.ResearcherTimeout(); got != 2*time.Minute {
		t.Errorf("researcher timeout %s, want twice the time limit", got)
	}
	if got := s.EvalTimeout(); got != time.Minute {
		t.Errorf("eval timeout %s, want the time limit", got)
	}
	if s.EpochLimitString() != "" {
		t.Errorf("epoch limit %q, want none", s.EpochLimitString())
	}
}

func ptr[T any](v T) *T { return &v }
