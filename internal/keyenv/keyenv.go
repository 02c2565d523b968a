// Package keyenv names the environment variables that hold a model
// provider's API key, and takes them out of an environment: the commands a
// model runs, and the code a Researcher wrote, get none of them.
package keyenv

import (
	"slices"
	"strings"
)

// EnvAPIKey is the provider-neutral variable for the API key.
const EnvAPIKey = "AUTORESEARCH_API_KEY"

// Variables hold API keys, wherever a key came from.
var Variables = []string{EnvAPIKey, "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY"}

// Without is environ without Variables and any variable whose value is one
// of secrets.
func Without(environ []string, secrets ...string) []string {
	var out []string
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if slices.Contains(Variables, name) || (value != "" && slices.Contains(secrets, value)) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// PlainWords is command split into its words when it is plain words that
// a shell would run as they are: a program and its arguments, without
// quotes, variables, globs, redirections, operators or an environment
// assignment; nil otherwise. Such a command, a Researcher's, runs with no
// shell between it and what started it: a shell would hold the keys, and
// the commands the Researcher's agent runs, as the same user, could read
// them from its /proc/<pid>/environ.
func PlainWords(command string) []string {
	plain := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(" \t_./:=,@+%-", r)
	}
	if strings.IndexFunc(command, func(r rune) bool { return !plain(r) }) >= 0 {
		return nil
	}
	words := strings.Fields(command)
	if len(words) == 0 || strings.Contains(words[0], "=") || slices.Contains(shellWords, words[0]) {
		return nil
	}
	return words
}

// shellWords are the builtins and reserved words that a shell runs itself,
// or reads as syntax, where a program of the same name would be run in
// their place.
var shellWords = []string{
	".", ":", "alias", "bg", "break", "case", "cd", "command", "continue", "do", "done", "elif", "else", "esac",
	"eval", "exec", "exit", "export", "false", "fc", "fg", "fi", "for", "getopts", "hash", "if", "in", "jobs",
	"kill", "local", "printf", "pwd", "read", "readonly", "return", "set", "shift", "source", "test", "then",
	"time", "times", "trap", "true", "type", "ulimit", "umask", "unalias", "unset", "until", "wait", "while",
}
