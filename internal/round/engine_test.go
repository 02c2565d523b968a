package round

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/utils/ptr"

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
		"a spec no schema could refuse fails before anything runs": {
			spec:        func(s *v1alpha1.AutoResearchSpec) { s.Eval.Pattern = `val_bpb: [0-9.]+` },
			obs:         tick(),
			wantActions: nil,
			want: view{
				Phase:      v1alpha1.PhaseFailed,
				Message:    "the spec is invalid; fix it in a new experiment: spec.eval.pattern: Invalid value: \"val_bpb: [0-9.]+\": needs a capture group around the value, such as val_bpb=([0-9.]+)",
				Conditions: map[string]string{"Ready": "False/Failed", "Progressing": "False/Failed", "Failed": "True/InvalidSpec"},
			},
		},
		"ready workspace measures the baseline in round 0": {
			setup:       func(d *driver) { d.next(tick()) },
			obs:         workspaceReady(),
			wantActions: []Action{{Type: ActionRunTrain, Round: 0, Sample: 1, BaseCommit: startCommit, Code: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseBaseline, Message: "measuring the baseline", Step: v1alpha1.StepTrain,
				Workspace: workspace, Baseline: &v1alpha1.BaselineResult{},
				Conditions: map[string]string{"Ready": "True/WorkspaceReady", "Progressing": "True/RoundInProgress", "Failed": "False/NoFailure"},
			},
		},
		"given baseline still runs the unmodified code once as a preflight": {
			spec:        givenBaseline,
			setup:       func(d *driver) { d.next(tick()) },
			obs:         workspaceReady(),
			wantActions: []Action{{Type: ActionRunTrain, Round: 0, Sample: 1, BaseCommit: startCommit, Code: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseBaseline, Message: "preflight: running the unmodified code once (the baseline is given)", Step: v1alpha1.StepTrain,
				Workspace: workspace, Baseline: &v1alpha1.BaselineResult{},
				Conditions: map[string]string{"Ready": "True/WorkspaceReady", "Progressing": "True/RoundInProgress", "Failed": "False/NoFailure"},
			},
		},
		"given baseline's preflight keeps the given value and starts round 1 from the start commit": {
			spec:  givenBaseline,
			setup: preflightTrained,
			obs:   evaluated(0, "1.03"),
			wantActions: []Action{
				{Type: ActionReportRound, Round: 0, Record: &v1alpha1.RoundRecord{
					Round: 0, Strategy: "baseline", Compliance: v1alpha1.CompliancePassed, Value: "1.0", Verdict: v1alpha1.VerdictBaseline,
					Insight: "baseline given in the protocol; the preflight of the unmodified code measured val_bpb=1.03; judging against the given 1.0",
					Commit:  startCommit,
				}},
				{Type: ActionRunResearcher, Round: 1, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R1 S1: Researcher — improve val_bpb on train.py", Round: 1, Step: v1alpha1.StepResearcher,
				Workspace: workspace, Baseline: &v1alpha1.BaselineResult{Value: "1.0", Values: []string{"1.03"}},
				Best:       &v1alpha1.BestResult{Round: 0, Value: "1.0", Commit: startCommit},
				Conditions: map[string]string{"Ready": "True/WorkspaceReady", "Progressing": "True/RoundInProgress", "Failed": "False/NoFailure"},
			},
		},
		"baseline already at the target still runs round 1": {
			spec: func(s *v1alpha1.AutoResearchSpec) {
				target := v1alpha1.Decimal("1.5")
				s.Target = target
				s.Baseline = &v1alpha1.BaselineSpec{Value: "1.0"}
			},
			setup: preflightTrained,
			obs:   evaluated(0, "1.0"),
			wantActions: []Action{
				{Type: ActionReportRound, Round: 0, Record: &v1alpha1.RoundRecord{
					Round: 0, Strategy: "baseline", Compliance: v1alpha1.CompliancePassed, Value: "1.0", Verdict: v1alpha1.VerdictBaseline,
					Insight: "baseline given in the protocol; the preflight of the unmodified code measured val_bpb=1; judging against the given 1.0",
					Commit:  startCommit,
				}},
				{Type: ActionRunResearcher, Round: 1, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R1 S1: Researcher — improve val_bpb on train.py", Round: 1, Step: v1alpha1.StepResearcher,
				Workspace: workspace, Baseline: &v1alpha1.BaselineResult{Value: "1.0", Values: []string{"1.0"}},
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
			if diff := cmp.Diff(tc.wantActions, out.Actions, ignoreRecordTimes, ignoreTasks); diff != "" {
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

func TestNextRecordCarriesDurations(t *testing.T) {
	cases := map[string]struct {
		spec  func(*v1alpha1.AutoResearchSpec)
		setup func(*driver) Observation
		want  v1alpha1.StepDurations
	}{
		"round": {
			spec: givenBaseline,
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
			setup: preflightTrained,
			obs:   evaluated(0, "1.0"),
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
			d := newDriver(t, givenBaseline)
			d.spec.Guidance = tc.notes
			tc.setup(d)
			out := apply(d, tc.obs)
			var got view
			for _, a := range out.Actions {
				switch {
				case a.Type == ActionRunResearcher:
					got.Guidance = a.Prompt.Guidance
				case a.Type == ActionReportRound && a.Round > 0:
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
			spec: givenBaseline,
			setup: func(d *driver) []Action {
				d.start()
				return d.next(researched(1, "s"))
			},
		},
		"RunTrain": {
			spec: givenBaseline,
			setup: func(d *driver) []Action {
				d.start()
				d.advanceTo(v1alpha1.StepCompliance)
				return d.next(compliant(1))
			},
		},
		"RunEval": {
			spec: givenBaseline,
			setup: func(d *driver) []Action {
				d.start()
				d.advanceTo(v1alpha1.StepTrain)
				return d.next(trained(1))
			},
		},
		"Commit": {
			spec: givenBaseline,
			setup: func(d *driver) []Action {
				d.start()
				return d.evaluate("0.9")
			},
		},
		"Rollback": {
			spec: givenBaseline,
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
			if diff := cmp.Diff(want, out.Actions, ignoreRecordTimes, ignoreTasks); diff != "" {
				t.Errorf("actions (-started +tick):\n%s", diff)
			}
			if diff := cmp.Diff(d.st, out.Status); diff != "" {
				t.Errorf("a tick changed the status of a running step (-before +after):\n%s", diff)
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
		"ledger commit of another round": {
			setup: func(d *driver) {
				d.spec.MaxRounds = 1
				d.start()
				d.round("1.1")
			},
			obs: Observation{Kind: ObserveFinished, Round: 2, Commit: "ledger2"},
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
				d.spec.Suspend = ptr.To(true)
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
			d := newDriver(t, givenBaseline)
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
		"bounded by historyLimit, the baseline kept": {
			historyLimit: 3,
			want:         view{Rounds: []int32{0, 3, 4, 5}, VerdictCounts: counts},
		},
		"default limit keeps the baseline row": {
			want: view{Rounds: []int32{0, 1, 2, 3, 4, 5}, VerdictCounts: counts},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline)
			if tc.historyLimit > 0 {
				d.spec.HistoryLimit = tc.historyLimit
			}
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
			d := newDriver(t, givenBaseline)
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

// TestNextHonoursTheCandidate checks that a result lands on the candidate
// the observation names, not always the first.
func TestNextHonoursTheCandidate(t *testing.T) {
	d := newDriver(t, givenBaseline)
	d.start()
	d.advanceTo(v1alpha1.StepTrain)
	d.st.CurrentRound.Candidates = append(d.st.CurrentRound.Candidates, v1alpha1.CandidateStatus{Index: 1})
	obs := train(1, TrainResult{Exit: ProcessExit{Duration: trainTime}, MemoryGB: "12.5"})
	obs.Candidate = 1
	out := apply(d, obs)
	cs := out.Status.CurrentRound.Candidates
	if cs[0].MemoryGB != "" || cs[0].Durations.Train != nil {
		t.Errorf("candidate 0 = %+v, want it untouched", cs[0])
	}
	if cs[1].MemoryGB != "12.5" || cs[1].Durations.Train == nil {
		t.Errorf("candidate 1 = %+v, want the training result", cs[1])
	}
}
