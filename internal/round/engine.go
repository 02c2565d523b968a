package round

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
)

// Default values for optional protocol fields.
const (
	DefaultPlateauRounds = 5
	DefaultHistoryLimit  = 20
	DefaultNoiseFactor   = 2.0
)

// maxMessageLength is the API's limit on status.message.
const maxMessageLength = 2048

// Input is everything Next decides from.
type Input struct {
	Spec        *v1alpha1.AutoResearchSpec
	Status      v1alpha1.AutoResearchStatus
	Generation  int64
	Observation Observation
	Now         time.Time
}

// Output is the new status and the actions to perform, in order.
type Output struct {
	Status  v1alpha1.AutoResearchStatus
	Actions []Action
}

// Next advances the loop by one observation. It is pure: the same input
// always gives the same output.
func Next(in Input) Output {
	e := &engine{
		spec: in.Spec,
		st:   *in.Status.DeepCopy(),
		now:  metav1.NewTime(in.Now),
	}
	e.handle(in.Observation)
	e.st.ObservedGeneration = in.Generation
	e.refreshConditions(in.Generation)
	return Output{Status: e.st, Actions: e.actions}
}

type engine struct {
	spec    *v1alpha1.AutoResearchSpec
	st      v1alpha1.AutoResearchStatus
	now     metav1.Time
	actions []Action
}

func (e *engine) emit(a Action) { e.actions = append(e.actions, a) }

func (e *engine) handle(obs Observation) {
	switch obs.Kind {
	case ObserveTick:
		e.tick(false)
	case ObserveResumed:
		e.tick(true)
	case ObserveWorkspaceReady:
		if e.st.Phase == v1alpha1.PhaseInitializing && obs.Workspace != nil {
			e.workspaceReady(*obs.Workspace)
		}
	case ObserveWorkspaceFailed:
		if e.st.Phase == v1alpha1.PhaseInitializing {
			e.fail(v1alpha1.ReasonWorkspaceFailed, "preparing the workspace failed: "+obs.Error)
		}
	case ObserveResearcherFinished:
		if e.expect(obs, v1alpha1.StepResearcher) && obs.Researcher != nil {
			e.researcherFinished(*obs.Researcher)
		}
	case ObserveComplianceChecked:
		if e.expect(obs, v1alpha1.StepCompliance) && obs.Compliance != nil {
			e.complianceChecked(*obs.Compliance)
		}
	case ObserveTrainFinished:
		if e.expect(obs, v1alpha1.StepTrain) && obs.Train != nil {
			e.trainFinished(*obs.Train)
		}
	case ObserveEvalFinished:
		if e.expect(obs, v1alpha1.StepEval) && obs.Eval != nil {
			e.evalFinished(*obs.Eval)
		}
	case ObserveCommitted, ObserveRolledBack:
		// A commit answers only an improved round, a rollback only the others.
		if e.expect(obs, v1alpha1.StepGit) && (obs.Kind == ObserveCommitted) == (e.candidate().Verdict == v1alpha1.VerdictImproved) {
			e.gitDone(obs.Commit)
		}
	}
}

// expect reports whether obs answers the step that is running now; results
// of steps that are no longer current are stale and ignored.
func (e *engine) expect(obs Observation, step v1alpha1.Step) bool {
	cr := e.st.CurrentRound
	return cr != nil && cr.Number == obs.Round && cr.Step == step &&
		cr.StepState == v1alpha1.StepRunning && len(cr.Candidates) > int(obs.Candidate)
}

