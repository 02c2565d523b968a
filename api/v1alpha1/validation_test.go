package v1alpha1_test

import (
	"testing"
	"time"

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
