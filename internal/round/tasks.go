package round

import (
	"fmt"
	"strings"
)

// roundTasks is the seed's S1–S6 task list for a new round, before results.
func (e *engine) roundTasks(n int32) []string {
	s := e.spec
	variable := strings.Join(s.Variable.Files, ", ")
	compliance := fmt.Sprintf("check %s only", variable)
	if k := len(s.KernelTargets); k > 0 {
		compliance = fmt.Sprintf("files + parity (%d kernels)", k)
	}
	best := "none"
	if e.st.Best != nil {
		best = e.st.Best.Value
	}
	return []string{
		fmt.Sprintf("R%d S1: Researcher — improve %s on %s", n, s.Eval.Metric, variable),
		fmt.Sprintf("R%d S2: Compliance — %s", n, compliance),
		fmt.Sprintf("R%d S3: Train — %s (limit: %s)", n, s.Train.Command, s.Fixed.TimeLimit.Duration),
		fmt.Sprintf("R%d S4: Eval — %s (current best: %s)", n, s.Eval.Command, best),
		fmt.Sprintf("R%d S5: Git — awaiting result", n),
		fmt.Sprintf("R%d S6: Termination — %d/%d", n, n, s.MaxRounds),
	}
}

// baselineTasks is the task list of round 0, which measures the unmodified code.
func (e *engine) baselineTasks() []string {
	s := e.spec
	return []string{
		"R0 S1: Researcher — skipped: the baseline measures the unmodified code",
		"R0 S2: Compliance — skipped: nothing changed",
		fmt.Sprintf("R0 S3: Train — %s (limit: %s, %d run(s))", s.Train.Command, s.Fixed.TimeLimit.Duration, e.baselineRuns()),
		fmt.Sprintf("R0 S4: Eval — %s", s.Eval.Command),
		"R0 S5: Git — nothing to commit",
		fmt.Sprintf("R0 S6: Termination — 0/%d", s.MaxRounds),
	}
}
