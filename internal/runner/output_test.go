package runner

import (
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
)

// spec.output.git locally: kept rounds and the end reach the remote over
// https with the token the command was given; a wrong token warns and the
// run goes on to its end.
func TestOutputGitPushesTheBranch(t *testing.T) {
	remote := gittest.NewHTTPRemote(t, "t0ken")
	output := "  output:\n    git:\n      url: " + remote.URL + "\n      candidates: true\n"
	cases := map[string]struct {
		token     string
		wantError string
	}{
		"right token": {token: "t0ken"},
		"wrong token": {token: "guess", wantError: "Authentication failed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			x := load(t, newRepo(t, toyFiles(improvePlan, output)))
			st, out := run(t, x, Options{OutputToken: tc.token})
			if st.Phase != v1alpha1.PhaseSucceeded || st.Best.Round != 3 {
				t.Fatalf("phase %s, best %+v; want Succeeded with round 3's best\n%s", st.Phase, st.Best, out)
			}
			if tc.wantError != "" {
				if st.Output == nil || !strings.Contains(st.Output.Error, tc.wantError) || !strings.Contains(out, "pushing the experiment branch to spec.output.git failed") {
					t.Errorf("status.output %+v; want the push's error %q, and a warning\n%s", st.Output, tc.wantError, out)
				}
				if strings.Contains(out, tc.token) {
					t.Errorf("the output shows the token:\n%s", out)
				}
				return
			}
			head := git(t, x.Worktree, "rev-parse", "HEAD")
			if st.Output == nil || st.Output.PushedCommit != head || st.Output.Error != "" || st.LedgerCommit != head {
				t.Errorf("status.output %+v, ledger commit %s; want the pushed ledger commit %s", st.Output, st.LedgerCommit, head)
			}
			if got := git(t, remote.Dir, "rev-parse", "refs/heads/autoresearch/toy"); got != head {
				t.Errorf("the remote's branch is %s, want %s", got, head)
			}
			refs := git(t, remote.Dir, "for-each-ref", "--format=%(refname)", "refs/autoresearch/candidates/toy/")
			if refs != "refs/autoresearch/candidates/toy/r1\nrefs/autoresearch/candidates/toy/r2\nrefs/autoresearch/candidates/toy/r3" {
				t.Errorf("the remote's candidate refs:\n%s", refs)
			}
		})
	}
}
