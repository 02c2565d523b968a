package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
)

// The author and committer of every commit the supervisor makes.
const (
	identityName  = "autoresearch"
	identityEmail = "autoresearch@localhost"
)

// repoLocatingEnv are variables that would point git at another repository
// or index than the directory it runs in, e.g. when the supervisor itself is
// started from a git hook.
var repoLocatingEnv = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX",
}

// gitError is a failed git command with what it printed on stderr.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		msg = e.err.Error()
	}
	args := make([]string, len(e.args))
	for i, a := range e.args {
		args[i] = userinfo.ReplaceAllString(a, "://***@")
	}
	return fmt.Sprintf("git %s: %s", strings.Join(args, " "), msg)
}

// userinfo finds the credentials of a URL such as https://user:token@host,
// which an error message must not repeat.
var userinfo = regexp.MustCompile(`://[^/@\s]+@`)

func (e *gitError) Unwrap() error { return e.err }

// Git runs git in dir with extra environment variables, in the C locale,
// never prompting and without the variables that would point it at another
// repository, and returns its output without surrounding white space. It is
// the one way this project runs git.
func Git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	out, err := gitEnv(ctx, dir, env, args...)
	return strings.TrimSpace(out), err
}

// git runs git in dir and returns its stdout.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitEnv(ctx, dir, nil, args...)
}

// hardening runs git without anything a Researcher could have planted for
// the supervisor to execute or follow: no hooks, no file-system monitor
// command, no system or global configuration, and none of the user's
// attributes (ident, filters) or ignore rules, which git reads from
// ~/.config/git even without a global configuration. The repository's own
// configuration is guarded by GitState.
var hardening = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
	"-c", "core.attributesFile=/dev/null", "-c", "core.excludesFile=/dev/null"}

// gitEnv runs git in dir with extra environment variables.
func gitEnv(ctx context.Context, dir string, extraEnv []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append(slices.Clone(hardening), args...)...)
	cmd.Dir = dir
	cmd.Env = append(gitBaseEnv(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = errors.Join(ctxErr, err)
		}
		return stdout.String(), &gitError{args: args, stderr: stderr.String(), err: err}
	}
	return stdout.String(), nil
}

func gitBaseEnv() []string {
	env := make([]string, 0, len(os.Environ())+2)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(repoLocatingEnv, name) {
			env = append(env, kv)
		}
	}
	// Porcelain output and error messages are parsed or shown as they are;
	// keep them in one language and never prompt for anything.
	// Replacement objects would let a planted ref swap what a commit holds.
	return append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_NO_REPLACE_OBJECTS=1", "GIT_ATTR_NOSYSTEM=1")
}

// supervisorEnv makes the supervisor the author and committer without
// touching any git config.
func supervisorEnv() []string {
	return []string{
		"GIT_AUTHOR_NAME=" + identityName, "GIT_AUTHOR_EMAIL=" + identityEmail,
		"GIT_COMMITTER_NAME=" + identityName, "GIT_COMMITTER_EMAIL=" + identityEmail,
	}
}

// splitNUL splits -z output into its fields.
func splitNUL(out string) []string {
	out = strings.TrimSuffix(out, "\x00")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\x00")
}
