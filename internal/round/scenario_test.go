package round

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// attempt scripts what one Researcher run of a round leads to.
type attempt struct {
	researcherExit int
	violation      string
	trainExit      int
	// value is what the evaluation prints; "" prints no metric.
	value string
}

// lab is a fake adapter: like the local runner, it performs the engine's
// actions in order with scripted results and feeds back the result of the
// one the engine waits for, until the engine waits for nothing.
type lab struct {
	d        *driver
	baseline []string
	// rounds holds each round's attempts; an interrupted round takes the
	// next attempt when it restarts.
	rounds map[int32][]attempt
	// interrupt names an action ("R2 RunTrain") during which the process
	// dies: run returns without a result, as after a crash.
	interrupt string

	// checkCurrent compares every waited-for action with CurrentAction.
	checkCurrent bool

	head  string
	trace []string
	// ledger holds the rows the steps wrote, by round, as experiences.md
	// would: a step done again rewrites its row.
	ledger map[int32]steps.LedgerRound
	// baselineRowBy lists the rounds whose Researcher step carried row 0.
	baselineRowBy []int32
	reported      []int32
	warnings      []string
	finish        *Action
}

func newLab(d *driver, baseline []string, rounds map[int32][]attempt) *lab {
	return &lab{d: d, baseline: baseline, rounds: rounds, ledger: map[int32]steps.LedgerRound{}}
}

// run feeds obs and performs actions until the engine waits for nothing or
// the process is interrupted.
func (l *lab) run(obs Observation) {
	l.d.t.Helper()
	for range 1000 {
		var wait *Observation
		acts := l.d.next(obs)
		if l.checkCurrent {
			l.checkCurrentAction(acts)
		}
		for _, a := range acts {
			o, interrupted := l.perform(a)
			if interrupted {
				return
			}
			if o != nil {
				wait = o
			}
		}
		if wait == nil {
			return
		}
		obs = *wait
	}
	l.d.t.Fatalf("the loop did not settle after 1000 steps; last trace: %v", l.trace[max(0, len(l.trace)-10):])
}

func (l *lab) perform(a Action) (*Observation, bool) {
	name := fmt.Sprintf("R%d %s", a.Round, a.Type)
	if name == l.interrupt {
		l.interrupt = ""
		l.trace = append(l.trace, name+" (interrupted)")
		l.used(a.Round)
		return nil, true
	}
	at := l.attempt(a.Round)
	switch a.Type {
	case ActionPrepareWorkspace:
		l.head = startCommit
		l.trace = append(l.trace, name)
		return ref(workspaceReady()), false
	case ActionRunResearcher:
		// The Researcher starts from the round's base commit.
		l.write(a)
		l.head = a.BaseCommit
		l.trace = append(l.trace, fmt.Sprintf("%s from %.7s", name, a.BaseCommit))
		return ref(researcherExit(a.Round, fmt.Sprintf("idea %d", a.Round), ProcessExit{ExitCode: at.researcherExit, Duration: researcherTime})), false
	case ActionCheckCompliance:
		l.trace = append(l.trace, name)
		return ref(compliance(a.Round, ComplianceResult{Violation: at.violation})), false
	case ActionRunTrain:
		l.trace = append(l.trace, name)
		return ref(train(a.Round, TrainResult{Exit: ProcessExit{ExitCode: at.trainExit, Duration: trainTime}})), false
	case ActionRunEval:
		l.trace = append(l.trace, name)
		value := at.value
		if a.Round == 0 {
			value = l.baseline[a.Sample-1]
		}
		return ref(eval(a.Round, EvalResult{Exit: ProcessExit{Duration: evalTime}, Found: value != "", Value: value})), false
	case ActionCommit:
		l.write(a)
		l.head = commitOf(a.Round)
		l.trace = append(l.trace, fmt.Sprintf("%s %.7s", name, l.head))
		l.used(a.Round)
		return ref(committed(a.Round, l.head)), false
	case ActionRollback:
		l.write(a)
		l.head = a.BaseCommit
		l.trace = append(l.trace, fmt.Sprintf("%s to %.7s", name, a.BaseCommit))
		l.used(a.Round)
		return ref(rolledBack(a.Round)), false
	case ActionReportRound:
		l.reported = append(l.reported, a.Round)
	case ActionWarn:
		l.warnings = append(l.warnings, a.Reason)
		if a.Reason == v1alpha1.ReasonPlateau {
			l.trace = append(l.trace, name)
		}
	case ActionFinish:
		l.finish = &a
		l.trace = append(l.trace, fmt.Sprintf("%s %s", name, a.Ledger.Status))
		return &Observation{Kind: ObserveFinished, Round: a.Round, Commit: l.head}, false
	}
	return nil, false
}