func (e *engine) tick(resumed bool) {
	switch e.st.Phase {
	case v1alpha1.PhaseFailed:
		return
	case v1alpha1.PhaseSucceeded:
		if e.terminationReason() == "" {
			e.st.Message = fmt.Sprintf("continuing: maxRounds is now %d", e.spec.MaxRounds)
			e.nextRound()
		}
		return
	}
	if e.st.Workspace == nil {
		// Like any running step, a preparation already under way finishes;
		// after an interruption nothing of it is left to finish.
		if e.spec.Suspend && (resumed || e.st.Phase != v1alpha1.PhaseInitializing) {
			e.st.Phase = v1alpha1.PhaseSuspended
			e.st.Message = "suspended before the workspace was prepared"
			return
		}
		e.st.Phase = v1alpha1.PhaseInitializing
		e.st.Message = "preparing the workspace"
		e.emit(Action{Type: ActionPrepareWorkspace})
		return
	}
	cr := e.st.CurrentRound
	if cr == nil {
		e.nextRound()
		return
	}
	if resumed && cr.StepState == v1alpha1.StepRunning {
		e.restartInterrupted(cr)
	}
	if cr.StepState == v1alpha1.StepPending {
		e.startStep()
		return
	}
	e.emitStep()
}

// restartInterrupted applies the seed's interruption recovery: a round
// without a verdict is rolled back and restarted; a baseline run is
// repeated; a git step with a verdict is redone.
func (e *engine) restartInterrupted(cr *v1alpha1.RoundStatus) {
	if cr.Step == v1alpha1.StepGit {
		cr.StepState = v1alpha1.StepPending
		return
	}
	if cr.Number == 0 {
		cr.Step = v1alpha1.StepTrain
		cr.StepState = v1alpha1.StepPending
		return
	}
	e.st.Message = fmt.Sprintf("round %d was interrupted before its verdict; rolled back and restarted", cr.Number)
	e.emit(Action{Type: ActionWarn, Round: cr.Number, Reason: v1alpha1.ReasonRoundRestarted, Message: e.st.Message})
	cr.Step = v1alpha1.StepResearcher
	cr.StepState = v1alpha1.StepPending
	cr.Candidates = []v1alpha1.CandidateStatus{{Index: 0}}
	cr.Tasks = e.roundTasks(cr.Number)
}

func (e *engine) activePhase() v1alpha1.Phase {
	if e.st.CurrentRound != nil && e.st.CurrentRound.Number == 0 {
		return v1alpha1.PhaseBaseline
	}
	return v1alpha1.PhaseRunning
}

// startStep starts the current round's pending step unless the loop is
// suspended, in which case it stays pending.
func (e *engine) startStep() {
	cr := e.st.CurrentRound
	if e.spec.Suspend {
		e.st.Phase = v1alpha1.PhaseSuspended
		e.st.Message = fmt.Sprintf("suspended before R%d %s", cr.Number, cr.Step)
		return
	}
	if e.st.Phase == v1alpha1.PhaseSuspended {
		e.st.Message = fmt.Sprintf("resumed at R%d %s", cr.Number, cr.Step)
	}
	e.st.Phase = e.activePhase()
	cr.StepState = v1alpha1.StepRunning
	cr.StepStartTime = e.now.DeepCopy()
	e.emitStep()
}

func (e *engine) advance(step v1alpha1.Step) {
	cr := e.st.CurrentRound
	cr.Step = step
	cr.StepState = v1alpha1.StepPending
	e.startStep()
}

func (e *engine) emitStep() {
	cr := e.st.CurrentRound
	a := Action{Round: cr.Number, BaseCommit: cr.BaseCommit}
	switch cr.Step {
	case v1alpha1.StepResearcher:
		a.Type = ActionRunResearcher
		a.Guidance = append([]string(nil), e.spec.Guidance...)
	case v1alpha1.StepCompliance:
		a.Type = ActionCheckCompliance
	case v1alpha1.StepTrain:
		a.Type = ActionRunTrain
		a.Sample = e.sample()
	case v1alpha1.StepEval:
		a.Type = ActionRunEval
		a.Sample = e.sample()
	case v1alpha1.StepGit:
		c := e.candidate()
		if c.Verdict == v1alpha1.VerdictImproved {
			a.Type = ActionCommit
			a.Message = fmt.Sprintf("autoresearch: round %d — %s=%s (improved)", cr.Number, e.spec.Eval.Metric, c.Value)
		} else {
			a.Type = ActionRollback
		}
	default:
		return
	}
	e.emit(a)
}

