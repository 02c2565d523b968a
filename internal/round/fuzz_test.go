package round

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
	"github.com/autoresearch-dev/autoresearch-operator/internal/schema"
)

// FuzzEngine builds a valid protocol from the input, plays an adapter that
// answers the engine's actions with results the input picks (failures,
// metrics better, worse, equal or within the noise, values that are no
// number, violations, conflicts, queued Jobs), interleaved with ticks,
// restarts, repeated observations and observations of other rounds or
// candidates, and checks the status after every step. Once the input is
// used up, the adapter answers every action plainly: the experiment must
// then end within a bounded number of steps.
func FuzzEngine(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		// One candidate, measured baseline, improving rounds.
		{0: 2, 2: 0, 5: 1, 16: 0, 17: 0, 18: 0, 19: 0, 20: 0, 21: 0, 22: 0, 23: 0, 24: 0, 25: 0},
		// Several candidates, pipeline and combine, a holdout.
		{0: 3, 1: 2, 2: 3, 3: 1, 4: 1, 5: 1, 6: 1, 7: 2, 16: 0, 17: 1, 18: 0, 19: 0, 20: 0, 21: 1, 22: 0, 23: 0, 24: 0, 25: 2, 26: 0, 27: 0},
		// Restarts, stale observations and queued Jobs amid answers.
		{0: 5, 1: 3, 2: 1, 3: 1, 16: 0, 17: 0, 18: 7, 19: 0, 20: 0, 21: 8, 22: 1, 23: 0, 24: 10, 25: 1, 26: 9, 27: 0, 28: 0, 29: 7},
		// A given baseline, a target, a budget and a plateau that stops.
		{0: 4, 2: 2, 5: 2, 8: 1, 9: 1, 10: 2, 11: 1, 16: 0, 17: 0, 18: 0, 19: 0, 20: 0, 21: 2, 22: 0, 23: 0, 24: 0},
		// Improvements confirmed by two more runs each, of one candidate and
		// of several, pipelined.
		{0: 2, 2: 128, 5: 1, 16: 0, 17: 0, 18: 0, 19: 0, 20: 0, 21: 0, 22: 0, 23: 0, 24: 0, 25: 0},
		{0: 3, 1: 2, 2: 65, 3: 1, 4: 1, 5: 1, 6: 1, 7: 2, 16: 0, 17: 1, 18: 0, 19: 0, 20: 0, 21: 1, 22: 0, 23: 0, 24: 0, 25: 2, 26: 0, 27: 0},
		// Suspend and resume, a changed measure.
		{0: 1, 1: 1, 12: 1, 16: 12, 17: 6, 18: 12, 19: 0, 20: 0, 21: 11, 22: 0, 23: 0, 24: 0, 25: 0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzBytes{data: data}
		spec := fuzzSpec(t, r)
		h := &harness{t: t, spec: spec, r: r, now: t0, commits: map[string]bool{}, answered: map[string]Observation{}, maxEver: spec.MaxRounds}
		h.play()
	})
}

// fuzzBytes hands out the input a byte at a time; zeros once it is used up.
type fuzzBytes struct {
	data []byte
	pos  int
}

func (r *fuzzBytes) byte() byte {
	if r.pos >= len(r.data) {
		r.pos++
		return 0
	}
	b := r.data[r.pos]
	r.pos++
	return b
}

func (r *fuzzBytes) done() bool { return r.pos >= len(r.data) }

func (r *fuzzBytes) intn(n int) int { return int(r.byte()) % n }

func pick[T any](r *fuzzBytes, options ...T) T { return options[r.intn(len(options))] }

// fuzzSpec is a protocol the project's own defaulting and validation
// accept, from 16 bytes of the input.
func fuzzSpec(t *testing.T, r *fuzzBytes) *v1alpha1.AutoResearchSpec {
	t.Helper()
	s := testSpec()
	s.MaxRounds = int32(1 + r.intn(6))
	s.Candidates = int32(1 + r.intn(4))
	flags := r.byte()
	if flags&1 != 0 {
		s.Pipeline = ptr.To(true)
	}
	if flags&2 != 0 && s.Candidates >= 2 {
		s.Combine = ptr.To(true)
	}
	if flags&4 != 0 {
		s.Eval.Direction = v1alpha1.DirectionMaximize
	}
	if flags&8 != 0 {
		s.QueueName = "gpu-queue"
	}
	if flags&16 != 0 {
		s.Eval.Constraints = []v1alpha1.EvalConstraint{{Metric: "memory_gb", Max: "80"}}
	}
	if flags&32 != 0 {
		s.Guidance = []string{"try a smaller learning rate"}
	}
	// Bits 6 and 7: 0 to 3 runs that confirm an improvement.
	s.Acceptance.ConfirmRuns = ptr.To(int32(flags >> 6))
	s.Train.GPUs = ptr.To(int32(r.intn(3)))
	switch r.intn(3) {
	case 1:
		s.Baseline = &v1alpha1.BaselineSpec{Runs: int32(1 + r.intn(4))}
	case 2:
		s.Baseline = &v1alpha1.BaselineSpec{Value: pick[v1alpha1.Decimal](r, "1.0", "0.5", "2", "1e0")}
	}
	s.Acceptance.MinDelta = pick[v1alpha1.NonNegativeDecimal](r, "", "0", "0.01", "0.1")
	s.Acceptance.NoiseFactor = pick[v1alpha1.NonNegativeDecimal](r, "", "0", "1", "2")
	s.Acceptance.MinImprovement = pick[v1alpha1.NonNegativeDecimal](r, "", "0", "0.01", "0.2")
	s.Target = pick[v1alpha1.Decimal](r, "", "", "0.5", "0.9", "1.2", "0")
	switch r.intn(6) {
	case 1:
		s.Budget = &v1alpha1.BudgetSpec{GPUHours: pick[v1alpha1.NonNegativeDecimal](r, "0.05", "0.2", "1")}
	case 2:
		s.Budget = &v1alpha1.BudgetSpec{ResearcherTokens: pick[int64](r, 1, 5000, 100000)}
	case 3:
		s.Budget = &v1alpha1.BudgetSpec{Cost: pick[v1alpha1.NonNegativeDecimal](r, "0", "1", "10"), GPUHourPrice: pick[v1alpha1.NonNegativeDecimal](r, "", "2")}
	case 4:
		s.Budget = &v1alpha1.BudgetSpec{Deadline: timeAt(t0.Add(time.Duration(1+r.intn(60)) * time.Minute))}
	}
	switch r.intn(4) {
	case 1:
		s.Plateau = &v1alpha1.PlateauSpec{Rounds: int32(1 + r.intn(3)), Action: v1alpha1.PlateauWarn}
	case 2:
		s.Plateau = &v1alpha1.PlateauSpec{Rounds: int32(1 + r.intn(3)), Action: v1alpha1.PlateauStop}
	}
	if r.intn(3) == 1 {
		s.Holdout = &v1alpha1.HoldoutSpec{Command: "python holdout.py", Dir: "/holdout", Tolerance: pick[v1alpha1.NonNegativeDecimal](r, "", "0", "0.05")}
	}
	s.HistoryLimit = pick[int32](r, 0, 1, 3, 20)
	if r.intn(8) == 1 {
		s.Suspend = ptr.To(true)
	}
	for r.pos < 16 {
		r.byte()
	}
	if err := schema.DefaultSpec(s); err != nil {
		t.Fatal(err)
	}
	if errs := s.Validate(); len(errs) > 0 {
		t.Fatalf("the harness built a spec the Go rules refuse: %v", errs.ToAggregate())
	}
	if err := validateAgainstCRD(s); err != nil {
		t.Fatalf("the harness built a spec the CRD refuses: %v", err)
	}
	return s
}

