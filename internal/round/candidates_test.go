package round

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// outcome is how one candidate of a round ends: failing at a step, or
// evaluated at value.
type outcome struct {
	researcherFails, complianceFails, trainFails, noChange bool
	value                                                  string
	// conflict is the files a candidate carried or combined by a merge
	// conflicts in.
	conflict string
}

// candidateObs is the observation of candidate k of round n in step, as
// o makes it end.
func candidateObs(n, k int32, step v1alpha1.Step, o outcome) Observation {
	var obs Observation
	switch step {
	case v1alpha1.StepResearcher:
		exit := ProcessExit{Duration: researcherTime}
		if o.researcherFails {
			exit.ExitCode = 2
		}
		obs = researcherExit(n, fmt.Sprintf("idea %s", CandidateName(k)), exit)
	case v1alpha1.StepCompliance:
		r := ComplianceResult{Candidate: fmt.Sprintf("cand%d%s", n, CandidateName(k)), NoChange: o.noChange, Conflict: o.conflict}
		if o.complianceFails {
			r.Violation = "prepare.py changed"
		}
		obs = compliance(n, r)
	case v1alpha1.StepTrain:
		r := TrainResult{Exit: ProcessExit{Duration: trainTime}}
		if o.trainFails {
			r.Exit.ExitCode = 1
		}
		obs = train(n, r)
	case v1alpha1.StepEval:
		obs = evaluated(n, o.value)
	default:
		panic("no candidate observation for " + step)
	}
	obs.Candidate = k
	return obs
}