// sample is the number of the baseline run in progress, from 1.
func (e *engine) sample() int32 {
	if e.st.CurrentRound.Number != 0 || e.st.Baseline == nil {
		return 0
	}
	return int32(len(e.st.Baseline.Values)) + 1
}

func (e *engine) candidate() *v1alpha1.CandidateStatus {
	return &e.st.CurrentRound.Candidates[0]
}

func (e *engine) workspaceReady(w WorkspaceResult) {
	e.st.Workspace = &v1alpha1.WorkspaceStatus{
		Path:            w.Path,
		Branch:          w.Branch,
		StartCommit:     w.StartCommit,
		FixedFileHashes: w.FixedHashes,
	}
	if b := e.spec.Baseline; b != nil && b.Value != "" {
		e.st.Baseline = &v1alpha1.BaselineResult{Value: b.Value}
		e.st.Best = &v1alpha1.BestResult{Round: 0, Value: b.Value, Commit: w.StartCommit}
		e.recordRound(v1alpha1.RoundRecord{
			Round: 0, Strategy: "baseline", Compliance: "✅", Value: b.Value,
			Verdict: v1alpha1.VerdictBaseline, Insight: "baseline given in the protocol",
			Commit: w.StartCommit, CompletionTime: e.now.DeepCopy(),
		}, false)
		e.baselineMessage()
		e.nextRound()
		return
	}
	e.st.Baseline = &v1alpha1.BaselineResult{}
	e.st.Round = 0
	e.st.CurrentRound = &v1alpha1.RoundStatus{
		Number:     0,
		Step:       v1alpha1.StepTrain,
		StepState:  v1alpha1.StepPending,
		BaseCommit: w.StartCommit,
		StartTime:  e.now.DeepCopy(),
		Tasks:      e.baselineTasks(),
		Candidates: []v1alpha1.CandidateStatus{{Index: 0, Strategy: "baseline", Compliance: "✅"}},
	}
	e.st.Message = "measuring the baseline"
	e.startStep()
}

// nextRound starts the next round, or finishes when a termination rule holds.
func (e *engine) nextRound() {
	if reason := e.terminationReason(); reason != "" {
		e.finish(reason)
		return
	}
	n := e.st.CompletedRounds + 1
	base := e.st.Workspace.StartCommit
	if e.st.Best != nil && e.st.Best.Commit != "" {
		base = e.st.Best.Commit
	}
	seen := min(int(e.st.GuidanceSeen), len(e.spec.Guidance))
	e.st.GuidanceSeen = int32(len(e.spec.Guidance))
	e.st.Round = n
	e.st.CurrentRound = &v1alpha1.RoundStatus{
		Number:     n,
		Step:       v1alpha1.StepResearcher,
		StepState:  v1alpha1.StepPending,
		BaseCommit: base,
		StartTime:  e.now.DeepCopy(),
		Note:       strings.Join(e.spec.Guidance[seen:], "; "),
		Tasks:      e.roundTasks(n),
		Candidates: []v1alpha1.CandidateStatus{{Index: 0}},
	}
	e.startStep()
}

func (e *engine) researcherFinished(r ResearcherResult) {
	c := e.candidate()
	c.Durations.Researcher = duration(r.Exit.Duration)
	c.Strategy = r.Strategy
	c.Usage = r.Usage
	e.addUsage(r.Usage)
	e.st.Usage.ResearcherSeconds += int64(r.Exit.Duration.Round(time.Second) / time.Second)
	strategy := r.Strategy
	if strategy == "" {
		strategy = "(no strategy recorded)"
	}
	switch {
	case r.Exit.TimedOut:
		e.setTask(0, "S1: Researcher — timeout after %s", r.Exit.Duration.Round(time.Second))
		e.decide(v1alpha1.VerdictResearcherFailed, fmt.Sprintf("timeout after %s — the Researcher did not report \"Code ready\" in time; no code was evaluated", r.Exit.Duration.Round(time.Second)))
	case r.Exit.ExitCode != 0:
		e.setTask(0, "S1: Researcher — crashed (exit code %d)", r.Exit.ExitCode)
		e.decide(v1alpha1.VerdictResearcherFailed, "crash: the Researcher exited with code "+fmt.Sprint(r.Exit.ExitCode)+tail(r.Exit.Tail))
	default:
		e.setTask(0, "S1: Researcher — %s", strategy)
		e.advance(v1alpha1.StepCompliance)
	}
}