// checkCurrentAction checks that the last action of a batch, when the
// engine waits for it, is the one CurrentAction rebuilds.
func (l *lab) checkCurrentAction(acts []Action) {
	l.d.t.Helper()
	cur, ok := CurrentAction(l.d.spec, &l.d.st)
	var last *Action
	if n := len(acts); n > 0 && waitsFor(acts[n-1].Type) {
		last = &acts[n-1]
	}
	switch {
	case last == nil && ok:
		l.d.t.Errorf("the engine emitted nothing to wait for, but CurrentAction is %s", cur.Type)
	case last != nil && !ok:
		l.d.t.Errorf("the engine waits for %s, but CurrentAction has nothing", last.Type)
	case last != nil:
		if diff := cmp.Diff(*last, cur); diff != "" {
			l.d.t.Errorf("emitted action and CurrentAction differ (-emitted +current):\n%s", diff)
		}
	}
}

func waitsFor(t ActionType) bool {
	switch t {
	case ActionReportRound, ActionWarn:
		return false
	}
	return true
}

// write records the ledger row an action carries.
func (l *lab) write(a Action) {
	if a.Ledger != nil && a.Ledger.Round != nil {
		l.ledger[a.Ledger.Round.Round] = *a.Ledger.Round
		if a.Type == ActionRunResearcher && a.Ledger.Round.Round == 0 {
			l.baselineRowBy = append(l.baselineRowBy, a.Round)
		}
	}
}

// attempt is the script of round n's current Researcher run.
func (l *lab) attempt(n int32) attempt {
	if len(l.rounds[n]) == 0 {
		return attempt{}
	}
	return l.rounds[n][0]
}

// used moves round n on to its next attempt.
func (l *lab) used(n int32) {
	if len(l.rounds[n]) > 0 {
		l.rounds[n] = l.rounds[n][1:]
	}
}

// rows summarises the ledger as "round verdict value", and checks that
// every row was reported to the human too.
func (l *lab) rows() []string {
	l.d.t.Helper()
	var out []string
	for _, n := range slices.Sorted(maps.Keys(l.ledger)) {
		r := l.ledger[n]
		out = append(out, fmt.Sprintf("R%d %s %s", r.Round, r.Verdict, r.Value))
		if !slices.Contains(l.reported, n) {
			l.d.t.Errorf("R%d is in the ledger but was never reported", n)
		}
	}
	return out
}

func ref[T any](v T) *T { return &v }

