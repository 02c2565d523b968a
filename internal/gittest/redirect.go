package gittest

import (
	"os"
	"path/filepath"
	"testing"
)

// Redirect is what RedirectWorktree left: the forged commit that the
// worktree's git directory now has on the branch, and the file that the
// planted diff command writes when anything runs it.
type Redirect struct {
	Forged, Ran string
}

// RedirectWorktree does to the linked worktree wt what a Researcher can do
// while its step runs, since the worktree is its to write: it makes a git
// directory of its own in the worktree, which borrows the repository's
// objects, puts a forged commit that changes file to content on branch
// there, configures a diff.external command, and points wt's .git file at
// it. Every git command run in the worktree then reads that repository.
func RedirectWorktree(t testing.TB, wt, branch, file, content string) Redirect {
	t.Helper()
	common := Git(t, wt, "rev-parse", "--path-format=absolute", "--git-common-dir")
	head := Git(t, wt, "rev-parse", "refs/heads/"+branch)
	fake := filepath.Join(wt, ".planted-git")
	r := Redirect{Ran: filepath.Join(t.TempDir(), "planted-diff-ran")}
	script := filepath.Join(wt, ".planted-diff")
	WriteFiles(t, fake, map[string]string{
		"HEAD":                    "ref: refs/heads/" + branch + "\n",
		"objects/info/alternates": filepath.Join(common, "objects") + "\n",
		"refs/heads/.keep":        "",
		"config":                  "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[diff]\n\texternal = " + script + "\n",
	})
	if err := os.Remove(filepath.Join(fake, "refs/heads/.keep")); err != nil {
		t.Fatal(err)
	}
	WriteFiles(t, wt, map[string]string{".planted-diff": "#!/bin/sh\necho ran >> " + r.Ran + "\n"})
	gitIn := func(args ...string) string {
		return Git(t, wt, append([]string{"--git-dir=" + fake, "--work-tree=" + wt}, args...)...)
	}
	gitIn("update-ref", "refs/heads/"+branch, head)
	WriteFiles(t, wt, map[string]string{file: content})
	gitIn("read-tree", "HEAD")
	gitIn("add", "--", file)
	gitIn("-c", "user.name=r", "-c", "user.email=r@r", "commit", "-qm", "forged")
	r.Forged = gitIn("rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+fake+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Git(t, wt, "rev-parse", "refs/heads/"+branch); got != r.Forged {
		t.Fatalf("after the redirect, git in the worktree finds %s on %s, not the forged %s", got, branch, r.Forged)
	}
	return r
}