func (e *engine) complianceChecked(r ComplianceResult) {
	c := e.candidate()
	if c.Strategy == "" && r.Strategy != "" {
		c.Strategy = r.Strategy
		e.setTask(0, "S1: Researcher — %s", r.Strategy)
	}
	switch {
	case r.Violation != "":
		c.Compliance = "❌ files: " + r.Violation
		e.setTask(1, "S2: Compliance — %s", c.Compliance)
		e.decide(v1alpha1.VerdictComplianceFailed, joinInsight(r.Violation, r.Advisory))
	case r.Parity != "":
		c.Compliance = "❌ parity: " + r.Parity
		e.setTask(1, "S2: Compliance — %s", c.Compliance)
		e.decide(v1alpha1.VerdictParityFailed, joinInsight(r.Parity, r.Advisory))
	default:
		c.Compliance = "✅"
		c.Insight = r.Advisory
		e.setTask(1, "S2: Compliance — ✅")
		e.advance(v1alpha1.StepTrain)
	}
}

func (e *engine) trainFinished(r TrainResult) {
	cr, c := e.st.CurrentRound, e.candidate()
	c.Durations.Train = addDuration(c.Durations.Train, r.Exit.Duration)
	c.MemoryGB = r.MemoryGB
	e.addGPUTime(r.Exit.Duration)
	limit := e.spec.Fixed.TimeLimit.Duration
	var verdict v1alpha1.Verdict
	var insight string
	switch {
	case r.Exit.TimedOut:
		verdict = v1alpha1.VerdictTrainTimeout
		insight = fmt.Sprintf("training exceeded the time limit of %s and was stopped after %s", limit, r.Exit.Duration.Round(time.Second))
	case r.Exit.ExitCode != 0:
		verdict = v1alpha1.VerdictTrainFailed
		insight = fmt.Sprintf("crash: training exited with code %d%s", r.Exit.ExitCode, tail(r.Exit.Tail))
	case r.Divergence != "":
		verdict = v1alpha1.VerdictTrainFailed
		insight = "training diverged: " + r.Divergence
	}
	if verdict != "" {
		e.setTask(2, "S3: Train — %s", verdict)
		if cr.Number == 0 {
			e.fail(v1alpha1.ReasonBaselineFailed, "the unmodified code failed to train, so there is no baseline: "+insight)
			return
		}
		e.decide(verdict, insight)
		return
	}
	done := "done " + r.Exit.Duration.Round(100*time.Millisecond).String()
	if r.FinalLoss != "" {
		done += ", final loss=" + r.FinalLoss
	}
	if cr.Number == 0 {
		e.setTask(2, "S3: Train — baseline run %d/%d %s", e.sample(), e.baselineRuns(), done)
	} else {
		e.setTask(2, "S3: Train — %s", done)
	}
	e.advance(v1alpha1.StepEval)
}

