package agent

import (
	"fmt"
	"slices"
	"strings"
)

// Providers this package speaks.
const (
	ProviderAnthropic = "anthropic"
	ProviderOpenAI    = "openai"
)

// EnvAPIKey is the provider-neutral variable for the API key; it wins over
// the provider's own.
const EnvAPIKey = "AUTORESEARCH_API_KEY"

// keyVariables are removed from the commands' environment wherever the
// key came from.
var keyVariables = []string{EnvAPIKey, "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY"}

// APIKey finds the key for provider: in the variable named by keyEnv when
// given, else in AUTORESEARCH_API_KEY, else in ANTHROPIC_API_KEY or
// OPENAI_API_KEY. It returns the key and the variable it came from.
func APIKey(provider, keyEnv string, getenv func(string) string) (key, source string, err error) {
	var names []string
	switch {
	case keyEnv != "":
		names = []string{keyEnv}
	case provider == ProviderAnthropic:
		names = []string{EnvAPIKey, "ANTHROPIC_API_KEY"}
	case provider == ProviderOpenAI:
		names = []string{EnvAPIKey, "OPENAI_API_KEY"}
	default:
		return "", "", fmt.Errorf("unknown provider %q: want %s or %s", provider, ProviderAnthropic, ProviderOpenAI)
	}
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return v, n, nil
		}
	}
	return "", "", fmt.Errorf("no API key: set %s (from a Secret on Kubernetes); keys are never taken from the command line", strings.Join(names, " or "))
}

// CommandEnv is environ without API keys, for the commands the model runs:
// it drops the usual key variables and any variable holding one of the
// secrets.
func CommandEnv(environ []string, secrets ...string) []string {
	var out []string
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if slices.Contains(keyVariables, name) || (value != "" && slices.Contains(secrets, value)) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
