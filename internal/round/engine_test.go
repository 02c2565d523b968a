package round

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// apply feeds the observation under test at tObs without moving the
// driver's status, so that a case can compare before and after.
func apply(d *driver, obs Observation) Output {
	return Next(Input{Spec: d.spec, Status: d.st, Generation: d.gen, Observation: obs, Now: tObs})
}

func TestNextStart(t *testing.T) {
	type view struct {
		Phase      v1alpha1.Phase
		Message    string
		Round      int32
		Step       v1alpha1.Step
		Workspace  *v1alpha1.WorkspaceStatus
		Baseline   *v1alpha1.BaselineResult
		Best       *v1alpha1.BestResult
		Conditions map[string]string
	}
	workspace := &v1alpha1.WorkspaceStatus{
		Path: "/work/autoresearch-demo", Branch: "autoresearch/demo", StartCommit: startCommit,
		FixedFileHashes: []v1alpha1.FileHash{{Path: "prepare.py", SHA256: "e3b0c442"}},
	}
	cases := map[string]struct {
		spec        func(*v1alpha1.AutoResearchSpec)
		setup       func(*driver)
		obs         Observation
		wantActions []Action
		want        view
	}{
		"fresh start prepares the workspace": {
			obs:         tick(),
			wantActions: []Action{{Type: ActionPrepareWorkspace}},
			want: view{
				Phase: v1alpha1.PhaseInitializing, Message: "preparing the workspace",
				Conditions: map[string]string{"Ready": "False/Initializing", "Progressing": "True/RoundInProgress", "Failed": "False/NoFailure"},
			},
		},
		"ready workspace measures the baseline in round 0": {
			setup:       func(d *driver) { d.next(tick()) },
			obs:         workspaceReady(),
			wantActions: []Action{{Type: ActionRunTrain, Round: 0, Sample: 1, BaseCommit: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseBaseline, Message: "measuring the baseline", Step: v1alpha1.StepTrain,
				Workspace: workspace, Baseline: &v1alpha1.BaselineResult{},
				Conditions: map[string]string{"Ready": "True/WorkspaceReady", "Progressing": "True/RoundInProgress", "Failed": "False/NoFailure"},
			},
		},
		"given baseline skips round 0 and starts round 1 from the start commit": {
			spec:  givenBaseline("1.0"),
			setup: func(d *driver) { d.next(tick()) },
			obs:   workspaceReady(),
			wantActions: []Action{
				{Type: ActionRecord, Round: 0, Record: &v1alpha1.RoundRecord{
					Round: 0, Strategy: "baseline", Compliance: "✅", Value: "1.0", Verdict: v1alpha1.VerdictBaseline,
					Insight: "baseline given in the protocol", Commit: startCommit, CompletionTime: timeAt(tObs),
				}},
				{Type: ActionRunResearcher, Round: 1, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R0: val_bpb=1.0 — baseline", Round: 1, Step: v1alpha1.StepResearcher,
				Workspace: workspace, Baseline: &v1alpha1.BaselineResult{Value: "1.0"},
				Best:       &v1alpha1.BestResult{Round: 0, Value: "1.0", Commit: startCommit},
				Conditions: map[string]string{"Ready": "True/WorkspaceReady", "Progressing": "True/RoundInProgress", "Failed": "False/NoFailure"},
			},
		},
		"baseline already at the target still runs round 1": {
			spec: func(s *v1alpha1.AutoResearchSpec) {
				target := "1.5"
				s.Target = &target
				s.Baseline = &v1alpha1.BaselineSpec{Value: "1.0"}
			},
			setup: func(d *driver) { d.next(tick()) },
			obs:   workspaceReady(),
			wantActions: []Action{
				{Type: ActionRecord, Round: 0, Record: &v1alpha1.RoundRecord{
					Round: 0, Strategy: "baseline", Compliance: "✅", Value: "1.0", Verdict: v1alpha1.VerdictBaseline,
					Insight: "baseline given in the protocol", Commit: startCommit, CompletionTime: timeAt(tObs),
				}},
				{Type: ActionRunResearcher, Round: 1, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R0: val_bpb=1.0 — baseline", Round: 1, Step: v1alpha1.StepResearcher,
				Workspace: workspace, Baseline: &v1alpha1.BaselineResult{Value: "1.0"},
				Best:       &v1alpha1.BestResult{Round: 0, Value: "1.0", Commit: startCommit},
				Conditions: map[string]string{"Ready": "True/WorkspaceReady", "Progressing": "True/RoundInProgress", "Failed": "False/NoFailure"},
			},
		},
		"failed workspace fails the experiment": {
			setup: func(d *driver) { d.next(tick()) },
			obs:   Observation{Kind: ObserveWorkspaceFailed, Error: "fatal: not a git repository"},
			want: view{
				Phase: v1alpha1.PhaseFailed, Message: "preparing the workspace failed: fatal: not a git repository",
				Conditions: map[string]string{"Ready": "False/Failed", "Progressing": "False/Failed", "Failed": "True/WorkspaceFailed"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t)
			if tc.spec != nil {
				tc.spec(d.spec)
			}
			if tc.setup != nil {
				tc.setup(d)
			}
			out := apply(d, tc.obs)
			if diff := cmp.Diff(tc.wantActions, out.Actions); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			st := out.Status
			got := view{
				Phase: st.Phase, Message: st.Message, Round: st.Round, Workspace: st.Workspace, Baseline: st.Baseline, Best: st.Best,
				Conditions: conditions(st, v1alpha1.ConditionReady, v1alpha1.ConditionProgressing, v1alpha1.ConditionFailed),
			}
			if st.CurrentRound != nil {
				got.Step = st.CurrentRound.Step
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextBaseline(t *testing.T) {
	type view struct {
		Phase    v1alpha1.Phase
		Message  string
		Baseline *v1alpha1.BaselineResult
		Best     *v1alpha1.BestResult
		Failed   map[string]string
	}
	runs := func(n int32) func(*v1alpha1.AutoResearchSpec) {
		return func(s *v1alpha1.AutoResearchSpec) { s.Baseline = &v1alpha1.BaselineSpec{Runs: n} }
	}
	samples := func(values ...string) func(*driver) {
		return func(d *driver) {
			d.start()
			for _, v := range values {
				d.next(trained(0))
				d.next(evaluated(0, v))
			}
		}
	}
	sampleTrained := func(values ...string) func(*driver) {
		return func(d *driver) {
			samples(values...)(d)
			d.next(trained(0))
		}
	}
	notFailed := map[string]string{"Failed": "False/NoFailure"}
	baselineFailed := map[string]string{"Failed": "True/BaselineFailed"}
	cases := map[string]struct {
		spec        func(*v1alpha1.AutoResearchSpec)
		setup       func(*driver)
		obs         Observation
		wantActions []Action
		want        view
	}{
		"trained sample is evaluated": {
			setup:       samples(),
			obs:         trained(0),
			wantActions: []Action{{Type: ActionRunEval, Round: 0, Sample: 1, BaseCommit: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseBaseline, Message: "measuring the baseline",
				Baseline: &v1alpha1.BaselineResult{}, Failed: notFailed,
			},
		},
		"one run measures the baseline and starts round 1": {
			setup: sampleTrained(),
			obs:   evaluated(0, "1.02"),
			wantActions: []Action{
				{Type: ActionRecord, Round: 0, Record: &v1alpha1.RoundRecord{
					Round: 0, Strategy: "baseline", Compliance: "✅", Value: "1.02", Verdict: v1alpha1.VerdictBaseline,
					Insight: "unmodified code", Commit: startCommit,
				}},
				{Type: ActionRunResearcher, Round: 1, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R0: val_bpb=1.02 — baseline",
				Baseline: &v1alpha1.BaselineResult{Value: "1.02", Stddev: "0", Samples: 1, Values: []string{"1.02"}},
				Best:     &v1alpha1.BestResult{Round: 0, Value: "1.02", Commit: startCommit},
				Failed:   notFailed,
			},
		},
		"first of three runs trains the second sample": {
			spec:        runs(3),
			setup:       sampleTrained(),
			obs:         evaluated(0, "0.99"),
			wantActions: []Action{{Type: ActionRunTrain, Round: 0, Sample: 2, BaseCommit: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseBaseline, Message: "measuring the baseline",
				Baseline: &v1alpha1.BaselineResult{Values: []string{"0.99"}}, Failed: notFailed,
			},
		},
		"second of three runs is evaluated as sample 2": {
			spec:        runs(3),
			setup:       samples("0.99"),
			obs:         trained(0),
			wantActions: []Action{{Type: ActionRunEval, Round: 0, Sample: 2, BaseCommit: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseBaseline, Message: "measuring the baseline",
				Baseline: &v1alpha1.BaselineResult{Values: []string{"0.99"}}, Failed: notFailed,
			},
		},
		"three runs give the mean as best and the sample stddev as noise": {
			spec:  runs(3),
			setup: sampleTrained("0.99", "1.0"),
			obs:   evaluated(0, "1.01"),
			wantActions: []Action{
				{Type: ActionRecord, Round: 0, Record: &v1alpha1.RoundRecord{
					Round: 0, Strategy: "baseline", Compliance: "✅", Value: "1", Verdict: v1alpha1.VerdictBaseline,
					Insight: "unmodified code, 3 runs: mean 1, stddev 0.01", Commit: startCommit,
				}},
				{Type: ActionRunResearcher, Round: 1, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R0: val_bpb=1 — baseline",
				Baseline: &v1alpha1.BaselineResult{Value: "1", Stddev: "0.01", Samples: 3, Values: []string{"0.99", "1.0", "1.01"}},
				Best:     &v1alpha1.BestResult{Round: 0, Value: "1", Commit: startCommit},
				Failed:   notFailed,
			},
		},
		"training crash fails the baseline": {
			setup: samples(),
			obs:   train(0, TrainResult{Exit: ProcessExit{ExitCode: 1, Tail: "ImportError: no module named torch"}}),
			want: view{
				Phase:    v1alpha1.PhaseFailed,
				Message:  "the unmodified code failed to train, so there is no baseline: crash: training exited with code 1: ImportError: no module named torch",
				Baseline: &v1alpha1.BaselineResult{}, Failed: baselineFailed,
			},
		},
		"training divergence fails the baseline": {
			setup: samples(),
			obs:   train(0, TrainResult{Exit: ProcessExit{Duration: trainTime}, Divergence: `training printed FAIL: "FAIL"`}),
			want: view{
				Phase:    v1alpha1.PhaseFailed,
				Message:  `the unmodified code failed to train, so there is no baseline: training diverged: training printed FAIL: "FAIL"`,
				Baseline: &v1alpha1.BaselineResult{}, Failed: baselineFailed,
			},
		},
		"evaluation without the metric fails the baseline": {
			setup: sampleTrained(),
			obs:   eval(0, EvalResult{Exit: ProcessExit{Duration: evalTime}}),
			want: view{
				Phase:    v1alpha1.PhaseFailed,
				Message:  "the unmodified code could not be evaluated: evaluation printed no val_bpb (training-log metrics are never used)",
				Baseline: &v1alpha1.BaselineResult{}, Failed: baselineFailed,
			},
		},
		"a failing later sample fails the baseline": {
			spec:  runs(3),
			setup: sampleTrained("0.99"),
			obs:   eval(0, EvalResult{Exit: ProcessExit{ExitCode: 2}}),
			want: view{
				Phase:    v1alpha1.PhaseFailed,
				Message:  "the unmodified code could not be evaluated: evaluation exited with code 2 and printed no usable val_bpb (training-log metrics are never used)",
				Baseline: &v1alpha1.BaselineResult{Values: []string{"0.99"}}, Failed: baselineFailed,
			},
		},
		"changed fixed files fail the baseline": {
			setup: sampleTrained(),
			obs:   eval(0, EvalResult{FixedFilesChanged: []string{"prepare.py"}}),
			want: view{
				Phase: v1alpha1.PhaseFailed, Message: "fixed files changed before evaluation: prepare.py",
				Baseline: &v1alpha1.BaselineResult{}, Failed: baselineFailed,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t)
			if tc.spec != nil {
				tc.spec(d.spec)
			}
			tc.setup(d)
			out := apply(d, tc.obs)
			if diff := cmp.Diff(tc.wantActions, out.Actions, ignoreRecordTimes, ignoreTasks); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			st := out.Status
			got := view{Phase: st.Phase, Message: st.Message, Baseline: st.Baseline, Best: st.Best, Failed: conditions(st, v1alpha1.ConditionFailed)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

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
		s.Eval.Metric, s.Eval.Direction = "val_acc", v1alpha1.Maximize
		s.Baseline = &v1alpha1.BaselineSpec{Value: "0.8"}
	}
	minDelta := func(v string) func(*v1alpha1.AutoResearchSpec) {
		return func(s *v1alpha1.AutoResearchSpec) { s.Acceptance.MinDelta = v }
	}
	at := func(step v1alpha1.Step) func(*driver) { return func(d *driver) { d.advanceTo(step) } }
	// noisy sets the measured noise as if round 0 had run several times.
	noisy := func(stddev string) func(*driver) {
		return func(d *driver) {
			d.st.Baseline.Stddev = stddev
			d.advanceTo(v1alpha1.StepEval)
		}
	}
	rollback := []Action{{Type: ActionRollback, Round: 1, BaseCommit: startCommit}}
	commit := func(msg string) []Action {
		return []Action{{Type: ActionCommit, Round: 1, BaseCommit: startCommit, Message: msg}}
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
				Actions: []Action{{Type: ActionRunTrain, Round: 1, BaseCommit: startCommit}},
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
				Actions: []Action{{Type: ActionRunEval, Round: 1, BaseCommit: startCommit}},
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
				Insight: "val_bpb=0.95 beats the best 1.0 (R0) by only 0.05, within the noise margin 0.1 (max of minDelta and noiseFactor × baseline stddev); kept out as noise",
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
				Insight: "val_bpb=0.88 beats the best 1.0 (R0) by only 0.12, within the noise margin 0.15 (max of minDelta and noiseFactor × baseline stddev); kept out as noise",
				Actions: rollback,
			},
		},
		"gain below minDelta alone is noise": {
			spec:  minDelta("0.02"),
			setup: at(v1alpha1.StepEval),
			obs:   evaluated(1, "0.99"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.99", Verdict: v1alpha1.VerdictWithinNoise,
				Insight: "val_bpb=0.99 beats the best 1.0 (R0) by only 0.01, within the noise margin 0.02 (max of minDelta and noiseFactor × baseline stddev); kept out as noise",
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
		"minDelta wins over a smaller noise margin": {
			spec:  minDelta("0.2"),
			setup: noisy("0.05"),
			obs:   evaluated(1, "0.85"),
			want: view{
				Strategy: "strategy 1", Compliance: "✅", Value: "0.85", Verdict: v1alpha1.VerdictWithinNoise,
				Insight: "val_bpb=0.85 beats the best 1.0 (R0) by only 0.15, within the noise margin 0.2 (max of minDelta and noiseFactor × baseline stddev); kept out as noise",
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
			d := newDriver(t, givenBaseline("1.0"))
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
			got := view{Strategy: c.Strategy, Compliance: c.Compliance, Value: c.Value, Verdict: c.Verdict, Insight: c.Insight, Actions: out.Actions}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("round 1 (-want +got):\n%s", diff)
			}
			wantStep := map[ActionType]v1alpha1.Step{
				ActionCheckCompliance: v1alpha1.StepCompliance, ActionRunTrain: v1alpha1.StepTrain, ActionRunEval: v1alpha1.StepEval,
				ActionCommit: v1alpha1.StepGit, ActionRollback: v1alpha1.StepGit,
			}[tc.want.Actions[0].Type]
			if cr.Step != wantStep || cr.StepState != v1alpha1.StepRunning {
				t.Errorf("step = %s %s, want %s Running", cr.Step, cr.StepState, wantStep)
			}
		})
	}
}

func TestNextGitResult(t *testing.T) {
	type view struct {
		Phase                      v1alpha1.Phase
		Message                    string
		Best                       *v1alpha1.BestResult
		CompletedRounds            int32
		LastVerdict                v1alpha1.Verdict
		ConsecutiveNonImprovements int32
		Conditions                 map[string]string
	}
	target := func(v string) func(*v1alpha1.AutoResearchSpec) {
		return func(s *v1alpha1.AutoResearchSpec) { s.Target = &v }
	}
	maximize := func(s *v1alpha1.AutoResearchSpec) {
		s.Eval.Metric, s.Eval.Direction = "val_acc", v1alpha1.Maximize
		s.Baseline = &v1alpha1.BaselineSpec{Value: "0.8"}
	}
	plateau := func(n int32) func(*v1alpha1.AutoResearchSpec) {
		return func(s *v1alpha1.AutoResearchSpec) { s.PlateauRounds = n }
	}
	evaluate := func(values ...string) func(*driver) {
		return func(d *driver) {
			for _, v := range values[:len(values)-1] {
				d.round(v)
			}
			d.evaluate(values[len(values)-1])
		}
	}
	baseBest := &v1alpha1.BestResult{Round: 0, Value: "1.0", Commit: startCommit}
	running := map[string]string{"Succeeded": "False/NotFinished", "Degraded": "False/Improving"}
	record := func(n int32, value string, verdict v1alpha1.Verdict, insight, commit string) Action {
		return Action{Type: ActionRecord, Round: n, Record: &v1alpha1.RoundRecord{
			Round: n, Strategy: fmt.Sprintf("strategy %d", n), Compliance: "✅", Value: value,
			Verdict: verdict, Insight: insight, Commit: commit,
		}}
	}
	cases := map[string]struct {
		spec        []func(*v1alpha1.AutoResearchSpec)
		setup       func(*driver)
		obs         Observation
		wantActions []Action
		want        view
	}{
		"improvement becomes the best and the next round's base": {
			setup: evaluate("0.9"),
			obs:   committed(1, commitOf(1)),
			wantActions: []Action{
				record(1, "0.9", v1alpha1.VerdictImproved, "val_bpb improved from 1.0 (R0) by 0.1", commitOf(1)),
				{Type: ActionRunResearcher, Round: 2, BaseCommit: commitOf(1)},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R1: val_bpb=0.9 — improved",
				Best:            &v1alpha1.BestResult{Round: 1, Value: "0.9", Commit: commitOf(1)},
				CompletedRounds: 1, LastVerdict: v1alpha1.VerdictImproved, Conditions: running,
			},
		},
		"improvement when maximizing becomes the best": {
			spec:  []func(*v1alpha1.AutoResearchSpec){maximize},
			setup: evaluate("0.9"),
			obs:   committed(1, commitOf(1)),
			wantActions: []Action{
				record(1, "0.9", v1alpha1.VerdictImproved, "val_acc improved from 0.8 (R0) by 0.1", commitOf(1)),
				{Type: ActionRunResearcher, Round: 2, BaseCommit: commitOf(1)},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R1: val_acc=0.9 — improved",
				Best:            &v1alpha1.BestResult{Round: 1, Value: "0.9", Commit: commitOf(1)},
				CompletedRounds: 1, LastVerdict: v1alpha1.VerdictImproved, Conditions: running,
			},
		},
		"rolled back round keeps the best": {
			setup: evaluate("1.1"),
			obs:   rolledBack(1),
			wantActions: []Action{
				record(1, "1.1", v1alpha1.VerdictNotImproved, "val_bpb=1.1 is no better than the best 1.0 (R0); the change did not help", ""),
				{Type: ActionRunResearcher, Round: 2, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R1: val_bpb=1.1 — not_improved", Best: baseBest,
				CompletedRounds: 1, LastVerdict: v1alpha1.VerdictNotImproved, ConsecutiveNonImprovements: 1, Conditions: running,
			},
		},
		"target reached when minimizing": {
			spec:  []func(*v1alpha1.AutoResearchSpec){target("0.95")},
			setup: evaluate("0.9"),
			obs:   committed(1, commitOf(1)),
			wantActions: []Action{
				record(1, "0.9", v1alpha1.VerdictImproved, "val_bpb improved from 1.0 (R0) by 0.1", commitOf(1)),
				{
					Type: ActionFinish, Round: 1, Reason: v1alpha1.ReasonTargetReached, LedgerStatus: "target_reached",
					Message: "done: target 0.95 reached in round 1; best val_bpb=0.9 (R1)",
				},
			},
			want: view{
				Phase: v1alpha1.PhaseSucceeded, Message: "done: target 0.95 reached in round 1; best val_bpb=0.9 (R1)",
				Best:            &v1alpha1.BestResult{Round: 1, Value: "0.9", Commit: commitOf(1)},
				CompletedRounds: 1, LastVerdict: v1alpha1.VerdictImproved,
				Conditions: map[string]string{"Succeeded": "True/TargetReached", "Degraded": "False/Improving"},
			},
		},
		"target met exactly when maximizing": {
			spec:  []func(*v1alpha1.AutoResearchSpec){maximize, target("0.9")},
			setup: evaluate("0.9"),
			obs:   committed(1, commitOf(1)),
			wantActions: []Action{
				record(1, "0.9", v1alpha1.VerdictImproved, "val_acc improved from 0.8 (R0) by 0.1", commitOf(1)),
				{
					Type: ActionFinish, Round: 1, Reason: v1alpha1.ReasonTargetReached, LedgerStatus: "target_reached",
					Message: "done: target 0.9 reached in round 1; best val_acc=0.9 (R1)",
				},
			},
			want: view{
				Phase: v1alpha1.PhaseSucceeded, Message: "done: target 0.9 reached in round 1; best val_acc=0.9 (R1)",
				Best:            &v1alpha1.BestResult{Round: 1, Value: "0.9", Commit: commitOf(1)},
				CompletedRounds: 1, LastVerdict: v1alpha1.VerdictImproved,
				Conditions: map[string]string{"Succeeded": "True/TargetReached", "Degraded": "False/Improving"},
			},
		},
		"target is not reached by a round that did not improve": {
			spec:  []func(*v1alpha1.AutoResearchSpec){target("0.95"), func(s *v1alpha1.AutoResearchSpec) { s.Acceptance.MinDelta = "0.1" }},
			setup: evaluate("0.94"),
			obs:   rolledBack(1),
			wantActions: []Action{
				record(1, "0.94", v1alpha1.VerdictWithinNoise, "val_bpb=0.94 beats the best 1.0 (R0) by only 0.06, within the noise margin 0.1 (max of minDelta and noiseFactor × baseline stddev); kept out as noise", ""),
				{Type: ActionRunResearcher, Round: 2, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R1: val_bpb=0.94 — within_noise", Best: baseBest,
				CompletedRounds: 1, LastVerdict: v1alpha1.VerdictWithinNoise, ConsecutiveNonImprovements: 1, Conditions: running,
			},
		},
		"last round finishes the experiment": {
			spec:  []func(*v1alpha1.AutoResearchSpec){func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 2 }},
			setup: evaluate("0.9", "1.1"),
			obs:   rolledBack(2),
			wantActions: []Action{
				record(2, "1.1", v1alpha1.VerdictNotImproved, "val_bpb=1.1 is no better than the best 0.9 (R1); the change did not help", ""),
				{
					Type: ActionFinish, Round: 2, Reason: v1alpha1.ReasonMaxRoundsReached, LedgerStatus: "completed",
					Message: "done: 2/2 rounds; best val_bpb=0.9 (R1)",
				},
			},
			want: view{
				Phase: v1alpha1.PhaseSucceeded, Message: "done: 2/2 rounds; best val_bpb=0.9 (R1)",
				Best:            &v1alpha1.BestResult{Round: 1, Value: "0.9", Commit: commitOf(1)},
				CompletedRounds: 2, LastVerdict: v1alpha1.VerdictNotImproved, ConsecutiveNonImprovements: 1,
				Conditions: map[string]string{"Succeeded": "True/MaxRoundsReached", "Degraded": "False/Improving"},
			},
		},
		"plateau warns and the loop continues": {
			spec: []func(*v1alpha1.AutoResearchSpec){plateau(2)},
			setup: func(d *driver) {
				d.round("1.1")
				d.advanceTo(v1alpha1.StepEval)
				d.next(eval(2, EvalResult{Exit: ProcessExit{Duration: evalTime}}))
			},
			obs: rolledBack(2),
			wantActions: []Action{
				{Type: ActionRecord, Round: 2, Record: &v1alpha1.RoundRecord{
					Round: 2, Strategy: "strategy 2", Compliance: "✅", Verdict: v1alpha1.VerdictEvalFailed,
					Insight: "evaluation printed no val_bpb (training-log metrics are never used)",
				}},
				{
					Type: ActionWarn, Round: 2, Reason: v1alpha1.ReasonPlateau,
					Message: "plateau: no improvement in 2 consecutive rounds (R1–R2: 1 not_improved, 1 eval_failed); the variable space may be exhausted or strategies may be repeating — the loop continues",
				},
				{Type: ActionRunResearcher, Round: 3, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R2: val_bpb=— — eval_failed", Best: baseBest,
				CompletedRounds: 2, LastVerdict: v1alpha1.VerdictEvalFailed, ConsecutiveNonImprovements: 2,
				Conditions: map[string]string{"Succeeded": "False/NotFinished", "Degraded": "True/Plateau"},
			},
		},
		"plateau warns once per window": {
			spec:  []func(*v1alpha1.AutoResearchSpec){plateau(2)},
			setup: evaluate("1.1", "1.2", "1.3"),
			obs:   rolledBack(3),
			wantActions: []Action{
				record(3, "1.3", v1alpha1.VerdictNotImproved, "val_bpb=1.3 is no better than the best 1.0 (R0); the change did not help", ""),
				{Type: ActionRunResearcher, Round: 4, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R3: val_bpb=1.3 — not_improved", Best: baseBest,
				CompletedRounds: 3, LastVerdict: v1alpha1.VerdictNotImproved, ConsecutiveNonImprovements: 3,
				Conditions: map[string]string{"Succeeded": "False/NotFinished", "Degraded": "True/Plateau"},
			},
		},
		"improvement ends the plateau": {
			spec:  []func(*v1alpha1.AutoResearchSpec){plateau(2)},
			setup: evaluate("1.1", "1.2", "0.9"),
			obs:   committed(3, commitOf(3)),
			wantActions: []Action{
				record(3, "0.9", v1alpha1.VerdictImproved, "val_bpb improved from 1.0 (R0) by 0.1", commitOf(3)),
				{Type: ActionRunResearcher, Round: 4, BaseCommit: commitOf(3)},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R3: val_bpb=0.9 — improved",
				Best:            &v1alpha1.BestResult{Round: 3, Value: "0.9", Commit: commitOf(3)},
				CompletedRounds: 3, LastVerdict: v1alpha1.VerdictImproved, Conditions: running,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, append([]func(*v1alpha1.AutoResearchSpec){givenBaseline("1.0")}, tc.spec...)...)
			d.start()
			tc.setup(d)
			out := apply(d, tc.obs)
			if diff := cmp.Diff(tc.wantActions, out.Actions, ignoreRecordTimes, ignoreTasks); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			st := out.Status
			got := view{
				Phase: st.Phase, Message: st.Message, Best: st.Best, CompletedRounds: st.CompletedRounds, LastVerdict: st.LastVerdict,
				ConsecutiveNonImprovements: st.ConsecutiveNonImprovements,
				Conditions:                 conditions(st, v1alpha1.ConditionSucceeded, v1alpha1.ConditionDegraded),
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextRecordCarriesDurations(t *testing.T) {
	cases := map[string]struct {
		spec  func(*v1alpha1.AutoResearchSpec)
		setup func(*driver) Observation
		want  v1alpha1.StepDurations
	}{
		"round": {
			spec: givenBaseline("1.0"),
			setup: func(d *driver) Observation {
				d.start()
				d.evaluate("1.1")
				return rolledBack(1)
			},
			want: v1alpha1.StepDurations{Researcher: dur(researcherTime), Train: dur(trainTime), Eval: dur(evalTime)},
		},
		"baseline of two runs sums its runs": {
			spec: func(s *v1alpha1.AutoResearchSpec) { s.Baseline = &v1alpha1.BaselineSpec{Runs: 2} },
			setup: func(d *driver) Observation {
				d.start()
				d.next(trained(0))
				d.next(evaluated(0, "1.0"))
				d.next(trained(0))
				return evaluated(0, "1.0")
			},
			want: v1alpha1.StepDurations{Train: dur(2 * trainTime), Eval: dur(2 * evalTime)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, tc.spec)
			out := apply(d, tc.setup(d))
			if len(out.Actions) == 0 || out.Actions[0].Record == nil {
				t.Fatalf("actions = %+v, want a Record first", out.Actions)
			}
			rec := out.Actions[0].Record
			if diff := cmp.Diff(tc.want, rec.Durations); diff != "" {
				t.Errorf("durations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(timeAt(tObs), rec.CompletionTime); diff != "" {
				t.Errorf("completion time (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(*rec, out.Status.History[len(out.Status.History)-1]); diff != "" {
				t.Errorf("history holds another record than the Record action (-action +history):\n%s", diff)
			}
		})
	}
}

func TestNextGuidance(t *testing.T) {
	type view struct {
		Guidance     []string
		Note         string
		RecordNote   string
		GuidanceSeen int32
	}
	addNote := func(notes ...string) func(*driver) {
		return func(d *driver) { d.spec.Guidance = append(d.spec.Guidance, notes...) }
	}
	cases := map[string]struct {
		notes []string
		setup func(*driver)
		obs   Observation
		want  view
	}{
		"notes given at the start reach round 1": {
			notes: []string{"try AdamW"},
			setup: func(d *driver) { d.next(tick()) },
			obs:   workspaceReady(),
			want:  view{Guidance: []string{"try AdamW"}, Note: "try AdamW", GuidanceSeen: 1},
		},
		"round without new notes has no note but the Researcher still sees them all": {
			notes: []string{"try AdamW"},
			setup: func(d *driver) {
				d.start()
				d.evaluate("1.1")
			},
			obs:  rolledBack(1),
			want: view{Guidance: []string{"try AdamW"}, RecordNote: "try AdamW", GuidanceSeen: 1},
		},
		"notes added during a round go to the next round": {
			notes: []string{"try AdamW"},
			setup: func(d *driver) {
				d.start()
				d.evaluate("1.1")
				addNote("keep the batch size", "watch memory")(d)
			},
			obs: rolledBack(1),
			want: view{
				Guidance: []string{"try AdamW", "keep the batch size", "watch memory"}, Note: "keep the batch size; watch memory",
				RecordNote: "try AdamW", GuidanceSeen: 3,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline("1.0"))
			d.spec.Guidance = tc.notes
			tc.setup(d)
			out := apply(d, tc.obs)
			var got view
			for _, a := range out.Actions {
				switch {
				case a.Type == ActionRunResearcher:
					got.Guidance = a.Guidance
				case a.Type == ActionRecord && a.Round > 0:
					got.RecordNote = a.Record.Note
				}
			}
			if cr := out.Status.CurrentRound; cr != nil {
				got.Note = cr.Note
			}
			got.GuidanceSeen = out.Status.GuidanceSeen
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("guidance (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextSuspend(t *testing.T) {
	type view struct {
		Phase      v1alpha1.Phase
		Message    string
		Step       v1alpha1.Step
		StepState  v1alpha1.StepState
		Strategy   string
		Conditions map[string]string
	}
	suspend := func(on bool) func(*driver) { return func(d *driver) { d.spec.Suspend = on } }
	steps := func(fs ...func(*driver)) func(*driver) {
		return func(d *driver) {
			for _, f := range fs {
				f(d)
			}
		}
	}
	feed := func(obs Observation) func(*driver) { return func(d *driver) { d.next(obs) } }
	start := func(d *driver) { d.start() }
	suspendedConds := map[string]string{"Suspended": "True/SuspendedByUser", "Progressing": "False/Suspended"}
	runningConds := map[string]string{"Suspended": "False/NotSuspended", "Progressing": "True/RoundInProgress"}
	cases := map[string]struct {
		spec        func(*v1alpha1.AutoResearchSpec)
		setup       func(*driver)
		obs         Observation
		wantActions []Action
		want        view
	}{
		"suspended before the workspace": {
			setup: suspend(true),
			obs:   tick(),
			want:  view{Phase: v1alpha1.PhaseSuspended, Message: "suspended before the workspace was prepared", Conditions: suspendedConds},
		},
		"unsuspended before the workspace prepares it": {
			setup:       steps(suspend(true), feed(tick()), suspend(false)),
			obs:         tick(),
			wantActions: []Action{{Type: ActionPrepareWorkspace}},
			want:        view{Phase: v1alpha1.PhaseInitializing, Message: "preparing the workspace", Conditions: runningConds},
		},
		"preparation under way keeps going": {
			setup:       steps(feed(tick()), suspend(true)),
			obs:         tick(),
			wantActions: []Action{{Type: ActionPrepareWorkspace}},
			want:        view{Phase: v1alpha1.PhaseInitializing, Message: "preparing the workspace", Conditions: runningConds},
		},
		"workspace ready while suspended holds round 0": {
			spec:  func(s *v1alpha1.AutoResearchSpec) { s.Baseline = nil },
			setup: steps(feed(tick()), suspend(true)),
			obs:   workspaceReady(),
			want: view{
				Phase: v1alpha1.PhaseSuspended, Message: "suspended before R0 Train",
				Step: v1alpha1.StepTrain, StepState: v1alpha1.StepPending, Strategy: "baseline", Conditions: suspendedConds,
			},
		},
		"unsuspended baseline trains": {
			spec:        func(s *v1alpha1.AutoResearchSpec) { s.Baseline = nil },
			setup:       steps(feed(tick()), suspend(true), feed(workspaceReady()), suspend(false)),
			obs:         tick(),
			wantActions: []Action{{Type: ActionRunTrain, Round: 0, Sample: 1, BaseCommit: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseBaseline, Message: "resumed at R0 Train",
				Step: v1alpha1.StepTrain, StepState: v1alpha1.StepRunning, Strategy: "baseline", Conditions: runningConds,
			},
		},
		"step result is recorded and the next step waits": {
			setup: steps(start, suspend(true)),
			obs:   researched(1, "warmup schedule"),
			want: view{
				Phase: v1alpha1.PhaseSuspended, Message: "suspended before R1 Compliance",
				Step: v1alpha1.StepCompliance, StepState: v1alpha1.StepPending, Strategy: "warmup schedule", Conditions: suspendedConds,
			},
		},
		"round result is recorded and the next round waits": {
			setup: steps(start, func(d *driver) { d.evaluate("1.1") }, suspend(true)),
			obs:   rolledBack(1),
			wantActions: []Action{{Type: ActionRecord, Round: 1, Record: &v1alpha1.RoundRecord{
				Round: 1, Strategy: "strategy 1", Compliance: "✅", Value: "1.1", Verdict: v1alpha1.VerdictNotImproved,
				Insight: "val_bpb=1.1 is no better than the best 1.0 (R0); the change did not help",
			}}},
			want: view{
				Phase: v1alpha1.PhaseSuspended, Message: "suspended before R2 Researcher",
				Step: v1alpha1.StepResearcher, StepState: v1alpha1.StepPending, Conditions: suspendedConds,
			},
		},
		"tick while suspended starts nothing": {
			setup: steps(start, suspend(true), feed(researched(1, "warmup schedule"))),
			obs:   tick(),
			want: view{
				Phase: v1alpha1.PhaseSuspended, Message: "suspended before R1 Compliance",
				Step: v1alpha1.StepCompliance, StepState: v1alpha1.StepPending, Strategy: "warmup schedule", Conditions: suspendedConds,
			},
		},
		"unsuspending starts the pending step": {
			setup:       steps(start, suspend(true), feed(researched(1, "warmup schedule")), suspend(false)),
			obs:         tick(),
			wantActions: []Action{{Type: ActionCheckCompliance, Round: 1, BaseCommit: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "resumed at R1 Compliance",
				Step: v1alpha1.StepCompliance, StepState: v1alpha1.StepRunning, Strategy: "warmup schedule", Conditions: runningConds,
			},
		},
		"running step keeps running when suspended": {
			setup:       steps(start, suspend(true)),
			obs:         tick(),
			wantActions: []Action{{Type: ActionRunResearcher, Round: 1, BaseCommit: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R0: val_bpb=1.0 — baseline",
				Step: v1alpha1.StepResearcher, StepState: v1alpha1.StepRunning, Conditions: runningConds,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline("1.0"))
			if tc.spec != nil {
				tc.spec(d.spec)
			}
			tc.setup(d)
			out := apply(d, tc.obs)
			if diff := cmp.Diff(tc.wantActions, out.Actions, ignoreRecordTimes, ignoreTasks); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			st := out.Status
			got := view{Phase: st.Phase, Message: st.Message, Conditions: conditions(st, v1alpha1.ConditionSuspended, v1alpha1.ConditionProgressing)}
			if cr := st.CurrentRound; cr != nil {
				got.Step, got.StepState, got.Strategy = cr.Step, cr.StepState, cr.Candidates[0].Strategy
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextResume(t *testing.T) {
	type view struct {
		Phase     v1alpha1.Phase
		Message   string
		Step      v1alpha1.Step
		StepState v1alpha1.StepState
		Verdict   v1alpha1.Verdict
	}
	// inRound2 improves round 1, then runs round 2 up to step.
	inRound2 := func(step v1alpha1.Step) func(*driver) {
		return func(d *driver) {
			d.start()
			d.round("0.9")
			d.advanceTo(step)
		}
	}
	restarted := view{
		Phase: v1alpha1.PhaseRunning, Message: "round 2 was interrupted before its verdict; rolled back and restarted",
		Step: v1alpha1.StepResearcher, StepState: v1alpha1.StepRunning,
	}
	restart := []Action{
		{Type: ActionWarn, Round: 2, Reason: "RoundRestarted", Message: "round 2 was interrupted before its verdict; rolled back and restarted"},
		{Type: ActionRunResearcher, Round: 2, BaseCommit: commitOf(1)},
	}
	cases := map[string]struct {
		spec        func(*v1alpha1.AutoResearchSpec)
		setup       func(*driver)
		wantActions []Action
		want        view
	}{
		"interrupted Researcher restarts the round": {
			setup: inRound2(v1alpha1.StepResearcher), wantActions: restart, want: restarted,
		},
		"interrupted compliance check restarts the round": {
			setup: inRound2(v1alpha1.StepCompliance), wantActions: restart, want: restarted,
		},
		"interrupted training restarts the round": {
			setup: inRound2(v1alpha1.StepTrain), wantActions: restart, want: restarted,
		},
		"interrupted evaluation restarts the round": {
			setup: inRound2(v1alpha1.StepEval), wantActions: restart, want: restarted,
		},
		"interrupted baseline sample is measured again": {
			spec: func(s *v1alpha1.AutoResearchSpec) { s.Baseline = &v1alpha1.BaselineSpec{Runs: 3} },
			setup: func(d *driver) {
				d.start()
				d.next(trained(0))
				d.next(evaluated(0, "0.99"))
				d.next(trained(0))
			},
			wantActions: []Action{{Type: ActionRunTrain, Round: 0, Sample: 2, BaseCommit: startCommit}},
			want:        view{Phase: v1alpha1.PhaseBaseline, Message: "measuring the baseline", Step: v1alpha1.StepTrain, StepState: v1alpha1.StepRunning},
		},
		"interrupted commit is redone": {
			setup: func(d *driver) {
				d.start()
				d.evaluate("0.9")
			},
			wantActions: []Action{{Type: ActionCommit, Round: 1, BaseCommit: startCommit, Message: "autoresearch: round 1 — val_bpb=0.9 (improved)"}},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R0: val_bpb=1.0 — baseline",
				Step: v1alpha1.StepGit, StepState: v1alpha1.StepRunning, Verdict: v1alpha1.VerdictImproved,
			},
		},
		"interrupted rollback is redone": {
			setup: func(d *driver) {
				d.start()
				d.evaluate("1.1")
			},
			wantActions: []Action{{Type: ActionRollback, Round: 1, BaseCommit: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R0: val_bpb=1.0 — baseline",
				Step: v1alpha1.StepGit, StepState: v1alpha1.StepRunning, Verdict: v1alpha1.VerdictNotImproved,
			},
		},
		"interrupted preparation is redone": {
			setup:       func(d *driver) { d.next(tick()) },
			wantActions: []Action{{Type: ActionPrepareWorkspace}},
			want:        view{Phase: v1alpha1.PhaseInitializing, Message: "preparing the workspace"},
		},
		"suspended preparation stays suspended": {
			setup: func(d *driver) {
				d.next(tick())
				d.spec.Suspend = true
			},
			want: view{Phase: v1alpha1.PhaseSuspended, Message: "suspended before the workspace was prepared"},
		},
		"suspended round stays suspended": {
			setup: func(d *driver) {
				d.start()
				d.spec.Suspend = true
				d.next(researched(1, "warmup schedule"))
			},
			want: view{Phase: v1alpha1.PhaseSuspended, Message: "suspended before R1 Compliance", Step: v1alpha1.StepCompliance, StepState: v1alpha1.StepPending},
		},
		"failed experiment stays failed": {
			setup: func(d *driver) {
				d.next(tick())
				d.next(Observation{Kind: ObserveWorkspaceFailed, Error: "disk full"})
			},
			want: view{Phase: v1alpha1.PhaseFailed, Message: "preparing the workspace failed: disk full"},
		},
		"status rebuilt from the ledger starts the next round from the best commit": {
			setup: func(d *driver) {
				d.st = v1alpha1.AutoResearchStatus{
					Phase: v1alpha1.PhaseRunning, Round: 3, CompletedRounds: 3, LastVerdict: v1alpha1.VerdictNotImproved,
					Workspace: &v1alpha1.WorkspaceStatus{Path: "/work/autoresearch-demo", StartCommit: startCommit},
					Baseline:  &v1alpha1.BaselineResult{Value: "1.0"},
					Best:      &v1alpha1.BestResult{Round: 2, Value: "0.9", Commit: commitOf(2)},
				}
			},
			wantActions: []Action{{Type: ActionRunResearcher, Round: 4, BaseCommit: commitOf(2)}},
			want:        view{Phase: v1alpha1.PhaseRunning, Step: v1alpha1.StepResearcher, StepState: v1alpha1.StepRunning},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline("1.0"))
			if tc.spec != nil {
				tc.spec(d.spec)
			}
			tc.setup(d)
			out := apply(d, resumed())
			if diff := cmp.Diff(tc.wantActions, out.Actions); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			st := out.Status
			got := view{Phase: st.Phase, Message: st.Message}
			if cr := st.CurrentRound; cr != nil {
				got.Step, got.StepState, got.Verdict = cr.Step, cr.StepState, cr.Candidates[0].Verdict
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNextResumeResetsRound checks what a restarted round forgets: the
// interrupted candidate and the task texts its steps had filled in.
func TestNextResumeResetsRound(t *testing.T) {
	d := newDriver(t, givenBaseline("1.0"))
	d.start()
	d.round("0.9")
	fresh := d.st.CurrentRound.DeepCopy()
	d.advanceTo(v1alpha1.StepEval)

	got := apply(d, resumed()).Status.CurrentRound
	want := fresh.DeepCopy()
	want.StepStartTime = timeAt(tObs)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restarted round (-want +got):\n%s", diff)
	}
}

func TestNextTickReemitsRunningStep(t *testing.T) {
	cases := map[string]struct {
		spec  func(*v1alpha1.AutoResearchSpec)
		setup func(*driver) []Action
	}{
		"PrepareWorkspace": {
			setup: func(d *driver) []Action { return d.next(tick()) },
		},
		"baseline RunTrain": {
			spec:  func(s *v1alpha1.AutoResearchSpec) { s.Baseline = &v1alpha1.BaselineSpec{Runs: 2} },
			setup: func(d *driver) []Action { return d.start() },
		},
		"baseline RunEval of the second sample": {
			spec: func(s *v1alpha1.AutoResearchSpec) { s.Baseline = &v1alpha1.BaselineSpec{Runs: 2} },
			setup: func(d *driver) []Action {
				d.start()
				d.next(trained(0))
				d.next(evaluated(0, "1.0"))
				return d.next(trained(0))
			},
		},
		"RunResearcher": {
			spec: func(s *v1alpha1.AutoResearchSpec) {
				s.Baseline = &v1alpha1.BaselineSpec{Value: "1.0"}
				s.Guidance = []string{"try AdamW"}
			},
			setup: func(d *driver) []Action { return d.start() },
		},
		"CheckCompliance": {
			spec: givenBaseline("1.0"),
			setup: func(d *driver) []Action {
				d.start()
				return d.next(researched(1, "s"))
			},
		},
		"RunTrain": {
			spec: givenBaseline("1.0"),
			setup: func(d *driver) []Action {
				d.start()
				d.advanceTo(v1alpha1.StepCompliance)
				return d.next(compliant(1))
			},
		},
		"RunEval": {
			spec: givenBaseline("1.0"),
			setup: func(d *driver) []Action {
				d.start()
				d.advanceTo(v1alpha1.StepTrain)
				return d.next(trained(1))
			},
		},
		"Commit": {
			spec: givenBaseline("1.0"),
			setup: func(d *driver) []Action {
				d.start()
				return d.evaluate("0.9")
			},
		},
		"Rollback": {
			spec: givenBaseline("1.0"),
			setup: func(d *driver) []Action {
				d.start()
				return d.evaluate("1.1")
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t)
			if tc.spec != nil {
				tc.spec(d.spec)
			}
			started := tc.setup(d)
			want := started[len(started)-1:]
			out := apply(d, tick())
			if diff := cmp.Diff(want, out.Actions); diff != "" {
				t.Errorf("actions (-started +tick):\n%s", diff)
			}
			if diff := cmp.Diff(d.st, out.Status); diff != "" {
				t.Errorf("a tick changed the status of a running step (-before +after):\n%s", diff)
			}
		})
	}
}

func TestNextMaxRoundsChanged(t *testing.T) {
	type view struct {
		Phase     v1alpha1.Phase
		Round     int32
		Message   string
		Succeeded map[string]string
	}
	maxRounds := func(n int32) func(*driver) { return func(d *driver) { d.spec.MaxRounds = n } }
	finished := func(d *driver) {
		d.spec.MaxRounds = 1
		d.start()
		d.round("1.1")
	}
	cases := map[string]struct {
		setup       []func(*driver)
		obs         Observation
		wantActions []Action
		want        view
	}{
		"raised after completion continues with the next round": {
			setup:       []func(*driver){finished, maxRounds(3)},
			obs:         tick(),
			wantActions: []Action{{Type: ActionRunResearcher, Round: 2, BaseCommit: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseRunning, Round: 2, Message: "continuing: maxRounds is now 3",
				Succeeded: map[string]string{"Succeeded": "False/NotFinished"},
			},
		},
		"unchanged after completion stays done": {
			setup: []func(*driver){finished},
			obs:   tick(),
			want: view{
				Phase: v1alpha1.PhaseSucceeded, Round: 1, Message: "done: 1/1 rounds; best val_bpb=1.0 (R0)",
				Succeeded: map[string]string{"Succeeded": "True/MaxRoundsReached"},
			},
		},
		"raised after the target was reached stays done": {
			setup: []func(*driver){
				func(d *driver) {
					target := "0.95"
					d.spec.Target = &target
					d.start()
					d.round("0.9")
				},
				maxRounds(20),
			},
			obs: tick(),
			want: view{
				Phase: v1alpha1.PhaseSucceeded, Round: 1, Message: "done: target 0.95 reached in round 1; best val_bpb=0.9 (R1)",
				Succeeded: map[string]string{"Succeeded": "True/TargetReached"},
			},
		},
		"lowered below the current round lets the round go on": {
			setup: []func(*driver){
				func(d *driver) {
					d.start()
					d.round("1.1")
					d.round("1.2")
					d.advanceTo(v1alpha1.StepTrain)
				},
				maxRounds(2),
			},
			obs:         tick(),
			wantActions: []Action{{Type: ActionRunTrain, Round: 3, BaseCommit: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseRunning, Round: 3, Message: "R2: val_bpb=1.2 — not_improved",
				Succeeded: map[string]string{"Succeeded": "False/NotFinished"},
			},
		},
		"lowered below the current round finishes when the round ends": {
			setup: []func(*driver){
				func(d *driver) {
					d.start()
					d.round("1.1")
					d.round("1.2")
					d.advanceTo(v1alpha1.StepTrain)
				},
				maxRounds(2),
				func(d *driver) { d.evaluate("0.9") },
			},
			obs: committed(3, commitOf(3)),
			wantActions: []Action{
				{Type: ActionRecord, Round: 3, Record: &v1alpha1.RoundRecord{
					Round: 3, Strategy: "strategy 3", Compliance: "✅", Value: "0.9", Verdict: v1alpha1.VerdictImproved,
					Insight: "val_bpb improved from 1.0 (R0) by 0.1", Commit: commitOf(3),
				}},
				{
					Type: ActionFinish, Round: 3, Reason: v1alpha1.ReasonMaxRoundsReached, LedgerStatus: "completed",
					Message: "done: 3/2 rounds; best val_bpb=0.9 (R3)",
				},
			},
			want: view{
				Phase: v1alpha1.PhaseSucceeded, Round: 3, Message: "done: 3/2 rounds; best val_bpb=0.9 (R3)",
				Succeeded: map[string]string{"Succeeded": "True/MaxRoundsReached"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline("1.0"))
			for _, f := range tc.setup {
				f(d)
			}
			out := apply(d, tc.obs)
			if diff := cmp.Diff(tc.wantActions, out.Actions, ignoreRecordTimes, ignoreTasks); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			st := out.Status
			got := view{Phase: st.Phase, Round: st.Round, Message: st.Message, Succeeded: conditions(st, v1alpha1.ConditionSucceeded)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextIgnoresStaleObservations(t *testing.T) {
	inRound1 := func(step v1alpha1.Step) func(*driver) {
		return func(d *driver) {
			d.start()
			d.advanceTo(step)
		}
	}
	cases := map[string]struct {
		setup func(*driver)
		obs   Observation
	}{
		"result of another round": {
			setup: inRound1(v1alpha1.StepResearcher),
			obs:   researched(2, "s"),
		},
		"result of an earlier step": {
			setup: inRound1(v1alpha1.StepTrain),
			obs:   researched(1, "s"),
		},
		"result of a later step": {
			setup: inRound1(v1alpha1.StepResearcher),
			obs:   evaluated(1, "0.5"),
		},
		"result of an unknown candidate": {
			setup: inRound1(v1alpha1.StepEval),
			obs:   Observation{Kind: ObserveEvalFinished, Round: 1, Candidate: 1, Eval: &EvalResult{Found: true, Value: "0.5"}},
		},
		"result without its payload": {
			setup: inRound1(v1alpha1.StepCompliance),
			obs:   Observation{Kind: ObserveComplianceChecked, Round: 1},
		},
		"git result before the verdict": {
			setup: inRound1(v1alpha1.StepEval),
			obs:   committed(1, commitOf(1)),
		},
		"rollback reported for an improved round": {
			setup: func(d *driver) {
				d.start()
				d.evaluate("0.5")
			},
			obs: rolledBack(1),
		},
		"commit reported for a rejected round": {
			setup: func(d *driver) {
				d.start()
				d.evaluate("1.5")
			},
			obs: committed(1, commitOf(1)),
		},
		"result of a step that never started": {
			setup: func(d *driver) {
				d.start()
				d.spec.Suspend = true
				d.next(researched(1, "s"))
			},
			obs: compliant(1),
		},
		"workspace ready twice": {
			setup: inRound1(v1alpha1.StepResearcher),
			obs:   workspaceReady(),
		},
		"workspace failure after it was ready": {
			setup: inRound1(v1alpha1.StepResearcher),
			obs:   Observation{Kind: ObserveWorkspaceFailed, Error: "late"},
		},
		"result after the experiment finished": {
			setup: func(d *driver) {
				d.spec.MaxRounds = 1
				d.start()
				d.round("1.1")
			},
			obs: rolledBack(1),
		},
		"unknown observation": {
			setup: inRound1(v1alpha1.StepResearcher),
			obs:   Observation{Kind: "Exploded", Round: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline("1.0"))
			tc.setup(d)
			out := apply(d, tc.obs)
			if len(out.Actions) != 0 {
				t.Errorf("actions = %+v, want none", out.Actions)
			}
			if diff := cmp.Diff(d.st, out.Status); diff != "" {
				t.Errorf("status changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestNextHistory(t *testing.T) {
	type view struct {
		Rounds        []int32
		VerdictCounts map[v1alpha1.Verdict]int32
	}
	// fiveRounds ends rounds 1–5 as improved, not_improved, researcher_failed, improved, within_noise.
	fiveRounds := func(d *driver) {
		d.start()
		d.round("0.9")
		d.round("0.95")
		d.next(researcherExit(3, "", ProcessExit{ExitCode: 1}))
		d.next(rolledBack(3))
		d.round("0.5")
		d.spec.Acceptance.MinDelta = "0.1"
		d.round("0.45")
	}
	counts := map[v1alpha1.Verdict]int32{
		v1alpha1.VerdictImproved: 2, v1alpha1.VerdictNotImproved: 1, v1alpha1.VerdictResearcherFailed: 1, v1alpha1.VerdictWithinNoise: 1,
	}
	cases := map[string]struct {
		historyLimit int32
		want         view
	}{
		"bounded by historyLimit": {
			historyLimit: 3,
			want:         view{Rounds: []int32{3, 4, 5}, VerdictCounts: counts},
		},
		"default limit keeps the baseline row": {
			want: view{Rounds: []int32{0, 1, 2, 3, 4, 5}, VerdictCounts: counts},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline("1.0"))
			d.spec.HistoryLimit = tc.historyLimit
			fiveRounds(d)
			got := view{VerdictCounts: d.st.VerdictCounts}
			for _, r := range d.st.History {
				got.Rounds = append(got.Rounds, r.Round)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextUsage(t *testing.T) {
	researcher := func(n int32, d time.Duration, u v1alpha1.Usage) Observation {
		return Observation{Kind: ObserveResearcherFinished, Round: n, Researcher: &ResearcherResult{
			Exit: ProcessExit{Duration: d}, Strategy: "s", Usage: u,
		}}
	}
	cases := map[string]struct {
		gpus     int32
		baseline *v1alpha1.BaselineSpec
		usage    []v1alpha1.Usage
		want     v1alpha1.Usage
	}{
		"one GPU": {
			gpus:     1,
			baseline: &v1alpha1.BaselineSpec{Value: "1.0"},
			usage:    []v1alpha1.Usage{{InputTokens: 1000, OutputTokens: 200, Cost: "0.1"}, {InputTokens: 500, OutputTokens: 100, Cost: "0.2"}},
			want:     v1alpha1.Usage{GPUSeconds: 2 * 150, ResearcherSeconds: 90 + 31, InputTokens: 1500, OutputTokens: 300, Cost: "0.3"},
		},
		"two GPUs count twice": {
			gpus:     2,
			baseline: &v1alpha1.BaselineSpec{Value: "1.0"},
			usage:    []v1alpha1.Usage{{}, {}},
			want:     v1alpha1.Usage{GPUSeconds: 2 * 2 * 150, ResearcherSeconds: 121},
		},
		"no GPU": {
			baseline: &v1alpha1.BaselineSpec{Value: "1.0"},
			usage:    []v1alpha1.Usage{{}, {}},
			want:     v1alpha1.Usage{ResearcherSeconds: 121},
		},
		"measured baseline runs count": {
			gpus:     1,
			baseline: &v1alpha1.BaselineSpec{Runs: 2},
			usage:    []v1alpha1.Usage{{Cost: "1.25"}, {}},
			want:     v1alpha1.Usage{GPUSeconds: (2 + 2) * 150, ResearcherSeconds: 121, Cost: "1.25"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t)
			d.spec.Train.GPUs = tc.gpus
			d.spec.Baseline = tc.baseline
			d.start()
			for d.current() == 0 {
				d.next(trained(0))
				d.next(evaluated(0, "1.0"))
			}
			d.next(researcher(1, 90400*time.Millisecond, tc.usage[0]))
			d.round("1.1")
			d.next(researcher(2, 30600*time.Millisecond, tc.usage[1]))
			d.round("1.1")
			if diff := cmp.Diff(tc.want, d.st.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextConditions(t *testing.T) {
	const gen = 7
	all := []string{
		v1alpha1.ConditionReady, v1alpha1.ConditionProgressing, v1alpha1.ConditionSuspended,
		v1alpha1.ConditionSucceeded, v1alpha1.ConditionFailed, v1alpha1.ConditionDegraded,
	}
	cases := map[string]struct {
		spec  func(*v1alpha1.AutoResearchSpec)
		setup func(*driver)
		obs   Observation
		want  map[string]string
	}{
		"initializing": {
			obs: tick(),
			want: map[string]string{
				"Ready": "False/Initializing", "Progressing": "True/RoundInProgress", "Suspended": "False/NotSuspended",
				"Succeeded": "False/NotFinished", "Failed": "False/NoFailure", "Degraded": "False/Improving",
			},
		},
		"measuring the baseline": {
			spec:  func(s *v1alpha1.AutoResearchSpec) { s.Baseline = nil },
			setup: func(d *driver) { d.next(tick()) },
			obs:   workspaceReady(),
			want: map[string]string{
				"Ready": "True/WorkspaceReady", "Progressing": "True/RoundInProgress", "Suspended": "False/NotSuspended",
				"Succeeded": "False/NotFinished", "Failed": "False/NoFailure", "Degraded": "False/Improving",
			},
		},
		"suspended": {
			setup: func(d *driver) {
				d.start()
				d.spec.Suspend = true
			},
			obs: researched(1, "s"),
			want: map[string]string{
				"Ready": "True/WorkspaceReady", "Progressing": "False/Suspended", "Suspended": "True/SuspendedByUser",
				"Succeeded": "False/NotFinished", "Failed": "False/NoFailure", "Degraded": "False/Improving",
			},
		},
		"plateau": {
			spec: func(s *v1alpha1.AutoResearchSpec) { s.PlateauRounds = 1 },
			setup: func(d *driver) {
				d.start()
				d.evaluate("1.1")
			},
			obs: rolledBack(1),
			want: map[string]string{
				"Ready": "True/WorkspaceReady", "Progressing": "True/RoundInProgress", "Suspended": "False/NotSuspended",
				"Succeeded": "False/NotFinished", "Failed": "False/NoFailure", "Degraded": "True/Plateau",
			},
		},
		"succeeded": {
			spec: func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 1 },
			setup: func(d *driver) {
				d.start()
				d.evaluate("0.9")
			},
			obs: committed(1, commitOf(1)),
			want: map[string]string{
				"Ready": "True/WorkspaceReady", "Progressing": "False/Succeeded", "Suspended": "False/NotSuspended",
				"Succeeded": "True/MaxRoundsReached", "Failed": "False/NoFailure", "Degraded": "False/Improving",
			},
		},
		"failed": {
			setup: func(d *driver) { d.next(tick()) },
			obs:   Observation{Kind: ObserveWorkspaceFailed, Error: "disk full"},
			want: map[string]string{
				"Ready": "False/Failed", "Progressing": "False/Failed", "Suspended": "False/NotSuspended",
				"Succeeded": "False/NotFinished", "Failed": "True/WorkspaceFailed", "Degraded": "False/Improving",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline("1.0"))
			if tc.spec != nil {
				tc.spec(d.spec)
			}
			if tc.setup != nil {
				tc.setup(d)
			}
			d.gen = gen
			out := apply(d, tc.obs)
			if diff := cmp.Diff(tc.want, conditions(out.Status, all...)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if out.Status.ObservedGeneration != gen {
				t.Errorf("status.observedGeneration = %d, want %d", out.Status.ObservedGeneration, gen)
			}
			for _, c := range out.Status.Conditions {
				if c.ObservedGeneration != gen {
					t.Errorf("condition %s has observedGeneration %d, want %d", c.Type, c.ObservedGeneration, gen)
				}
			}
		})
	}
}

// TestNextBoundsFailureMessages checks that text from a failed process
// cannot push the status past the API's length limits.
func TestNextBoundsFailureMessages(t *testing.T) {
	d := newDriver(t)
	d.next(tick())
	out := apply(d, Observation{Kind: ObserveWorkspaceFailed, Error: strings.Repeat("é", 3000)})
	msg := out.Status.Message
	if n := len(msg); n > 2048 {
		t.Errorf("status.message has %d bytes, want at most 2048", n)
	}
	if !strings.HasPrefix(msg, "preparing the workspace failed: éé") || !strings.HasSuffix(msg, "é…") {
		t.Errorf("status.message = %.60q…%q, want the start of the error cut at a character and marked", msg, msg[max(0, len(msg)-8):])
	}
	for _, c := range out.Status.Conditions {
		if len(c.Message) > 32768 {
			t.Errorf("condition %s message has %d bytes, over the API's 32768", c.Type, len(c.Message))
		}
	}
}

// TestNextIsPure checks that Next leaves its input alone and that the same
// input gives the same output.
func TestNextIsPure(t *testing.T) {
	cases := map[string]struct {
		setup func(*driver) Observation
	}{
		"baseline sample": {
			setup: func(d *driver) Observation {
				d.spec.Baseline = &v1alpha1.BaselineSpec{Runs: 2}
				d.start()
				d.next(trained(0))
				return evaluated(0, "1.0")
			},
		},
		"restart of an interrupted round": {
			setup: func(d *driver) Observation {
				d.start()
				d.advanceTo(v1alpha1.StepEval)
				return resumed()
			},
		},
		"improvement with a trimmed history and guidance": {
			setup: func(d *driver) Observation {
				d.spec.HistoryLimit = 1
				d.spec.Guidance = []string{"try AdamW"}
				d.start()
				d.round("1.1")
				d.evaluate("0.9")
				return committed(2, commitOf(2))
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline("1.0"))
			obs := tc.setup(d)
			in := Input{Spec: d.spec, Status: d.st, Generation: d.gen, Observation: obs, Now: tObs}
			status, spec := d.st.DeepCopy(), d.spec.DeepCopy()
			first := Next(in)
			if diff := cmp.Diff(status, &in.Status); diff != "" {
				t.Errorf("Next changed its input status (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(spec, in.Spec); diff != "" {
				t.Errorf("Next changed the spec (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(first, Next(in), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Next gave two outputs for one input (-first +second):\n%s", diff)
			}
		})
	}
}
