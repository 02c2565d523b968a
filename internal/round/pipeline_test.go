package round

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

func pipelined(s *v1alpha1.AutoResearchSpec) { s.Pipeline = ptr.To(true) }

// waited are the actions of acts whose results the engine waits for.
func waited(acts []Action) []Action {
	var out []Action
	for _, a := range acts {
		if waitsFor(a.Type) {
			out = append(out, a)
		}
	}
	return out
}

// only returns the one action of acts the engine waits for, of type t.
func only(t *testing.T, acts []Action, typ ActionType) Action {
	t.Helper()
	w := waited(acts)
	if len(w) != 1 || w[0].Type != typ {
		t.Fatalf("actions %+v, want one %s", w, typ)
	}
	return w[0]
}

// TestPipelineStartsTheNextRoundWhileTraining plays rounds with
// spec.pipeline: round 2's Researcher starts as round 1 trains, from the
// best known then; round 1 commits a new best, so round 2's checked
// candidate is checked again, carried onto it, and trains after.
func TestPipelineStartsTheNextRoundWhileTraining(t *testing.T) {
	d := newDriver(t, givenBaseline, pipelined)
	d.start()
	d.next(researched(1, "idea 1"))
	startsRoundTwoEarly(t, d.next(compliance(1, ComplianceResult{Candidate: "cand1"})), &d.st)
	phase, message := d.st.Phase, d.st.Message

	// Round 2 researches and is checked on the old best, then waits.
	if acts := waited(d.next(researched(2, "idea 2"))); len(acts) != 1 || acts[0].Type != ActionCheckCompliance || acts[0].SealBase != "" {
		t.Fatalf("round 2 researched: actions %+v, want its check on the base it started from", acts)
	}
	if acts := waited(d.next(compliance(2, ComplianceResult{Candidate: "cand2-old"}))); len(acts) != 0 {
		t.Fatalf("round 2 checked: actions %+v, want it to wait for round 1", acts)
	}
	if nr := d.st.NextRound; nr.Step != v1alpha1.StepTrain || nr.StepState != v1alpha1.StepStatePending {
		t.Errorf("round 2 at %s %s, want held at Train", nr.Step, nr.StepState)
	}
	if d.st.Phase != phase || d.st.Message != message {
		t.Errorf("round 2's steps changed the phase or message: %s %q, was %s %q", d.st.Phase, d.st.Message, phase, message)
	}

	// Round 1 improves: round 2 becomes current on the new best, and its
	// candidate is checked again, carried onto it.
	d.next(trained(1))
	only(t, d.next(evaluated(1, "0.8")), ActionCommit)
	check := only(t, d.next(committed(1, commitOf(1))), ActionCheckCompliance)
	if check.Round != 2 || check.BaseCommit != commitOf(1) || check.SealBase != startCommit {
		t.Errorf("round 2's check again %+v: want it sealed on the start and carried onto round 1's commit", check)
	}
	if d.st.NextRound != nil || d.st.CurrentRound.Number != 2 || d.st.Round != 2 {
		t.Fatalf("after round 1: current %v, next %v, round %d; want round 2 current", d.st.CurrentRound, d.st.NextRound, d.st.Round)
	}
	if c := d.st.CurrentRound.Candidates[0]; c.Commit != "" || c.Strategy != "idea 2" || c.Base != startCommit {
		t.Errorf("round 2's candidate %+v: want its strategy and base kept and its old check dropped", c)
	}

	// Carried over, it trains, and round 3 starts early from round 1's best.
	w := waited(d.next(compliance(2, ComplianceResult{Candidate: "cand2-new"})))
	if len(w) != 2 || w[0].Type != ActionRunTrain || w[0].Code != "cand2-new" || w[1].Type != ActionRunResearcher || w[1].Round != 3 || w[1].BaseCommit != commitOf(1) {
		t.Fatalf("round 2 checked again: actions %+v, want its training of the carried candidate and round 3's Researcher from round 1's commit", w)
	}
}