func (e *engine) evalFinished(r EvalResult) {
	cr, c := e.st.CurrentRound, e.candidate()
	c.Durations.Eval = addDuration(c.Durations.Eval, r.Exit.Duration)
	e.addGPUTime(r.Exit.Duration)
	metricName := e.spec.Eval.Metric
	if len(r.FixedFilesChanged) > 0 {
		insight := "fixed files changed before evaluation: " + strings.Join(r.FixedFilesChanged, ", ")
		c.Compliance = "❌ files: " + insight
		e.setTask(3, "S4: Eval — not run: %s", insight)
		if cr.Number == 0 {
			e.fail(v1alpha1.ReasonBaselineFailed, insight)
			return
		}
		e.decide(v1alpha1.VerdictComplianceFailed, insight)
		return
	}
	value, err := metric.ParseDecimal(r.Value)
	if r.Exit.Failed() || !r.Found || err != nil || math.IsNaN(value) || math.IsInf(value, 0) {
		insight := e.evalFailure(r)
		e.setTask(3, "S4: Eval — no %s", metricName)
		if cr.Number == 0 {
			e.fail(v1alpha1.ReasonBaselineFailed, "the unmodified code could not be evaluated: "+insight)
			return
		}
		e.decide(v1alpha1.VerdictEvalFailed, insight)
		return
	}
	c.Value = r.Value
	if cr.Number == 0 {
		e.baselineSample(r.Value, value)
		return
	}
	best, _ := metric.ParseDecimal(e.st.Best.Value)
	verdict, insight := e.judge(value, best)
	mark := "—"
	if verdict == v1alpha1.VerdictImproved {
		mark = "↑"
	}
	e.setTask(3, "S4: Eval — %s=%s (best: %s %s)", metricName, r.Value, e.st.Best.Value, mark)
	e.decide(verdict, insight)
}

func (e *engine) evalFailure(r EvalResult) string {
	name := e.spec.Eval.Metric
	switch {
	case r.Exit.TimedOut:
		return fmt.Sprintf("evaluation timed out after %s; no %s (training-log metrics are never used)", r.Exit.Duration.Round(time.Second), name)
	case r.Exit.ExitCode != 0:
		return fmt.Sprintf("evaluation exited with code %d and printed no usable %s (training-log metrics are never used)%s", r.Exit.ExitCode, name, tail(r.Exit.Tail))
	case !r.Found:
		return fmt.Sprintf("evaluation printed no %s (training-log metrics are never used)%s", name, tail(r.Exit.Tail))
	default:
		return fmt.Sprintf("evaluation printed %s=%s, which is not a finite number (training-log metrics are never used)", name, r.Value)
	}
}

// judge compares a candidate with the best: improved only when it beats the
// best by more than max(minDelta, noiseFactor × baseline stddev).
func (e *engine) judge(value, best float64) (v1alpha1.Verdict, string) {
	name := e.spec.Eval.Metric
	better := value < best
	if e.spec.Eval.Direction == v1alpha1.Maximize {
		better = value > best
	}
	// Decimal inputs such as 1.0 and 0.98 must not differ by float residue.
	delta, _ := strconv.ParseFloat(strconv.FormatFloat(math.Abs(value-best), 'g', 12, 64), 64)
	margin := e.noiseMargin()
	bestText := fmt.Sprintf("%s (R%d)", e.st.Best.Value, e.st.Best.Round)
	switch {
	case better && delta > margin:
		return v1alpha1.VerdictImproved, fmt.Sprintf("%s improved from %s by %s", name, bestText, significant(delta))
	case better:
		return v1alpha1.VerdictWithinNoise, fmt.Sprintf("%s=%s beats the best %s by only %s, within the noise margin %s (max of minDelta and noiseFactor × baseline stddev); kept out as noise",
			name, metric.Format(value), bestText, significant(delta), significant(margin))
	default:
		return v1alpha1.VerdictNotImproved, fmt.Sprintf("%s=%s is no better than the best %s; the change did not help", name, metric.Format(value), bestText)
	}
}

func (e *engine) noiseMargin() float64 {
	minDelta := parseOr(e.spec.Acceptance.MinDelta, 0)
	factor := parseOr(e.spec.Acceptance.NoiseFactor, DefaultNoiseFactor)
	stddev := 0.0
	if e.st.Baseline != nil {
		stddev = parseOr(e.st.Baseline.Stddev, 0)
	}
	return math.Max(minDelta, factor*stddev)
}

