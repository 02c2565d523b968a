package round

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// TestNextVerdicts covers every way round 1 can end, against a given
// baseline of 1.0 (val_acc 0.8 when maximizing).
func TestNextVerdicts(t *testing.T) {
	type view struct {
		Strategy   string
		Compliance string
		Value      string
		Verdict    v1alpha1.Verdict
		Insight    string
		Actions    []Action
	}
	maximize := func(s *v1alpha1.AutoResearchSpec) {
		s.Eval.Metric, s.Eval.Direction = "val_acc", v1alpha1.DirectionMaximize
		s.Baseline = &v1alpha1.BaselineSpec{Value: "0.8"}
	}
	minDelta := func(v string) func(*v1alpha1.AutoResearchSpec) {
		return func(s *v1alpha1.AutoResearchSpec) { s.Acceptance.MinDelta = v1alpha1.NonNegativeDecimal(v) }
	}
	at := func(step v1alpha1.Step) func(*driver) { return func(d *driver) { d.advanceTo(step) } }
	withConstraints := func(s *v1alpha1.AutoResearchSpec) {
		s.Eval.Constraints = []v1alpha1.EvalConstraint{{Metric: "memory_gb", Max: "40"}, {Metric: "train_seconds", Min: "10", Max: "300"}}
	}
	// noisy sets the measured noise as if round 0 had run several times.
	noisy := func(stddev string) func(*driver) {
		return func(d *driver) {
			d.st.Baseline.Stddev = stddev
			d.advanceTo(v1alpha1.StepEval)
		}
	}
	rollback := []Action{{Type: ActionRollback, Round: 1, BaseCommit: startCommit}}
	commit := func(msg string) []Action {
		return []Action{{Type: ActionCommit, Round: 1, BaseCommit: startCommit, Code: startCommit, Message: msg}}
	}
	cases := map[string]struct {
		spec  func(*v1alpha1.AutoResearchSpec)
		setup func(*driver)
		obs   Observation
		want  view
	}{
		"researcher done: compliance is checked": {
			obs:  researched(1, "raise the learning rate"),
			want: view{Strategy: "raise the learning rate", Actions: []Action{{Type: ActionCheckCompliance, Round: 1, BaseCommit: startCommit}}},
		},
		"researcher crash": {
			obs: researcherExit(1, "", ProcessExit{ExitCode: 2, Duration: time.Minute, Tail: "Traceback (most recent call last):\nValueError: boom\n"}),
			want: view{
				Verdict: v1alpha1.VerdictResearcherFailed, Insight: "crash: the Researcher exited with code 2: ValueError: boom",
				Actions: rollback,
			},
		},
		"researcher timeout": {
			obs: researcherExit(1, "half done", ProcessExit{TimedOut: true, ExitCode: -1, Duration: 10 * time.Minute}),
			want: view{
				Strategy: "half done", Verdict: v1alpha1.VerdictResearcherFailed,
				Insight: `timeout after 10m0s — the Researcher did not report "Code ready" in time; no code was evaluated`,
				Actions: rollback,
			},
		},
		"compliant change is trained": {
			setup: at(v1alpha1.StepCompliance),
			obs:   compliant(1),
			want: view{
				Strategy: "strategy 1", Compliance: "✅",
				Actions: []Action{{Type: ActionRunTrain, Round: 1, BaseCommit: startCommit, Code: startCommit}},
			},
		},
		"the sealed candidate is what is trained": {
			setup: at(v1alpha1.StepCompliance),
			obs:   compliance(1, ComplianceResult{Candidate: "c0ffee"}),
			want: view{
				Strategy: "strategy 1", Compliance: "✅",
				Actions: []Action{{Type: ActionRunTrain, Round: 1, BaseCommit: startCommit, Code: "c0ffee"}},
			},
		},
		"file violation is rolled back without training": {
			setup: at(v1alpha1.StepCompliance),
			obs:   compliance(1, ComplianceResult{Violation: "touched prepare.py"}),
			want: view{
				Strategy: "strategy 1", Compliance: "❌ files: touched prepare.py",
				Verdict: v1alpha1.VerdictComplianceFailed, Insight: "touched prepare.py", Actions: rollback,
			},
		},
		"parity failure is rolled back with the PARITY_FAIL line": {
			setup: at(v1alpha1.StepCompliance),
			obs:   compliance(1, ComplianceResult{Parity: "PARITY_FAIL rmsnorm: max_abs_diff=0.5 > atol=1e-05"}),
			want: view{
				Strategy: "strategy 1", Compliance: "❌ parity: PARITY_FAIL rmsnorm: max_abs_diff=0.5 > atol=1e-05",
				Verdict: v1alpha1.VerdictParityFailed, Insight: "PARITY_FAIL rmsnorm: max_abs_diff=0.5 > atol=1e-05", Actions: rollback,
			},
		},
		"a candidate that changed nothing is not trained": {
			setup: at(v1alpha1.StepCompliance),
			obs:   compliance(1, ComplianceResult{NoChange: true}),
			want: view{
				Strategy: "strategy 1", Compliance: "✅",
				Verdict: v1alpha1.VerdictNoChange, Insight: "the Researcher changed no file, so there was nothing to train or evaluate", Actions: rollback,
			},
		},
		"violation keeps the advisory": {
			setup: at(v1alpha1.StepCompliance),
			obs:   compliance(1, ComplianceResult{Violation: "touched prepare.py", Advisory: "no profile artifacts found"}),
			want: view{
				Strategy: "strategy 1", Compliance: "❌ files: touched prepare.py",
				Verdict: v1alpha1.VerdictComplianceFailed, Insight: "touched prepare.py; no profile artifacts found", Actions: rollback,
			},
		},
		"trained candidate is evaluated": {
			setup: at(v1alpha1.StepTrain),
			obs:   trained(1),
			want: view{
				Strategy: "strategy 1", Compliance: "✅",
				Actions: []Action{{Type: ActionRunEval, Round: 1, BaseCommit: startCommit, Code: startCommit}},
			},
		},
		"training crash": {
			setup: at(v1alpha1.StepTrain),
			obs:   train(1, TrainResult{Exit: ProcessExit{ExitCode: 1, Duration: time.Minute, Tail: "torch.OutOfMemoryError: CUDA out of memory"}}),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Verdict: v1alpha1.VerdictTrainFailed,
				Insight: "crash: training exited with code 1: torch.OutOfMemoryError: CUDA out of memory", Actions: rollback,
			},
		},
		"training timeout": {
			setup: at(v1alpha1.StepTrain),
			obs:   train(1, TrainResult{Exit: ProcessExit{TimedOut: true, ExitCode: -1, Duration: 5*time.Minute + 30*time.Second}}),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Verdict: v1alpha1.VerdictTrainTimeout,
				Insight: "training exceeded the time limit of 5m0s and was stopped after 5m30s", Actions: rollback,
			},
		},
		"training divergence with exit code 0": {
			setup: at(v1alpha1.StepTrain),
			obs:   train(1, TrainResult{Exit: ProcessExit{Duration: trainTime}, Divergence: `loss is nan: "step 42 | loss: nan"`}),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Verdict: v1alpha1.VerdictTrainFailed,
				Insight: `training diverged: loss is nan: "step 42 | loss: nan"`, Actions: rollback,
			},
		},
		"training failure keeps the advisory": {
			setup: func(d *driver) {
				d.advanceTo(v1alpha1.StepCompliance)
				d.next(compliance(1, ComplianceResult{Advisory: "no profile artifacts found"}))
			},
			obs: train(1, TrainResult{Exit: ProcessExit{ExitCode: 137}}),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Verdict: v1alpha1.VerdictTrainFailed,
				Insight: "crash: training exited with code 137; no profile artifacts found", Actions: rollback,
			},
		},
		"evaluation without the metric": {
			setup: at(v1alpha1.StepEval),
			obs:   eval(1, EvalResult{Exit: ProcessExit{Duration: evalTime, Tail: "loading checkpoint\ndone\n"}}),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Verdict: v1alpha1.VerdictEvalFailed,
				Insight: "evaluation printed no val_bpb (training-log metrics are never used): done", Actions: rollback,
			},
		},
		"evaluation exit code is not 0": {
			setup: at(v1alpha1.StepEval),
			obs:   eval(1, EvalResult{Exit: ProcessExit{ExitCode: 1, Tail: "FileNotFoundError: ckpt.pt"}, Found: true, Value: "0.5"}),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Verdict: v1alpha1.VerdictEvalFailed,
				Insight: "evaluation exited with code 1 and printed no usable val_bpb (training-log metrics are never used): FileNotFoundError: ckpt.pt",
				Actions: rollback,
			},
		},
		"evaluation timeout": {
			setup: at(v1alpha1.StepEval),
			obs:   eval(1, EvalResult{Exit: ProcessExit{TimedOut: true, ExitCode: -1, Duration: 5 * time.Minute}}),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Verdict: v1alpha1.VerdictEvalFailed,
				Insight: "evaluation timed out after 5m0s; no val_bpb (training-log metrics are never used)", Actions: rollback,
			},
		},
		"evaluation prints NaN": {
			setup: at(v1alpha1.StepEval),
			obs:   evaluated(1, "nan"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Verdict: v1alpha1.VerdictEvalFailed,
				Insight: "evaluation printed val_bpb=nan, which is not a finite number (training-log metrics are never used)", Actions: rollback,
			},
		},
		"fixed files changed before evaluation": {
			setup: at(v1alpha1.StepEval),
			obs:   eval(1, EvalResult{FixedFilesChanged: []string{"prepare.py", "eval.py"}}),
			want: view{
				Strategy: "strategy 1", Compliance: "❌ files: fixed files changed before evaluation: prepare.py, eval.py",
				Verdict: v1alpha1.VerdictComplianceFailed, Insight: "fixed files changed before evaluation: prepare.py, eval.py", Actions: rollback,
			},
		},
		"lower value improves when minimizing": {
			setup: at(v1alpha1.StepEval),
			obs:   evaluated(1, "0.9"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.9", Verdict: v1alpha1.VerdictImproved,
				Insight: "val_bpb improved from 1.0 (R0) by 0.1", Actions: commit("autoresearch: round 1 — val_bpb=0.9 (improved)"),
			},
		},
		"higher value improves when maximizing": {
			spec:  maximize,
			setup: at(v1alpha1.StepEval),
			obs:   evaluated(1, "0.9"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.9", Verdict: v1alpha1.VerdictImproved,
				Insight: "val_acc improved from 0.8 (R0) by 0.1", Actions: commit("autoresearch: round 1 — val_acc=0.9 (improved)"),
			},
		},
		"higher value does not improve when minimizing": {
			setup: at(v1alpha1.StepEval),
			obs:   evaluated(1, "1.1"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "1.1", Verdict: v1alpha1.VerdictNotImproved,
				Insight: "val_bpb=1.1 is no better than the best 1.0 (R0); the change did not help", Actions: rollback,
			},
		},
		"lower value does not improve when maximizing": {
			spec:  maximize,
			setup: at(v1alpha1.StepEval),
			obs:   evaluated(1, "0.7"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.7", Verdict: v1alpha1.VerdictNotImproved,
				Insight: "val_acc=0.7 is no better than the best 0.8 (R0); the change did not help", Actions: rollback,
			},
		},
		"equal value does not improve": {
			setup: at(v1alpha1.StepEval),
			obs:   evaluated(1, "1.00"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "1.00", Verdict: v1alpha1.VerdictNotImproved,
				Insight: "val_bpb=1 is no better than the best 1.0 (R0); the change did not help", Actions: rollback,
			},
		},
		"gain below noiseFactor × stddev is noise": {
			setup: noisy("0.05"),
			obs:   evaluated(1, "0.95"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.95", Verdict: v1alpha1.VerdictWithinNoise,
				Insight: "val_bpb=0.95 beats the best 1.0 (R0) by only 0.05, within the noise margin 0.1 (max of minDelta, noiseFactor × baseline stddev and minImprovement × best); kept out as noise",
				Actions: rollback,
			},
		},
		"gain above noiseFactor × stddev improves": {
			setup: noisy("0.05"),
			obs:   evaluated(1, "0.85"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.85", Verdict: v1alpha1.VerdictImproved,
				Insight: "val_bpb improved from 1.0 (R0) by 0.15", Actions: commit("autoresearch: round 1 — val_bpb=0.85 (improved)"),
			},
		},
		"noiseFactor scales the margin": {
			spec:  func(s *v1alpha1.AutoResearchSpec) { s.Acceptance.NoiseFactor = "3" },
			setup: noisy("0.05"),
			obs:   evaluated(1, "0.88"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.88", Verdict: v1alpha1.VerdictWithinNoise,
				Insight: "val_bpb=0.88 beats the best 1.0 (R0) by only 0.12, within the noise margin 0.15 (max of minDelta, noiseFactor × baseline stddev and minImprovement × best); kept out as noise",
				Actions: rollback,
			},
		},
		"gain below minDelta alone is noise": {
			spec:  minDelta("0.02"),
			setup: at(v1alpha1.StepEval),
			obs:   evaluated(1, "0.99"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.99", Verdict: v1alpha1.VerdictWithinNoise,
				Insight: "val_bpb=0.99 beats the best 1.0 (R0) by only 0.01, within the noise margin 0.02 (max of minDelta, noiseFactor × baseline stddev and minImprovement × best); kept out as noise",
				Actions: rollback,
			},
		},
		"gain above minDelta improves": {
			spec:  minDelta("0.02"),
			setup: at(v1alpha1.StepEval),
			obs:   evaluated(1, "0.97"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.97", Verdict: v1alpha1.VerdictImproved,
				Insight: "val_bpb improved from 1.0 (R0) by 0.03", Actions: commit("autoresearch: round 1 — val_bpb=0.97 (improved)"),
			},
		},
		"gain below minImprovement of the best is noise": {
			spec:  func(s *v1alpha1.AutoResearchSpec) { s.Acceptance.MinImprovement = "0.05" },
			setup: at(v1alpha1.StepEval),
			obs:   evaluated(1, "0.96"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.96", Verdict: v1alpha1.VerdictWithinNoise,
				Insight: "val_bpb=0.96 beats the best 1.0 (R0) by only 0.04, within the noise margin 0.05 (max of minDelta, noiseFactor × baseline stddev and minImprovement × best); kept out as noise",
				Actions: rollback,
			},
		},
		"gain above minImprovement of the best improves": {
			spec:  func(s *v1alpha1.AutoResearchSpec) { s.Acceptance.MinImprovement = "0.05" },
			setup: at(v1alpha1.StepEval),
			obs:   evaluated(1, "0.94"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.94", Verdict: v1alpha1.VerdictImproved,
				Insight: "val_bpb improved from 1.0 (R0) by 0.06", Actions: commit("autoresearch: round 1 — val_bpb=0.94 (improved)"),
			},
		},
		"a reading above its constraint fails the candidate whatever its metric": {
			spec:  withConstraints,
			setup: at(v1alpha1.StepEval),
			obs:   eval(1, EvalResult{Exit: ProcessExit{Duration: evalTime}, Found: true, Value: "0.5", Readings: map[string]string{"memory_gb": "41.5", "train_seconds": "250"}}),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.5", Verdict: v1alpha1.VerdictConstraintFailed,
				Insight: "memory_gb=41.5 is above its limit of 40 (spec.eval.constraints), whatever the metric", Actions: rollback,
			},
		},
		"a reading below its constraint fails the candidate": {
			spec:  withConstraints,
			setup: at(v1alpha1.StepEval),
			obs:   eval(1, EvalResult{Exit: ProcessExit{Duration: evalTime}, Found: true, Value: "0.5", Readings: map[string]string{"memory_gb": "12", "train_seconds": "9"}}),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.5", Verdict: v1alpha1.VerdictConstraintFailed,
				Insight: "train_seconds=9 is below its limit of 10 (spec.eval.constraints), whatever the metric", Actions: rollback,
			},
		},
		"a reading the evaluation did not print fails the candidate": {
			spec:  withConstraints,
			setup: at(v1alpha1.StepEval),
			obs:   eval(1, EvalResult{Exit: ProcessExit{Duration: evalTime}, Found: true, Value: "0.5", Readings: map[string]string{"train_seconds": "250"}}),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.5", Verdict: v1alpha1.VerdictConstraintFailed,
				Insight: "the evaluation printed no memory_gb, which spec.eval.constraints limits", Actions: rollback,
			},
		},
		"readings within their constraints are judged by the metric": {
			spec:  withConstraints,
			setup: at(v1alpha1.StepEval),
			obs:   eval(1, EvalResult{Exit: ProcessExit{Duration: evalTime}, Found: true, Value: "0.9", Readings: map[string]string{"memory_gb": "40", "train_seconds": "250"}}),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.9", Verdict: v1alpha1.VerdictImproved,
				Insight: "val_bpb improved from 1.0 (R0) by 0.1", Actions: commit("autoresearch: round 1 — val_bpb=0.9 (improved)"),
			},
		},
		"minDelta wins over a smaller noise margin": {
			spec:  minDelta("0.2"),
			setup: noisy("0.05"),
			obs:   evaluated(1, "0.85"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.85", Verdict: v1alpha1.VerdictWithinNoise,
				Insight: "val_bpb=0.85 beats the best 1.0 (R0) by only 0.15, within the noise margin 0.2 (max of minDelta, noiseFactor × baseline stddev and minImprovement × best); kept out as noise",
				Actions: rollback,
			},
		},
		"advisory joins the verdict's insight": {
			setup: func(d *driver) {
				d.advanceTo(v1alpha1.StepCompliance)
				d.next(compliance(1, ComplianceResult{Advisory: "no profile artifacts found"}))
				d.advanceTo(v1alpha1.StepEval)
			},
			obs: evaluated(1, "0.9"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.9", Verdict: v1alpha1.VerdictImproved,
				Insight: "val_bpb improved from 1.0 (R0) by 0.1; no profile artifacts found",
				Actions: commit("autoresearch: round 1 — val_bpb=0.9 (improved)"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline)
			if tc.spec != nil {
				tc.spec(d.spec)
			}
			d.start()
			if tc.setup != nil {
				tc.setup(d)
			}
			out := apply(d, tc.obs)
			cr := out.Status.CurrentRound
			if cr == nil || cr.Number != 1 {
				t.Fatalf("current round = %+v, want round 1", cr)
			}
			c := cr.Candidates[0]
			got := view{Strategy: c.Strategy, Compliance: ComplianceCell(c.Compliance, c.ComplianceMessage), Value: c.Value, Verdict: c.Verdict, Insight: c.Insight, Actions: out.Actions}
			if diff := cmp.Diff(tc.want, got, ignoreRecordTimes, ignoreTasks); diff != "" {
				t.Errorf("round 1 (-want +got):\n%s", diff)
			}
			wantStep := map[ActionType]v1alpha1.Step{
				ActionCheckCompliance: v1alpha1.StepCompliance, ActionRunTrain: v1alpha1.StepTrain, ActionRunEval: v1alpha1.StepEval,
				ActionCommit: v1alpha1.StepGit, ActionRollback: v1alpha1.StepGit,
			}[tc.want.Actions[0].Type]
			if cr.Step != wantStep || cr.StepState != v1alpha1.StepStateRunning {
				t.Errorf("step = %s %s, want %s Running", cr.Step, cr.StepState, wantStep)
			}
		})
	}
}

