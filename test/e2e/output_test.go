//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
)

// TestOutputGitPushesToARemote runs two experiments whose spec.output.git
// is a git http-backend, where the node's pods reach it, that wants a
// token: the one whose Secret holds it ends with the remote's branch on its
// ledger commit, the other's pushes fail with a PushFailed event, and it
// succeeds all the same.
func TestOutputGitPushesToARemote(t *testing.T) {
	parallel(t)
	install(t)
	m := startManager(t)
	defer m.stop()
	const token = "e2e-t0ken"
	remote := gittest.NewHTTPRemoteOn(t, token, serviceHost(t))
	experiments := map[string]string{"pushed": token, "refused": "not-the-token"}
	for n, secretToken := range experiments {
		kubectl(t, "", "create", "secret", "generic", n+"-push", "-n", ns, "--from-literal=token="+secretToken)
		defer kubectl(t, "", "delete", "secret", n+"-push", "-n", ns)
		spec := toyManifest(n, clusterSource(t, n, pipelineToy), 1) +
			fmt.Sprintf("  output:\n    git:\n      url: %q\n      secretRef: {name: %s-push}\n      candidates: true\n", remote.URL, n)
		kubectl(t, spec, "apply", "-f", "-")
		defer kubectl(t, "", "delete", "autoresearch", n, "-n", ns, "--wait=true", "--timeout=120s")
	}
	eventually(t, "both experiments to finish", 20*time.Minute, func() bool {
		for n := range experiments {
			ar := experimentNamed(t, n)
			if ar.Status.Phase == v1alpha1.PhaseFailed {
				t.Fatalf("%s failed: %s", n, ar.Status.Message)
			}
			if ar.Status.Phase != v1alpha1.PhaseSucceeded || ar.Status.LedgerCommit == "" {
				return false
			}
		}
		return true
	})

	pushed := experimentNamed(t, "pushed")
	if got := gittest.Git(t, remote.Dir, "rev-parse", "refs/heads/autoresearch/pushed"); got != pushed.Status.LedgerCommit {
		t.Errorf("the remote's branch is %s, want the ledger commit %s", got, pushed.Status.LedgerCommit)
	}
	if b := pushed.Status.Best; b == nil || b.Round != 1 {
		t.Errorf("best %+v, want round 1's", b)
	} else {
		gittest.Git(t, remote.Dir, "merge-base", "--is-ancestor", b.Commit, "refs/heads/autoresearch/pushed")
	}
	gittest.Git(t, remote.Dir, "rev-parse", "--verify", "refs/autoresearch/candidates/pushed/r1")
	if o := pushed.Status.Output; o == nil || o.PushedCommit != pushed.Status.LedgerCommit || o.Error != "" {
		t.Errorf("status.output %+v, want the ledger commit %s pushed", o, pushed.Status.LedgerCommit)
	}

	refused := experimentNamed(t, "refused")
	if b := refused.Status.Best; b == nil || b.Round != 1 {
		t.Errorf("a failed push lost round 1: best %+v", b)
	}
	if o := refused.Status.Output; o == nil || o.PushedCommit != "" || !strings.Contains(o.Error, "Authentication failed") {
		t.Errorf("status.output %+v, want the failed authentication", o)
	}
	var warned bool
	for _, e := range experimentEvents(t, refused) {
		warned = warned || e.Reason == v1alpha1.ReasonPushFailed && e.Type == "Warning" && strings.Contains(e.Note, "Authentication failed")
	}
	if !warned {
		t.Errorf("no PushFailed warning for the refused experiment")
	}
	if refs := gittest.Git(t, remote.Dir, "for-each-ref", "--format=%(refname)"); strings.Contains(refs, "refused") {
		t.Errorf("the remote holds refs of the refused experiment:\n%s", refs)
	}
}
