package runner

import (
	"fmt"

	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// reporter prints the loop's progress in the seed's words: the round's task
// list as its steps start and finish, a report after every round and the
// final report.
type reporter struct {
	w io.Writer
	// finished says the final report was printed by this run.
	finished bool
}

// printf writes to the user's terminal (or whatever Options.Out is). The
// loop must not stop for a progress line that could not be shown, and there
// is nowhere better to report that it was not: the error is dropped.
// printf writes a line of the runner's own, printable: the strategies and
// insights in it come from Researchers.
func (r *reporter) printf(format string, args ...any) {
	_, _ = io.WriteString(r.w, text.Printable(fmt.Sprintf(format, args...)))
}

func (r *reporter) start(l *Local) {
	s, st := l.spec, l.status
	baseline := "to be measured in round 0"
	if st.Baseline != nil && st.Baseline.Value != "" {
		baseline = st.Baseline.Value
	} else if s.Baseline != nil && s.Baseline.Value != "" {
		baseline = string(s.Baseline.Value)
	}
	next := st.CompletedRounds + 1
	if st.Workspace == nil {
		next = 0
	}
	round := fmt.Sprintf("Round %d/%d", next, s.MaxRounds)
	if next > s.MaxRounds {
		round = workspace.RoundsDone(int(st.CompletedRounds), int(s.MaxRounds)) + " rounds done"
	}
	r.printf("Starting autoresearch: %s %s. Baseline: %s = %s.\n", strings.TrimSpace(s.ResearchQuestion), round, s.Eval.Metric, baseline)
	r.printf("Worktree: %s (branch autoresearch/%s)\n", l.x.Worktree, l.x.Object.Name)
}

// progress prints what changed between two statuses, and the rounds that
// the actions report finished with their final task lines.
func (r *reporter) progress(l *Local, prev, cur v1alpha1.AutoResearchStatus, actions []round.Action) {
	if prev.Workspace == nil && cur.Workspace != nil {
		r.printf("Workspace ready at %s, starting from %s.\n", cur.Workspace.Path, text.ShortCommit(cur.Workspace.StartCommit))
	}
	for _, a := range actions {
		if a.Type != round.ActionReportRound {
			continue
		}
		if a.Round > 0 {
			r.printf("    %s\n    %s\n", round.Task(a.Tasks, v1alpha1.StepGit), round.Task(a.Tasks, v1alpha1.StepTermination))
		}
		r.roundReport(l, *a.Record, cur)
	}
	c := cur.CurrentRound
	if c == nil {
		return
	}
	p := prev.CurrentRound
	if p == nil || p.Number != c.Number {
		if c.Number == 0 {
			r.printf("\n── Round 0: baseline ──\n")
		} else {
			r.printf("\n── Round %d/%d ──\n", c.Number, l.spec.MaxRounds)
		}
		if c.Note != "" {
			r.printf("  Note: %s\n", c.Note)
		}
		p = &v1alpha1.RoundStatus{Tasks: make([]string, len(c.Tasks))}
	}
	current := round.TaskIndex(c.Step)
	for i, t := range c.Tasks {
		if i < len(p.Tasks) && p.Tasks[i] == t && (i != current || p.Step == c.Step) {
			continue
		}
		switch {
		case i == current && c.StepState == v1alpha1.StepStateRunning:
			r.printf("  ▸ %s\n", t)
		case i < current:
			r.printf("    %s\n", t)
		}
	}
}

// roundReport is the seed's Step 7.
func (r *reporter) roundReport(l *Local, rec v1alpha1.RoundRecord, cur v1alpha1.AutoResearchStatus) {
	m := l.spec.Eval.Metric
	r.printf("%s\n", round.Headline(m, l.spec.MaxRounds, rec))
	if rec.Round == 0 {
		// A given baseline's preflight, or a baseline measured again, says
		// what was measured.
		if rec.Insight != "unmodified code" {
			r.printf("  Insight: %s\n", rec.Insight)
		}
		return
	}
	if b := cur.Best; b != nil {
		r.printf("  Best so far: %s=%s (Round %d)\n", m, b.Value, b.Round)
	}
	if rec.Verdict != v1alpha1.VerdictImproved && rec.Insight != "" {
		r.printf("  Insight: %s\n", rec.Insight)
	}
}

func (r *reporter) warn(msg string) { r.printf("⚠ %s\n", msg) }

// stopped explains why the run returned without finishing.
func (r *reporter) stopped(l *Local, stopping bool) {
	st := l.status
	switch {
	case st.Phase == v1alpha1.PhaseFailed:
		r.printf("\nFailed: %s\n", st.Message)
	case stopping && st.Phase == v1alpha1.PhaseSuspended:
		r.printf("\nStopped after the current step (%s). Run the same command again to resume.\n", st.Message)
	case st.Phase == v1alpha1.PhaseSuspended:
		r.printf("\nSuspended (spec.suspend is true): %s. Set suspend to false and run again to continue.\n", st.Message)
	case st.Phase == v1alpha1.PhaseSucceeded && !r.finished:
		change := fmt.Sprintf("raise spec.maxRounds (now %d)", l.spec.MaxRounds)
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSucceeded); c != nil && c.Reason == v1alpha1.ReasonTargetReached {
			change = fmt.Sprintf("set a more ambitious spec.target (now %s) or remove it", l.spec.Target)
		}
		r.printf("\n%s is already finished (%s). To continue, %s in %s and run again; `autoresearch note` gives the next rounds guidance, and `autoresearch report` writes the report.\n",
			l.x.Object.Name, st.Message, change, l.x.File)
	}
}

// final is the seed's final report.
func (r *reporter) final(l *Local, a round.Action, ledger workspace.Ledger) {
	m, st := l.spec.Eval.Metric, l.status
	r.finished = true
	r.printf("\n# Autoresearch Complete\n\n## Result\n")
	if b := st.Best; b != nil {
		r.printf("- Best: %s = %s (Round %d)\n", m, b.Value, b.Round)
	}
	if b := st.Baseline; b != nil {
		r.printf("- Baseline: %s = %s\n", m, b.Value)
		if st.Best != nil {
			r.printf("- Improvement: %s\n", metric.Improvement(b.Value, st.Best.Value))
		}
	}
	r.printf("- Rounds: %s\n", workspace.RoundsDone(int(st.CompletedRounds), int(l.spec.MaxRounds)))
	r.printf("- Termination: %s\n", a.Reason)
	r.printf("- Verdicts: %s\n", verdictSummary(st.VerdictCounts))
	r.printf("- Ledger: %s, %s; best code on branch %s\n", l.ws.ExperiencesPath(), l.ws.ResultsPath(), l.ws.Branch)
	r.printf("\n## Key Insights\n")
	for _, row := range ledger.Rows {
		if row.Round == 0 || row.Insight == "" {
			continue
		}
		r.printf("- R%s %s: %s — %s\n", round.CandidateLabel(int32(row.Round), row.Candidate), row.Verdict, row.Strategy, row.Insight)
	}
}

func verdictSummary(counts map[v1alpha1.Verdict]int32) string {
	var parts []string
	for v, n := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", v, n))
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
