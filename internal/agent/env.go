package agent

import (
	"fmt"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/internal/keyenv"
)

// Providers this package speaks.
const (
	ProviderAnthropic = "anthropic"
	ProviderOpenAI    = "openai"
)

// EnvAPIKey is the provider-neutral variable for the API key; it wins over
// the provider's own.
const EnvAPIKey = keyenv.EnvAPIKey

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
