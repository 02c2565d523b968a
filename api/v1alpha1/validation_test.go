package v1alpha1_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
)

func TestTimeouts(t *testing.T) {
	s := builder.MakeAutoResearch("demo", "").TimeLimit(time.Minute).SpecObj()
	if got := s.ResearcherTimeout(); got != 2*time.Minute {
		t.Errorf("researcher timeout %s, want twice the time limit", got)
	}
	if got := s.EvalTimeout(); got != time.Minute {
		t.Errorf("eval timeout %s, want the time limit", got)
	}
	if s.EpochLimitString() != "" {
		t.Errorf("epoch limit %q, want none", s.EpochLimitString())
	}
	s.Fixed.EpochLimit = 3
	s.Eval.Timeout = &v1alpha1.Duration{Duration: time.Hour}
	if s.EpochLimitString() != "3" || s.EvalTimeout() != time.Hour {
		t.Errorf("epoch limit %q, eval timeout %s; want 3 and 1h", s.EpochLimitString(), s.EvalTimeout())
	}
}

// TestValidateRulesNoCRDRuleStates checks the rules only Validate states,
// which the engine runs before anything else: the CRD refuses none of these.
func TestValidateRulesNoCRDRuleStates(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*v1alpha1.AutoResearchSpec)
		want string
	}{
		"a glob over a variable file": {
			func(s *v1alpha1.AutoResearchSpec) { s.Fixed.Files = []v1alpha1.PathPattern{"*.py"} },
			`spec.fixed.files[0]: Invalid value: "*.py": covers variable file train.py, which cannot be both fixed and variable`,
		},
		"two groups, none named value": {
			func(s *v1alpha1.AutoResearchSpec) { s.Eval.Pattern = `(val|test)_bpb=([0-9.]+)` },
			"spec.eval.pattern: Invalid value: \"(val|test)_bpb=([0-9.]+)\": needs a capture group named value, as in (?P<value>[0-9.]+), to say which of its 2 groups holds the value",
		},
		"an env name with =": {
			func(s *v1alpha1.AutoResearchSpec) { s.Train.Env = []corev1.EnvVar{{Name: "WANDB_MODE=offline"}} },
			`spec.train.env[0].name: Invalid value: "WANDB_MODE=offline": must be an environment variable name`,
		},
		"an empty env name": {
			func(s *v1alpha1.AutoResearchSpec) { s.Researcher.Env = []corev1.EnvVar{{Value: "sk-1"}} },
			`spec.researcher.env[0].name: Invalid value: "": must be an environment variable name`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			errs := builder.MakeAutoResearch("demo", "").Edit(tc.edit).SpecObj().Validate()
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Errorf("Validate: %v; want one error saying %q", errs, tc.want)
			}
		})
	}
}
