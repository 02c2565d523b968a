package round

import (
	"cmp"
	"fmt"
	"math"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// The results of a round's steps, each moving the candidate to its next
// step or to a verdict.

func (e *engine) researcherFinished(r ResearcherResult) {
	c := e.candidate()
	c.Durations.Researcher = duration(r.Exit.Duration)
	c.Strategy = r.Strategy
	c.Usage = r.Usage
	e.addUsage(r.Usage)
	e.st.Usage.ResearcherSeconds += int64(r.Exit.Duration.Round(time.Second) / time.Second)
	strategy := cmp.Or(r.Strategy, "(no strategy recorded)")
	switch {
	case r.Exit.TimedOut:
		e.setTask(v1alpha1.StepResearcher, "timeout after %s", r.Exit.Duration.Round(time.Second))
		e.decide(v1alpha1.VerdictResearcherFailed, fmt.Sprintf("timeout after %s — the Researcher did not report \"Code ready\" in time; no code was evaluated", r.Exit.Duration.Round(time.Second)))
	case r.Exit.ExitCode != 0:
		e.setTask(v1alpha1.StepResearcher, "crashed (exit code %d)", r.Exit.ExitCode)
		e.decide(v1alpha1.VerdictResearcherFailed, "crash: the Researcher exited with code "+fmt.Sprint(r.Exit.ExitCode)+tail(r.Exit.Tail))
	default:
		e.setTask(v1alpha1.StepResearcher, "%s", strategy)
		e.advance(v1alpha1.StepCompliance)
	}
}

func (e *engine) complianceChecked(r ComplianceResult) {
	c := e.candidate()
	c.Commit = r.Candidate
	if c.Strategy == "" && r.Strategy != "" {
		c.Strategy = r.Strategy
		e.setTask(v1alpha1.StepResearcher, "%s", r.Strategy)
	}
	switch {
	case r.Conflict != "" && len(c.Combines) > 0:
		e.setTask(v1alpha1.StepCompliance, "conflict in %s", r.Conflict)
		e.decide(v1alpha1.VerdictConflict, fmt.Sprintf("the changes of %s conflict in %s, so they were not trained together",
			combinedLabels(e.st.CurrentRound, c), r.Conflict))
	case r.Conflict != "":
		e.setTask(v1alpha1.StepCompliance, "stale: conflicts with the new best in %s", r.Conflict)
		e.decide(v1alpha1.VerdictStale, fmt.Sprintf("the change was made on the best code before R%d's, which changed %s too: carried onto the new best, it conflicts there, so it was not trained",
			e.st.Best.Round, r.Conflict))
	case r.Violation != "":
		c.Compliance, c.ComplianceMessage = v1alpha1.ComplianceFilesViolated, r.Violation
		e.setTask(v1alpha1.StepCompliance, "%s", ComplianceCell(c.Compliance, c.ComplianceMessage))
		e.decide(v1alpha1.VerdictComplianceFailed, joinInsight(r.Violation, r.Advisory))
	case r.Parity != "":
		c.Compliance, c.ComplianceMessage = v1alpha1.ComplianceParityFailed, r.Parity
		e.setTask(v1alpha1.StepCompliance, "%s", ComplianceCell(c.Compliance, c.ComplianceMessage))
		e.decide(v1alpha1.VerdictParityFailed, joinInsight(r.Parity, r.Advisory))
	case r.NoChange:
		c.Compliance = v1alpha1.CompliancePassed
		e.setTask(v1alpha1.StepCompliance, "%s, but nothing changed", ComplianceCell(c.Compliance, ""))
		e.decide(v1alpha1.VerdictNoChange, joinInsight("the Researcher changed no file, so there was nothing to train or evaluate", r.Advisory))
	default:
		c.Compliance = v1alpha1.CompliancePassed
		c.Insight = r.Advisory
		e.setTask(v1alpha1.StepCompliance, "%s", ComplianceCell(c.Compliance, ""))
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
		e.setTask(v1alpha1.StepTrain, "%s", verdict)
		if cr.Number == 0 {
			e.baselineFailed("failed to train", insight)
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
		e.setTask(v1alpha1.StepTrain, "baseline run %d/%d %s", sample(&e.st, cr, e.candidate()), e.baselineRuns(), done)
	} else {
		e.setTask(v1alpha1.StepTrain, "%s", done)
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
		c.Compliance, c.ComplianceMessage = v1alpha1.ComplianceFilesViolated, insight
		e.setTask(v1alpha1.StepEval, "not run: %s", insight)
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
		e.setTask(v1alpha1.StepEval, "no %s", metricName)
		if cr.Number == 0 {
			e.baselineFailed("could not be evaluated", insight)
			return
		}
		e.decide(v1alpha1.VerdictEvalFailed, insight)
		return
	}
	c.Value = r.Value
	if cr.Number == 0 {
		e.baselineSample(r.Value)
		return
	}
	c.Readings = readingsText(e.spec.Eval.Constraints, r.Readings)
	if memory, ok := r.Readings["memory_gb"]; ok {
		c.MemoryGB = memory
	}
	if broken := brokenConstraint(e.spec.Eval.Constraints, r.Readings); broken != "" {
		e.setTask(v1alpha1.StepEval, "%s=%s, %s", metricName, r.Value, broken)
		e.decide(v1alpha1.VerdictConstraintFailed, broken)
		return
	}
	best, _ := metric.ParseDecimal(e.st.Best.Value)
	verdict, insight := e.judge(value, best, 0)
	if runs := 1 + ptr.Deref(e.spec.Acceptance.ConfirmRuns, 0); runs > 1 && (verdict == v1alpha1.VerdictImproved || len(c.Values) > 0) {
		c.Values = append(c.Values, r.Value)
		if n := int32(len(c.Values)); n < runs {
			e.setTask(v1alpha1.StepEval, "run %d/%d: %s=%s; confirming the improvement", n, runs, metricName, r.Value)
			e.advance(v1alpha1.StepTrain)
			return
		}
		c.Value = e.confirmedValue(c.Values)
		verdict, insight = e.judgeCandidate(c)
	}
	mark := "—"
	if verdict == v1alpha1.VerdictImproved {
		mark = "↑"
	}
	e.setTask(v1alpha1.StepEval, "%s=%s (best: %s %s)", metricName, c.Value, e.st.Best.Value, mark)
	if verdict == v1alpha1.VerdictImproved && e.spec.Holdout != nil {
		// An improvement stands only once the hidden holdout agrees.
		e.advance(v1alpha1.StepHoldout)
		return
	}
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

// decide fixes the candidate's verdict and moves on to the git step. An
// advisory the compliance step left in the Insight stays after the verdict's.
func (e *engine) decide(v v1alpha1.Verdict, insight string) {
	c := e.candidate()
	c.Verdict = v
	c.Insight = joinInsight(insight, c.Insight)
	if len(e.st.CurrentRound.Candidates) == 1 {
		e.setTask(v1alpha1.StepGit, "awaiting result (%s)", v)
	}
	e.advance(v1alpha1.StepGit)
}

// gitDone closes the round once its commit or rollback is made: the ledger
// rows were written by that step, from the action CurrentActions built.
// Every candidate gets its record; the round counts as one improvement, or
// one round without.
func (e *engine) gitDone(commit string) {
	cr := e.st.CurrentRound
	w := Winner(cr)
	if w != nil {
		e.st.Best = &v1alpha1.BestResult{Round: cr.Number, Value: w.Value, Commit: commit}
		e.st.ConsecutiveNonImprovements = 0
		e.setTask(v1alpha1.StepGit, "committed %s", text.ShortCommit(commit))
	} else {
		e.st.ConsecutiveNonImprovements++
		e.setTask(v1alpha1.StepGit, "rolled back")
	}
	e.st.CompletedRounds = cr.Number
	lead := cmp.Or(w, &cr.Candidates[0])
	e.st.LastVerdict = lead.Verdict
	if reason := e.terminationReason(); reason != "" {
		e.setTask(v1alpha1.StepTermination, "done: %s", reason)
	} else {
		e.setTask(v1alpha1.StepTermination, "continue")
	}
	for i := range cr.Candidates {
		c := &cr.Candidates[i]
		rec := roundRecord(cr, c)
		if c == w {
			rec.Commit = commit
		}
		e.recordRound(rec, true)
	}
	e.st.Message = fmt.Sprintf("R%d: %s=%s — %s", cr.Number, e.spec.Eval.Metric, cmp.Or(lead.Value, "—"), lead.Verdict)
	e.plateauWarning()
	e.st.CurrentRound = nil
	e.nextRound()
}

// brokenConstraint says which of constraints the readings break, "" when
// none: a reading above its max or below its min, or one the evaluation
// did not print.
func brokenConstraint(constraints []v1alpha1.EvalConstraint, readings map[string]string) string {
	for _, c := range constraints {
		raw, ok := readings[c.Metric]
		if !ok {
			return fmt.Sprintf("the evaluation printed no %s, which spec.eval.constraints limits", c.Metric)
		}
		v, err := metric.ParseDecimal(raw)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Sprintf("the evaluation's %s=%s is not a number, and spec.eval.constraints limits it", c.Metric, raw)
		}
		if c.Max != "" && v > decimalOrZero(string(c.Max)) {
			return fmt.Sprintf("%s=%s is above its limit of %s (spec.eval.constraints), whatever the metric", c.Metric, raw, c.Max)
		}
		if c.Min != "" && v < decimalOrZero(string(c.Min)) {
			return fmt.Sprintf("%s=%s is below its limit of %s (spec.eval.constraints), whatever the metric", c.Metric, raw, c.Min)
		}
	}
	return ""
}

// readingsText is the readings constraints limit, as "name=value, …" in
// the constraints' order.
func readingsText(constraints []v1alpha1.EvalConstraint, readings map[string]string) string {
	var parts []string
	for _, c := range constraints {
		if v, ok := readings[c.Metric]; ok {
			parts = append(parts, c.Metric+"="+v)
		}
	}
	return text.Truncate(strings.Join(parts, ", "), 1024)
}