// crdVerdicts caches the CRD's verdict on each protocol the harness builds,
// which come from a small set.
var crdVerdicts = map[string]error{}

func validateAgainstCRD(s *v1alpha1.AutoResearchSpec) error {
	ar := builder.MakeAutoResearch("demo", "ns").Obj()
	ar.Spec = *s
	data, err := json.Marshal(ar)
	if err != nil {
		return err
	}
	key := string(data)
	if err, ok := crdVerdicts[key]; ok {
		return err
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(data, &obj); err != nil {
		return err
	}
	delete(obj, "status")
	errs, err := schema.Validate(context.Background(), obj)
	if err == nil {
		err = errs.ToAggregate()
	}
	crdVerdicts[key] = err
	return err
}

// Secrets the hidden holdout prints: none may reach what a Researcher reads.
const holdoutTail = "HOLDOUT-SECRET-TAIL"

// harness plays the adapter and checks the engine's invariants.
type harness struct {
	t    *testing.T
	spec *v1alpha1.AutoResearchSpec
	r    *fuzzBytes
	now  time.Time
	st   v1alpha1.AutoResearchStatus
	// trace is what happened, for failure messages.
	trace []string
	last  *Observation
	step  int

	commits map[string]bool
	// answered holds the result the adapter reported for each action.
	answered map[string]Observation
	ncommit  int
	// holdoutValues are the values the holdout printed.
	holdoutValues []string
	// reported are the records of ReportRound actions.
	reported []v1alpha1.RoundRecord
	// kept are the committed rounds' values since the last measure of the
	// baseline, in order.
	kept []string
	// rebaselined says that a changed measure was accepted.
	rebaselined bool
	// maxEver is the largest maxRounds the spec had.
	maxEver int32
}

func (h *harness) fatalf(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("step %d: %s\ntrace (last 60):\n  %s\nspec: %s", h.step, fmt.Sprintf(format, args...),
		strings.Join(h.trace[max(0, len(h.trace)-60):], "\n  "), specSummary(h.spec))
}

func (h *harness) play() {
	// The input's own steps.
	for !h.r.done() && h.step < 400 {
		h.fuzzStep()
	}
	// Then an adapter that answers plainly, with the spec unsuspended.
	if ptr.Deref(h.spec.Suspend, false) {
		h.spec.Suspend = nil
		h.trace = append(h.trace, "spec.suspend cleared")
		h.apply(Observation{Kind: ObserveTick})
	}
	for i := 0; ; i++ {
		if h.terminal() {
			h.checkStatusFitsTheAPI()
			return
		}
		if i > 1500 {
			h.fatalf("the experiment did not end within 1500 plain answers")
		}
		acts := CurrentActions(h.spec, &h.st)
		if len(acts) == 0 {
			h.apply(Observation{Kind: ObserveTick})
			continue
		}
		h.apply(h.honest(acts[0], true))
	}
}

// actionKey names the child that performs a.
func actionKey(a Action) string {
	return fmt.Sprintf("%s R%d c%d s%d %s %s %s", a.Type, a.Round, a.Candidate, a.Sample, a.Code, a.BaseCommit, a.SealBase)
}

// ended reports whether the experiment failed or succeeded.
func (h *harness) ended() bool {
	return h.st.Phase == v1alpha1.PhaseFailed || h.st.Phase == v1alpha1.PhaseSucceeded
}

// honest answers a. Once the experiment ended, the adapter finds the child
// of an action it answered before as it was: it reports the same result.
func (h *harness) honest(a Action, plain bool) Observation {
	key := actionKey(a)
	if prev, ok := h.answered[key]; ok && h.ended() {
		return prev
	}
	if h.st.Phase == v1alpha1.PhaseFailed {
		// A failed experiment's adapter starts nothing new.
		return Observation{Kind: ObserveTick}
	}
	obs := h.answer(a, plain)
	h.answered[key] = obs
	return obs
}

// checkStatusFitsTheAPI checks the final status against the CRD's
// schema, as the API server would before storing it.
func (h *harness) checkStatusFitsTheAPI() {
	h.t.Helper()
	ar := builder.MakeAutoResearch("demo", "ns").Obj()
	ar.Spec = *h.spec
	ar.Status = h.st
	data, err := json.Marshal(ar)
	if err != nil {
		h.fatalf("%v", err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(data, &obj); err != nil {
		h.fatalf("%v", err)
	}
	errs, err := schema.Validate(context.Background(), obj)
	if err != nil {
		h.fatalf("%v", err)
	}
	if len(errs) > 0 {
		h.fatalf("the API would refuse the status: %v", errs.ToAggregate())
	}
}

// terminal reports whether the experiment is done: failed, or succeeded
// with its final ledger committed.
func (h *harness) terminal() bool {
	switch h.st.Phase {
	case v1alpha1.PhaseFailed:
		return true
	case v1alpha1.PhaseSucceeded:
		return h.st.LedgerCommit != ""
	}
	return false
}

func (h *harness) fuzzStep() {
	acts := CurrentActions(h.spec, &h.st)
	op := h.r.intn(16)
	switch {
	case op < 8 && len(acts) > 0:
		a := acts[h.r.intn(len(acts))]
		h.apply(h.honest(a, false))
	case op < 8, op == 8:
		obs := Observation{Kind: ObserveTick}
		if h.r.intn(4) == 0 {
			obs.Waiting = "pod unschedulable: 0/3 nodes have a free GPU"
		}
		h.apply(obs)
	case op == 9:
		h.apply(Observation{Kind: ObserveResumed})
	case op == 10 && !h.ended():
		// An observation of another round, another candidate or another
		// step than the one the engine waits for.
		var a Action
		if len(acts) > 0 {
			a = acts[h.r.intn(len(acts))]
		} else {
			a = Action{Type: pick(h.r, ActionRunResearcher, ActionRunTrain, ActionRunEval, ActionCommit, ActionRollback, ActionFinish), Round: h.st.Round}
		}
		obs := h.answer(a, false)
		switch h.r.intn(5) {
		case 0:
			obs.Round++
		case 1:
			obs.Round--
		case 2:
			obs.Candidate += int32(1 + h.r.intn(4))
		case 3:
			obs.Candidate = -1
		case 4:
			obs.Kind = pick(h.r, ObserveResearcherFinished, ObserveComplianceChecked, ObserveTrainFinished, ObserveEvalFinished,
				ObserveHoldoutFinished, ObserveCommitted, ObserveRolledBack, ObserveFinished, ObserveWorkspaceReady, ObserveWorkspaceFailed)
			// The result the kind carries.
			other := h.answer(Action{Type: kindAction(obs.Kind), Round: obs.Round, Candidate: obs.Candidate}, false)
			obs = other
		}
		h.trace = append(h.trace, "(wrong observation)")
		h.apply(obs)
	case op == 11:
		if h.last != nil {
			h.trace = append(h.trace, "(repeated)")
			h.apply(*h.last)
		}
	case op == 12:
		// A training or evaluation Job waits in the queue.
		for _, a := range acts {
			if a.Type == ActionRunTrain || a.Type == ActionRunEval || a.Type == ActionRunHoldout {
				h.apply(Observation{Kind: ObserveQueued, Round: a.Round, Candidate: a.Candidate})
				return
			}
		}
		h.apply(Observation{Kind: ObserveTick})
	case op == 13:
		// The user accepts a changed measure, which the adapter reports
		// on a restart of an experiment under way.
		if !h.ended() && h.r.intn(3) == 0 {
			h.apply(Observation{Kind: ObserveRebaseline, Changed: []string{"eval.command"}})
			return
		}
		h.apply(Observation{Kind: ObserveTick})
	case op == 14:
		// The user suspends or resumes the loop.
		if ptr.Deref(h.spec.Suspend, false) {
			h.spec.Suspend = nil
		} else {
			h.spec.Suspend = ptr.To(true)
		}
		h.trace = append(h.trace, fmt.Sprintf("spec.suspend=%v", ptr.Deref(h.spec.Suspend, false)))
		h.apply(Observation{Kind: ObserveTick})
	case op == 15 && h.r.intn(2) == 0:
		// The user raises or lowers maxRounds, within what the harness
		// plays.
		h.spec.MaxRounds = int32(1 + h.r.intn(6))
		h.maxEver = max(h.maxEver, h.spec.MaxRounds)
		h.trace = append(h.trace, fmt.Sprintf("spec.maxRounds=%d", h.spec.MaxRounds))
		h.apply(Observation{Kind: ObserveTick})
	default:
		h.apply(Observation{Kind: ObserveTick})
	}
}

// kindAction is the action an observation of kind answers.
func kindAction(k ObservationKind) ActionType {
	switch k {
	case ObserveResearcherFinished:
		return ActionRunResearcher
	case ObserveComplianceChecked:
		return ActionCheckCompliance
	case ObserveTrainFinished:
		return ActionRunTrain
	case ObserveEvalFinished:
		return ActionRunEval
	case ObserveHoldoutFinished:
		return ActionRunHoldout
	case ObserveCommitted:
		return ActionCommit
	case ObserveRolledBack:
		return ActionRollback
	case ObserveFinished:
		return ActionFinish
	}
	return ActionPrepareWorkspace
}

// answer is the result of a, as an adapter that performed it reports it;
// plain answers succeed and measure no improvement.
func (h *harness) answer(a Action, plain bool) Observation {
	choice := 0
	if !plain {
		choice = h.r.intn(16)
	}
	obs := Observation{Round: a.Round, Candidate: a.Candidate}
	switch a.Type {
	case ActionPrepareWorkspace:
		if choice == 15 {
			return Observation{Kind: ObserveWorkspaceFailed, Error: "the claim is full"}
		}
		return workspaceReady()
	case ActionRunResearcher:
		obs.Kind = ObserveResearcherFinished
		obs.Researcher = h.researcherResult(a, choice, plain)
	case ActionCheckCompliance:
		obs.Kind = ObserveComplianceChecked
		obs.Compliance = h.complianceResult(a, choice)
	case ActionRunTrain:
		obs.Kind = ObserveTrainFinished
		res := &TrainResult{Exit: ProcessExit{Duration: trainTime}, FinalLoss: "2.5"}
		switch choice {
		case 12:
			res.Exit.ExitCode = 1
		case 13:
			res.Exit.TimedOut = true
		case 14:
			res.Divergence = "loss is NaN"
		}
		obs.Train = res
	case ActionRunEval:
		obs.Kind = ObserveEvalFinished
		obs.Eval = h.evalResult(a, choice, plain)
	case ActionRunHoldout:
		obs.Kind = ObserveHoldoutFinished
		res := &HoldoutResult{Exit: ProcessExit{Duration: evalTime, Tail: holdoutTail}, Found: true}
		res.Value = h.holdoutValue(choice)
		switch choice {
		case 14:
			res.Exit.ExitCode = 2
		case 15:
			res.Found = false
			res.Value = ""
		}
		obs.Holdout = res
	case ActionCommit:
		obs.Kind = ObserveCommitted
		obs.Commit = fmt.Sprintf("c0ffee%034x", 1+h.ncommit)
		h.ncommit++
		h.commits[obs.Commit] = true
		switch choice {
		case 15:
			obs.Push = &PushResult{Error: "remote rejected"}
		case 14:
			obs.Push = &PushResult{Commit: obs.Commit}
		}
	case ActionRollback:
		obs.Kind = ObserveRolledBack
	case ActionFinish:
		obs.Kind = ObserveFinished
		obs.Commit = fmt.Sprintf("1ed9e5%034x", 1+h.ncommit)
		h.ncommit++
		// A continued experiment starts from the ledger commit.
		h.commits[obs.Commit] = true
	default:
		obs.Kind = ObserveTick
	}
	return obs
}

// researcherResult is a Researcher's result for answer.
func (h *harness) researcherResult(a Action, choice int, plain bool) *ResearcherResult {
	res := &ResearcherResult{Exit: ProcessExit{Duration: researcherTime}, Strategy: fmt.Sprintf("idea %d%s", a.Round, CandidateName(a.Candidate))}
	switch choice {
	case 12:
		res.Exit.ExitCode = 3
		res.Exit.Tail = "Traceback"
	case 13:
		res.Exit.TimedOut = true
	case 14:
		res.Strategy = ""
	case 11:
		// A Researcher may write anything, at any length.
		res.Strategy = strings.Repeat("\x1b[31mlong idea ", 600)
	}
	if !plain {
		res.Usage = v1alpha1.Usage{InputTokens: pick[int64](h.r, 0, 100, 4000, -5), OutputTokens: pick[int64](h.r, 0, 50, 900),
			Cost: pick(h.r, "", "0.01", "0.5", "-1", "NaN", "Inf")}
	}
	return res
}

// complianceResult is a compliance check's result for answer.
func (h *harness) complianceResult(a Action, choice int) *ComplianceResult {
	res := &ComplianceResult{Candidate: fmt.Sprintf("%040x", 1+h.ncommit)}
	h.ncommit++
	switch choice {
	case 10:
		res.Violation = "prepare.py changed"
		if h.r.intn(2) == 0 {
			res.Violation = strings.Repeat("prepare.py changed\x07 ", 300)
		}
	case 11:
		res.Parity = "PARITY_FAIL kind=value detail=mismatch"
	case 12:
		res.NoChange = true
	case 13, 14:
		// A conflict is only what a merge can report.
		if a.SealBase != "" || len(a.Combine) > 0 {
			res.Conflict = "train.py"
		}
	case 9:
		res.Advisory = "the diff is large"
		res.Strategy = "late strategy"
	}
	return res
}

// evalResult is an evaluation's result for answer.
func (h *harness) evalResult(a Action, choice int, plain bool) *EvalResult {
	res := &EvalResult{Exit: ProcessExit{Duration: evalTime}, Found: true}
	if a.Round == 0 {
		res.Value = h.baselineValue(choice)
	} else {
		res.Value = h.candidateValue(choice, plain)
	}
	switch choice {
	case 13:
		if h.r.intn(3) == 0 {
			res.FixedFilesChanged = []string{"prepare.py"}
		}
	case 14:
		if h.r.intn(2) == 0 {
			res.Exit.ExitCode = 1
		} else {
			res.Exit.TimedOut = true
		}
	case 15:
		res.Found = false
		res.Value = ""
	}
	if len(h.spec.Eval.Constraints) > 0 {
		res.Readings = map[string]string{"memory_gb": "40"}
		if !plain {
			switch h.r.intn(6) {
			case 0:
				res.Readings["memory_gb"] = "90"
			case 1:
				delete(res.Readings, "memory_gb")
			case 2:
				res.Readings["memory_gb"] = "NaN"
			}
		}
	}
	return res
}

// baselineValue is what round 0's evaluation prints.
func (h *harness) baselineValue(choice int) string {
	switch choice {
	case 10:
		return "NaN"
	case 11:
		return "inf"
	}
	return pick(h.r, "1.0", "0.98", "1.02", "1.0", "3", "0.001")
}

// candidateValue is what a round's evaluation prints: better than the best
// by far or by a little, equal, worse, or no number.
func (h *harness) candidateValue(choice int, plain bool) string {
	best := 1.0
	if h.st.Best != nil {
		if v, err := metric.ParseDecimal(h.st.Best.Value); err == nil {
			best = v
		}
	}
	sign := 1.0
	if h.spec.Eval.Direction == v1alpha1.DirectionMaximize {
		sign = -1
	}
	if plain {
		return strconv.FormatFloat(best+sign*0.5, 'g', 6, 64)
	}
	switch choice {
	case 10:
		return pick(h.r, "NaN", "nan", "-Inf", "1e999", "abc", "0x10", "")
	case 11:
		return strconv.FormatFloat(best, 'g', 6, 64)
	}
	delta := pick(h.r, 0.3, 0.05, 0.005, 0.0001, -0.001, -0.2, 0.5, 0.02)
	return strconv.FormatFloat(best-sign*delta, 'g', 6, 64)
}

// holdoutValue is what the hidden holdout prints: nine decimals, so that
// the harness can look for it where a Researcher reads.
func (h *harness) holdoutValue(choice int) string {
	v := pick(h.r, 0.7, 0.71, 0.69, 0.8, 0.6, 0.7)
	if h.spec.Eval.Direction == v1alpha1.DirectionMaximize {
		v = 2 - v
	}
	s := fmt.Sprintf("%.9f", v+float64(1+choice)*1e-9)
	if choice == 13 {
		s = "NaN"
	}
	h.holdoutValues = append(h.holdoutValues, s)
	return s
}

func (h *harness) describe(obs Observation) string {
	s := h.describeFull(obs)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func (h *harness) describeFull(obs Observation) string {
	s := fmt.Sprintf("%s R%d c%d", obs.Kind, obs.Round, obs.Candidate)
	switch {
	case obs.Researcher != nil:
		s += fmt.Sprintf(" exit=%d timeout=%v", obs.Researcher.Exit.ExitCode, obs.Researcher.Exit.TimedOut)
	case obs.Compliance != nil:
		c := obs.Compliance
		s += fmt.Sprintf(" cand=%.8s viol=%q parity=%q nochange=%v conflict=%q", c.Candidate, c.Violation, c.Parity, c.NoChange, c.Conflict)
	case obs.Train != nil:
		s += fmt.Sprintf(" exit=%d timeout=%v div=%q", obs.Train.Exit.ExitCode, obs.Train.Exit.TimedOut, obs.Train.Divergence)
	case obs.Eval != nil:
		s += fmt.Sprintf(" value=%q found=%v exit=%d fixed=%v readings=%v", obs.Eval.Value, obs.Eval.Found, obs.Eval.Exit.ExitCode, obs.Eval.FixedFilesChanged, obs.Eval.Readings)
	case obs.Holdout != nil:
		s += fmt.Sprintf(" value=%q found=%v exit=%d", obs.Holdout.Value, obs.Holdout.Found, obs.Holdout.Exit.ExitCode)
	case obs.Commit != "":
		s += " " + obs.Commit[:10]
	}
	return s
}

func summarize(st *v1alpha1.AutoResearchStatus, acts []Action) string {
	var parts []string
	for _, a := range acts {
		parts = append(parts, fmt.Sprintf("%s R%d c%d", a.Type, a.Round, a.Candidate))
	}
	cur := "-"
	if cr := st.CurrentRound; cr != nil {
		cur = fmt.Sprintf("R%d %s/%s", cr.Number, cr.Step, cr.StepState)
	}
	next := "-"
	if nr := st.NextRound; nr != nil {
		next = fmt.Sprintf("R%d %s/%s", nr.Number, nr.Step, nr.StepState)
	}
	return fmt.Sprintf("-> %s cur=%s next=%s done=%d [%s]", st.Phase, cur, next, st.CompletedRounds, strings.Join(parts, ", "))
}

// apply feeds obs to Next and checks the invariants.
func (h *harness) apply(obs Observation) {
	h.t.Helper()
	h.step++
	o := obs
	h.last = &o
	h.trace = append(h.trace, h.describe(obs))
	prev := *h.st.DeepCopy()
	if !h.ended() {
		// An observation that happens to answer an action in progress is
		// that child's result from now on.
		for _, a := range CurrentActions(h.spec, &prev) {
			if t := kindAction(obs.Kind); t == a.Type && t != ActionPrepareWorkspace && obs.Round == a.Round && obs.Candidate == a.Candidate {
				h.answered[actionKey(a)] = obs
			}
		}
	}
	in := Input{Spec: h.spec, Status: h.st, Generation: 1, Observation: obs, Now: h.now}
	var out Output
	func() {
		defer func() {
			if p := recover(); p != nil {
				h.fatalf("Next panicked on %s: %v", h.describe(obs), p)
			}
		}()
		out = Next(in)
	}()
	if !equality.Semantic.DeepEqual(prev, h.st) {
		h.fatalf("Next changed its input status")
	}
	if again := Next(in); !equality.Semantic.DeepEqual(again, out) {
		h.fatalf("Next is not pure: %s", cmp.Diff(out, again))
	}
	h.st = out.Status
	h.now = h.now.Add(time.Minute)
	h.trace[len(h.trace)-1] += " " + summarize(&h.st, out.Actions)
	h.check(prev, obs, out.Actions)
}

var gpuActions = []ActionType{ActionRunTrain, ActionRunEval, ActionRunHoldout}

// roundActionTypes are the actions of a round's steps.
var roundActionTypes = []ActionType{ActionRunResearcher, ActionCheckCompliance, ActionRunTrain, ActionRunEval, ActionRunHoldout, ActionCommit, ActionRollback}

func (h *harness) check(prev v1alpha1.AutoResearchStatus, obs Observation, acts []Action) {
	h.t.Helper()
	current := CurrentActions(h.spec, &h.st)
	h.checkActions(acts, current)
	h.checkPhase(prev, acts)
	h.checkRounds(prev)
	h.checkEarly(acts, current)
	h.checkRecords()
	h.checkBest(prev, obs)
	h.checkHoldoutHidden(acts)
	h.checkUsage(prev)
	h.checkWaiting(prev, obs, acts)
	h.checkLiveness(current)
}

// checkActions checks the batch of actions against the status.
func (h *harness) checkActions(acts []Action, current []Action) {
	h.t.Helper()
	st := &h.st
	// Actions whose results the engine waits for come last in a batch, and
	// are those CurrentActions rebuilds from the status.
	waitedSeen := false
	for _, a := range acts {
		if !waitsFor(a.Type) {
			if waitedSeen {
				h.fatalf("%s R%d comes after an action the engine waits for", a.Type, a.Round)
			}
			continue
		}
		waitedSeen = true
		if !slices.ContainsFunc(current, func(c Action) bool { return cmp.Equal(a, c) }) {
			diff := ""
			for _, c := range current {
				if c.Type == a.Type && c.Round == a.Round && c.Candidate == a.Candidate {
					diff = cmp.Diff(a, c)
				}
			}
			h.fatalf("emitted %s R%d c%d is not among CurrentActions %s (-emitted +current):\n%.3000s", a.Type, a.Round, a.Candidate, summarize(st, current), diff)
		}
	}
	for _, a := range acts {
		if a.Type == ActionReportRound {
			if a.Record == nil {
				h.fatalf("ReportRound R%d without a record", a.Round)
			}
			h.reported = append(h.reported, *a.Record)
		}
	}
}

// checkPhase checks that an experiment that ended stays so.
func (h *harness) checkPhase(prev v1alpha1.AutoResearchStatus, acts []Action) {
	h.t.Helper()
	st, spec := &h.st, h.spec
	// A failed or finished experiment runs nothing more.
	if prev.Phase == v1alpha1.PhaseFailed && st.Phase != v1alpha1.PhaseFailed {
		h.fatalf("a failed experiment went on to phase %s", st.Phase)
	}
	if prev.Phase == v1alpha1.PhaseSucceeded && st.Phase != v1alpha1.PhaseSucceeded && terminationReason(spec, &prev, h.now.Add(-time.Minute)) != "" {
		h.fatalf("a finished experiment went on to phase %s, though it has nothing left to do", st.Phase)
	}
	if st.Phase == v1alpha1.PhaseFailed || st.Phase == v1alpha1.PhaseSucceeded {
		for _, a := range acts {
			if slices.Contains(roundActionTypes, a.Type) {
				h.fatalf("phase %s, yet action %s R%d c%d", st.Phase, a.Type, a.Round, a.Candidate)
			}
		}
		want := v1alpha1.ConditionFailed
		if st.Phase == v1alpha1.PhaseSucceeded {
			want = v1alpha1.ConditionSucceeded
		}
		if !meta.IsStatusConditionTrue(st.Conditions, want) {
			h.fatalf("phase %s without condition %s", st.Phase, want)
		}
	}
}

// checkRounds checks the rounds completed and the current one.
func (h *harness) checkRounds(prev v1alpha1.AutoResearchStatus) {
	h.t.Helper()
	st, spec := &h.st, h.spec
	// Rounds.
	if st.CompletedRounds < prev.CompletedRounds {
		h.fatalf("completedRounds went down from %d to %d", prev.CompletedRounds, st.CompletedRounds)
	}
	if st.CompletedRounds > h.maxEver {
		h.fatalf("completedRounds %d exceeds maxRounds %d", st.CompletedRounds, h.maxEver)
	}
	if st.CompletedRounds > prev.CompletedRounds && st.CompletedRounds > max(spec.MaxRounds, prev.CompletedRounds+1) {
		h.fatalf("round %d completed, past maxRounds %d", st.CompletedRounds, spec.MaxRounds)
	}
	if cr := st.CurrentRound; cr != nil {
		if cr.Number > h.maxEver {
			h.fatalf("round %d runs past maxRounds %d", cr.Number, spec.MaxRounds)
		}
		if cr.Number > 0 && cr.Number != st.CompletedRounds+1 {
			h.fatalf("round %d is current after %d completed rounds", cr.Number, st.CompletedRounds)
		}
		if st.Round != cr.Number {
			h.fatalf("status.round %d, current round %d", st.Round, cr.Number)
		}
		if cr.Number > 0 && cr.BaseCommit != BestCommit(st) && st.Phase != v1alpha1.PhaseFailed {
			h.fatalf("round %d starts from %.10s, not the best code %.10s", cr.Number, cr.BaseCommit, BestCommit(st))
		}
		if len(cr.Timeline) > maxTimeline {
			h.fatalf("round %d's timeline has %d steps", cr.Number, len(cr.Timeline))
		}
		improved := 0
		for _, c := range cr.Candidates {
			if c.Verdict == v1alpha1.VerdictImproved {
				improved++
			}
		}
		if cr.Step == v1alpha1.StepGit && cr.StepState == v1alpha1.StepStateRunning && improved > 1 {
			h.fatalf("round %d's git step has %d improved candidates", cr.Number, improved)
		}
	}
}

// checkEarly checks the round started early, and the commits.
func (h *harness) checkEarly(acts []Action, current []Action) {
	h.t.Helper()
	st, spec := &h.st, h.spec
	if nr := st.NextRound; nr != nil {
		if !ptr.Deref(spec.Pipeline, false) {
			h.fatalf("a round started early without spec.pipeline")
		}
		cr := st.CurrentRound
		switch {
		case cr == nil:
			// The round before it is done; it finishes its checks.
			if nr.Number != st.CompletedRounds+1 {
				h.fatalf("round %d started early waits to take the place of a round after %d completed", nr.Number, st.CompletedRounds)
			}
		case cr.Number > 0 && nr.Number != cr.Number+1, cr.Number == 0 && nr.Number != st.CompletedRounds+1:
			h.fatalf("round %d started early beside round %d after %d completed", nr.Number, cr.Number, st.CompletedRounds)
		case nr.Number > h.maxEver:
			h.fatalf("round %d started early past maxRounds %d", nr.Number, spec.MaxRounds)
		}
		for _, a := range current {
			if a.Round == nr.Number && slices.Contains(gpuActions, a.Type) && (cr == nil || cr.Number != nr.Number) {
				h.fatalf("round %d, started early, runs %s", nr.Number, a.Type)
			}
		}
	}
	for _, a := range acts {
		if a.Type == ActionCommit {
			cr := st.CurrentRound
			if cr == nil || cr.Number != a.Round || Winner(cr) == nil || Winner(cr).Index != a.Candidate {
				h.fatalf("Commit R%d c%d without that candidate improved", a.Round, a.Candidate)
			}
			if a.BaseCommit != BestCommit(st) {
				h.fatalf("Commit R%d on %.10s, not the best %.10s", a.Round, a.BaseCommit, BestCommit(st))
			}
		}
	}
}

// checkRecords checks the records the rounds reported.
func (h *harness) checkRecords() {
	h.t.Helper()
	st, spec := &h.st, h.spec
	// Records: every finished round has a verdict; a round's records come
	// once, one per candidate.
	for _, rec := range h.reported {
		if rec.Verdict == "" {
			h.fatalf("round %d%s was recorded without a verdict", rec.Round, rec.Candidate)
		}
		if (rec.Round == 0) != (rec.Verdict == v1alpha1.VerdictBaseline) {
			h.fatalf("round %d%s was recorded with verdict %s", rec.Round, rec.Candidate, rec.Verdict)
		}
	}
	counted := map[v1alpha1.Verdict]int32{}
	seen := map[string]bool{}
	rounds := map[int32]int{}
	var maxRound int32
	for _, rec := range h.reported {
		if rec.Round == 0 {
			continue
		}
		counted[rec.Verdict]++
		key := fmt.Sprintf("%d%s", rec.Round, rec.Candidate)
		if seen[key] {
			h.fatalf("round %s was recorded twice", key)
		}
		seen[key] = true
		if rec.Verdict == v1alpha1.VerdictImproved {
			rounds[rec.Round]++
			if rounds[rec.Round] > 1 {
				h.fatalf("round %d has two improved records", rec.Round)
			}
		}
		maxRound = max(maxRound, rec.Round)
	}
	if maxRound != st.CompletedRounds {
		h.fatalf("completedRounds %d, but the last round recorded is %d", st.CompletedRounds, maxRound)
	}
	for v, n := range st.VerdictCounts {
		if counted[v] != n {
			h.fatalf("verdictCounts[%s]=%d, but %d records have it", v, n, counted[v])
		}
	}
	for v, n := range counted {
		if st.VerdictCounts[v] != n {
			h.fatalf("verdictCounts[%s]=%d, but %d records have it", v, st.VerdictCounts[v], n)
		}
	}
	if limit := int(spec.HistoryLimit); len(st.History) > limit+1 {
		h.fatalf("history holds %d records, limit %d", len(st.History), limit)
	}
}

// checkBest checks the best against the records.
func (h *harness) checkBest(prev v1alpha1.AutoResearchStatus, obs Observation) {
	h.t.Helper()
	st, spec := &h.st, h.spec
	// The best: a kept round's, improved, and better than every best before.
	if obs.Kind == ObserveRebaseline || (prev.Best != nil && st.Best != nil && prev.Best.Round == st.Best.Round && prev.Best.Value != st.Best.Value) {
		h.rebaselined = true
	}
	if obs.Kind == ObserveRebaseline {
		h.kept = nil
	}
	if b := st.Best; b != nil && b.Round > 0 && !h.rebaselined {
		var rec *v1alpha1.RoundRecord
		for i := range h.reported {
			if r := &h.reported[i]; r.Round == b.Round && r.Verdict == v1alpha1.VerdictImproved {
				rec = r
			}
		}
		switch {
		case rec == nil:
			h.fatalf("the best names round %d, which has no improved record", b.Round)
		case rec.Value != b.Value || (rec.Commit != b.Commit && !strings.HasPrefix(b.Commit, "1ed9e5")):
			h.fatalf("the best %s at %.10s names round %d, whose improved record says %s at %.10s", b.Value, b.Commit, b.Round, rec.Value, rec.Commit)
		}
	}
	if b := st.Best; b != nil && b.Round > 0 && (prev.Best == nil || prev.Best.Round != b.Round) && obs.Kind != ObserveRebaseline {
		if !h.commits[b.Commit] {
			h.fatalf("the best names commit %.10s, which no Commit made", b.Commit)
		}
		if prev.Best != nil && !beats(spec, b.Value, prev.Best.Value) {
			h.fatalf("the new best %s (R%d) is not better than the best before it, %s (R%d)", b.Value, b.Round, prev.Best.Value, prev.Best.Round)
		}
		for _, k := range h.kept {
			if !beats(spec, b.Value, k) {
				h.fatalf("the new best %s (R%d) is not better than %s kept before under the same measure", b.Value, b.Round, k)
			}
		}
		h.kept = append(h.kept, b.Value)
	}
}

// checkHoldoutHidden checks that the holdout reaches no Researcher.
func (h *harness) checkHoldoutHidden(acts []Action) {
	h.t.Helper()
	st := &h.st
	// What the hidden holdout printed reaches no Researcher.
	var readable []string
	for _, a := range acts {
		if a.Prompt != nil {
			readable = append(readable, marshalString(a.Prompt))
		}
		if a.Ledger != nil {
			readable = append(readable, marshalString(a.Ledger))
		}
		if a.Record != nil {
			readable = append(readable, marshalString(a.Record))
		}
	}
	readable = append(readable, marshalString(st.History), st.Message, marshalString(st.CurrentRound), marshalString(st.NextRound))
	for _, text := range readable {
		for _, v := range h.holdoutValues {
			if v != "NaN" && strings.Contains(text, v) {
				h.fatalf("the holdout's value %s reached what a Researcher reads: %.300s", v, text)
			}
		}
	}
	if all := marshalString(st) + marshalString(acts); strings.Contains(all, holdoutTail) {
		h.fatalf("the holdout's output reached the status or the actions")
	}
}

// checkUsage checks usage, bounds and the phase of a round in progress.
func (h *harness) checkUsage(prev v1alpha1.AutoResearchStatus) {
	h.t.Helper()
	st := &h.st
	// What Researchers report never takes back what was used.
	if st.Usage.InputTokens < prev.Usage.InputTokens || st.Usage.OutputTokens < prev.Usage.OutputTokens ||
		st.Usage.GPUSeconds < prev.Usage.GPUSeconds || st.Usage.ResearcherSeconds < prev.Usage.ResearcherSeconds {
		h.fatalf("usage went down: %+v, was %+v", st.Usage, prev.Usage)
	}
	if st.Usage.Cost != prev.Usage.Cost {
		c, err := metric.ParseDecimal(st.Usage.Cost)
		was := decimalOrZero(prev.Usage.Cost)
		if err != nil || math.IsNaN(c) || math.IsInf(c, 0) || c < was {
			h.fatalf("usage cost %q, was %q", st.Usage.Cost, prev.Usage.Cost)
		}
	}
	if h := st.Holdout; h != nil && len(h.Readings) > maxHoldoutReadings {
		panic("holdout readings exceed their bound")
	}
	if cr := st.CurrentRound; cr != nil {
		want := v1alpha1.PhaseRunning
		if cr.Number == 0 {
			want = v1alpha1.PhaseBaseline
		}
		if st.Phase != want && st.Phase != v1alpha1.PhaseSuspended && st.Phase != v1alpha1.PhaseFailed {
			h.fatalf("round %d in progress in phase %s", cr.Number, st.Phase)
		}
	}
	if len(st.Message) > maxMessageLength {
		h.fatalf("the message has %d bytes", len(st.Message))
	}
}

// checkWaiting checks that a reason to wait changes nothing else.
func (h *harness) checkWaiting(prev v1alpha1.AutoResearchStatus, obs Observation, acts []Action) {
	h.t.Helper()
	st, spec := &h.st, h.spec
	// Waiting is shown, never judged.
	if obs.Kind == ObserveTick && obs.Waiting != "" {
		plain := Next(Input{Spec: spec, Status: prev, Generation: 1, Observation: Observation{Kind: ObserveTick}, Now: h.now.Add(-time.Minute)})
		a, b := st.DeepCopy(), plain.Status.DeepCopy()
		for _, x := range []*v1alpha1.AutoResearchStatus{a, b} {
			x.Message, x.Conditions = "", nil
			if x.CurrentRound != nil {
				x.CurrentRound.Waiting = ""
			}
		}
		if !equality.Semantic.DeepEqual(a, b) || !cmp.Equal(acts, plain.Actions) {
			h.fatalf("a tick that says why a step waits changed more than what is shown: %s", cmp.Diff(b, a))
		}
	}
}

// checkLiveness checks that the loop never gets stuck.
func (h *harness) checkLiveness(current []Action) {
	h.t.Helper()
	st, spec := &h.st, h.spec
	// Liveness: with nothing to wait for, a tick moves on.
	if len(current) == 0 && !h.terminal() && !ptr.Deref(spec.Suspend, false) {
		out := Next(Input{Spec: spec, Status: *st.DeepCopy(), Generation: 1, Observation: Observation{Kind: ObserveTick}, Now: h.now})
		ended := out.Status.Phase == v1alpha1.PhaseFailed || (out.Status.Phase == v1alpha1.PhaseSucceeded && out.Status.LedgerCommit != "")
		if len(CurrentActions(spec, &out.Status)) == 0 && !ended {
			h.fatalf("stuck: phase %s (%q), nothing to wait for, and a tick starts nothing", st.Phase, st.Message)
		}
	}
	if ptr.Deref(spec.Suspend, false) && len(current) == 0 && !h.terminal() &&
		st.Phase != v1alpha1.PhaseSuspended && st.Phase != "" && st.Phase != v1alpha1.PhaseSucceeded {
		h.fatalf("suspended with nothing running, yet phase %s", st.Phase)
	}
}

func specSummary(s *v1alpha1.AutoResearchSpec) string {
	return fmt.Sprintf("maxRounds=%d candidates=%d pipeline=%v combine=%v direction=%s baseline=%+v acceptance=%+v target=%q budget=%s plateau=%+v holdout=%v historyLimit=%d suspend=%v constraints=%d",
		s.MaxRounds, s.Candidates, ptr.Deref(s.Pipeline, false), ptr.Deref(s.Combine, false), s.Eval.Direction, ptr.Deref(s.Baseline, v1alpha1.BaselineSpec{}),
		s.Acceptance, s.Target, marshalString(s.Budget), ptr.Deref(s.Plateau, v1alpha1.PlateauSpec{}), s.Holdout != nil, s.HistoryLimit, ptr.Deref(s.Suspend, false), len(s.Eval.Constraints))
}

func marshalString(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// beats reports whether a is better than b in the spec's direction.
func beats(spec *v1alpha1.AutoResearchSpec, a, b string) bool {
	x, errA := metric.ParseDecimal(a)
	y, errB := metric.ParseDecimal(b)
	if errA != nil || errB != nil || math.IsNaN(x) || math.IsNaN(y) {
		return false
	}
	if spec.Eval.Direction == v1alpha1.DirectionMaximize {
		return x > y
	}
	return x < y
}
