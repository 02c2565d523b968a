package round

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// TestCurrentAction checks what an adapter rebuilds from the status alone:
// the step's action, with the ledger its step writes.
func TestCurrentAction(t *testing.T) {
	cases := map[string]struct {
		setup func(*driver)
		want  *Action
	}{
		"preparing the workspace": {
			setup: func(d *driver) { d.next(tick()) },
			want:  &Action{Type: ActionPrepareWorkspace},
		},
		"baseline run": {
			setup: func(d *driver) {
				d.spec.Baseline = &v1alpha1.BaselineSpec{Runs: 2}
				d.start()
				d.next(trained(0))
				d.next(evaluated(0, "1.0"))
			},
			want: &Action{Type: ActionRunTrain, Round: 0, Sample: 2, BaseCommit: startCommit, Code: startCommit},
		},
		"first round's Researcher writes the baseline's row": {
			setup: func(d *driver) { d.start() },
			want: &Action{Type: ActionRunResearcher, Round: 1, BaseCommit: startCommit, Ledger: &steps.LedgerUpdate{
				Metric: "val_bpb", Best: "1.0", MaxRounds: 10, Status: "running",
				Round: &steps.LedgerRound{Round: 0, Strategy: "baseline", Compliance: "✅", Value: "1.0", Verdict: "baseline",
					Insight: "baseline given in the protocol; the preflight of the unmodified code measured val_bpb=1; judging against the given 1.0", Commit: startCommit},
			}},
		},
		"later Researchers write nothing": {
			setup: func(d *driver) {
				d.start()
				d.round("1.1")
			},
			want: &Action{Type: ActionRunResearcher, Round: 2, BaseCommit: startCommit},
		},
		"improved round commits with the header after the round": {
			setup: func(d *driver) {
				d.start()
				d.round("1.1")
				d.evaluate("0.9")
			},
			want: &Action{Type: ActionCommit, Round: 2, BaseCommit: startCommit, Code: startCommit, Message: "autoresearch: round 2 — val_bpb=0.9 (improved)",
				Ledger: &steps.LedgerUpdate{
					Metric: "val_bpb", Best: "0.9", BestRound: 2, Rounds: 2, MaxRounds: 10, Status: "running",
					Round: &steps.LedgerRound{Round: 2, Strategy: "strategy 2", Compliance: "✅", Value: "0.9", Verdict: "improved",
						Insight: "val_bpb improved from 1.0 (R0) by 0.1"},
				}},
		},
		"rejected round rolls back keeping the best": {
			setup: func(d *driver) {
				d.start()
				d.evaluate("1.1")
			},
			want: &Action{Type: ActionRollback, Round: 1, BaseCommit: startCommit,
				Ledger: &steps.LedgerUpdate{
					Metric: "val_bpb", Best: "1.0", Rounds: 1, MaxRounds: 10, Status: "running",
					Round: &steps.LedgerRound{Round: 1, Strategy: "strategy 1", Compliance: "✅", Value: "1.1", Verdict: "not_improved",
						Insight: "val_bpb=1.1 is no better than the best 1.0 (R0); the change did not help"},
				}},
		},
		"suspended before a step: nothing in progress": {
			setup: func(d *driver) {
				d.spec.Suspend = ptr.To(true)
				d.start()
			},
		},
		"finished: the final ledger until its commit is known": {
			setup: func(d *driver) {
				target := v1alpha1.Decimal("0.95")
				d.spec.Target = target
				d.start()
				d.round("0.9")
			},
			want: &Action{Type: ActionFinish, Round: 1, Reason: v1alpha1.ReasonTargetReached,
				Message: "done: target 0.95 reached in round 1; best val_bpb=0.9 (R1)",
				Ledger:  &steps.LedgerUpdate{Metric: "val_bpb", Best: "0.9", BestRound: 1, Rounds: 1, MaxRounds: 10, Status: "target_reached"},
			},
		},
		"finished with the ledger committed": {
			setup: func(d *driver) {
				d.spec.MaxRounds = 1
				d.start()
				d.round("1.1")
				d.next(Observation{Kind: ObserveFinished, Round: 1, Commit: "ledger1"})
			},
		},
		"failed": {
			setup: func(d *driver) {
				d.next(tick())
				d.next(Observation{Kind: ObserveWorkspaceFailed, Error: "no such ref"})
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline)
			tc.setup(d)
			a, ok := CurrentAction(d.spec, &d.st)
			var got *Action
			if ok {
				a.Prompt = nil
				got = &a
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("current action (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCurrentActionPrompt checks the prompt input both adapters render: the
// protocol, every note, and an experience snippet from the history that
// keeps the baseline however long the run.
func TestCurrentActionPrompt(t *testing.T) {
	d := newDriver(t, givenBaseline, func(s *v1alpha1.AutoResearchSpec) {
		s.HistoryLimit = 2
		s.Guidance = []string{"try AdamW"}
		s.Profile = &v1alpha1.ProfileSpec{Command: "python profile.py"}
	})
	d.start()
	for range 4 {
		d.round("1.1")
	}
	a, ok := CurrentAction(d.spec, &d.st)
	if !ok || a.Type != ActionRunResearcher || a.Prompt == nil {
		t.Fatalf("current action = %+v, want a Researcher with a prompt", a)
	}
	p := *a.Prompt
	exp := p.Experiences
	p.Experiences = ""
	want := struct {
		Round, MaxRounds  int32
		Metric, Direction string
		Guidance          []string
		Profile           string
	}{5, 10, "val_bpb", "minimize", []string{"try AdamW"}, "python profile.py"}
	got := struct {
		Round, MaxRounds  int32
		Metric, Direction string
		Guidance          []string
		Profile           string
	}{p.Round, p.MaxRounds, p.Metric, p.Direction, p.Guidance, p.ProfileCommand}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("prompt (-want +got):\n%s", diff)
	}
	for _, row := range []string{"| 0 |", "| 3 |", "| 4 |", "best: val_bpb = 1.0 (R0)"} {
		if !strings.Contains(exp, row) {
			t.Errorf("experiences lack %q:\n%s", row, exp)
		}
	}
	for _, row := range []string{"| 1 |", "| 2 |"} {
		if strings.Contains(exp, row) {
			t.Errorf("experiences show %q, older than the history keeps:\n%s", row, exp)
		}
	}
}

// TestNextEmitsTheCurrentAction holds the contract adapters rely on: the
// action the engine waits for is always the one CurrentAction rebuilds
// from the status it returned.
func TestNextEmitsTheCurrentAction(t *testing.T) {
	d := newDriver(t, func(s *v1alpha1.AutoResearchSpec) { s.Baseline = &v1alpha1.BaselineSpec{Runs: 2}; s.MaxRounds = 4 })
	l := newLab(d, []string{"1.0", "1.02"}, map[int32][]attempt{
		1: {{value: "0.9"}}, 2: {{violation: "touched prepare.py"}}, 3: {{trainExit: 1}}, 4: {{value: "0.8"}},
	})
	l.checkCurrent = true
	l.run(tick())
	if d.st.LedgerCommit == "" || d.st.Phase != v1alpha1.PhaseSucceeded {
		t.Errorf("phase %s, ledger commit %q; want Succeeded with the final ledger committed", d.st.Phase, d.st.LedgerCommit)
	}
}

// TestPromptListsFixedRegions checks that the prompt names the fixed
// regions the workspace step found.
func TestPromptListsFixedRegions(t *testing.T) {
	d := newDriver(t, givenBaseline)
	d.start()
	d.st.Workspace.FixedRegions = []v1alpha1.FixedRegion{
		{Path: "train.py", Lines: "10-14", Begin: "# autoresearch:fixed-begin `seed`"},
		{Path: "train.py", Lines: "20"},
	}
	a, ok := CurrentAction(d.spec, &d.st)
	if !ok || a.Prompt == nil {
		t.Fatalf("current action = %+v, want a Researcher with a prompt", a)
	}
	want := []string{"train.py lines 10-14: `# autoresearch:fixed-begin 'seed'`", "train.py line 20"}
	if diff := cmp.Diff(want, a.Prompt.FixedRegions); diff != "" {
		t.Errorf("fixed regions (-want +got):\n%s", diff)
	}
}

// TestPromptListsConstraints checks that the prompt carries the protocol's
// fixed conditions.
func TestPromptListsConstraints(t *testing.T) {
	d := newDriver(t, givenBaseline)
	d.spec.Fixed.Constraints = []string{"random seed 42 in train.py", "the data split is 90/10"}
	d.start()
	a, ok := CurrentAction(d.spec, &d.st)
	if !ok || a.Prompt == nil {
		t.Fatalf("current action = %+v, want a Researcher with a prompt", a)
	}
	if diff := cmp.Diff(d.spec.Fixed.Constraints, a.Prompt.Constraints); diff != "" {
		t.Errorf("constraints (-want +got):\n%s", diff)
	}
}

// TestAFailedPushWarnsBeforeTheNextRoundStarts fails the push of round 1's
// commit in a run that goes on: the warning, which the engine does not
// wait for, comes before round 2's Researcher, as every batch puts the
// actions the engine waits for last.
func TestAFailedPushWarnsBeforeTheNextRoundStarts(t *testing.T) {
	d := newDriver(t, givenBaseline)
	d.start()
	d.evaluate("0.9")
	acts := d.next(withPush(committed(1, commitOf(1)), &PushResult{Error: "git push: rejected"}))
	var types []ActionType
	for _, a := range acts {
		types = append(types, a.Type)
	}
	want := []ActionType{ActionReportRound, ActionWarn, ActionRunResearcher}
	if !slices.Equal(types, want) {
		t.Errorf("actions after a commit whose push failed: %v, want %v", types, want)
	}
}

// TestTheGitStepOfALongViolationIsTheOneCurrentActionRebuilds breaks the
// rules with a violation longer than the status holds: the rollback the
// engine emits writes the same ledger row as the one CurrentAction
// rebuilds from the status for an adapter that lost it.
func TestTheGitStepOfALongViolationIsTheOneCurrentActionRebuilds(t *testing.T) {
	d := newDriver(t, givenBaseline)
	d.start()
	d.next(researched(1, "idea 1"))
	rollback := only(t, d.next(compliance(1, ComplianceResult{Violation: strings.Repeat("prepare.py changed; ", 200)})), ActionRollback)
	cur, ok := CurrentAction(d.spec, &d.st)
	if !ok {
		t.Fatal("no current action after the verdict")
	}
	if diff := cmp.Diff(rollback, cur); diff != "" {
		t.Errorf("emitted rollback and CurrentAction differ (-emitted +current):\n%.1500s", diff)
	}
}
