package round

import (
	"fmt"
	"slices"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// taskSteps are the steps of the seed's S1–S6 task list, in its order.
var taskSteps = []v1alpha1.Step{
	v1alpha1.StepResearcher, v1alpha1.StepCompliance, v1alpha1.StepTrain,
	v1alpha1.StepEval, v1alpha1.StepGit, v1alpha1.StepTermination,
}

// TaskIndex is the position of step's line in a round's task list, -1 for
// a step that has none.
func TaskIndex(step v1alpha1.Step) int { return slices.Index(taskSteps, step) }

// Task is step's line of a task list, "" when the list has none.
func Task(tasks []string, step v1alpha1.Step) string {
	if i := TaskIndex(step); i >= 0 && i < len(tasks) {
		return tasks[i]
	}
	return ""
}

// setTask sets the current round's line for step: "R3 S4: Eval — " and
// the formatted outcome.
// In a round of several candidates, a candidate's step names it: "R3 S4:
// Eval — 3b: …".
func (e *engine) setTask(step v1alpha1.Step, format string, args ...any) {
	cr := e.st.CurrentRound
	i := TaskIndex(step)
	if i < 0 || i >= len(cr.Tasks) {
		return
	}
	line := taskPrefix(cr.Number, step)
	if len(cr.Candidates) > 1 && step != v1alpha1.StepGit && step != v1alpha1.StepTermination {
		line += CandidateLabel(cr.Number, CandidateName(e.cand)) + ": "
	}
	cr.Tasks[i] = line + fmt.Sprintf(format, args...)
}

// taskPrefix is "R3 S4: Eval — ".
func taskPrefix(n int32, step v1alpha1.Step) string {
	return fmt.Sprintf("R%d S%d: %s — ", n, TaskIndex(step)+1, step)
}

// roundTasks is the seed's S1–S6 task list for a new round, before results.
func (e *engine) roundTasks(n int32) []string {
	s := e.spec
	variable := strings.Join(v1alpha1.Strings(s.Variable.Files), ", ")
	compliance := fmt.Sprintf("check %s only", variable)
	if k := len(s.KernelTargets); k > 0 {
		compliance = fmt.Sprintf("files + parity (%d kernels)", k)
	}
	best := "none"
	if e.st.Best != nil {
		best = e.st.Best.Value
	}
	return tasks(n,
		fmt.Sprintf("improve %s on %s", s.Eval.Metric, variable),
		compliance,
		fmt.Sprintf("%s (limit: %s)", s.Train.Command, s.Fixed.TimeLimit.Duration),
		fmt.Sprintf("%s (current best: %s)", s.Eval.Command, best),
		"awaiting result",
		fmt.Sprintf("%d/%d", n, s.MaxRounds),
	)
}

// baselineTasks is the task list of round 0, which measures the unmodified
// code, or the best code when again is set.
func (e *engine) baselineTasks(again bool) []string {
	s := e.spec
	what := "skipped: the baseline measures the unmodified code"
	if again {
		what = "skipped: the baseline is measured again on the best code"
	}
	runs := fmt.Sprintf("%d run(s)", e.baselineRuns())
	if e.givenBaseline() != "" {
		runs = "1 preflight run; the baseline is given"
	}
	return tasks(0,
		what,
		"skipped: nothing changed",
		fmt.Sprintf("%s (limit: %s, %s)", s.Train.Command, s.Fixed.TimeLimit.Duration, runs),
		s.Eval.Command,
		"nothing to commit",
		fmt.Sprintf("0/%d", s.MaxRounds),
	)
}

// tasks prefixes the outcome of each step in taskSteps' order.
func tasks(n int32, outcomes ...string) []string {
	out := make([]string, len(outcomes))
	for i, o := range outcomes {
		out[i] = taskPrefix(n, taskSteps[i]) + o
	}
	return out
}