// playCandidates runs the current round's candidates to the round's git
// step, answering each action in reverse candidate order, and returns the
// git action. It checks that each step's actions name exactly the
// candidates still in it.
func playCandidates(t *testing.T, d *driver, outcomes []outcome) Action {
	t.Helper()
	n := d.current()
	pending := d.next(tick())
	for guard := 0; guard < 20; guard++ {
		var waited []Action
		for _, a := range pending {
			if waitsFor(a.Type) {
				waited = append(waited, a)
			}
		}
		if len(waited) == 1 && (waited[0].Type == ActionCommit || waited[0].Type == ActionRollback) {
			return waited[0]
		}
		step := d.st.CurrentRound.Step
		var want []int32
		for k, c := range d.st.CurrentRound.Candidates {
			if c.Step == "" && c.Verdict == "" {
				want = append(want, int32(k))
			}
		}
		var got []int32
		for _, a := range waited {
			got = append(got, a.Candidate)
			if a.Candidates != int32(len(d.st.CurrentRound.Candidates)) {
				t.Errorf("R%d %s action of candidate %d says %d candidates, want %d", n, step, a.Candidate, a.Candidates, len(d.st.CurrentRound.Candidates))
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("R%d %s: candidates with an action (-want +got):\n%s", n, step, diff)
		}
		pending = nil
		for i := len(waited) - 1; i >= 0; i-- {
			k := waited[i].Candidate
			pending = append(pending, d.next(candidateObs(n, k, step, outcomes[k]))...)
		}
	}
	t.Fatalf("R%d never reached its git step", n)
	return Action{}
}

func TestRoundOfSeveralCandidates(t *testing.T) {
	cases := []struct {
		name     string
		outcomes []outcome
		// want is each candidate's verdict; winner the committed one, -1
		// for a rollback.
		want   []v1alpha1.Verdict
		winner int32
		best   string
	}{{
		name:     "all fail, each at its own step",
		outcomes: []outcome{{researcherFails: true}, {complianceFails: true}, {trainFails: true}, {noChange: true}},
		want: []v1alpha1.Verdict{v1alpha1.VerdictResearcherFailed, v1alpha1.VerdictComplianceFailed,
			v1alpha1.VerdictTrainFailed, v1alpha1.VerdictNoChange},
		winner: -1, best: "1.0",
	}, {
		name:     "several improve: the best one is committed, the others are superseded",
		outcomes: []outcome{{value: "0.9"}, {value: "0.7"}, {value: "1.2"}, {value: "0.8"}},
		want: []v1alpha1.Verdict{v1alpha1.VerdictSuperseded, v1alpha1.VerdictImproved,
			v1alpha1.VerdictNotImproved, v1alpha1.VerdictSuperseded},
		winner: 1, best: "0.7",
	}, {
		name:     "a tie goes to the first candidate",
		outcomes: []outcome{{trainFails: true}, {value: "0.8"}, {value: "0.8"}},
		want:     []v1alpha1.Verdict{v1alpha1.VerdictTrainFailed, v1alpha1.VerdictImproved, v1alpha1.VerdictSuperseded},
		winner:   1, best: "0.8",
	}, {
		name:     "within the noise margin is not an improvement, whatever the others do",
		outcomes: []outcome{{value: "0.99"}, {value: "1.5"}},
		want:     []v1alpha1.Verdict{v1alpha1.VerdictWithinNoise, v1alpha1.VerdictNotImproved},
		winner:   -1, best: "1.0",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(t, givenBaseline, func(s *v1alpha1.AutoResearchSpec) {
				s.Candidates = int32(len(tc.outcomes))
				s.Acceptance.MinDelta = "0.05"
			})
			d.start()
			if got := len(d.st.CurrentRound.Candidates); got != len(tc.outcomes) {
				t.Fatalf("round 1 has %d candidates, want %d", got, len(tc.outcomes))
			}
			git := playCandidates(t, d, tc.outcomes)
			cr := d.st.CurrentRound
			var got []v1alpha1.Verdict
			for _, c := range cr.Candidates {
				got = append(got, c.Verdict)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			wantType := ActionRollback
			if tc.winner >= 0 {
				wantType = ActionCommit
				if git.Candidate != tc.winner || git.Code != fmt.Sprintf("cand1%s", CandidateName(tc.winner)) {
					t.Errorf("commit of candidate %d code %q, want candidate %d's sealed commit", git.Candidate, git.Code, tc.winner)
				}
			}
			if git.Type != wantType {
				t.Fatalf("git action %s, want %s", git.Type, wantType)
			}
			// One ledger row per candidate, the winner's without a commit,
			// which the git step fills in.
			rows := append([]steps.LedgerRound{*git.Ledger.Round}, git.Ledger.Others...)
			if len(rows) != len(tc.outcomes) {
				t.Fatalf("%d ledger rows, want %d", len(rows), len(tc.outcomes))
			}
			for _, r := range rows {
				k := int32(r.Candidate[0] - 'a')
				wantCommit := fmt.Sprintf("cand1%s", r.Candidate)
				if tc.outcomes[k].researcherFails {
					wantCommit = ""
				}
				if k == tc.winner {
					wantCommit = ""
				}
				if r.Round != 1 || r.Verdict != string(tc.want[k]) || r.Commit != wantCommit {
					t.Errorf("ledger row %+v: want round 1, verdict %s, commit %q", r, tc.want[k], wantCommit)
				}
			}
			obs := rolledBack(1)
			if tc.winner >= 0 {
				obs = committed(1, commitOf(1))
			}
			obs.Candidate = git.Candidate
			acts := d.next(obs)
			var reported []string
			for _, a := range acts {
				if a.Type == ActionReportRound {
					reported = append(reported, CandidateLabel(a.Record.Round, a.Record.Candidate)+" "+string(a.Record.Verdict))
				}
			}
			if len(reported) != len(tc.outcomes) {
				t.Errorf("reported %v, want one record per candidate", reported)
			}
			if d.st.Best.Value != tc.best || d.st.CompletedRounds != 1 || d.current() != 2 {
				t.Errorf("after round 1: best %s, %d rounds done, round %d; want best %s, 1 done, round 2", d.st.Best.Value, d.st.CompletedRounds, d.current(), tc.best)
			}
			total := int32(0)
			for _, n := range d.st.VerdictCounts {
				total += n
			}
			if total != int32(len(tc.outcomes)) {
				t.Errorf("verdict counts %v: want every candidate counted", d.st.VerdictCounts)
			}
			wantNon := int32(1)
			if tc.winner >= 0 {
				wantNon = 0
			}
			if d.st.ConsecutiveNonImprovements != wantNon {
				t.Errorf("%d rounds without improvement, want %d: a round counts once", d.st.ConsecutiveNonImprovements, wantNon)
			}
		})
	}
}

// TestCandidatesWaitForEachOther checks that a candidate that finished its
// step waits for the others, that a result it reports again meanwhile is
// ignored, and that the round then starts the next step for all of them.
func TestCandidatesWaitForEachOther(t *testing.T) {
	d := newDriver(t, givenBaseline, func(s *v1alpha1.AutoResearchSpec) { s.Candidates = 2 })
	var acts []Action
	for _, a := range d.start() {
		if waitsFor(a.Type) {
			acts = append(acts, a)
		}
	}
	if len(acts) != 2 || acts[0].Type != ActionRunResearcher || acts[1].Candidate != 1 {
		t.Fatalf("round 1 starts with %v, want a Researcher for each candidate", acts)
	}
	if p := acts[1].Prompt; p.Candidate != "b" || p.Candidates != 2 || len(p.Directions) != 2 || p.Directions[0] == p.Directions[1] {
		t.Errorf("candidate b's prompt: candidate %q of %d, directions %q; want b of 2 with two different directions", p.Candidate, p.Candidates, p.Directions)
	}
	first := candidateObs(1, 1, v1alpha1.StepResearcher, outcome{})
	if acts := d.next(first); len(acts) != 0 {
		t.Fatalf("candidate b done: actions %v, want none while a still researches", acts)
	}
	if c := d.st.CurrentRound.Candidates[1]; c.Step != v1alpha1.StepCompliance || d.st.CurrentRound.Step != v1alpha1.StepResearcher {
		t.Fatalf("candidate b waits for step %q in round step %s, want Compliance in Researcher", c.Step, d.st.CurrentRound.Step)
	}
	before := d.st.DeepCopy()
	d.next(first)
	if diff := cmp.Diff(before.CurrentRound, d.st.CurrentRound); diff != "" {
		t.Errorf("a repeated result of a waiting candidate changed the round (-before +after):\n%s", diff)
	}
	acts = d.next(candidateObs(1, 0, v1alpha1.StepResearcher, outcome{}))
	if len(acts) != 2 || acts[0].Type != ActionCheckCompliance || acts[0].Candidate != 0 || acts[1].Candidate != 1 {
		t.Fatalf("both researched: actions %v, want a compliance check of each", acts)
	}
	if cs := d.st.CurrentRound.Candidates; cs[0].Step != "" || cs[1].Step != "" {
		t.Errorf("candidates' steps %q and %q once the round caught up, want both empty", cs[0].Step, cs[1].Step)
	}
}

// TestInterruptedRoundOfCandidatesStartsAgain checks that a round of
// several candidates interrupted before its git step starts again whole:
// no candidate is lost, none is counted twice.
func TestInterruptedRoundOfCandidatesStartsAgain(t *testing.T) {
	for _, step := range []v1alpha1.Step{v1alpha1.StepResearcher, v1alpha1.StepCompliance, v1alpha1.StepTrain, v1alpha1.StepEval} {
		t.Run(string(step), func(t *testing.T) {
			d := newDriver(t, givenBaseline, func(s *v1alpha1.AutoResearchSpec) { s.Candidates = 3 })
			d.start()
			outcomes := []outcome{{value: "0.5"}, {value: "0.6"}, {value: "0.7"}}
			for d.st.CurrentRound.Step != step {
				cr := d.st.CurrentRound
				for k := range cr.Candidates {
					if cr.Candidates[k].Step == "" && d.st.CurrentRound.Step == cr.Step {
						d.next(candidateObs(1, int32(k), cr.Step, outcomes[k]))
					}
				}
			}
			// Candidate a is done with the step when the run stops.
			d.next(candidateObs(1, 0, step, outcomes[0]))
			acts := d.next(resumed())
			var started []int32
			for _, a := range acts {
				if a.Type == ActionRunResearcher {
					started = append(started, a.Candidate)
				}
			}
			if diff := cmp.Diff([]int32{0, 1, 2}, started); diff != "" {
				t.Errorf("Researchers started after the interruption (-want +got):\n%s", diff)
			}
			for _, c := range d.st.CurrentRound.Candidates {
				if c.Step != "" || c.Verdict != "" || c.Commit != "" {
					t.Errorf("candidate %d after the restart: %+v, want it fresh", c.Index, c)
				}
			}
			if len(d.st.VerdictCounts) != 0 {
				t.Errorf("verdict counts %v, want none", d.st.VerdictCounts)
			}
		})
	}
}

// TestGPUsInUse follows status.gpus through a round of two candidates on
// two GPUs each: none while they research, four while both train, two
// while one waits for the other.
func TestGPUsInUse(t *testing.T) {
	d := newDriver(t, givenBaseline, func(s *v1alpha1.AutoResearchSpec) {
		s.Candidates = 2
		s.Train.GPUs = ptr.To(int32(2))
	})
	d.start()
	var got []int32
	gpus := func() { got = append(got, d.st.GPUs) }
	gpus()
	for _, step := range []v1alpha1.Step{v1alpha1.StepResearcher, v1alpha1.StepCompliance, v1alpha1.StepTrain, v1alpha1.StepEval} {
		d.next(candidateObs(1, 1, step, outcome{value: "0.5"}))
		gpus()
		d.next(candidateObs(1, 0, step, outcome{value: "0.6"}))
		gpus()
	}
	// Both research; b waits; both are checked; b waits; both train, then
	// a alone; both evaluate, then a alone; the git step.
	if diff := cmp.Diff([]int32{0, 0, 0, 0, 4, 2, 4, 2, 0}, got); diff != "" {
		t.Errorf("status.gpus after each result (-want +got):\n%s", diff)
	}
}

// TestCombine plays spec.combine: a round in which two or more candidates
// improved gets one more, their changes together, checked, trained,
// evaluated and ranked with them.
func TestCombine(t *testing.T) {
	cases := []struct {
		name string
		// outcomes are the candidates', the combination's last when the
		// round gets one.
		outcomes []outcome
		combined bool
		want     []v1alpha1.Verdict
		winner   int32
	}{{
		name:     "two improve: together they beat both",
		outcomes: []outcome{{value: "0.9"}, {value: "0.7"}, {value: "1.2"}, {value: "0.6"}},
		combined: true,
		want: []v1alpha1.Verdict{v1alpha1.VerdictSuperseded, v1alpha1.VerdictSuperseded,
			v1alpha1.VerdictNotImproved, v1alpha1.VerdictImproved},
		winner: 3,
	}, {
		name:     "together they improve less than one alone",
		outcomes: []outcome{{value: "0.9"}, {value: "0.7"}, {value: "0.8"}},
		combined: true,
		want:     []v1alpha1.Verdict{v1alpha1.VerdictSuperseded, v1alpha1.VerdictImproved, v1alpha1.VerdictSuperseded},
		winner:   1,
	}, {
		name:     "their changes conflict",
		outcomes: []outcome{{value: "0.9"}, {value: "0.7"}, {conflict: "train.py"}},
		combined: true,
		want:     []v1alpha1.Verdict{v1alpha1.VerdictSuperseded, v1alpha1.VerdictImproved, v1alpha1.VerdictConflict},
		winner:   1,
	}, {
		name:     "one improves: nothing to combine",
		outcomes: []outcome{{value: "0.9"}, {value: "1.2"}},
		want:     []v1alpha1.Verdict{v1alpha1.VerdictImproved, v1alpha1.VerdictNotImproved},
		winner:   0,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := len(tc.outcomes)
			if tc.combined {
				k--
			}
			d := newDriver(t, givenBaseline, func(s *v1alpha1.AutoResearchSpec) {
				s.Candidates = int32(k)
				s.Combine = ptr.To(true)
				s.Acceptance.MinDelta = "0.05"
			})
			d.start()
			git := playCandidates(t, d, tc.outcomes)
			cr := d.st.CurrentRound
			var got []v1alpha1.Verdict
			for _, c := range cr.Candidates {
				got = append(got, c.Verdict)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			if git.Type != ActionCommit || git.Candidate != tc.winner {
				t.Errorf("git action %s of candidate %d, want a commit of %d", git.Type, git.Candidate, tc.winner)
			}
			if !tc.combined {
				return
			}
			last := cr.Candidates[len(cr.Candidates)-1]
			if diff := cmp.Diff([]int32{0, 1}, last.Combines); diff != "" || last.Strategy != "1a + 1b together" {
				t.Errorf("the combination combines %v (-want +got: %s) with strategy %q, want 1a + 1b together", last.Combines, diff, last.Strategy)
			}
			var combine []string
			for _, a := range d.seen {
				if a.Type == ActionCheckCompliance && a.Candidate == last.Index {
					combine = a.Combine
				}
			}
			if diff := cmp.Diff([]string{"cand1a", "cand1b"}, combine); diff != "" {
				t.Errorf("the combination's check merges (-want +got):\n%s", diff)
			}
			if n := len(git.Ledger.Others) + 1; n != len(tc.outcomes) {
				t.Errorf("%d ledger rows, want one for each candidate and the combination", n)
			}
		})
	}
}

// TestQueuedCandidate checks when a candidate whose Job waits in the queue
// is recorded queued: only once every other candidate is done with the
// step, and one of them ran it; until then the report changes nothing.
func TestQueuedCandidate(t *testing.T) {
	queued := func(k int32) Observation { return Observation{Kind: ObserveQueued, Round: 1, Candidate: k} }
	t.Run("the others trained", func(t *testing.T) {
		d := newDriver(t, givenBaseline, func(s *v1alpha1.AutoResearchSpec) { s.Candidates = 3; s.QueueName = "gpus" })
		d.start()
		for _, step := range []v1alpha1.Step{v1alpha1.StepResearcher, v1alpha1.StepCompliance} {
			for k := int32(0); k < 3; k++ {
				d.next(candidateObs(1, k, step, outcome{}))
			}
		}
		d.next(candidateObs(1, 0, v1alpha1.StepTrain, outcome{}))
		before := d.st.DeepCopy()
		d.next(queued(2))
		if diff := cmp.Diff(before.CurrentRound, d.st.CurrentRound); diff != "" {
			t.Fatalf("queued while candidate b still trains changed the round (-before +after):\n%s", diff)
		}
		d.next(candidateObs(1, 1, v1alpha1.StepTrain, outcome{trainFails: true}))
		d.next(queued(2))
		cr := d.st.CurrentRound
		if c := cr.Candidates[2]; c.Verdict != v1alpha1.VerdictQueued || !strings.Contains(c.Insight, "queue gpus") {
			t.Errorf("candidate c: verdict %s, insight %q; want queued, naming the queue", c.Verdict, c.Insight)
		}
		if cr.Step != v1alpha1.StepEval || cr.Candidates[0].Step != "" {
			t.Errorf("round at %s with candidate a at %q, want a evaluated without c", cr.Step, cr.Candidates[0].Step)
		}
	})
	t.Run("the combination", func(t *testing.T) {
		d := newDriver(t, givenBaseline, func(s *v1alpha1.AutoResearchSpec) { s.Candidates = 2; s.Combine = ptr.To(true); s.QueueName = "gpus" })
		d.start()
		for _, step := range []v1alpha1.Step{v1alpha1.StepResearcher, v1alpha1.StepCompliance, v1alpha1.StepTrain, v1alpha1.StepEval} {
			for k := int32(0); k < 2; k++ {
				d.next(candidateObs(1, k, step, outcome{value: "0.5"}))
			}
		}
		d.next(candidateObs(1, 2, v1alpha1.StepCompliance, outcome{}))
		d.next(queued(2))
		if c := d.st.CurrentRound.Candidates[2]; c.Verdict != "" || d.st.CurrentRound.Step != v1alpha1.StepTrain {
			t.Errorf("the combination, training once the others are done, was recorded %q; want it to wait for the queue", c.Verdict)
		}
	})
	t.Run("no other trained", func(t *testing.T) {
		d := newDriver(t, givenBaseline, func(s *v1alpha1.AutoResearchSpec) { s.Candidates = 2; s.QueueName = "gpus" })
		d.start()
		for k := int32(0); k < 2; k++ {
			d.next(candidateObs(1, k, v1alpha1.StepResearcher, outcome{}))
		}
		d.next(candidateObs(1, 0, v1alpha1.StepCompliance, outcome{complianceFails: true}))
		d.next(candidateObs(1, 1, v1alpha1.StepCompliance, outcome{}))
		d.next(queued(1))
		if c := d.st.CurrentRound.Candidates[1]; c.Verdict != "" || d.st.CurrentRound.Step != v1alpha1.StepTrain {
			t.Errorf("the only candidate left was recorded %q; want it to wait for the queue", c.Verdict)
		}
	})
}