func (e *engine) baselineSample(raw string, _ float64) {
	b := e.st.Baseline
	b.Values = append(b.Values, raw)
	e.setTask(3, "S4: Eval — baseline run %d/%d: %s=%s", len(b.Values), e.baselineRuns(), e.spec.Eval.Metric, raw)
	if int32(len(b.Values)) < e.baselineRuns() {
		e.advance(v1alpha1.StepTrain)
		return
	}
	mean, stddev := meanStddev(b.Values)
	b.Value = decimal(mean)
	b.Stddev = decimal(stddev)
	b.Samples = int32(len(b.Values))
	e.st.Best = &v1alpha1.BestResult{Round: 0, Value: b.Value, Commit: e.st.Workspace.StartCommit}
	insight := "unmodified code"
	if b.Samples > 1 {
		insight = fmt.Sprintf("unmodified code, %d runs: mean %s, stddev %s", b.Samples, b.Value, b.Stddev)
	}
	c := e.candidate()
	e.recordRound(v1alpha1.RoundRecord{
		Round: 0, Strategy: "baseline", Compliance: "✅", Value: b.Value,
		Verdict: v1alpha1.VerdictBaseline, Insight: insight, Commit: e.st.Workspace.StartCommit,
		Durations: c.Durations, CompletionTime: e.now.DeepCopy(),
	}, false)
	e.baselineMessage()
	e.st.CurrentRound = nil
	e.nextRound()
}

func (e *engine) baselineMessage() {
	e.st.Message = fmt.Sprintf("R0: %s=%s — %s", e.spec.Eval.Metric, e.st.Baseline.Value, v1alpha1.VerdictBaseline)
}

// decide fixes the candidate's verdict and moves on to the git step. An
// advisory the compliance step left in the Insight stays after the verdict's.
func (e *engine) decide(v v1alpha1.Verdict, insight string) {
	c := e.candidate()
	c.Verdict = v
	c.Insight = joinInsight(insight, c.Insight)
	e.setTask(4, "S5: Git — awaiting result (%s)", v)
	e.advance(v1alpha1.StepGit)
}

func (e *engine) gitDone(commit string) {
	cr, c := e.st.CurrentRound, e.candidate()
	rec := v1alpha1.RoundRecord{
		Round: cr.Number, Strategy: c.Strategy, Compliance: c.Compliance, Value: c.Value,
		Verdict: c.Verdict, Insight: c.Insight, Note: cr.Note,
		Durations: c.Durations, CompletionTime: e.now.DeepCopy(),
	}
	if c.Verdict == v1alpha1.VerdictImproved {
		rec.Commit = commit
		e.st.Best = &v1alpha1.BestResult{Round: cr.Number, Value: c.Value, Commit: commit}
		e.st.ConsecutiveNonImprovements = 0
		e.setTask(4, "S5: Git — committed %s", short(commit))
	} else {
		e.st.ConsecutiveNonImprovements++
		e.setTask(4, "S5: Git — rolled back")
	}
	e.st.CompletedRounds = cr.Number
	e.st.LastVerdict = c.Verdict
	reason := e.terminationReason()
	if reason != "" {
		e.setTask(5, "S6: Termination — done: %s", reason)
	} else {
		e.setTask(5, "S6: Termination — continue")
	}
	e.recordRound(rec, true)
	e.st.Message = fmt.Sprintf("R%d: %s=%s — %s", cr.Number, e.spec.Eval.Metric, orDash(c.Value), c.Verdict)
	e.plateauWarning()
	e.st.CurrentRound = nil
	e.nextRound()
}

// recordRound keeps the round in the bounded history, counts its verdict and
// asks the adapter to write the ledger row.
func (e *engine) recordRound(rec v1alpha1.RoundRecord, count bool) {
	limit := int(e.spec.HistoryLimit)
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	e.st.History = append(e.st.History, rec)
	if over := len(e.st.History) - limit; over > 0 {
		e.st.History = append([]v1alpha1.RoundRecord(nil), e.st.History[over:]...)
	}
	if count {
		if e.st.VerdictCounts == nil {
			e.st.VerdictCounts = map[v1alpha1.Verdict]int32{}
		}
		e.st.VerdictCounts[rec.Verdict]++
	}
	r := rec
	a := Action{Type: ActionRecord, Round: rec.Round, Record: &r}
	if cr := e.st.CurrentRound; cr != nil {
		a.Tasks = slices.Clone(cr.Tasks)
	}
	e.emit(a)
}

