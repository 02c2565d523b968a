package round

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// A push that fails keeps the round and warns once; the next one that
// succeeds, at a commit or at the end, clears the error.
func TestPushes(t *testing.T) {
	d := newDriver(t, givenBaseline, func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 2 })
	d.start()
	warnings := func(acts []Action) []string {
		var out []string
		for _, a := range acts {
			if a.Type == ActionWarn {
				out = append(out, a.Reason+": "+a.Message)
			}
		}
		return out
	}

	d.evaluate("0.9")
	pushedAt := d.now
	if w := warnings(d.next(withPush(committed(1, commitOf(1)), &PushResult{Commit: commitOf(1)}))); len(w) > 0 {
		t.Errorf("a push that succeeded warns: %v", w)
	}
	want := &v1alpha1.OutputStatus{PushedCommit: commitOf(1), PushTime: timeAt(pushedAt)}
	if diff := cmp.Diff(want, d.st.Output); diff != "" {
		t.Errorf("after round 1's push (-want +got):\n%s", diff)
	}

	d.evaluate("0.8")
	failed := withPush(committed(2, commitOf(2)), &PushResult{Error: "git push: rejected"})
	w := warnings(d.next(failed))
	wantWarning := []string{"PushFailed: pushing the experiment branch to spec.output.git failed; the next commit or the end pushes it again: git push: rejected"}
	if diff := cmp.Diff(wantWarning, w); diff != "" {
		t.Errorf("warnings of a failed push (-want +got):\n%s", diff)
	}
	want.Error = "git push: rejected"
	if diff := cmp.Diff(want, d.st.Output); diff != "" {
		t.Errorf("after round 2's failed push (-want +got):\n%s", diff)
	}
	if d.st.Best.Commit != commitOf(2) || d.st.CompletedRounds != 2 {
		t.Errorf("a failed push lost round 2: best %+v after %d rounds", d.st.Best, d.st.CompletedRounds)
	}
	if w := warnings(d.next(failed)); len(w) > 0 {
		t.Errorf("the same result seen again warns again: %v", w)
	}

	finishedAt := d.now
	d.next(withPush(Observation{Kind: ObserveFinished, Round: 2, Commit: "ledger2"}, &PushResult{Commit: "ledger2"}))
	want = &v1alpha1.OutputStatus{PushedCommit: "ledger2", PushTime: timeAt(finishedAt)}
	if diff := cmp.Diff(want, d.st.Output); diff != "" {
		t.Errorf("after the end's push (-want +got):\n%s", diff)
	}
}

func withPush(obs Observation, p *PushResult) Observation {
	obs.Push = p
	return obs
}
