package round

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

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
		return func(s *v1alpha1.AutoResearchSpec) { s.Target = v1alpha1.Decimal(v) }
	}
	maximize := func(s *v1alpha1.AutoResearchSpec) {
		s.Eval.Metric, s.Eval.Direction = "val_acc", v1alpha1.DirectionMaximize
		s.Baseline = &v1alpha1.BaselineSpec{Value: "0.8"}
	}
	plateau := func(n int32) func(*v1alpha1.AutoResearchSpec) {
		return func(s *v1alpha1.AutoResearchSpec) { s.Plateau = &v1alpha1.PlateauSpec{Rounds: n} }
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
		return Action{Type: ActionReportRound, Round: n, Record: &v1alpha1.RoundRecord{
			Round: n, Strategy: fmt.Sprintf("strategy %d", n), Compliance: v1alpha1.CompliancePassed, Value: value,
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
				Phase: v1alpha1.PhaseRunning, Message: "R2 S1: Researcher — improve val_bpb on train.py",
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
				Phase: v1alpha1.PhaseRunning, Message: "R2 S1: Researcher — improve val_acc on train.py",
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
				Phase: v1alpha1.PhaseRunning, Message: "R2 S1: Researcher — improve val_bpb on train.py", Best: baseBest,
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
					Type: ActionFinish, Round: 1, Reason: v1alpha1.ReasonTargetReached,
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
					Type: ActionFinish, Round: 1, Reason: v1alpha1.ReasonTargetReached,
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
				record(1, "0.94", v1alpha1.VerdictWithinNoise, "val_bpb=0.94 beats the best 1.0 (R0) by only 0.06, within the noise margin 0.1 (max of minDelta, noiseFactor × baseline stddev and minImprovement × best); kept out as noise", ""),
				{Type: ActionRunResearcher, Round: 2, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R2 S1: Researcher — improve val_bpb on train.py", Best: baseBest,
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
					Type: ActionFinish, Round: 2, Reason: v1alpha1.ReasonMaxRoundsReached,
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
				{Type: ActionReportRound, Round: 2, Record: &v1alpha1.RoundRecord{
					Round: 2, Strategy: "strategy 2", Compliance: v1alpha1.CompliancePassed, Verdict: v1alpha1.VerdictEvalFailed,
					Insight: "evaluation printed no val_bpb (training-log metrics are never used)",
				}},
				{
					Type: ActionWarn, Round: 2, Reason: v1alpha1.ReasonPlateau,
					Message: "plateau: no improvement in 2 consecutive rounds (R1–R2: 1 not_improved, 1 eval_failed); the variable space may be exhausted or strategies may be repeating — the loop continues",
				},
				{Type: ActionRunResearcher, Round: 3, BaseCommit: startCommit},
			},
			want: view{
				Phase: v1alpha1.PhaseRunning, Message: "R3 S1: Researcher — improve val_bpb on train.py", Best: baseBest,
				CompletedRounds: 2, LastVerdict: v1alpha1.VerdictEvalFailed, ConsecutiveNonImprovements: 2,
				Conditions: map[string]string{"Succeeded": "False/NotFinished", "Degraded": "True/Plateau"},
			},
		},
		"plateau with action Stop ends the loop instead of warning": {
			spec: []func(*v1alpha1.AutoResearchSpec){plateau(2), func(s *v1alpha1.AutoResearchSpec) { s.Plateau.Action = v1alpha1.PlateauStop }},
			setup: func(d *driver) {
				d.round("1.1")
				d.advanceTo(v1alpha1.StepEval)
				d.next(eval(2, EvalResult{Exit: ProcessExit{Duration: evalTime}}))
			},
			obs: rolledBack(2),
			wantActions: []Action{
				{Type: ActionReportRound, Round: 2, Record: &v1alpha1.RoundRecord{
					Round: 2, Strategy: "strategy 2", Compliance: v1alpha1.CompliancePassed, Verdict: v1alpha1.VerdictEvalFailed,
					Insight: "evaluation printed no val_bpb (training-log metrics are never used)",
				}},
				{
					Type: ActionFinish, Round: 2, Reason: v1alpha1.ReasonPlateau,
					Message: "done: plateau, no improvement in the last 2 rounds (plateau.action is Stop) after 2/10 rounds; best val_bpb=1.0 (R0)",
				},
			},
			want: view{
				Phase: v1alpha1.PhaseSucceeded, Message: "done: plateau, no improvement in the last 2 rounds (plateau.action is Stop) after 2/10 rounds; best val_bpb=1.0 (R0)",
				Best: baseBest, CompletedRounds: 2, LastVerdict: v1alpha1.VerdictEvalFailed, ConsecutiveNonImprovements: 2,
				Conditions: map[string]string{"Succeeded": "True/Plateau", "Degraded": "True/Plateau"},
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
				Phase: v1alpha1.PhaseRunning, Message: "R4 S1: Researcher — improve val_bpb on train.py", Best: baseBest,
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
				Phase: v1alpha1.PhaseRunning, Message: "R4 S1: Researcher — improve val_bpb on train.py",
				Best:            &v1alpha1.BestResult{Round: 3, Value: "0.9", Commit: commitOf(3)},
				CompletedRounds: 3, LastVerdict: v1alpha1.VerdictImproved, Conditions: running,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, append([]func(*v1alpha1.AutoResearchSpec){givenBaseline}, tc.spec...)...)
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
		d.next(Observation{Kind: ObserveFinished, Round: 1, Commit: "ledger1"})
	}
	plateauStopped := func(d *driver) {
		d.spec.Plateau = &v1alpha1.PlateauSpec{Rounds: 1, Action: v1alpha1.PlateauStop}
		d.start()
		d.round("1.1")
		d.next(Observation{Kind: ObserveFinished, Round: 1, Commit: "ledger1"})
	}
	cases := map[string]struct {
		setup       []func(*driver)
		obs         Observation
		wantActions []Action
		want        view
	}{
		// The next round starts from the final ledger's commit, which has
		// the best code: starting from the best round's commit would drop
		// the final ledger from the branch.
		"raised after completion continues with the next round from the final ledger": {
			setup:       []func(*driver){finished, maxRounds(3)},
			obs:         tick(),
			wantActions: []Action{{Type: ActionRunResearcher, Round: 2, BaseCommit: "ledger1"}},
			want: view{
				Phase: v1alpha1.PhaseRunning, Round: 2, Message: "R2 S1: Researcher — improve val_bpb on train.py",
				Succeeded: map[string]string{"Succeeded": "False/NotFinished"},
			},
		},
		"a plateau that stopped the loop continues when its action becomes Warn": {
			setup: []func(*driver){
				plateauStopped,
				func(d *driver) { d.spec.Plateau.Action = v1alpha1.PlateauWarn },
			},
			obs:         tick(),
			wantActions: []Action{{Type: ActionRunResearcher, Round: 2, BaseCommit: "ledger1"}},
			want: view{
				Phase: v1alpha1.PhaseRunning, Round: 2, Message: "R2 S1: Researcher — improve val_bpb on train.py",
				Succeeded: map[string]string{"Succeeded": "False/NotFinished"},
			},
		},
		// The spec was raised while the final ledger was being written: the
		// same observation records the ledger and goes on.
		"raised while the final ledger is written continues once it is": {
			setup: []func(*driver){
				func(d *driver) {
					d.spec.MaxRounds = 1
					d.start()
					d.round("1.1")
				},
				maxRounds(3),
			},
			obs:         Observation{Kind: ObserveFinished, Round: 1, Commit: "ledger1"},
			wantActions: []Action{{Type: ActionRunResearcher, Round: 2, BaseCommit: "ledger1"}},
			want: view{
				Phase: v1alpha1.PhaseRunning, Round: 2, Message: "R2 S1: Researcher — improve val_bpb on train.py",
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
					target := v1alpha1.Decimal("0.95")
					d.spec.Target = target
					d.start()
					d.round("0.9")
					d.next(Observation{Kind: ObserveFinished, Round: 1, Commit: "ledger1"})
				},
				maxRounds(20),
			},
			obs: tick(),
			want: view{
				Phase: v1alpha1.PhaseSucceeded, Round: 1, Message: "done: target 0.95 reached in round 1; best val_bpb=0.9 (R1)",
				Succeeded: map[string]string{"Succeeded": "True/TargetReached"},
			},
		},
		"finished without its ledger commit writes the final ledger again": {
			setup: []func(*driver){maxRounds(1), func(d *driver) {
				d.start()
				d.round("1.1")
			}},
			obs: tick(),
			wantActions: []Action{{
				Type: ActionFinish, Round: 1, Reason: v1alpha1.ReasonMaxRoundsReached,
				Message: "done: 1/1 rounds; best val_bpb=1.0 (R0)",
			}},
			want: view{
				Phase: v1alpha1.PhaseSucceeded, Round: 1, Message: "done: 1/1 rounds; best val_bpb=1.0 (R0)",
				Succeeded: map[string]string{"Succeeded": "True/MaxRoundsReached"},
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
			wantActions: []Action{{Type: ActionRunTrain, Round: 3, BaseCommit: startCommit, Code: startCommit}},
			want: view{
				Phase: v1alpha1.PhaseRunning, Round: 3, Message: "R3 S3: Train — uv run train.py (limit: 5m0s)",
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
				{Type: ActionReportRound, Round: 3, Record: &v1alpha1.RoundRecord{
					Round: 3, Strategy: "strategy 3", Compliance: v1alpha1.CompliancePassed, Value: "0.9", Verdict: v1alpha1.VerdictImproved,
					Insight: "val_bpb improved from 1.0 (R0) by 0.1", Commit: commitOf(3),
				}},
				{
					Type: ActionFinish, Round: 3, Reason: v1alpha1.ReasonMaxRoundsReached,
					Message: "done: 3 rounds, maxRounds lowered to 2; best val_bpb=0.9 (R3)",
				},
			},
			want: view{
				Phase: v1alpha1.PhaseSucceeded, Round: 3, Message: "done: 3 rounds, maxRounds lowered to 2; best val_bpb=0.9 (R3)",
				Succeeded: map[string]string{"Succeeded": "True/MaxRoundsReached"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline)
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

// TestAFailureQuotesNoEscapes: a failure's message quotes what the
// Researcher's code printed, which reaches terminals through the status,
// its conditions, events and the report: its escape sequences and
// bidirectional controls are dropped, its words kept.
func TestAFailureQuotesNoEscapes(t *testing.T) {
	d := newDriver(t)
	d.start()
	d.next(train(0, TrainResult{Exit: ProcessExit{ExitCode: 1, Tail: "all good \x1b]0;owned\x07\x1b[2K\rnothing to see\u202e"}}))
	if d.st.Phase != v1alpha1.PhaseFailed {
		t.Fatalf("phase %s, want Failed", d.st.Phase)
	}
	messages := []string{d.st.Message}
	for _, c := range d.st.Conditions {
		messages = append(messages, c.Message)
	}
	for _, m := range messages {
		if strings.ContainsAny(m, "\x1b\x07\r\u202e") {
			t.Errorf("message %q holds a control or format character", m)
		}
	}
	if !strings.Contains(d.st.Message, "all good ]0;owned[2Knothing to see") {
		t.Errorf("message %q lacks the output's words", d.st.Message)
	}
}
