package round

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/prompt"
)

const (
	holdoutDir     = "/srv/secret-holdout-7f3a"
	holdoutCommand = "./score-holdout.sh --split q7"
	// holdoutBest is the baseline's holdout value: no other number of the
	// tests' rounds has these digits.
	holdoutBest = "0.4321"
)

func withHoldout(tolerance string) func(*v1alpha1.AutoResearchSpec) {
	return func(s *v1alpha1.AutoResearchSpec) {
		s.Holdout = &v1alpha1.HoldoutSpec{Command: holdoutCommand, Dir: holdoutDir, Tolerance: v1alpha1.NonNegativeDecimal(tolerance)}
	}
}

func holdout(n int32, r HoldoutResult) Observation {
	return Observation{Kind: ObserveHoldoutFinished, Round: n, Holdout: &r}
}

func holdoutValue(n int32, value string) Observation {
	return holdout(n, HoldoutResult{Exit: ProcessExit{Duration: evalTime}, Found: true, Value: value})
}

// holdoutStarted measures round 0 and its holdout (holdoutBest), and
// brings round 1 to its evaluation.
func holdoutStarted(t *testing.T, mutate ...func(*v1alpha1.AutoResearchSpec)) *driver {
	t.Helper()
	d := newDriver(t, append([]func(*v1alpha1.AutoResearchSpec){withHoldout("0.01")}, mutate...)...)
	preflightTrained(d)
	acts := d.next(evaluated(0, "1.0"))
	want := []Action{{Type: ActionRunHoldout, Round: 0, Sample: 1, BaseCommit: startCommit, Code: startCommit}}
	if diff := cmp.Diff(want, acts, ignoreTasks); diff != "" {
		t.Fatalf("after the baseline's evaluation (-want +got):\n%s", diff)
	}
	acts = d.next(holdoutValue(0, holdoutBest))
	if len(acts) == 0 || acts[len(acts)-1].Type != ActionRunResearcher {
		t.Fatalf("after the baseline's holdout: %+v, want round 1's Researcher", acts)
	}
	if h := d.st.Holdout; h == nil || h.Best != holdoutBest || h.BestRound != 0 {
		t.Fatalf("status.holdout %+v, want the baseline's %s as the best", h, holdoutBest)
	}
	if b := d.st.Best; b == nil || b.Value != "1" {
		t.Fatalf("best %+v, want the baseline's evaluation 1", b)
	}
	d.advanceTo(v1alpha1.StepEval)
	return d
}

