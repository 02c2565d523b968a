package round

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// round1Tasks is round 1's task list before any step finished, for the
// test spec with a given baseline of 1.0.
var round1Tasks = []string{
	"R1 S1: Researcher — improve val_bpb on train.py",
	"R1 S2: Compliance — check train.py only",
	"R1 S3: Train — uv run train.py (limit: 5m0s)",
	"R1 S4: Eval — uv run eval.py (current best: 1.0)",
	"R1 S5: Git — awaiting result",
	"R1 S6: Termination — 1/10",
}

// with returns tasks with the entries at the given indexes replaced.
func with(tasks []string, changed map[int]string) []string {
	out := slices.Clone(tasks)
	for _, i := range slices.Sorted(maps.Keys(changed)) {
		out[i] = changed[i]
	}
	return out
}

func TestRoundTasksInProgress(t *testing.T) {
	at := func(step v1alpha1.Step) func(*driver) {
		return func(d *driver) {
			d.start()
			d.advanceTo(step)
		}
	}
	done := map[int]string{0: "R1 S1: Researcher — strategy 1", 1: "R1 S2: Compliance — ✅", 2: "R1 S3: Train — done 2m0s"}
	cases := map[string]struct {
		spec  func(*v1alpha1.AutoResearchSpec)
		setup func(*driver)
		obs   Observation
		want  []string
	}{
		"new round": {
			setup: preflightTrained,
			obs:   evaluated(0, "1.0"),
			want:  round1Tasks,
		},
		"kernel targets are checked for parity": {
			spec: func(s *v1alpha1.AutoResearchSpec) {
				s.Variable.Files = []v1alpha1.RelativePath{"train.py", "kernels.py"}
				s.KernelTargets = []v1alpha1.KernelTarget{
					{Name: "rmsnorm", NewModule: "kernels:rmsnorm", BaselineModule: "reference:rmsnorm", Fixture: "reference:fixture"},
					{Name: "rope", NewModule: "kernels:rope", BaselineModule: "reference:rope", Fixture: "reference:fixture"},
				}
			},
			setup: preflightTrained,
			obs:   evaluated(0, "1.0"),
			want: with(round1Tasks, map[int]string{
				0: "R1 S1: Researcher — improve val_bpb on train.py, kernels.py",
				1: "R1 S2: Compliance — files + parity (2 kernels)",
			}),
		},
		"baseline round": {
			spec:  func(s *v1alpha1.AutoResearchSpec) { s.Baseline = &v1alpha1.BaselineSpec{Runs: 2} },
			setup: func(d *driver) { d.next(tick()) },
			obs:   workspaceReady(),
			want: []string{
				"R0 S1: Researcher — skipped: the baseline measures the unmodified code",
				"R0 S2: Compliance — skipped: nothing changed",
				"R0 S3: Train — uv run train.py (limit: 5m0s, 2 run(s))",
				"R0 S4: Eval — uv run eval.py",
				"R0 S5: Git — nothing to commit",
				"R0 S6: Termination — 0/10",
			},
		},
		"baseline sample": {
			spec: func(s *v1alpha1.AutoResearchSpec) { s.Baseline = &v1alpha1.BaselineSpec{Runs: 2} },
			setup: func(d *driver) {
				d.start()
				d.next(trained(0))
			},
			obs: evaluated(0, "1.0"),
			want: []string{
				"R0 S1: Researcher — skipped: the baseline measures the unmodified code",
				"R0 S2: Compliance — skipped: nothing changed",
				"R0 S3: Train — baseline run 1/2 done 2m0s",
				"R0 S4: Eval — baseline run 1/2: val_bpb=1.0",
				"R0 S5: Git — nothing to commit",
				"R0 S6: Termination — 0/10",
			},
		},
		"researcher crash": {
			obs: researcherExit(1, "", ProcessExit{ExitCode: 2}),
			want: with(round1Tasks, map[int]string{
				0: "R1 S1: Researcher — crashed (exit code 2)",
				4: "R1 S5: Git — awaiting result (researcher_failed)",
			}),
		},
		"researcher timeout": {
			obs: researcherExit(1, "", ProcessExit{TimedOut: true, Duration: 10 * time.Minute}),
			want: with(round1Tasks, map[int]string{
				0: "R1 S1: Researcher — timeout after 10m0s",
				4: "R1 S5: Git — awaiting result (researcher_failed)",
			}),
		},
		"researcher without a strategy": {
			obs:  researched(1, ""),
			want: with(round1Tasks, map[int]string{0: "R1 S1: Researcher — (no strategy recorded)"}),
		},
		"compliance passed": {
			setup: at(v1alpha1.StepCompliance),
			obs:   compliant(1),
			want:  with(round1Tasks, map[int]string{0: "R1 S1: Researcher — strategy 1", 1: "R1 S2: Compliance — ✅"}),
		},
		"compliance failed": {
			setup: at(v1alpha1.StepCompliance),
			obs:   compliance(1, ComplianceResult{Violation: "touched prepare.py"}),
			want: with(round1Tasks, map[int]string{
				0: "R1 S1: Researcher — strategy 1",
				1: "R1 S2: Compliance — ❌ files: touched prepare.py",
				4: "R1 S5: Git — awaiting result (compliance_failed)",
			}),
		},
		"training done with its final loss": {
			setup: at(v1alpha1.StepTrain),
			obs:   train(1, TrainResult{Exit: ProcessExit{Duration: 61250 * time.Millisecond}, FinalLoss: "2.31"}),
			want: with(round1Tasks, map[int]string{
				0: "R1 S1: Researcher — strategy 1",
				1: "R1 S2: Compliance — ✅",
				2: "R1 S3: Train — done 1m1.3s, final loss=2.31",
			}),
		},
		"training timeout": {
			setup: at(v1alpha1.StepTrain),
			obs:   train(1, TrainResult{Exit: ProcessExit{TimedOut: true}}),
			want: with(round1Tasks, map[int]string{
				0: "R1 S1: Researcher — strategy 1",
				1: "R1 S2: Compliance — ✅",
				2: "R1 S3: Train — train_timeout",
				4: "R1 S5: Git — awaiting result (train_timeout)",
			}),
		},
		"evaluation improved": {
			setup: at(v1alpha1.StepEval),
			obs:   evaluated(1, "0.9"),
			want: with(round1Tasks, map[int]string{
				0: done[0], 1: done[1], 2: done[2],
				3: "R1 S4: Eval — val_bpb=0.9 (best: 1.0 ↑)",
				4: "R1 S5: Git — awaiting result (improved)",
			}),
		},
		"evaluation not improved": {
			setup: at(v1alpha1.StepEval),
			obs:   evaluated(1, "1.1"),
			want: with(round1Tasks, map[int]string{
				0: done[0], 1: done[1], 2: done[2],
				3: "R1 S4: Eval — val_bpb=1.1 (best: 1.0 —)",
				4: "R1 S5: Git — awaiting result (not_improved)",
			}),
		},
		"evaluation without the metric": {
			setup: at(v1alpha1.StepEval),
			obs:   eval(1, EvalResult{}),
			want: with(round1Tasks, map[int]string{
				0: done[0], 1: done[1], 2: done[2],
				3: "R1 S4: Eval — no val_bpb",
				4: "R1 S5: Git — awaiting result (eval_failed)",
			}),
		},
		"evaluation not run": {
			setup: at(v1alpha1.StepEval),
			obs:   eval(1, EvalResult{FixedFilesChanged: []string{"prepare.py"}}),
			want: with(round1Tasks, map[int]string{
				0: done[0], 1: done[1], 2: done[2],
				3: "R1 S4: Eval — not run: fixed files changed before evaluation: prepare.py",
				4: "R1 S5: Git — awaiting result (compliance_failed)",
			}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline)
			if tc.spec != nil {
				tc.spec(d.spec)
			}
			if tc.setup != nil {
				tc.setup(d)
			} else {
				d.start()
			}
			out := apply(d, tc.obs)
			if out.Status.CurrentRound == nil {
				t.Fatalf("no round in progress (phase %s)", out.Status.Phase)
			}
			if diff := cmp.Diff(tc.want, out.Status.CurrentRound.Tasks); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRoundTasksOfFinishedRound checks the task list the Record action
// carries, the only place the Git and Termination outcomes remain.
func TestRoundTasksOfFinishedRound(t *testing.T) {
	evaluatedTasks := func(value, mark string) []string {
		return with(round1Tasks, map[int]string{
			0: "R1 S1: Researcher — strategy 1",
			1: "R1 S2: Compliance — ✅",
			2: "R1 S3: Train — done 2m0s",
			3: "R1 S4: Eval — val_bpb=" + value + " (best: 1.0 " + mark + ")",
		})
	}
	cases := map[string]struct {
		spec  func(*v1alpha1.AutoResearchSpec)
		value string
		obs   Observation
		want  []string
	}{
		"committed": {
			value: "0.9",
			obs:   committed(1, commitOf(1)),
			want: with(evaluatedTasks("0.9", "↑"), map[int]string{
				4: "R1 S5: Git — committed abc0001",
				5: "R1 S6: Termination — continue",
			}),
		},
		"rolled back": {
			value: "1.1",
			obs:   rolledBack(1),
			want: with(evaluatedTasks("1.1", "—"), map[int]string{
				4: "R1 S5: Git — rolled back",
				5: "R1 S6: Termination — continue",
			}),
		},
		"last round": {
			spec:  func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 1 },
			value: "1.1",
			obs:   rolledBack(1),
			want: []string{
				"R1 S1: Researcher — strategy 1",
				"R1 S2: Compliance — ✅",
				"R1 S3: Train — done 2m0s",
				"R1 S4: Eval — val_bpb=1.1 (best: 1.0 —)",
				"R1 S5: Git — rolled back",
				"R1 S6: Termination — done: MaxRoundsReached",
			},
		},
		"target reached": {
			spec: func(s *v1alpha1.AutoResearchSpec) {
				target := v1alpha1.Decimal("0.95")
				s.Target = target
			},
			value: "0.9",
			obs:   committed(1, commitOf(1)),
			want: with(evaluatedTasks("0.9", "↑"), map[int]string{
				4: "R1 S5: Git — committed abc0001",
				5: "R1 S6: Termination — done: TargetReached",
			}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline)
			if tc.spec != nil {
				tc.spec(d.spec)
			}
			d.start()
			d.evaluate(tc.value)
			out := apply(d, tc.obs)
			if len(out.Actions) == 0 || out.Actions[0].Type != ActionReportRound {
				t.Fatalf("actions = %+v, want a Record first", out.Actions)
			}
			if diff := cmp.Diff(tc.want, out.Actions[0].Tasks); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRoundTasksOfBaselineRecord(t *testing.T) {
	cases := map[string]struct {
		baseline *v1alpha1.BaselineSpec
		want     []string
	}{
		"measured baseline keeps round 0's tasks": {
			want: []string{
				"R0 S1: Researcher — skipped: the baseline measures the unmodified code",
				"R0 S2: Compliance — skipped: nothing changed",
				"R0 S3: Train — baseline run 1/1 done 2m0s",
				"R0 S4: Eval — baseline run 1/1: val_bpb=0.98",
				"R0 S5: Git — nothing to commit",
				"R0 S6: Termination — 0/10",
			},
		},
		"given baseline lists its preflight": {
			baseline: &v1alpha1.BaselineSpec{Value: "0.98"},
			want: []string{
				"R0 S1: Researcher — skipped: the baseline measures the unmodified code",
				"R0 S2: Compliance — skipped: nothing changed",
				"R0 S3: Train — baseline run 1/1 done 2m0s",
				"R0 S4: Eval — baseline run 1/1: val_bpb=0.98",
				"R0 S5: Git — nothing to commit",
				"R0 S6: Termination — 0/10",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t)
			d.spec.Baseline = tc.baseline
			acts := d.start()
			if d.current() == 0 {
				d.next(trained(0))
				acts = d.next(evaluated(0, "0.98"))
			}
			if len(acts) == 0 || acts[0].Type != ActionReportRound || acts[0].Round != 0 {
				t.Fatalf("actions = %+v, want the baseline's Record first", acts)
			}
			if diff := cmp.Diff(tc.want, acts[0].Tasks); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
		})
	}
}
