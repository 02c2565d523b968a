package round

import (
	"fmt"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Suspension and recovery: a suspended loop starts no new step, and a loop
// resumed after an interruption redoes what did not survive it.

// startStep starts the current round's pending step unless the loop is
// suspended, in which case it stays pending.
func (e *engine) startStep() {
	cr := e.st.CurrentRound
	if e.early {
		// A round started early leaves the phase and the message to the
		// current round; a suspended loop starts none of its steps.
		if !ptr.Deref(e.spec.Suspend, false) {
			e.run(cr)
		}
		return
	}
	if ptr.Deref(e.spec.Suspend, false) {
		e.st.Phase = v1alpha1.PhaseSuspended
		e.st.Message = fmt.Sprintf("suspended before R%d %s", cr.Number, cr.Step)
		return
	}
	switch task := Task(cr.Tasks, cr.Step); {
	case e.st.Phase == v1alpha1.PhaseSuspended:
		e.st.Message = fmt.Sprintf("resumed at R%d %s", cr.Number, cr.Step)
	case cr.Number > 0 && task != "":
		// The message says what runs now, not the last verdict, which the
		// history and lastVerdict keep.
		e.st.Message = task
	}
	e.st.Phase = e.activePhase()
	e.run(cr)
}

// maxTimeline is the most steps a round's timeline holds, as the API
// validates it.
const maxTimeline = 16

// run marks cr's step running from now, in its timeline too, and emits its
// actions. The timeline keeps the time a step first started when it starts
// again (a retry, the check of a candidate carried onto a new best).
func (e *engine) run(cr *v1alpha1.RoundStatus) {
	cr.StepState = v1alpha1.StepStateRunning
	cr.StepStartTime = e.now.DeepCopy()
	if n := len(cr.Timeline); n < maxTimeline && (n == 0 || cr.Timeline[n-1].Step != cr.Step) {
		cr.Timeline = append(cr.Timeline, v1alpha1.StepStart{Step: cr.Step, Time: metav1.NewMicroTime(e.now.Time)})
	}
	cr.Waiting = ""
	e.emitCurrent()
}

// waitingSep leads the part of the message that says why a step waits.
const waitingSep = " — waiting: "

// Waiting is what st says the running step waits for, "" when nothing.
func Waiting(st *v1alpha1.AutoResearchStatus) string {
	if cr := st.CurrentRound; cr != nil {
		return cr.Waiting
	}
	_, why, _ := strings.Cut(st.Message, waitingSep)
	return why
}

// waiting shows why the running step has not started, or that it no longer
// waits, in the message and the round's status; the time limit of a step
// counts from its start, so waiting is never judged.
func (e *engine) waiting(why string) {
	cr := e.st.CurrentRound
	preparing := e.st.Phase == v1alpha1.PhaseInitializing
	if !preparing && (cr == nil || cr.StepState != v1alpha1.StepStateRunning) {
		return
	}
	msg, _, _ := strings.Cut(e.st.Message, waitingSep)
	if why != "" {
		msg += waitingSep + why
	}
	e.st.Message = text.Truncate(msg, maxMessageLength)
	if !preparing {
		cr.Waiting = text.Truncate(why, maxConditionMessage)
	}
}

// restartInterrupted applies the seed's interruption recovery: a round
// without a verdict is rolled back and restarted; a baseline run is
// repeated; a git step with a verdict is redone.
func (e *engine) restartInterrupted(cr *v1alpha1.RoundStatus) {
	if cr.Step == v1alpha1.StepGit {
		cr.StepState = v1alpha1.StepStatePending
		return
	}
	if cr.Number == 0 && cr.Step == v1alpha1.StepHoldout {
		// The holdout measures the outputs of the last baseline run, which
		// need not have survived: that run is made again.
		b := e.st.Baseline
		b.Values = b.Values[:max(0, len(b.Values)-1)]
		b.Value, b.Stddev, b.Samples = "", "", 0
	}
	if cr.Number == 0 {
		cr.Step = v1alpha1.StepTrain
		cr.StepState = v1alpha1.StepStatePending
		return
	}
	e.st.Message = fmt.Sprintf("round %d was interrupted before its verdict; rolled back and restarted", cr.Number)
	e.emit(Action{Type: ActionWarn, Round: cr.Number, Reason: v1alpha1.ReasonRoundRestarted, Message: e.st.Message})
	cr.Step = v1alpha1.StepResearcher
	cr.StepState = v1alpha1.StepStatePending
	cr.Candidates = e.newCandidates()
	cr.Tasks = e.roundTasks(cr.Number)
}