// startsRoundTwoEarly checks the actions and status after round 1 is
// checked: round 1 trains and round 2's Researcher starts from the start.
func startsRoundTwoEarly(t *testing.T, acts []Action, st *v1alpha1.AutoResearchStatus) {
	t.Helper()
	w := waited(acts)
	if len(w) != 2 || w[0].Type != ActionRunTrain || w[0].Round != 1 || w[1].Type != ActionRunResearcher || w[1].Round != 2 {
		t.Fatalf("round 1 checked: actions %+v, want round 1's training and round 2's Researcher", w)
	}
	if r2 := w[1]; !r2.Early || r2.BaseCommit != startCommit || r2.Prompt == nil || r2.Prompt.Round != 2 {
		t.Errorf("round 2's Researcher %+v: want it early, from the best known (the start)", r2)
	}
	if st.Round != 1 || st.CurrentRound.Number != 1 || st.NextRound == nil || st.NextRound.Number != 2 {
		t.Fatalf("status round %d, current %v, next %v; want round 1 current and round 2 next", st.Round, st.CurrentRound, st.NextRound)
	}
}

// TestPipelinedCandidateThatConflictsIsStale checks that a candidate
// whose change conflicts with the new best is stale, not trained.
func TestPipelinedCandidateThatConflictsIsStale(t *testing.T) {
	d := newDriver(t, givenBaseline, pipelined)
	d.start()
	d.next(researched(1, "idea 1"))
	d.next(compliance(1, ComplianceResult{Candidate: "cand1"}))
	d.next(researched(2, "idea 2"))
	d.next(compliance(2, ComplianceResult{Candidate: "cand2"}))
	d.next(trained(1))
	d.next(evaluated(1, "0.8"))
	d.next(committed(1, commitOf(1)))
	w := waited(d.next(compliance(2, ComplianceResult{Conflict: "train.py"})))
	if len(w) != 2 || w[0].Type != ActionRollback || w[0].Round != 2 || w[1].Type != ActionRunResearcher || w[1].Round != 3 {
		t.Fatalf("round 2 stale: actions %+v, want its rollback and round 3's Researcher", w)
	}
	c := d.st.CurrentRound.Candidates[0]
	if c.Verdict != v1alpha1.VerdictStale || c.Insight == "" {
		t.Errorf("round 2's candidate %+v, want stale with an insight", c)
	}
}

// TestPipelineWithoutANewBestTrainsAtOnce checks that a round started
// early trains without a second check when the round before it kept
// nothing.
func TestPipelineWithoutANewBestTrainsAtOnce(t *testing.T) {
	d := newDriver(t, givenBaseline, pipelined)
	d.start()
	d.next(researched(1, "idea 1"))
	d.next(compliance(1, ComplianceResult{Candidate: "cand1"}))
	d.next(researched(2, "idea 2"))
	d.next(compliance(2, ComplianceResult{Candidate: "cand2"}))
	d.next(trained(1))
	only(t, d.next(evaluated(1, "1.5")), ActionRollback)
	w := waited(d.next(rolledBack(1)))
	if len(w) != 2 || w[0].Type != ActionRunTrain || w[0].Round != 2 || w[0].Code != "cand2" || w[1].Type != ActionRunResearcher || w[1].Round != 3 {
		t.Fatalf("after round 1: actions %+v, want round 2's training and round 3's Researcher", w)
	}
}

// TestPipelineWaitsForTheChecksOfTheEarlyRound checks that the early round
// takes the current one's place only once its running checks are done,
// and that a Researcher still running then is carried onto the new best
// at its check.
func TestPipelineWaitsForTheChecksOfTheEarlyRound(t *testing.T) {
	t.Run("checks running", func(t *testing.T) {
		d := newDriver(t, givenBaseline, pipelined)
		d.start()
		d.next(researched(1, "idea 1"))
		d.next(compliance(1, ComplianceResult{Candidate: "cand1"}))
		d.next(researched(2, "idea 2"))
		d.next(trained(1))
		d.next(evaluated(1, "0.8"))
		if acts := waited(d.next(committed(1, commitOf(1)))); len(acts) != 0 || d.st.CurrentRound != nil || d.st.NextRound == nil {
			t.Fatalf("round 1 done while round 2 is checked: actions %+v, current %v; want round 2 to finish its check first", acts, d.st.CurrentRound)
		}
		check := only(t, d.next(compliance(2, ComplianceResult{Candidate: "cand2-old"})), ActionCheckCompliance)
		if check.SealBase != startCommit || check.BaseCommit != commitOf(1) {
			t.Errorf("check again %+v: want it carried onto round 1's commit", check)
		}
	})
	t.Run("Researcher running", func(t *testing.T) {
		d := newDriver(t, givenBaseline, pipelined)
		d.start()
		d.next(researched(1, "idea 1"))
		d.next(compliance(1, ComplianceResult{Candidate: "cand1"}))
		d.next(trained(1))
		d.next(evaluated(1, "0.8"))
		if acts := waited(d.next(committed(1, commitOf(1)))); len(acts) != 0 || d.st.CurrentRound.Number != 2 {
			t.Fatalf("round 1 done while round 2 researches: actions %+v, current %v; want round 2 current, its Researcher running", acts, d.st.CurrentRound)
		}
		check := only(t, d.next(researched(2, "idea 2")), ActionCheckCompliance)
		if check.SealBase != startCommit || check.BaseCommit != commitOf(1) {
			t.Errorf("check %+v: want it sealed where the Researcher started and carried onto round 1's commit", check)
		}
	})
}

