package round

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// confirmRuns asks spec.acceptance.confirmRuns of n.
func confirmRuns(n int32) func(*v1alpha1.AutoResearchSpec) {
	return func(s *v1alpha1.AutoResearchSpec) { s.Acceptance.ConfirmRuns = ptr.To(n) }
}

// TestConfirmRuns checks that an improving candidate is measured again
// before it counts, judged on the mean of its runs, or its first where that
// is worse, with their spread, and that a candidate that does not improve on
// its first run is judged at once.
func TestConfirmRuns(t *testing.T) {
	cases := map[string]struct {
		runs        []string
		wantVerdict v1alpha1.Verdict
		wantValue   string
		wantInsight string
	}{
		"a first run that does not improve is judged at once": {
			runs: []string{"1.1"}, wantVerdict: v1alpha1.VerdictNotImproved, wantValue: "1.1",
		},
		"runs that hold the improvement commit it at their mean": {
			runs: []string{"0.9", "0.92", "0.91"}, wantVerdict: v1alpha1.VerdictImproved, wantValue: "0.91",
			wantInsight: "3 runs: 0.9, 0.92, 0.91; stddev 0.01",
		},
		"a lucky first run that the others do not repeat is rolled back": {
			runs: []string{"0.5", "1.2", "1.3"}, wantVerdict: v1alpha1.VerdictNotImproved, wantValue: "1",
			wantInsight: "3 runs: 0.5, 1.2, 1.3",
		},
		"runs after the first do not raise the value above it": {
			runs: []string{"0.9", "0.88", "0.86"}, wantVerdict: v1alpha1.VerdictImproved, wantValue: "0.9",
			wantInsight: "3 runs: 0.9, 0.88, 0.86; stddev 0.02",
		},
		"runs that spread wider than their gain are noise": {
			runs: []string{"0.9", "0.7", "1.1"}, wantVerdict: v1alpha1.VerdictWithinNoise, wantValue: "0.9",
			wantInsight: "the larger of the baseline's and the candidate's stddev",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline, confirmRuns(2))
			d.start()
			d.advanceTo(v1alpha1.StepEval)
			var acts []Action
			for i, v := range tc.runs {
				if i > 0 {
					train := waitedActions(d.next(tick()))
					if len(train) != 1 || train[0].Type != ActionRunTrain || train[0].Sample != int32(i+1) {
						t.Fatalf("run %d: actions %v, want training of sample %d", i+1, train, i+1)
					}
					evals := waitedActions(d.next(trained(1)))
					if len(evals) != 1 || evals[0].Type != ActionRunEval || evals[0].Sample != int32(i+1) || evals[0].Code != train[0].Code {
						t.Fatalf("run %d trained: actions %v, want evaluation of sample %d of the same code", i+1, evals, i+1)
					}
				}
				acts = waitedActions(d.next(evaluated(1, v)))
			}
			if len(acts) != 1 || (acts[0].Type != ActionCommit && acts[0].Type != ActionRollback) {
				t.Fatalf("after %d runs: actions %v, want the git step", len(tc.runs), acts)
			}
			c := d.st.CurrentRound.Candidates[0]
			if c.Verdict != tc.wantVerdict || c.Value != tc.wantValue || !strings.Contains(c.Insight, tc.wantInsight) {
				t.Errorf("verdict %s at %s: %s; want %s at %s, saying %q", c.Verdict, c.Value, c.Insight, tc.wantVerdict, tc.wantValue, tc.wantInsight)
			}
			if want := tc.wantVerdict == v1alpha1.VerdictImproved; (acts[0].Type == ActionCommit) != want {
				t.Errorf("git action %s for verdict %s", acts[0].Type, c.Verdict)
			}
		})
	}
}

// TestConfirmRunsOfOneCandidateOfSeveral checks that in a round of two, only
// the improving candidate runs again, under its own name and sample, while
// the other waits for the git step.
func TestConfirmRunsOfOneCandidateOfSeveral(t *testing.T) {
	d := newDriver(t, givenBaseline, confirmRuns(1), func(s *v1alpha1.AutoResearchSpec) { s.Candidates = 2 })
	d.start()
	for _, step := range []v1alpha1.Step{v1alpha1.StepResearcher, v1alpha1.StepCompliance, v1alpha1.StepTrain} {
		d.next(candidateObs(1, 0, step, outcome{}))
		d.next(candidateObs(1, 1, step, outcome{}))
	}
	d.next(candidateObs(1, 1, v1alpha1.StepEval, outcome{value: "1.2"}))
	acts := waitedActions(d.next(candidateObs(1, 0, v1alpha1.StepEval, outcome{value: "0.8"})))
	if len(acts) != 1 || acts[0].Type != ActionRunTrain || acts[0].Candidate != 0 || acts[0].Sample != 2 || acts[0].Candidates != 2 {
		t.Fatalf("candidate a improved: actions %v, want its training again as sample 2", acts)
	}
	if resumed := waitedActions(CurrentActions(d.spec, &d.st)); len(resumed) != 1 || resumed[0].Sample != 2 || resumed[0].Candidate != 0 {
		t.Errorf("an adapter that lost the action rebuilds %v, want candidate a's sample 2", resumed)
	}
	d.next(candidateObs(1, 0, v1alpha1.StepTrain, outcome{}))
	acts = waitedActions(d.next(candidateObs(1, 0, v1alpha1.StepEval, outcome{value: "0.84"})))
	if len(acts) != 1 || acts[0].Type != ActionCommit {
		t.Fatalf("candidate a confirmed: actions %v, want the commit", acts)
	}
	a, b := d.st.CurrentRound.Candidates[0], d.st.CurrentRound.Candidates[1]
	if a.Verdict != v1alpha1.VerdictImproved || a.Value != "0.82" || b.Verdict != v1alpha1.VerdictNotImproved || len(b.Values) != 0 {
		t.Errorf("candidates a %s at %s (%v), b %s at %s (%v); want a improved at the mean 0.82, b not improved on its one run",
			a.Verdict, a.Value, a.Values, b.Verdict, b.Value, b.Values)
	}
}

// waitedActions leaves out the actions that only tell the human.
func waitedActions(acts []Action) []Action {
	var out []Action
	for _, a := range acts {
		if waitedFor(a) == 1 {
			out = append(out, a)
		}
	}
	return out
}
