package supervisor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// upstream is a repository to clone: main, a branch feature, a tag v1 on
// main's first commit, and a pull request's commit on no branch.
type upstream struct {
	dir                          string
	main, feature, tag, pullHead string
}

func newUpstream(t *testing.T) upstream {
	t.Helper()
	u := upstream{dir: newRepo(t, toyFiles)}
	commit := func(msg string) string {
		git(t, u.dir, "-c", "user.name=test", "-c", "user.email=test@localhost", "commit", "-q", "--allow-empty", "-m", msg)
		return git(t, u.dir, "rev-parse", "HEAD")
	}
	u.tag = git(t, u.dir, "rev-parse", "HEAD")
	git(t, u.dir, "tag", "v1")
	u.main = commit("second")
	git(t, u.dir, "checkout", "-q", "-b", "feature")
	u.feature = commit("feature")
	git(t, u.dir, "checkout", "-q", "--detach", "main")
	u.pullHead = commit("pull request")
	git(t, u.dir, "update-ref", "refs/pull/1/head", u.pullHead)
	git(t, u.dir, "checkout", "-q", "main")
	return u
}

func TestCheckoutSource(t *testing.T) {
	up := newUpstream(t)
	cases := map[string]struct {
		ref  string
		want string
	}{
		"default branch":       {want: up.main},
		"local branch":         {ref: "main", want: up.main},
		"remote branch":        {ref: "feature", want: up.feature},
		"tag":                  {ref: "v1", want: up.tag},
		"commit":               {ref: up.feature, want: up.feature},
		"ref only on a remote": {ref: "refs/pull/1/head", want: up.pullHead},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "source")
			src := Source{URL: "file://" + up.dir, Ref: tc.ref}
			// The second call is a retried step that finds the clone.
			for range 2 {
				if err := CheckoutSource(context.Background(), src, dir); err != nil {
					t.Fatal(err)
				}
				if got := git(t, dir, "rev-parse", "HEAD"); got != tc.want {
					t.Errorf("HEAD = %s, want %s", got, tc.want)
				}
			}
		})
	}
}

func TestCheckoutSourceFailures(t *testing.T) {
	up := newUpstream(t)
	cases := map[string]struct {
		src     Source
		wantErr string
	}{
		"unknown ref":    {src: Source{URL: "file://" + up.dir, Ref: "no-such-branch"}, wantErr: "ref no-such-branch is neither in the clone nor on its remote"},
		"option as ref":  {src: Source{URL: "file://" + up.dir, Ref: "--upload-pack=touch"}, wantErr: "is not a branch, tag or commit"},
		"no such remote": {src: Source{URL: "file://" + filepath.Join(up.dir, "missing")}, wantErr: "cloning file://"},
		"unreadable key": {src: Source{URL: "file://" + up.dir, SSHKeyFile: filepath.Join(up.dir, "no-key")}, wantErr: "ssh key"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := CheckoutSource(context.Background(), tc.src, filepath.Join(t.TempDir(), "source"))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestCheckoutSourceOverHTTPWithCredentials clones from a server that wants
// basic auth, through git's dumb http protocol, which a file server speaks.
func TestCheckoutSourceOverHTTPWithCredentials(t *testing.T) {
	up := newUpstream(t)
	bare := filepath.Join(t.TempDir(), "repo.git")
	git(t, up.dir, "clone", "-q", "--bare", up.dir, bare)
	git(t, bare, "update-server-info")
	files := http.FileServer(http.Dir(filepath.Dir(bare)))
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pass, ok := r.BasicAuth(); !ok || user != "bot" || pass != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		files.ServeHTTP(w, r)
	}))
	defer server.Close()

	cases := map[string]struct {
		user, password string
		wantErr        bool
	}{
		"right credentials": {user: "bot", password: "s3cret"},
		"wrong password":    {user: "bot", password: "guess", wantErr: true},
		"no credentials":    {wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "source")
			src := Source{URL: server.URL + "/repo.git", Ref: "feature", Username: tc.user, Password: tc.password}
			err := CheckoutSource(context.Background(), src, dir)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error: %t", err, tc.wantErr)
			}
			if err != nil {
				if strings.Contains(err.Error(), tc.password) && tc.password != "" {
					t.Errorf("the error shows the password: %v", err)
				}
				return
			}
			if got := git(t, dir, "rev-parse", "HEAD"); got != up.feature {
				t.Errorf("HEAD = %s, want %s", got, up.feature)
			}
			if config := readFile(t, filepath.Join(dir, ".git", "config")); strings.Contains(config, tc.password) {
				t.Errorf("the password was written to .git/config:\n%s", config)
			}
		})
	}
}

// fakeSSH stands in for ssh on PATH: it records its arguments and the key's
// permissions, then runs the remote command locally, as sshd would.
const fakeSSH = `#!/bin/sh
log="$FAKE_SSH_LOG"
echo "args: $*" >> "$log"
while [ $# -gt 1 ]; do
	if [ "$1" = -i ]; then stat -c 'key mode: %a' "$2" >> "$log"; fi
	shift
done
exec sh -c "$1"
`

func TestCheckoutSourceOverSSHWithAKey(t *testing.T) {
	up := newUpstream(t)
	bin := t.TempDir()
	writeFiles(t, bin, map[string]string{"ssh": fakeSSH})
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	log := filepath.Join(t.TempDir(), "ssh.log")
	t.Setenv("FAKE_SSH_LOG", log)
	key := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(key, []byte("not a real key\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(t.TempDir(), "source")
	src := Source{URL: "ssh://git.example.com" + up.dir, Ref: "feature", SSHKeyFile: key}
	if err := CheckoutSource(context.Background(), src, dir); err != nil {
		t.Fatal(err)
	}
	if got := git(t, dir, "rev-parse", "HEAD"); got != up.feature {
		t.Errorf("HEAD = %s, want %s", got, up.feature)
	}
	got := readFile(t, log)
	for _, want := range []string{"-o IdentitiesOnly=yes", "-o StrictHostKeyChecking=accept-new", "-o UserKnownHostsFile=", "git.example.com", "key mode: 600"} {
		if !strings.Contains(got, want) {
			t.Errorf("ssh was not called with %q:\n%s", want, got)
		}
	}
}
