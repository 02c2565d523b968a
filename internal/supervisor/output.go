package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// Output is a remote repository that receives the experiment branch
// (spec.output.git).
type Output struct {
	URL string
	// Candidates also pushes the experiment's candidate refs.
	Candidates bool
	// Username and Token answer an http(s) server's challenge; Username
	// defaults to DefaultPushUsername.
	Username string
	Token    string
	// SSHKeyFile is the private key for ssh URLs, KnownHostsFile the host
	// keys ssh trusts. Without a key ssh uses its own: the user's agent and
	// keys, locally.
	SSHKeyFile     string
	KnownHostsFile string
}

// DefaultPushUsername goes with a token that comes without a username:
// forges that take a token as the password accept any username.
const DefaultPushUsername = "x-access-token"

// The keys of the Secret that spec.output.git.secretRef names.
const (
	SecretKeyToken      = "token"
	SecretKeyUsername   = "username"
	SecretKeySSHKey     = "ssh-privatekey"
	SecretKeyKnownHosts = "known_hosts"
)

// maxPushError bounds a push's error as the step result carries it.
const maxPushError = 1000

// ReadSecretDir takes the credentials from dir, a mounted Secret with the
// keys above; a key it lacks is left out.
func (o *Output) ReadSecretDir(dir string) error {
	read := func(key string) (string, error) {
		data, err := os.ReadFile(filepath.Join(dir, key))
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return strings.TrimSpace(string(data)), err
	}
	var errs []error
	for key, v := range map[string]*string{SecretKeyToken: &o.Token, SecretKeyUsername: &o.Username} {
		var err error
		*v, err = read(key)
		errs = append(errs, err)
	}
	for key, v := range map[string]*string{SecretKeySSHKey: &o.SSHKeyFile, SecretKeyKnownHosts: &o.KnownHostsFile} {
		switch _, err := os.Stat(filepath.Join(dir, key)); {
		case err == nil:
			*v = filepath.Join(dir, key)
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Push pushes the experiment branch, and its candidate refs when asked, to
// o.URL, with git's hooks and configuration off as for every git command of
// the supervisor, and returns the commit the remote's branch now holds.
// The branch is never forced: a remote branch that went its own way refuses
// the push. The candidate refs are the supervisor's own, and forced.
func Push(ctx context.Context, ws *workspace.Workspace, o Output) (string, error) {
	src := Source{SSHKeyFile: o.SSHKeyFile, KnownHostsFile: o.KnownHostsFile}
	if o.Token != "" {
		src.Username, src.Password = cmp.Or(o.Username, DefaultPushUsername), o.Token
	}
	g, err := newSourceGit(src)
	if err != nil {
		return "", err
	}
	branch := "refs/heads/" + ws.Branch
	commit, err := g.run(ctx, ws.Root, "rev-parse", "--verify", branch+"^{commit}")
	if err == nil {
		args := []string{"push", "--quiet", "--", o.URL, branch + ":" + branch}
		if o.Candidates {
			args = append(args, "+"+ws.CandidatesPrefix()+"*:"+ws.CandidatesPrefix()+"*")
		}
		_, err = g.run(ctx, ws.Root, args...)
	}
	if err = errors.Join(err, g.close()); err != nil {
		return "", fmt.Errorf("pushing %s to %s: %w", ws.Branch, redact(o.URL), err)
	}
	return commit, nil
}

// PushError is err as a step result carries it.
func PushError(err error) string {
	return text.Truncate(err.Error(), maxPushError)
}
