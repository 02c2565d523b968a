package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// Source is where an experiment's repository comes from.
type Source struct {
	// URL is cloned when the directory holds no clone yet.
	URL string
	// Ref is a branch, tag or commit to check out; empty keeps what the
	// clone checked out, the remote's default branch.
	Ref string
	// Username and Password answer an http(s) server's challenge.
	Username string
	Password string
	// SSHKeyFile is the private key for ssh URLs.
	SSHKeyFile string
	// KnownHostsFile, when set, holds the only host keys ssh trusts;
	// without it a host is trusted on first contact.
	KnownHostsFile string
}

// credentialHelper gives git the credentials from the environment, so that
// they are never written to disk nor shown in a process list.
const credentialHelper = `!f() { test "$1" = get || exit 0; echo "username=${GIT_USERNAME}"; echo "password=${GIT_PASSWORD}"; }; f`

// CheckoutSource clones src.URL into dir, unless dir already holds a clone
// from an earlier attempt, and checks out src.Ref on a detached HEAD: the
// experiment branch starts there.
func CheckoutSource(ctx context.Context, src Source, dir string) (err error) {
	if strings.HasPrefix(src.Ref, "-") {
		return fmt.Errorf("ref %q is not a branch, tag or commit", src.Ref)
	}
	g, err := newSourceGit(src)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, g.close()) }()
	if src.URL != "" {
		_, err := os.Stat(filepath.Join(dir, ".git"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if _, err := g.run(ctx, "", "clone", "--quiet", "--", src.URL, dir); err != nil {
				return fmt.Errorf("cloning %s: %w", redact(src.URL), err)
			}
		case err != nil:
			return err
		}
	}
	if src.Ref == "" {
		return nil
	}
	commit, err := g.resolve(ctx, dir, src.Ref)
	if err != nil {
		return err
	}
	_, err = g.run(ctx, dir, "checkout", "--quiet", "--detach", commit)
	return err
}

// sourceGit runs git with the source's credentials.
type sourceGit struct {
	config []string
	env    []string
	// tmp holds the private copy of the ssh key and the known hosts.
	tmp string
}

func newSourceGit(src Source) (*sourceGit, error) {
	g := &sourceGit{}
	if src.Username != "" || src.Password != "" {
		g.config = []string{"-c", "credential.helper=", "-c", "credential.helper=" + credentialHelper}
		g.env = append(g.env, "GIT_USERNAME="+src.Username, "GIT_PASSWORD="+src.Password)
	}
	if src.SSHKeyFile == "" {
		return g, nil
	}
	key, err := os.ReadFile(src.SSHKeyFile)
	if err != nil {
		return nil, fmt.Errorf("ssh key: %w", err)
	}
	if g.tmp, err = os.MkdirTemp("", "autoresearch-ssh-"); err != nil {
		return nil, err
	}
	// ssh refuses a key that others can read, which a mounted Secret may be.
	keyFile := filepath.Join(g.tmp, "key")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		return nil, errors.Join(err, g.close())
	}
	g.env = append(g.env, "GIT_SSH_COMMAND="+sshCommand(keyFile, filepath.Join(g.tmp, "known_hosts"), src.KnownHostsFile))
	return g, nil
}

// sshCommand is the GIT_SSH_COMMAND that uses only keyFile. It trusts only
// the hosts of knownHostsFile when set, and otherwise a host on first
// contact, recording it in knownHosts: a pod has no known hosts of its
// own, and may not write to a home directory.
func sshCommand(keyFile, knownHosts, knownHostsFile string) string {
	check := "StrictHostKeyChecking=accept-new"
	if knownHostsFile != "" {
		check, knownHosts = "StrictHostKeyChecking=yes", knownHostsFile
	}
	return strings.Join([]string{
		"ssh", "-i", shellQuote(keyFile), "-o", "IdentitiesOnly=yes",
		"-o", check, "-o", "UserKnownHostsFile=" + shellQuote(knownHosts),
	}, " ")
}

// close removes the private copy of the ssh key, which must not outlive
// the checkout.
func (g *sourceGit) close() error {
	if g.tmp == "" {
		return nil
	}
	if err := os.RemoveAll(g.tmp); err != nil {
		return fmt.Errorf("removing the copy of the ssh key: %w", err)
	}
	return nil
}

func (g *sourceGit) run(ctx context.Context, dir string, args ...string) (string, error) {
	return workspace.Git(ctx, dir, g.env, append(g.config, args...)...)
}

// resolve finds ref as a commit: a local name, a remote branch of the
// clone, or, failing both, whatever the remote gives for it.
func (g *sourceGit) resolve(ctx context.Context, dir, ref string) (string, error) {
	for _, rev := range []string{ref, "origin/" + ref} {
		if commit, err := g.run(ctx, dir, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}"); err == nil {
			return commit, nil
		}
	}
	if _, err := g.run(ctx, dir, "fetch", "--quiet", "origin", ref); err != nil {
		return "", fmt.Errorf("ref %s is neither in the clone nor on its remote: %w", ref, err)
	}
	return g.run(ctx, dir, "rev-parse", "--verify", "FETCH_HEAD^{commit}")
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// redact hides a password written into a URL.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	return raw
}