func (e *engine) plateauWarning() {
	n := e.plateauRounds()
	k := e.st.ConsecutiveNonImprovements
	if k == 0 || k%n != 0 {
		return
	}
	counts := map[v1alpha1.Verdict]int{}
	var order []v1alpha1.Verdict
	h := e.st.History
	for i := max(0, len(h)-int(k)); i < len(h); i++ {
		if counts[h[i].Verdict] == 0 {
			order = append(order, h[i].Verdict)
		}
		counts[h[i].Verdict]++
	}
	var parts []string
	for _, v := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[v], v))
	}
	first := e.st.CompletedRounds - k + 1
	e.emit(Action{
		Type:   ActionWarn,
		Round:  e.st.CompletedRounds,
		Reason: v1alpha1.ReasonPlateau,
		Message: fmt.Sprintf("plateau: no improvement in %d consecutive rounds (R%d–R%d: %s); the variable space may be exhausted or strategies may be repeating — the loop continues",
			k, first, e.st.CompletedRounds, strings.Join(parts, ", ")),
	})
}

func (e *engine) terminationReason() string {
	if e.targetReached() {
		return v1alpha1.ReasonTargetReached
	}
	if e.st.CompletedRounds >= e.spec.MaxRounds {
		return v1alpha1.ReasonMaxRoundsReached
	}
	return ""
}

func (e *engine) targetReached() bool {
	if e.spec.Target == nil || e.st.Best == nil || e.st.Best.Round == 0 {
		return false
	}
	target, err := metric.ParseDecimal(*e.spec.Target)
	if err != nil {
		return false
	}
	best, err := metric.ParseDecimal(e.st.Best.Value)
	if err != nil {
		return false
	}
	if e.spec.Eval.Direction == v1alpha1.Maximize {
		return best >= target
	}
	return best <= target
}

func (e *engine) finish(reason string) {
	e.st.Phase = v1alpha1.PhaseSucceeded
	e.st.CurrentRound = nil
	ledger := "completed"
	msg := fmt.Sprintf("done: %d/%d rounds", e.st.CompletedRounds, e.spec.MaxRounds)
	if reason == v1alpha1.ReasonTargetReached {
		ledger = "target_reached"
		msg = fmt.Sprintf("done: target %s reached in round %d", *e.spec.Target, e.st.Best.Round)
	}
	if e.st.Best != nil {
		msg += fmt.Sprintf("; best %s=%s (R%d)", e.spec.Eval.Metric, e.st.Best.Value, e.st.Best.Round)
	}
	e.st.Message = msg
	e.setCondition(v1alpha1.ConditionSucceeded, metav1.ConditionTrue, reason, msg)
	e.emit(Action{Type: ActionFinish, Round: e.st.CompletedRounds, Reason: reason, Message: msg, LedgerStatus: ledger})
}

func (e *engine) fail(reason, msg string) {
	e.st.Phase = v1alpha1.PhaseFailed
	// The message quotes process output; the API caps status.message.
	e.st.Message = truncate(msg, maxMessageLength)
	e.setCondition(v1alpha1.ConditionFailed, metav1.ConditionTrue, reason, msg)
}

