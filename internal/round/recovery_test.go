package round

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

func TestNextSuspend(t *testing.T) {
	type view struct {
		Phase      v1alpha1.Phase
		Message    string
		Step       v1alpha1.Step
		StepState  v1alpha1.StepState
		Strategy   string
		Conditions map[string]string
	}
	suspend := func(on bool) func(*driver) { return func(d *driver) { d.spec.Suspend = &on } }
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
				Step: v1alpha1.StepTrain, StepState: v1alpha1.StepStatePending, Strategy: "baseline", Conditions: suspendedConds,
			},
		},
		"unsuspended baseline trains": {
			spec:        func(s *v1alpha1.AutoResearchSpec) { s.Baseline = nil },
			setup:       steps(feed(tick()), suspend(true), feed(workspaceReady()), suspend(false)),
			obs:         tick(),
			wantActions: []Action{{Type: ActionRunTrain, Round: 0, Sample: 1, BaseCommit: startCommit, Code: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseBaseline, Message: "resumed at R0 Train",
				Step: v1alpha1.StepTrain, StepState: v1alpha1.StepStateRunning, Strategy: "baseline", Conditions: runningConds,
			},
		},
		"step result is recorded and the next step waits": {
			setup: steps(start, suspend(true)),
			obs:   researched(1, "warmup schedule"),
			want: view{
				Phase: v1alpha1.PhaseSuspended, Message: "suspended before R1 Compliance",
				Step: v1alpha1.StepCompliance, StepState: v1alpha1.StepStatePending, Strategy: "warmup schedule", Conditions: suspendedConds,
			},
		},
		"round result is recorded and the next round waits": {
			setup: steps(start, func(d *driver) { d.evaluate("1.1") }, suspend(true)),
			obs:   rolledBack(1),
			wantActions: []Action{{Type: ActionReportRound, Round: 1, Record: &v1alpha1.RoundRecord{
				Round: 1, Strategy: "strategy 1", Compliance: v1alpha1.CompliancePassed, Value: "1.1", Verdict: v1alpha1.VerdictNotImproved,
				Insight: "val_bpb=1.1 is no better than the best 1.0 (R0); the change did not help",
			}}},
			want: view{
				Phase: v1alpha1.PhaseSuspended, Message: "suspended before R2 Researcher",
				Step: v1alpha1.StepResearcher, StepState: v1alpha1.StepStatePending, Conditions: suspendedConds,
			},
		},
		"tick while suspended starts nothing": {
			setup: steps(start, suspend(true), feed(researched(1, "warmup schedule"))),
			obs:   tick(),
			want: view{
				Phase: v1alpha1.PhaseSuspended, Message: "suspended before R1 Compliance",
				Step: v1alpha1.StepCompliance, StepState: v1alpha1.StepStatePending, Strategy: "warmup schedule", Conditions: suspendedConds,
			},
		},
		"unsuspending starts the pending step": {
			setup:       steps(start, suspend(true), feed(researched(1, "warmup schedule")), suspend(false)),
			obs:         tick(),
			wantActions: []Action{{Type: ActionCheckCompliance, Round: 1, BaseCommit: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "resumed at R1 Compliance",
				Step: v1alpha1.StepCompliance, StepState: v1alpha1.StepStateRunning, Strategy: "warmup schedule", Conditions: runningConds,
			},
		},
		"running step keeps running when suspended": {
			setup:       steps(start, suspend(true)),
			obs:         tick(),
			wantActions: []Action{{Type: ActionRunResearcher, Round: 1, BaseCommit: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R1 S1: Researcher — improve val_bpb on train.py",
				Step: v1alpha1.StepResearcher, StepState: v1alpha1.StepStateRunning, Conditions: runningConds,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline)
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
		Phase: v1alpha1.PhaseRunning, Message: "R2 S1: Researcher — improve val_bpb on train.py",
		Step: v1alpha1.StepResearcher, StepState: v1alpha1.StepStateRunning,
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
			wantActions: []Action{{Type: ActionRunTrain, Round: 0, Sample: 2, BaseCommit: startCommit, Code: startCommit}},
			want:        view{Phase: v1alpha1.PhaseBaseline, Message: "measuring the baseline", Step: v1alpha1.StepTrain, StepState: v1alpha1.StepStateRunning},
		},
		"interrupted commit is redone": {
			setup: func(d *driver) {
				d.start()
				d.evaluate("0.9")
			},
			wantActions: []Action{{Type: ActionCommit, Round: 1, BaseCommit: startCommit, Code: startCommit, Message: "autoresearch: round 1 — val_bpb=0.9 (improved)"}},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R1 S5: Git — awaiting result (improved)",
				Step: v1alpha1.StepGit, StepState: v1alpha1.StepStateRunning, Verdict: v1alpha1.VerdictImproved,
			},
		},
		"interrupted rollback is redone": {
			setup: func(d *driver) {
				d.start()
				d.evaluate("1.1")
			},
			wantActions: []Action{{Type: ActionRollback, Round: 1, BaseCommit: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R1 S5: Git — awaiting result (not_improved)",
				Step: v1alpha1.StepGit, StepState: v1alpha1.StepStateRunning, Verdict: v1alpha1.VerdictNotImproved,
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
				d.spec.Suspend = ptr.To(true)
			},
			want: view{Phase: v1alpha1.PhaseSuspended, Message: "suspended before the workspace was prepared"},
		},
		"suspended round stays suspended": {
			setup: func(d *driver) {
				d.start()
				d.spec.Suspend = ptr.To(true)
				d.next(researched(1, "warmup schedule"))
			},
			want: view{Phase: v1alpha1.PhaseSuspended, Message: "suspended before R1 Compliance", Step: v1alpha1.StepCompliance, StepState: v1alpha1.StepStatePending},
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
			want:        view{Phase: v1alpha1.PhaseRunning, Message: "R4 S1: Researcher — improve val_bpb on train.py", Step: v1alpha1.StepResearcher, StepState: v1alpha1.StepStateRunning},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline)
			if tc.spec != nil {
				tc.spec(d.spec)
			}
			tc.setup(d)
			out := apply(d, resumed())
			if diff := cmp.Diff(tc.wantActions, out.Actions, ignoreRecordTimes, ignoreTasks); diff != "" {
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
	d := newDriver(t, givenBaseline)
	d.start()
	d.round("0.9")
	fresh := d.st.CurrentRound.DeepCopy()
	d.advanceTo(v1alpha1.StepEval)
	steps := d.st.CurrentRound.Timeline

	got := apply(d, resumed()).Status.CurrentRound
	want := fresh.DeepCopy()
	want.StepStartTime = timeAt(tObs)
	// The timeline keeps the steps the interrupted round went through.
	want.Timeline = append(steps, v1alpha1.StepStart{Step: v1alpha1.StepResearcher, Time: *microAt(tObs)})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restarted round (-want +got):\n%s", diff)
	}
}

// TestNextWaiting shows why a step has not started, and stops saying so
// once it runs; waiting never ends a step.
func TestNextWaiting(t *testing.T) {
	waiting := func(why string) Observation { return Observation{Kind: ObserveTick, Waiting: why} }
	type view struct {
		Phase     v1alpha1.Phase
		Message   string
		Step      v1alpha1.Step
		StepState v1alpha1.StepState
	}
	const why = `w-r1-researcher cannot start its container researcher: CreateContainerConfigError: secret "llm-key" not found`
	cases := map[string]struct {
		setup func(*driver)
		obs   Observation
		want  view
		cond  map[string]string
	}{
		"a running step that waits says why": {
			setup: func(d *driver) { d.start() },
			obs:   waiting(why),
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R1 S1: Researcher — improve val_bpb on train.py — waiting: " + why,
				Step: v1alpha1.StepResearcher, StepState: v1alpha1.StepStateRunning,
			},
			cond: map[string]string{"Progressing": "False/StepWaiting"},
		},
		"a step that runs after waiting says so no longer": {
			setup: func(d *driver) {
				d.start()
				d.next(waiting(why))
			},
			obs: tick(),
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R1 S1: Researcher — improve val_bpb on train.py",
				Step: v1alpha1.StepResearcher, StepState: v1alpha1.StepStateRunning,
			},
			cond: map[string]string{"Progressing": "True/RoundInProgress"},
		},
		"the workspace's preparation that waits says why": {
			setup: func(d *driver) { d.next(tick()) },
			obs:   waiting("w-init waits to be scheduled: persistentvolumeclaim \"w-workspace\" not found"),
			want: view{
				Phase:   v1alpha1.PhaseInitializing,
				Message: "preparing the workspace — waiting: w-init waits to be scheduled: persistentvolumeclaim \"w-workspace\" not found",
			},
			cond: map[string]string{"Progressing": "True/RoundInProgress"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline)
			tc.setup(d)
			out := apply(d, tc.obs)
			st := out.Status
			got := view{Phase: st.Phase, Message: st.Message}
			if cr := st.CurrentRound; cr != nil {
				got.Step, got.StepState = cr.Step, cr.StepState
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.cond, conditions(st, v1alpha1.ConditionProgressing)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if len(out.Actions) > 1 {
				t.Errorf("waiting started work: %+v", out.Actions)
			}
		})
	}
}

