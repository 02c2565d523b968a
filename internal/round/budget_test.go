package round

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// TestNextBudget stops the loop before a round that would go past a budget,
// says which and how much is used, and goes on when the budget is raised.
// Every round here uses 150 s of one GPU for training and evaluation each
// (see the driver), and the baseline is given: its preflight run counts.
func TestNextBudget(t *testing.T) {
	type view struct {
		Phase   v1alpha1.Phase
		Round   int32
		Message string
		Reason  string
		Budget  []string
	}
	researcher := func(n int32, u v1alpha1.Usage) Observation {
		return Observation{Kind: ObserveResearcherFinished, Round: n, Researcher: &ResearcherResult{Strategy: "s", Usage: u}}
	}
	// rounds plays n rounds that do not improve, each Researcher reporting
	// 1000 tokens and $0.50.
	rounds := func(n int) func(*driver) {
		return func(d *driver) {
			for i := 0; i < n; i++ {
				r := d.current()
				d.next(researcher(r, v1alpha1.Usage{InputTokens: 800, OutputTokens: 200, Cost: "0.5"}))
				d.round("1.1")
			}
		}
	}
	cases := map[string]struct {
		budget v1alpha1.BudgetSpec
		play   func(*driver)
		raise  func(*v1alpha1.BudgetSpec)
		want   view
	}{
		"GPU hours: the next round would go past them": {
			// Three GPU runs of 150 s: 0.125 h used, 0.0417 h a round.
			budget: v1alpha1.BudgetSpec{GPUHours: "0.15"},
			play:   rounds(2),
			want: view{
				Phase: v1alpha1.PhaseSucceeded, Round: 2, Reason: v1alpha1.ReasonBudgetExhausted,
				Message: "done: budget gpuHours exhausted: 0.125 of 0.15 GPU-hours used, and a round uses 0.04167 on average, after 2/10 rounds; best val_bpb=1.0 (R0)",
				Budget:  []string{"gpuHours: 0.125 of 0.15 GPU-hours used"},
			},
		},
		"GPU hours left for a round: the loop goes on": {
			budget: v1alpha1.BudgetSpec{GPUHours: "0.17"},
			play:   rounds(2),
			want: view{
				Phase: v1alpha1.PhaseRunning, Round: 3, Message: "R3 S1: Researcher — improve val_bpb on train.py",
				Budget: []string{"gpuHours: 0.125 of 0.17 GPU-hours used"},
			},
		},
		"researcher tokens": {
			budget: v1alpha1.BudgetSpec{ResearcherTokens: 2500},
			play:   rounds(2),
			want: view{
				Phase: v1alpha1.PhaseSucceeded, Round: 2, Reason: v1alpha1.ReasonBudgetExhausted,
				Message: "done: budget researcherTokens exhausted: 2000 of 2500 tokens used, and a round uses 1000 on average, after 2/10 rounds; best val_bpb=1.0 (R0)",
				Budget:  []string{"researcherTokens: 2000 of 2500 tokens used"},
			},
		},
		"cost counts the GPU at its price": {
			// $1 of Researchers and 0.125 GPU-hours at $4: $1.50 used,
			// $0.6667 a round.
			budget: v1alpha1.BudgetSpec{Cost: "2", GPUHourPrice: "4"},
			play:   rounds(2),
			want: view{
				Phase: v1alpha1.PhaseSucceeded, Round: 2, Reason: v1alpha1.ReasonBudgetExhausted,
				Message: "done: budget cost exhausted: 1.5 of 2 US dollars used, and a round uses 0.6667 on average, after 2/10 rounds; best val_bpb=1.0 (R0)",
				Budget:  []string{"cost: 1.5 of 2 US dollars used"},
			},
		},
		"deadline: no round starts that would end after it": {
			// The driver's clock moves a minute per observation: the
			// baseline's verdict comes at minute 3, a round takes five,
			// and round 2's ends at minute 13.
			budget: v1alpha1.BudgetSpec{Deadline: &metav1.Time{Time: t0.Add(17 * time.Minute)}},
			play:   rounds(2),
			want: view{
				Phase: v1alpha1.PhaseSucceeded, Round: 2, Reason: v1alpha1.ReasonBudgetExhausted,
				Message: "done: budget deadline reached: a round takes 5m0s on average, and the deadline 2025-03-01T09:17:00Z is 4m0s away, after 2/10 rounds; best val_bpb=1.0 (R0)",
				Budget:  []string{"deadline: 2025-03-01T09:17:00Z"},
			},
		},
		"a raised budget continues the experiment": {
			budget: v1alpha1.BudgetSpec{GPUHours: "0.15"},
			play:   rounds(2),
			raise:  func(b *v1alpha1.BudgetSpec) { b.GPUHours = "1" },
			want: view{
				Phase: v1alpha1.PhaseRunning, Round: 3, Message: "R3 S1: Researcher — improve val_bpb on train.py",
				Budget: []string{"gpuHours: 0.125 of 1 GPU-hours used"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline)
			one := int32(1)
			d.spec.Train.GPUs = &one
			d.spec.Budget = &tc.budget
			d.start()
			tc.play(d)
			if tc.raise != nil {
				tc.raise(d.spec.Budget)
			}
			d.next(tick())
			st := d.st
			got := view{Phase: st.Phase, Round: st.Round, Message: st.Message, Budget: st.Usage.Budget}
			if c := conditions(st, v1alpha1.ConditionSucceeded)[v1alpha1.ConditionSucceeded]; st.Phase == v1alpha1.PhaseSucceeded {
				got.Reason = c[len("True/"):]
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// TestABudgetStopsATotalThatIsNoNumber: a total cost that is no number, as
// a status written before the Researchers' reports were checked may hold,
// stops the loop rather than pass every comparison.
func TestABudgetStopsATotalThatIsNoNumber(t *testing.T) {
	spec := &v1alpha1.AutoResearchSpec{Budget: &v1alpha1.BudgetSpec{Cost: "1"}}
	st := &v1alpha1.AutoResearchStatus{Usage: v1alpha1.Usage{Cost: "NaN"}}
	if got := budgetExhausted(spec, st, time.Now()); !strings.HasPrefix(got, "budget cost exhausted") {
		t.Errorf("budgetExhausted = %q, want the cost budget exhausted", got)
	}
}