func (e *engine) refreshConditions(gen int64) {
	phase := e.st.Phase
	ready := metav1.ConditionFalse
	readyReason, readyMsg := v1alpha1.ReasonInitializing, "the workspace is not ready yet"
	if e.st.Workspace != nil && phase != v1alpha1.PhaseFailed {
		ready, readyReason, readyMsg = metav1.ConditionTrue, "WorkspaceReady", "the workspace is ready"
	}
	if phase == v1alpha1.PhaseFailed {
		readyReason, readyMsg = string(v1alpha1.PhaseFailed), e.st.Message
	}
	e.setCondition(v1alpha1.ConditionReady, ready, readyReason, readyMsg)

	switch phase {
	case v1alpha1.PhaseInitializing, v1alpha1.PhaseBaseline, v1alpha1.PhaseRunning:
		msg := e.st.Message
		if cr := e.st.CurrentRound; cr != nil {
			msg = fmt.Sprintf("R%d %s", cr.Number, cr.Step)
		}
		e.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonRoundInProgress, msg)
	default:
		e.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionFalse, string(orPhase(phase)), e.st.Message)
	}

	if phase == v1alpha1.PhaseSuspended {
		e.setCondition(v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspendedByUser, e.st.Message)
	} else {
		e.setCondition(v1alpha1.ConditionSuspended, metav1.ConditionFalse, "NotSuspended", "spec.suspend is false")
	}
	if phase != v1alpha1.PhaseSucceeded {
		e.setCondition(v1alpha1.ConditionSucceeded, metav1.ConditionFalse, "NotFinished", "the loop has not finished")
	}
	if phase != v1alpha1.PhaseFailed {
		e.setCondition(v1alpha1.ConditionFailed, metav1.ConditionFalse, "NoFailure", "the loop has not failed")
	}
	if k := e.st.ConsecutiveNonImprovements; k >= e.plateauRounds() {
		e.setCondition(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonPlateau,
			fmt.Sprintf("no improvement in %d consecutive rounds; the loop continues", k))
	} else {
		e.setCondition(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonImproving, "improving or within the plateau window")
	}
	for i := range e.st.Conditions {
		e.st.Conditions[i].ObservedGeneration = gen
	}
}

func (e *engine) setCondition(t string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&e.st.Conditions, metav1.Condition{
		Type: t, Status: s, Reason: reason, Message: truncate(msg, 1024), LastTransitionTime: e.now,
	})
}

func (e *engine) addUsage(u v1alpha1.Usage) {
	e.st.Usage.InputTokens += u.InputTokens
	e.st.Usage.OutputTokens += u.OutputTokens
	if u.Cost != "" {
		e.st.Usage.Cost = decimal(parseOr(e.st.Usage.Cost, 0) + parseOr(u.Cost, 0))
	}
}

func (e *engine) addGPUTime(d time.Duration) {
	e.st.Usage.GPUSeconds += int64(e.spec.Train.GPUs) * int64(d.Round(time.Second)/time.Second)
}

func (e *engine) baselineRuns() int32 {
	if b := e.spec.Baseline; b != nil && b.Runs > 0 {
		return b.Runs
	}
	return 1
}

func (e *engine) plateauRounds() int32 {
	if e.spec.PlateauRounds > 0 {
		return e.spec.PlateauRounds
	}
	return DefaultPlateauRounds
}

func (e *engine) setTask(i int, format string, args ...any) {
	cr := e.st.CurrentRound
	if i < len(cr.Tasks) {
		cr.Tasks[i] = fmt.Sprintf("R%d ", cr.Number) + fmt.Sprintf(format, args...)
	}
}

func meanStddev(values []string) (float64, float64) {
	var sum float64
	xs := make([]float64, 0, len(values))
	for _, v := range values {
		x, _ := metric.ParseDecimal(v)
		xs = append(xs, x)
		sum += x
	}
	mean := sum / float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

// significant formats a difference of two metric values to six significant
// digits, dropping the floating-point residue of the subtraction.
func significant(v float64) string { return roundedTo(v, 6) }

// decimal formats a sum or mean of decimal strings to 15 significant digits,
// which every such string of up to 15 digits survives unchanged, so that
// 0.1 + 0.2 reads 0.3 rather than 0.30000000000000004.
func decimal(v float64) string { return roundedTo(v, 15) }

func roundedTo(v float64, digits int) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', digits, 64), 64)
	return metric.Format(r)
}

func parseOr(s string, def float64) float64 {
	if s == "" {
		return def
	}
	v, err := metric.ParseDecimal(s)
	if err != nil {
		return def
	}
	return v
}

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func addDuration(old *metav1.Duration, d time.Duration) *metav1.Duration {
	if old == nil {
		return duration(d)
	}
	return duration(old.Duration + d)
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	return ": " + truncate(strings.TrimSpace(lines[len(lines)-1]), 300)
}

func joinInsight(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func short(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func orPhase(p v1alpha1.Phase) v1alpha1.Phase {
	if p == "" {
		return v1alpha1.PhasePending
	}
	return p
}