func TestScenarioMeasuredBaselineToTarget(t *testing.T) {
	d := newDriver(t, func(s *v1alpha1.AutoResearchSpec) {
		s.Baseline = &v1alpha1.BaselineSpec{Runs: 3}
		target := v1alpha1.Decimal("0.9")
		s.Target = target
	})
	l := newLab(d, []string{"1.02", "1.0", "0.98"}, map[int32][]attempt{
		1: {{value: "0.97"}},     // beats 1 by 0.03, inside the noise margin 2 × 0.02
		2: {{researcherExit: 1}}, // crash
		3: {{value: "0.95"}},     // improved
		4: {{violation: "touched prepare.py"}},
		5: {{trainExit: 1}},  // crash
		6: {{value: "0.89"}}, // improved, reaches the target
	})
	l.run(tick())

	wantRows := []string{
		"R0 baseline 1",
		"R1 within_noise 0.97",
		"R2 researcher_failed ",
		"R3 improved 0.95",
		"R4 compliance_failed ",
		"R5 train_failed ",
		"R6 improved 0.89",
	}
	if diff := cmp.Diff(wantRows, l.rows()); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	wantTrace := []string{
		"R0 PrepareWorkspace",
		"R0 RunTrain", "R0 RunEval", "R0 RunTrain", "R0 RunEval", "R0 RunTrain", "R0 RunEval",
		"R1 RunResearcher from 5a5a5a5", "R1 CheckCompliance", "R1 RunTrain", "R1 RunEval", "R1 Rollback to 5a5a5a5",
		"R2 RunResearcher from 5a5a5a5", "R2 Rollback to 5a5a5a5",
		"R3 RunResearcher from 5a5a5a5", "R3 CheckCompliance", "R3 RunTrain", "R3 RunEval", "R3 Commit abc0003",
		"R4 RunResearcher from abc0003", "R4 CheckCompliance", "R4 Rollback to abc0003",
		"R5 RunResearcher from abc0003", "R5 CheckCompliance", "R5 RunTrain", "R5 Rollback to abc0003",
		"R6 RunResearcher from abc0003", "R6 CheckCompliance", "R6 RunTrain", "R6 RunEval", "R6 Commit abc0006",
		"R6 Finish target_reached",
	}
	if diff := cmp.Diff(wantTrace, l.trace); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	type final struct {
		Phase    v1alpha1.Phase
		Baseline *v1alpha1.BaselineResult
		Best     *v1alpha1.BestResult
		Counts   map[v1alpha1.Verdict]int32
		Usage    v1alpha1.Usage
	}
	st := d.st
	got := final{st.Phase, st.Baseline, st.Best, st.VerdictCounts, st.Usage}
	want := final{
		Phase:    v1alpha1.PhaseSucceeded,
		Baseline: &v1alpha1.BaselineResult{Value: "1", Stddev: "0.02", Samples: 3, Values: []string{"1.02", "1.0", "0.98"}},
		Best:     &v1alpha1.BestResult{Round: 6, Value: "0.89", Commit: commitOf(6)},
		Counts: map[v1alpha1.Verdict]int32{
			v1alpha1.VerdictWithinNoise: 1, v1alpha1.VerdictResearcherFailed: 1, v1alpha1.VerdictImproved: 2,
			v1alpha1.VerdictComplianceFailed: 1, v1alpha1.VerdictTrainFailed: 1,
		},
		// Three baseline runs and the four rounds that trained (R1, R3, R5,
		// R6); R5's training crashed and was never evaluated.
		Usage: v1alpha1.Usage{
			GPUSeconds:        int64((3*(trainTime+evalTime) + 4*trainTime + 3*evalTime).Seconds()),
			ResearcherSeconds: int64(6 * researcherTime.Seconds()),
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("final status (-want +got):\n%s", diff)
	}
}

func TestScenarioMaximizeWithPlateauToMaxRounds(t *testing.T) {
	d := newDriver(t, func(s *v1alpha1.AutoResearchSpec) {
		s.Eval.Metric, s.Eval.Direction = "val_acc", v1alpha1.DirectionMaximize
		s.Baseline = &v1alpha1.BaselineSpec{Value: "0.5"}
		s.MaxRounds = 5
		s.Plateau = &v1alpha1.PlateauSpec{Rounds: 2}
	})
	// The preflight measures 0.52; the given 0.5 stays the one judged against.
	l := newLab(d, []string{"0.52"}, map[int32][]attempt{
		1: {{value: "0.6"}},
		2: {{value: "0.55"}},
		3: {{value: "0.6"}}, // equal: not an improvement
		4: {{value: ""}},    // no metric
		5: {{value: "0.7"}},
	})
	l.run(tick())

	wantRows := []string{
		"R0 baseline 0.5",
		"R1 improved 0.6",
		"R2 not_improved 0.55",
		"R3 not_improved 0.6",
		"R4 eval_failed ",
		"R5 improved 0.7",
	}
	if diff := cmp.Diff(wantRows, l.rows()); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	// Two rounds without improvement (R2–R3) warn; R4 makes three, which
	// does not complete another window before R5 improves.
	if diff := cmp.Diff([]string{v1alpha1.ReasonPlateau}, l.warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if l.finish == nil || l.finish.Ledger.Status != "completed" || l.finish.Reason != v1alpha1.ReasonMaxRoundsReached {
		t.Fatalf("finish = %+v, want completed after max rounds", l.finish)
	}
	type final struct {
		Phase    v1alpha1.Phase
		Best     *v1alpha1.BestResult
		Degraded map[string]string
	}
	got := final{d.st.Phase, d.st.Best, conditions(d.st, v1alpha1.ConditionDegraded)}
	want := final{
		Phase:    v1alpha1.PhaseSucceeded,
		Best:     &v1alpha1.BestResult{Round: 5, Value: "0.7", Commit: commitOf(5)},
		Degraded: map[string]string{"Degraded": "False/Improving"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("final status (-want +got):\n%s", diff)
	}
}

func TestScenarioInterruptedAndContinued(t *testing.T) {
	d := newDriver(t, func(s *v1alpha1.AutoResearchSpec) {
		s.Baseline = &v1alpha1.BaselineSpec{Value: "1.0"}
		s.MaxRounds = 2
	})
	l := newLab(d, []string{"1.02"}, map[int32][]attempt{
		1: {{value: "0.9"}},
		// The first attempt of round 2 dies during training; the restart
		// is a new Researcher run from the same base.
		2: {{value: "0.1"}, {value: "1.5"}},
		3: {{value: "0.8"}},
	})
	l.interrupt = "R2 RunTrain"
	l.run(tick())
	if d.st.CurrentRound == nil || d.st.CurrentRound.Step != v1alpha1.StepTrain {
		t.Fatalf("after the interruption the status is at %+v, want R2 Train", d.st.CurrentRound)
	}
	l.run(resumed())
	if d.st.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase = %s, want Succeeded after round 2", d.st.Phase)
	}
	d.spec.MaxRounds = 3
	l.run(tick())

	wantRows := []string{
		"R0 baseline 1.0",
		"R1 improved 0.9",
		"R2 not_improved 1.5",
		"R3 improved 0.8",
	}
	if diff := cmp.Diff(wantRows, l.rows()); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	wantTrace := []string{
		"R0 PrepareWorkspace", "R0 RunTrain", "R0 RunEval",
		"R1 RunResearcher from 5a5a5a5", "R1 CheckCompliance", "R1 RunTrain", "R1 RunEval", "R1 Commit abc0001",
		"R2 RunResearcher from abc0001", "R2 CheckCompliance", "R2 RunTrain (interrupted)",
		"R2 RunResearcher from abc0001", "R2 CheckCompliance", "R2 RunTrain", "R2 RunEval", "R2 Rollback to abc0001",
		"R2 Finish completed",
		"R3 RunResearcher from abc0001", "R3 CheckCompliance", "R3 RunTrain", "R3 RunEval", "R3 Commit abc0003",
		"R3 Finish completed",
	}
	if diff := cmp.Diff(wantTrace, l.trace); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"RoundRestarted"}, l.warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&v1alpha1.BestResult{Round: 3, Value: "0.8", Commit: commitOf(3)}, d.st.Best); diff != "" {
		t.Errorf("best (-want +got):\n%s", diff)
	}
}

