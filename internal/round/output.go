package round

import (
	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// maxOutputError is the API's bound on status.output.error, and
// maxEventMessage an event's.
const (
	maxOutputError  = 1024
	maxEventMessage = 1024
)

// pushed records how the push to spec.output.git after round n's git step
// went. A failed push loses nothing: the round stands, a warning says why,
// and the next commit or the end pushes the whole branch again.
func (e *engine) pushed(n int32, p *PushResult) {
	if p == nil {
		return
	}
	out := &v1alpha1.OutputStatus{}
	if e.st.Output != nil {
		out = e.st.Output.DeepCopy()
	}
	if p.Error == "" {
		out.PushedCommit, out.PushTime, out.Error = p.Commit, e.now.DeepCopy(), ""
	} else {
		out.Error = text.Truncate(p.Error, maxOutputError)
		e.emit(Action{Type: ActionWarn, Round: n, Reason: v1alpha1.ReasonPushFailed,
			Message: text.Truncate("pushing the experiment branch to spec.output.git failed; the next commit or the end pushes it again: "+p.Error, maxEventMessage)})
	}
	e.st.Output = out
}