// TestHoldoutVerdicts: a candidate the evaluation judges improved is held
// to the peak, the best holdout value kept code has measured; one worse
// than it by more than the tolerance is overfit and rolled back.
func TestHoldoutVerdicts(t *testing.T) {
	rollback := ActionRollback
	commit := ActionCommit
	cases := map[string]struct {
		spec     func(*v1alpha1.AutoResearchSpec)
		eval     string
		holdout  *HoldoutResult
		verdict  v1alpha1.Verdict
		insight  string
		action   ActionType
		best     string
		readings []v1alpha1.HoldoutReading
	}{
		"a holdout worse than the peak by more than the tolerance is overfit": {
			eval: "0.9", holdout: &HoldoutResult{Found: true, Value: "0.4432"},
			verdict: v1alpha1.VerdictOverfit, insight: overfitInsight, action: rollback, best: holdoutBest,
			readings: []v1alpha1.HoldoutReading{{Round: 0, Value: holdoutBest, Verdict: v1alpha1.VerdictBaseline}, {Round: 1, Value: "0.4432", Verdict: v1alpha1.VerdictOverfit}},
		},
		"a holdout worse by exactly the tolerance is no overfit": {
			eval: "0.9", holdout: &HoldoutResult{Found: true, Value: "0.4421"},
			verdict: v1alpha1.VerdictImproved, insight: "val_bpb improved from 1 (R0) by 0.1", action: commit, best: "0.4421",
			readings: []v1alpha1.HoldoutReading{{Round: 0, Value: holdoutBest, Verdict: v1alpha1.VerdictBaseline}, {Round: 1, Value: "0.4421", Verdict: v1alpha1.VerdictImproved}},
		},
		"a better holdout confirms the improvement": {
			eval: "0.9", holdout: &HoldoutResult{Found: true, Value: "0.4"},
			verdict: v1alpha1.VerdictImproved, insight: "val_bpb improved from 1 (R0) by 0.1", action: commit, best: "0.4",
			readings: []v1alpha1.HoldoutReading{{Round: 0, Value: holdoutBest, Verdict: v1alpha1.VerdictBaseline}, {Round: 1, Value: "0.4", Verdict: v1alpha1.VerdictImproved}},
		},
		"with maximize, a lower holdout is worse": {
			spec: func(s *v1alpha1.AutoResearchSpec) { s.Eval.Direction = v1alpha1.DirectionMaximize },
			eval: "1.1", holdout: &HoldoutResult{Found: true, Value: "0.4"},
			verdict: v1alpha1.VerdictOverfit, insight: overfitInsight, action: rollback, best: holdoutBest,
			readings: []v1alpha1.HoldoutReading{{Round: 0, Value: holdoutBest, Verdict: v1alpha1.VerdictBaseline}, {Round: 1, Value: "0.4", Verdict: v1alpha1.VerdictOverfit}},
		},
		"a holdout command that fails fails the candidate without its output": {
			eval: "0.9", holdout: &HoldoutResult{Exit: ProcessExit{ExitCode: 3, Tail: "secret rows of " + holdoutDir}},
			verdict: v1alpha1.VerdictEvalFailed, action: rollback, best: holdoutBest,
			insight:  "the hidden holdout evaluation of the candidate failed, so the improvement cannot be confirmed; rolled back",
			readings: []v1alpha1.HoldoutReading{{Round: 0, Value: holdoutBest, Verdict: v1alpha1.VerdictBaseline}, {Round: 1, Value: "—", Verdict: v1alpha1.VerdictEvalFailed}},
		},
		"a holdout that prints no metric fails the candidate": {
			eval: "0.9", holdout: &HoldoutResult{},
			verdict: v1alpha1.VerdictEvalFailed, action: rollback, best: holdoutBest,
			insight:  "the hidden holdout evaluation of the candidate failed, so the improvement cannot be confirmed; rolled back",
			readings: []v1alpha1.HoldoutReading{{Round: 0, Value: holdoutBest, Verdict: v1alpha1.VerdictBaseline}, {Round: 1, Value: "—", Verdict: v1alpha1.VerdictEvalFailed}},
		},
		"a candidate that is not improved never runs the holdout": {
			eval: "1.2", verdict: v1alpha1.VerdictNotImproved, action: rollback, best: holdoutBest,
			insight:  "val_bpb=1.2 is no better than the best 1 (R0); the change did not help",
			readings: []v1alpha1.HoldoutReading{{Round: 0, Value: holdoutBest, Verdict: v1alpha1.VerdictBaseline}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var mutate []func(*v1alpha1.AutoResearchSpec)
			if tc.spec != nil {
				mutate = append(mutate, tc.spec)
			}
			d := holdoutStarted(t, mutate...)
			acts := d.next(evaluated(1, tc.eval))
			if tc.holdout != nil {
				if len(acts) != 1 || acts[0].Type != ActionRunHoldout || acts[0].Round != 1 || acts[0].Code != d.st.CurrentRound.BaseCommit {
					t.Fatalf("after the evaluation: %+v, want the holdout of the candidate", acts)
				}
				if d.st.CurrentRound.Candidates[0].Verdict != "" {
					t.Fatalf("verdict %q before the holdout", d.st.CurrentRound.Candidates[0].Verdict)
				}
				acts = d.next(holdout(1, *tc.holdout))
			}
			if len(acts) != 1 || acts[0].Type != tc.action {
				t.Fatalf("actions %+v, want %s", acts, tc.action)
			}
			c := d.st.CurrentRound.Candidates[0]
			if c.Verdict != tc.verdict || c.Insight != tc.insight {
				t.Errorf("verdict %s (%q), want %s (%q)", c.Verdict, c.Insight, tc.verdict, tc.insight)
			}
			if d.st.Holdout.Best != tc.best {
				t.Errorf("holdout best %q, want %q", d.st.Holdout.Best, tc.best)
			}
			if diff := cmp.Diff(tc.readings, d.st.Holdout.Readings); diff != "" {
				t.Errorf("holdout readings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHoldoutCannotDriftATolerancePerRound: kept rounds that each lose a
// little less than the tolerance on the holdout are held to the best value
// kept code measured, not to the last kept round's: the second such round
// is overfit. So it is where the status was saved before it had a peak.
func TestHoldoutCannotDriftATolerancePerRound(t *testing.T) {
	for name, peakless := range map[string]bool{"fresh": false, "a status from before the peak": true} {
		t.Run(name, func(t *testing.T) {
			d := holdoutStarted(t)
			if peakless {
				d.st.Holdout.Peak = ""
			}
			d.next(evaluated(1, "0.9"))
			if acts := d.next(holdoutValue(1, "0.4411")); len(acts) != 1 || acts[0].Type != ActionCommit {
				t.Fatalf("round 1: %+v, want a commit of a holdout 0.009 worse than the baseline's", acts)
			}
			d.next(committed(1, "c1"))
			d.advanceTo(v1alpha1.StepEval)
			d.next(evaluated(2, "0.8"))
			acts := d.next(holdoutValue(2, "0.4501"))
			if len(acts) != 1 || acts[0].Type != ActionRollback {
				t.Fatalf("round 2: %+v, want the rollback of a holdout 0.009 worse than round 1's and 0.018 worse than the baseline's", acts)
			}
			if c := d.st.CurrentRound.Candidates[0]; c.Verdict != v1alpha1.VerdictOverfit {
				t.Errorf("round 2's verdict %s, want %s", c.Verdict, v1alpha1.VerdictOverfit)
			}
			if h := d.st.Holdout; h.Best != "0.4411" || h.Peak != holdoutBest {
				t.Errorf("holdout best %s, peak %s; want round 1's 0.4411 and the baseline's %s", h.Best, h.Peak, holdoutBest)
			}
		})
	}
}

// TestARebaselineStartsTheHoldoutPeakAfresh: a changed measure measures
// the baseline's holdout again, on its own scale; candidates are held to
// that, not to the peak the old measure reached.
func TestARebaselineStartsTheHoldoutPeakAfresh(t *testing.T) {
	d := holdoutStarted(t)
	d.next(Observation{Kind: ObserveRebaseline, Changed: []string{"spec.holdout"}})
	d.next(trained(0))
	d.next(evaluated(0, "1.0"))
	if acts := d.next(holdoutValue(0, "0.6000")); len(acts) == 0 || acts[len(acts)-1].Type != ActionRunResearcher {
		t.Fatalf("after the new baseline's holdout: %+v, want round 1's Researcher", acts)
	}
	if h := d.st.Holdout; h.Best != "0.6000" || h.Peak != "0.6000" {
		t.Fatalf("holdout best %s, peak %s; want the new baseline's 0.6000", h.Best, h.Peak)
	}
	d.advanceTo(v1alpha1.StepEval)
	d.next(evaluated(1, "0.9"))
	if acts := d.next(holdoutValue(1, "0.5950")); len(acts) != 1 || acts[0].Type != ActionCommit {
		t.Fatalf("round 1: %+v, want the commit of a holdout better than the new baseline's", acts)
	}
}

// TestHoldoutNeverReachesTheResearcher: nothing the Researcher is shown —
// the next prompt, the ledger rows, the history, the task list, the
// message — holds the holdout's values, command or directory.
func TestHoldoutNeverReachesTheResearcher(t *testing.T) {
	d := holdoutStarted(t)
	d.next(evaluated(1, "0.9"))
	acts := d.next(holdoutValue(1, "0.5555"))
	if len(acts) != 1 || acts[0].Type != ActionRollback {
		t.Fatalf("actions %+v, want the overfit candidate's rollback", acts)
	}
	seen := marshal(t, acts)
	acts = d.next(rolledBack(1))
	seen += marshal(t, acts)
	a, ok := CurrentAction(d.spec, &d.st)
	if !ok || a.Type != ActionRunResearcher {
		t.Fatalf("action %+v, want round 2's Researcher", a)
	}
	text, err := prompt.Render(*a.Prompt)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, string(v1alpha1.VerdictOverfit)) {
		t.Errorf("the prompt does not tell the Researcher round 1 was overfit:\n%s", text)
	}
	seen += text + marshal(t, a) + marshal(t, d.st.History) + marshal(t, d.st.CurrentRound) + d.st.Message
	for _, secret := range []string{holdoutBest, "0.5555", holdoutDir, holdoutCommand} {
		if strings.Contains(seen, secret) {
			t.Errorf("what the Researcher is shown holds %q", secret)
		}
	}
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestBaselineHoldoutFailureStopsTheRun: with no holdout value for the
// unmodified code there is nothing to hold candidates to.
func TestBaselineHoldoutFailureStopsTheRun(t *testing.T) {
	d := newDriver(t, withHoldout("0"))
	preflightTrained(d)
	d.next(evaluated(0, "1.0"))
	d.next(holdout(0, HoldoutResult{Exit: ProcessExit{ExitCode: 2, Tail: "private"}}))
	if d.st.Phase != v1alpha1.PhaseFailed {
		t.Fatalf("phase %s (%s), want Failed", d.st.Phase, d.st.Message)
	}
	if want := "the hidden holdout evaluation exited with code 2"; !strings.Contains(d.st.Message, want) || strings.Contains(d.st.Message, "private") {
		t.Errorf("message %q, want it to say %q and nothing the command printed", d.st.Message, want)
	}
}

// TestBaselineHoldoutResumed: a run interrupted during the baseline's
// holdout trains the last baseline run again, whose outputs the holdout
// measures.
func TestBaselineHoldoutResumed(t *testing.T) {
	d := newDriver(t, withHoldout("0"))
	preflightTrained(d)
	d.next(evaluated(0, "1.0"))
	acts := d.next(resumed())
	if len(acts) != 1 || acts[0].Type != ActionRunTrain || acts[0].Sample != 1 {
		t.Fatalf("actions %+v, want the baseline's first run again", acts)
	}
	d.next(trained(0))
	d.next(evaluated(0, "1.0"))
	d.next(holdoutValue(0, holdoutBest))
	if d.current() != 1 || len(d.st.Baseline.Values) != 1 || d.st.Holdout.Best != holdoutBest {
		t.Fatalf("round %d, baseline %+v, holdout %+v; want round 1 after one baseline run and its holdout", d.current(), d.st.Baseline, d.st.Holdout)
	}
}

// TestHoldoutOfTheLastBaselineRun: with several baseline runs the holdout
// measures the last one's outputs, once.
func TestHoldoutOfTheLastBaselineRun(t *testing.T) {
	d := newDriver(t, withHoldout("0"), func(s *v1alpha1.AutoResearchSpec) { s.Baseline = &v1alpha1.BaselineSpec{Runs: 3} })
	preflightTrained(d)
	for i, v := range []string{"1.0", "1.1", "0.9"} {
		acts := d.next(evaluated(0, v))
		if i < 2 {
			d.next(trained(0))
			continue
		}
		if len(acts) != 1 || acts[0].Type != ActionRunHoldout || acts[0].Sample != 3 {
			t.Fatalf("actions %+v, want the holdout of run 3", acts)
		}
	}
}