// TestScenarioPreflightOfAGivenBaseline: a given baseline does not spare
// the unmodified code one run, so a broken training fails the experiment
// before round 1; once fixed and accepted, the preflight runs again.
func TestScenarioPreflightOfAGivenBaseline(t *testing.T) {
	d := newDriver(t, func(s *v1alpha1.AutoResearchSpec) {
		s.Baseline = &v1alpha1.BaselineSpec{Value: "1.0"}
		s.MaxRounds = 1
	})
	l := newLab(d, []string{"1.01"}, map[int32][]attempt{
		0: {{trainExit: 2}},
		1: {{value: "0.9"}},
	})
	l.run(tick())

	if diff := cmp.Diff([]string{"R0 PrepareWorkspace", "R0 RunTrain"}, l.trace); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	wantMsg := "preflight failed before round 1 (the baseline is given, but training and evaluation must work): the unmodified code failed to train: crash: training exited with code 2"
	if d.st.Phase != v1alpha1.PhaseFailed || d.st.Message != wantMsg {
		t.Errorf("after a broken preflight: %s %q, want Failed %q", d.st.Phase, d.st.Message, wantMsg)
	}
	if got := conditions(d.st, v1alpha1.ConditionFailed); got["Failed"] != "True/BaselineFailed" {
		t.Errorf("Failed condition = %v, want BaselineFailed", got)
	}
	if len(l.ledger) != 0 {
		t.Errorf("a failed preflight wrote ledger rows: %v", l.rows())
	}

	// The user fixes the train command and accepts the changed measure.
	d.spec.Train.Command = "uv run train.py --fixed"
	delete(l.rounds, 0)
	l.checkCurrent = true
	l.run(Observation{Kind: ObserveRebaseline, Changed: []string{"spec.train.command"}})

	if d.st.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s (%s), want Succeeded", d.st.Phase, d.st.Message)
	}
	if diff := cmp.Diff([]string{"R0 baseline 1.0", "R1 improved 0.9"}, l.rows()); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	want := &v1alpha1.BaselineResult{Value: "1.0", Values: []string{"1.01"}}
	if diff := cmp.Diff(want, d.st.Baseline); diff != "" {
		t.Errorf("baseline (-want +got):\n%s", diff)
	}
}

