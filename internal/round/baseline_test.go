package round

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

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
			wantActions: []Action{{Type: ActionRunEval, Round: 0, Sample: 1, BaseCommit: startCommit, Code: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseBaseline, Message: "measuring the baseline",
				Baseline: &v1alpha1.BaselineResult{}, Failed: notFailed,
			},
		},
		"one run measures the baseline and starts round 1": {
			setup: sampleTrained(),
			obs:   evaluated(0, "1.02"),
			wantActions: []Action{
				{Type: ActionReportRound, Round: 0, Record: &v1alpha1.RoundRecord{
					Round: 0, Strategy: "baseline", Compliance: v1alpha1.CompliancePassed, Value: "1.02", Verdict: v1alpha1.VerdictBaseline,
					Insight: "unmodified code", Commit: startCommit,
				}},
				{Type: ActionRunResearcher, Round: 1, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R1 S1: Researcher — improve val_bpb on train.py",
				Baseline: &v1alpha1.BaselineResult{Value: "1.02", Stddev: "0", Samples: 1, Values: []string{"1.02"}},
				Best:     &v1alpha1.BestResult{Round: 0, Value: "1.02", Commit: startCommit},
				Failed:   notFailed,
			},
		},
		"first of three runs trains the second sample": {
			spec:        runs(3),
			setup:       sampleTrained(),
			obs:         evaluated(0, "0.99"),
			wantActions: []Action{{Type: ActionRunTrain, Round: 0, Sample: 2, BaseCommit: startCommit, Code: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseBaseline, Message: "measuring the baseline",
				Baseline: &v1alpha1.BaselineResult{Values: []string{"0.99"}}, Failed: notFailed,
			},
		},
		"second of three runs is evaluated as sample 2": {
			spec:        runs(3),
			setup:       samples("0.99"),
			obs:         trained(0),
			wantActions: []Action{{Type: ActionRunEval, Round: 0, Sample: 2, BaseCommit: startCommit, Code: startCommit}},
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
				{Type: ActionReportRound, Round: 0, Record: &v1alpha1.RoundRecord{
					Round: 0, Strategy: "baseline", Compliance: v1alpha1.CompliancePassed, Value: "1", Verdict: v1alpha1.VerdictBaseline,
					Insight: "unmodified code, 3 runs: mean 1, stddev 0.01", Commit: startCommit,
				}},
				{Type: ActionRunResearcher, Round: 1, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R1 S1: Researcher — improve val_bpb on train.py",
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
				Message:  "the unmodified code could not be evaluated, so there is no baseline: evaluation printed no val_bpb (training-log metrics are never used)",
				Baseline: &v1alpha1.BaselineResult{}, Failed: baselineFailed,
			},
		},
		"a failing later sample fails the baseline": {
			spec:  runs(3),
			setup: sampleTrained("0.99"),
			obs:   eval(0, EvalResult{Exit: ProcessExit{ExitCode: 2}}),
			want: view{
				Phase:    v1alpha1.PhaseFailed,
				Message:  "the unmodified code could not be evaluated, so there is no baseline: evaluation exited with code 2 and printed no usable val_bpb (training-log metrics are never used)",
				Baseline: &v1alpha1.BaselineResult{Values: []string{"0.99"}}, Failed: baselineFailed,
			},
		},
		"a given baseline's preflight keeps the given value and the measurement": {
			spec:  givenBaseline,
			setup: preflightTrained,
			obs:   evaluated(0, "1.07"),
			wantActions: []Action{
				{Type: ActionReportRound, Round: 0, Record: &v1alpha1.RoundRecord{
					Round: 0, Strategy: "baseline", Compliance: v1alpha1.CompliancePassed, Value: "1.0", Verdict: v1alpha1.VerdictBaseline,
					Insight: "baseline given in the protocol; the preflight of the unmodified code measured val_bpb=1.07; judging against the given 1.0",
					Commit:  startCommit,
				}},
				{Type: ActionRunResearcher, Round: 1, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R1 S1: Researcher — improve val_bpb on train.py",
				Baseline: &v1alpha1.BaselineResult{Value: "1.0", Values: []string{"1.07"}},
				Best:     &v1alpha1.BestResult{Round: 0, Value: "1.0", Commit: startCommit},
				Failed:   notFailed,
			},
		},
		"a given baseline runs once whatever runs says": {
			spec: func(s *v1alpha1.AutoResearchSpec) {
				s.Baseline = &v1alpha1.BaselineSpec{Value: "1.0", Runs: 3}
			},
			setup:       func(d *driver) { d.next(tick()); d.next(workspaceReady()) },
			obs:         trained(0),
			wantActions: []Action{{Type: ActionRunEval, Round: 0, Sample: 1, BaseCommit: startCommit, Code: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseBaseline, Message: "preflight: running the unmodified code once (the baseline is given)",
				Baseline: &v1alpha1.BaselineResult{}, Failed: notFailed,
			},
		},
		"a given baseline's preflight without the metric fails fast": {
			spec:  givenBaseline,
			setup: preflightTrained,
			obs:   eval(0, EvalResult{Exit: ProcessExit{Duration: evalTime}}),
			want: view{
				Phase: v1alpha1.PhaseFailed,
				Message: "preflight failed before round 1 (the baseline is given, but training and evaluation must work): " +
					"the unmodified code could not be evaluated: evaluation printed no val_bpb (training-log metrics are never used)",
				Baseline: &v1alpha1.BaselineResult{}, Failed: baselineFailed,
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
			if diff := cmp.Diff(tc.want, got, ignoreRecordTimes, ignoreTasks); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}
