package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
)

// Kept rounds reach a bare repository: the branch, and the candidates when
// asked; a remote branch that went its own way refuses the push and keeps
// what it has.
func TestPushToABareRepository(t *testing.T) {
	ctx := context.Background()
	ws, res := newWorkspace(t)
	remote := filepath.Join(t.TempDir(), "results.git")
	git(t, filepath.Dir(remote), "init", "--quiet", "--bare", remote)
	out := Output{URL: "file://" + remote, Candidates: true}

	appendFile(t, filepath.Join(ws.Dir, "train.sh"), "SCORE=9\n")
	first := keep(t, ws, 1, res.StartCommit, "round 1")
	pushed, err := Push(ctx, ws, out)
	if err != nil {
		t.Fatal(err)
	}
	if pushed != first || git(t, remote, "rev-parse", "refs/heads/autoresearch/toy") != first {
		t.Errorf("pushed %s, the remote has %s; want %s", pushed, git(t, remote, "rev-parse", "refs/heads/autoresearch/toy"), first)
	}
	if got := git(t, remote, "for-each-ref", "--format=%(refname)", "refs/autoresearch/"); got != ws.CandidateRef(1) {
		t.Errorf("the remote's candidate refs are %q, want %s", got, ws.CandidateRef(1))
	}

	appendFile(t, filepath.Join(ws.Dir, "train.sh"), "SCORE=8\n")
	second := keep(t, ws, 2, first, "round 2")
	if pushed, err := Push(ctx, ws, Output{URL: out.URL}); err != nil || pushed != second {
		t.Fatalf("the second push: %s, %v; want %s", pushed, err, second)
	}
	if got := git(t, remote, "for-each-ref", "--format=%(refname)", "refs/autoresearch/"); got != ws.CandidateRef(1) {
		t.Errorf("without candidates the push sent candidate refs: %q", got)
	}

	// The remote's branch goes its own way: the push is refused.
	other := filepath.Join(t.TempDir(), "other")
	git(t, filepath.Dir(other), "clone", "--quiet", "--branch", "autoresearch/toy", remote, other)
	git(t, other, "-c", "user.name=someone", "-c", "user.email=someone@localhost", "commit", "--quiet", "--allow-empty", "-m", "theirs")
	git(t, other, "push", "--quiet", "origin", "autoresearch/toy")
	theirs := git(t, other, "rev-parse", "HEAD")
	appendFile(t, filepath.Join(ws.Dir, "train.sh"), "SCORE=7\n")
	keep(t, ws, 3, second, "round 3")
	if _, err := Push(ctx, ws, out); err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Errorf("a push over a branch that went its own way: %v, want it rejected", err)
	}
	if got := git(t, remote, "rev-parse", "refs/heads/autoresearch/toy"); got != theirs {
		t.Errorf("the remote's branch is %s after a refused push, want theirs, %s", got, theirs)
	}
}

// Over HTTP the token from the Secret is the password; a wrong one fails
// without showing it, and no hook of the repository runs.
func TestPushOverHTTPWithAToken(t *testing.T) {
	ctx := context.Background()
	ws, res := newWorkspace(t)
	remote := gittest.NewHTTPRemote(t, "t0ken")
	hookRan := filepath.Join(t.TempDir(), "hook-ran")
	gitDir := git(t, ws.Root, "rev-parse", "--git-common-dir")
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(ws.Root, gitDir)
	}
	writeFiles(t, filepath.Join(gitDir, "hooks"), map[string]string{"pre-push": "#!/bin/sh\ntouch " + hookRan + "\n"})

	appendFile(t, filepath.Join(ws.Dir, "train.sh"), "SCORE=9\n")
	commit := keep(t, ws, 1, res.StartCommit, "round 1")

	secret := t.TempDir()
	writeFiles(t, secret, map[string]string{SecretKeyToken: "wrong-token\n"})
	out := Output{URL: remote.URL}
	if err := out.ReadSecretDir(secret); err != nil {
		t.Fatal(err)
	}
	_, err := Push(ctx, ws, out)
	if err == nil || strings.Contains(err.Error(), "wrong-token") {
		t.Fatalf("a push with a wrong token: %v; want an error that does not show it", err)
	}

	writeFiles(t, secret, map[string]string{SecretKeyToken: "t0ken\n", SecretKeyUsername: "bot"})
	if err := out.ReadSecretDir(secret); err != nil {
		t.Fatal(err)
	}
	if out.Username != "bot" || out.SSHKeyFile != "" {
		t.Errorf("credentials read %+v, want username bot and no ssh key", out)
	}
	if pushed, err := Push(ctx, ws, out); err != nil || pushed != commit {
		t.Fatalf("push: %s, %v; want %s", pushed, err, commit)
	}
	if got := git(t, remote.Dir, "rev-parse", "refs/heads/autoresearch/toy"); got != commit {
		t.Errorf("the remote has %s, want %s", got, commit)
	}
	if _, err := os.Stat(hookRan); err == nil {
		t.Error("the repository's pre-push hook ran")
	}
}