// TestPipelineStopsAtTheLastRound checks that no round starts early past
// maxRounds, and that one started early is dropped when the target ends
// the experiment.
func TestPipelineStopsAtTheLastRound(t *testing.T) {
	d := newDriver(t, givenBaseline, pipelined, func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 1 })
	d.start()
	d.next(researched(1, "idea 1"))
	if acts := waited(d.next(compliance(1, ComplianceResult{Candidate: "cand1"}))); len(acts) != 1 || d.st.NextRound != nil {
		t.Errorf("last round checked: actions %+v, next %v; want no round started early", acts, d.st.NextRound)
	}

	d = newDriver(t, givenBaseline, pipelined, func(s *v1alpha1.AutoResearchSpec) { s.Target = "0.9" })
	d.start()
	d.next(researched(1, "idea 1"))
	d.next(compliance(1, ComplianceResult{Candidate: "cand1"}))
	d.next(trained(1))
	d.next(evaluated(1, "0.8"))
	acts := d.next(committed(1, commitOf(1)))
	if d.st.Phase != v1alpha1.PhaseSucceeded || d.st.NextRound != nil || d.st.CompletedRounds != 1 {
		t.Errorf("target reached: phase %s, next %v, %d rounds; want done after round 1 with round 2 dropped", d.st.Phase, d.st.NextRound, d.st.CompletedRounds)
	}
	dropped := false
	for _, a := range acts {
		dropped = dropped || (a.Type == ActionWarn && a.Round == 2)
	}
	if !dropped {
		t.Errorf("actions %+v: want a warning that round 2 was dropped", acts)
	}
}

// TestPipelineWithCandidates checks that a round of several candidates
// started early carries over only its checked candidates.
func TestPipelineWithCandidates(t *testing.T) {
	d := newDriver(t, givenBaseline, pipelined, func(s *v1alpha1.AutoResearchSpec) { s.Candidates = 2 })
	d.start()
	for k := int32(0); k < 2; k++ {
		d.next(candidateObs(1, k, v1alpha1.StepResearcher, outcome{}))
	}
	for k := int32(0); k < 2; k++ {
		d.next(candidateObs(1, k, v1alpha1.StepCompliance, outcome{}))
	}
	if d.st.NextRound == nil || len(d.st.NextRound.Candidates) != 2 {
		t.Fatalf("round 1 checked: next %v, want round 2 of two candidates", d.st.NextRound)
	}
	d.next(candidateObs(2, 0, v1alpha1.StepResearcher, outcome{researcherFails: true}))
	d.next(candidateObs(2, 1, v1alpha1.StepResearcher, outcome{}))
	d.next(candidateObs(2, 1, v1alpha1.StepCompliance, outcome{}))
	for k := int32(0); k < 2; k++ {
		d.next(candidateObs(1, k, v1alpha1.StepTrain, outcome{}))
	}
	d.next(candidateObs(1, 0, v1alpha1.StepEval, outcome{value: "0.8"}))
	d.next(candidateObs(1, 1, v1alpha1.StepEval, outcome{value: "1.2"}))
	acts := d.next(committed(1, commitOf(1)))
	check := only(t, acts, ActionCheckCompliance)
	if check.Round != 2 || check.Candidate != 1 || check.SealBase != startCommit {
		t.Errorf("check again %+v: want only round 2's candidate b, carried over", check)
	}
	if c := d.st.CurrentRound.Candidates[0]; c.Verdict != v1alpha1.VerdictResearcherFailed || c.Step != v1alpha1.StepGit {
		t.Errorf("round 2's candidate a %+v: want its verdict kept, waiting for the git step", c)
	}
}