// TestReadingsReachTheLedger: the readings spec.eval.constraints limits end
// the round's insight in experiences.md, except where they are the verdict's
// reason already, and memory_gb fills results.tsv's column.
func TestReadingsReachTheLedger(t *testing.T) {
	d := newDriver(t, givenBaseline)
	d.spec.Eval.Constraints = []v1alpha1.EvalConstraint{{Metric: "memory_gb", Max: "40"}}
	d.start()
	d.advanceTo(v1alpha1.StepEval)
	acts := d.next(eval(1, EvalResult{Exit: ProcessExit{Duration: evalTime}, Found: true, Value: "0.9", Readings: map[string]string{"memory_gb": "38.5"}}))
	if len(acts) != 1 || acts[0].Ledger == nil || acts[0].Ledger.Round == nil {
		t.Fatalf("actions %+v, want the git step with the round's ledger row", acts)
	}
	u := acts[0].Ledger
	if want := "val_bpb improved from 1.0 (R0) by 0.1 (readings: memory_gb=38.5)"; u.Round.Insight != want {
		t.Errorf("ledger insight %q, want %q", u.Round.Insight, want)
	}
	if u.MemoryGB != "38.5" {
		t.Errorf("results.tsv memory %q, want the evaluation's reading 38.5", u.MemoryGB)
	}
	if r := d.st.CurrentRound.Candidates[0].Readings; r != "memory_gb=38.5" {
		t.Errorf("candidate readings %q", r)
	}
}

// TestConstraintsReachThePrompt: the Researcher is told the limits its
// candidate is held to.
func TestConstraintsReachThePrompt(t *testing.T) {
	d := newDriver(t, givenBaseline)
	d.spec.Fixed.Constraints = []string{"the seed stays 42"}
	d.spec.Eval.Constraints = []v1alpha1.EvalConstraint{{Metric: "memory_gb", Max: "40"}, {Metric: "tokens_per_s", Min: "1000"}}
	d.start()
	a, ok := CurrentAction(d.spec, &d.st)
	if !ok || a.Prompt == nil {
		t.Fatalf("action %+v, want the Researcher's with its prompt", a)
	}
	want := []string{
		"the seed stays 42",
		"The evaluation's memory_gb reading must be at most 40, or the round fails as constraint_failed whatever its metric",
		"The evaluation's tokens_per_s reading must be at least 1000, or the round fails as constraint_failed whatever its metric",
	}
	if diff := cmp.Diff(want, a.Prompt.Constraints); diff != "" {
		t.Errorf("prompt constraints (-want +got):\n%s", diff)
	}
}