// TestScenarioRebaselineAfterAChangedMeasure: a measure changed mid-run
// measures the baseline again on the best code; rounds done keep their
// verdicts, a round in progress starts again, and the next rounds are
// judged against the new measurement.
func TestScenarioRebaselineAfterAChangedMeasure(t *testing.T) {
	d := newDriver(t, func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 4 })
	l := newLab(d, []string{"1.0"}, map[int32][]attempt{
		1: {{value: "0.9"}},
		2: {{value: "0.95"}},
		// The first attempt of round 3 is cut short by the change.
		3: {{value: "0.1"}, {value: "0.85"}},
		4: {{value: "0.7"}},
	})
	l.checkCurrent = true
	l.interrupt = "R3 RunTrain"
	l.run(tick())

	d.spec.Eval.Command = "uv run eval.py --full"
	// The adapter puts the worktree back on the best code.
	l.head = BestCommit(&d.st)
	l.baseline = []string{"0.8"}
	l.run(Observation{Kind: ObserveRebaseline, Changed: []string{"spec.eval.command"}})

	wantRows := []string{
		"R0 baseline 0.8",
		"R1 improved 0.9",
		"R2 not_improved 0.95",
		"R3 not_improved 0.85",
		"R4 improved 0.7",
	}
	if diff := cmp.Diff(wantRows, l.rows()); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	wantTrace := []string{
		"R0 PrepareWorkspace", "R0 RunTrain", "R0 RunEval",
		"R1 RunResearcher from 5a5a5a5", "R1 CheckCompliance", "R1 RunTrain", "R1 RunEval", "R1 Commit abc0001",
		"R2 RunResearcher from abc0001", "R2 CheckCompliance", "R2 RunTrain", "R2 RunEval", "R2 Rollback to abc0001",
		"R3 RunResearcher from abc0001", "R3 CheckCompliance", "R3 RunTrain (interrupted)",
		"R0 RunTrain", "R0 RunEval",
		"R3 RunResearcher from abc0001", "R3 CheckCompliance", "R3 RunTrain", "R3 RunEval", "R3 Rollback to abc0001",
		"R4 RunResearcher from abc0001", "R4 CheckCompliance", "R4 RunTrain", "R4 RunEval", "R4 Commit abc0004",
		"R4 Finish completed",
	}
	if diff := cmp.Diff(wantTrace, l.trace); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{v1alpha1.ReasonRoundRestarted}, l.warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	// Row 0 is written before round 1, and again before the first round
	// judged against the new measurement.
	if diff := cmp.Diff([]int32{1, 3}, l.baselineRowBy); diff != "" {
		t.Errorf("rounds writing row 0 (-want +got):\n%s", diff)
	}
	row0 := l.ledger[0]
	wantInsight := "measured again under the changed measure on the best code so far (R1, abc0001): val_bpb=0.8; earlier rounds keep their verdicts"
	if row0.Insight != wantInsight || row0.Note != "measure changed (spec.eval.command); baseline measured again" || row0.Commit != commitOf(1) {
		t.Errorf("row 0 = %+v, want the new measurement explained", row0)
	}
	type final struct {
		Phase    v1alpha1.Phase
		Baseline *v1alpha1.BaselineResult
		Best     *v1alpha1.BestResult
		Counts   map[v1alpha1.Verdict]int32
	}
	got := final{d.st.Phase, d.st.Baseline, d.st.Best, d.st.VerdictCounts}
	want := final{
		Phase:    v1alpha1.PhaseSucceeded,
		Baseline: &v1alpha1.BaselineResult{Value: "0.8", Stddev: "0", Samples: 1, Values: []string{"0.8"}},
		Best:     &v1alpha1.BestResult{Round: 4, Value: "0.7", Commit: commitOf(4)},
		Counts:   map[v1alpha1.Verdict]int32{v1alpha1.VerdictImproved: 2, v1alpha1.VerdictNotImproved: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("final status (-want +got):\n%s", diff)
	}
	if h := d.st.History[0]; h.Round != 0 || h.Value != "0.8" {
		t.Errorf("history starts with %+v, want the new baseline", h)
	}
}