// TestPipelineResearchesWhileTheBaselineTrains: with spec.pipeline, round
// 1's Researcher starts with the baseline's training, and its checked
// candidate trains once the baseline is measured; a baseline measured again
// later has the next round, not round 1, research meanwhile.
func TestPipelineResearchesWhileTheBaselineTrains(t *testing.T) {
	d := newDriver(t, pipelined)
	d.next(tick())
	w := waited(d.next(workspaceReady()))
	if len(w) != 2 || w[0].Type != ActionRunTrain || w[0].Round != 0 || w[1].Type != ActionRunResearcher || w[1].Round != 1 || w[1].BaseCommit != startCommit {
		t.Fatalf("workspace ready: actions %+v, want the baseline's training and round 1's Researcher on the start", w)
	}
	if c := only(t, d.next(researched(1, "idea 1")), ActionCheckCompliance); c.Round != 1 {
		t.Fatalf("round 1 researched: %+v, want its check", c)
	}
	if w := waited(d.next(compliance(1, ComplianceResult{Candidate: "cand1"}))); len(w) != 0 {
		t.Fatalf("round 1 checked: actions %+v, want it to wait for the baseline", w)
	}
	d.next(trained(0))
	w = waited(d.next(evaluated(0, "1.0")))
	if len(w) != 2 || w[0].Type != ActionRunTrain || w[0].Round != 1 || w[0].Code != "cand1" || w[1].Type != ActionRunResearcher || w[1].Round != 2 {
		t.Fatalf("baseline measured: actions %+v, want round 1's checked candidate to train, unchecked again, and round 2's Researcher", w)
	}
	if d.st.Baseline.Samples != 1 || d.current() != 1 {
		t.Fatalf("baseline %+v, round %d; want the baseline measured and round 1 current", d.st.Baseline, d.current())
	}

	// Round 2, started early, researches when the measure changes: it is
	// dropped, and starts again as the baseline is measured again.
	d.round("0.9")
	w = waited(d.next(Observation{Kind: ObserveRebaseline, Changed: []string{"spec.eval.command"}}))
	if len(w) != 2 || w[0].Type != ActionRunTrain || w[0].Round != 0 || w[1].Type != ActionRunResearcher || w[1].Round != 2 {
		t.Fatalf("measure changed: actions %+v, want the baseline measured again and round 2's Researcher", w)
	}
}

// TestAFailedExperimentStartsNoStepOfTheRoundStartedEarly fails the
// baseline while round 1, started early by spec.pipeline, researches: the
// experiment is over, so the Researcher's result starts no check, and
// nothing is left for an adapter to wait for.
func TestAFailedExperimentStartsNoStepOfTheRoundStartedEarly(t *testing.T) {
	d := newDriver(t, pipelined)
	d.next(tick())
	d.next(workspaceReady())
	d.next(train(0, TrainResult{Exit: ProcessExit{ExitCode: 1, Duration: trainTime}}))
	if d.st.Phase != v1alpha1.PhaseFailed {
		t.Fatalf("phase %s after the baseline failed to train, want Failed", d.st.Phase)
	}
	if acts := waited(d.next(researched(1, "idea 1"))); len(acts) != 0 {
		t.Errorf("round 1's Researcher finished after the experiment failed: actions %+v, want none", acts)
	}
	if d.st.Phase != v1alpha1.PhaseFailed {
		t.Errorf("phase %s, want Failed", d.st.Phase)
	}
	if acts := CurrentActions(d.spec, &d.st); len(acts) != 0 {
		t.Errorf("a failed experiment waits for %+v, want nothing", acts)
	}
}

// TestARebaselineDropsTheRoundStartedEarly accepts a changed measure while
// round 1 trains and round 2, started early, researches: round 1 starts
// again once the baseline is measured again, and round 2 does not take its
// place.
func TestARebaselineDropsTheRoundStartedEarly(t *testing.T) {
	d := newDriver(t, givenBaseline, pipelined)
	d.start()
	d.next(researched(1, "idea 1"))
	startsRoundTwoEarly(t, d.next(compliance(1, ComplianceResult{Candidate: "cand1"})), &d.st)
	d.next(Observation{Kind: ObserveRebaseline, Changed: []string{"eval.command"}})
	d.next(trained(0))
	d.next(evaluated(0, "1.0"))
	if cr := d.st.CurrentRound; cr == nil || cr.Number != 1 || d.st.Round != 1 {
		t.Fatalf("after the baseline was measured again: current round %v, status.round %d; want round 1 again", cr, d.st.Round)
	}
	if d.st.CompletedRounds != 0 {
		t.Errorf("completedRounds %d, want 0", d.st.CompletedRounds)
	}
}