// TestTimelineRecordsEachStep checks that a round's record says when each
// of its steps started, to the microsecond, once per step: the handoff
// overhead between steps is read from it.
func TestTimelineRecordsEachStep(t *testing.T) {
	d := newDriver(t, givenBaseline)
	d.now = d.now.Add(250 * time.Microsecond)
	d.start()
	start := d.st.CurrentRound.StartTime.Time
	d.round("0.9")

	rec := d.st.History[len(d.st.History)-1]
	if rec.Round != 1 {
		t.Fatalf("last record is R%d, want R1", rec.Round)
	}
	want := []v1alpha1.StepStart{}
	for i, s := range []v1alpha1.Step{v1alpha1.StepResearcher, v1alpha1.StepCompliance, v1alpha1.StepTrain, v1alpha1.StepEval, v1alpha1.StepGit} {
		want = append(want, v1alpha1.StepStart{Step: s, Time: metav1.NewMicroTime(start.Add(time.Duration(i) * time.Minute))})
	}
	if diff := cmp.Diff(want, rec.Timeline); diff != "" {
		t.Errorf("R1's timeline (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(timeAt(start), rec.StartTime); diff != "" {
		t.Errorf("R1's start (-want +got):\n%s", diff)
	}
	data, err := json.Marshal(rec.Timeline[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), ".000250Z") {
		t.Errorf("timeline entry %s, want the time to the microsecond", data)
	}
}
