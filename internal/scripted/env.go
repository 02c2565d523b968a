package scripted

import (
	"fmt"
	"os"
	"strconv"
)

// Environment of the Researcher contract, set by the supervisor.
const (
	EnvRound       = "AUTORESEARCH_ROUND"
	EnvPromptFile  = "AUTORESEARCH_PROMPT_FILE"
	EnvExperiences = "AUTORESEARCH_EXPERIENCES"
	// EnvCandidate names the candidate (a, b, …) in a round of several.
	EnvCandidate = "AUTORESEARCH_CANDIDATE"
)

// Invocation is what the supervisor tells a Researcher about its round.
type Invocation struct {
	Round           int
	PromptFile      string
	ExperiencesPath string
	// Candidate names the candidate (a, b, …) in a round of several; ""
	// in a round of one.
	Candidate string
}

// InvocationFromEnv reads the Researcher contract from the environment
// through getenv (os.Getenv outside tests). The scripted Researcher does not
// read its prompt, but it insists on one, as a real agent would, so that a
// supervisor that forgets the prompt fails the demo.
func InvocationFromEnv(getenv func(string) string) (Invocation, error) {
	round, err := strconv.Atoi(getenv(EnvRound))
	if err != nil || round < 1 {
		return Invocation{}, fmt.Errorf("%s=%q: want a round number of at least 1", EnvRound, getenv(EnvRound))
	}
	inv := Invocation{Round: round, PromptFile: getenv(EnvPromptFile), ExperiencesPath: getenv(EnvExperiences), Candidate: getenv(EnvCandidate)}
	if inv.PromptFile == "" {
		return Invocation{}, fmt.Errorf("%s is not set", EnvPromptFile)
	}
	info, err := os.Stat(inv.PromptFile)
	if err != nil {
		return Invocation{}, fmt.Errorf("%s: %w", EnvPromptFile, err)
	}
	if !info.Mode().IsRegular() || info.Size() == 0 {
		return Invocation{}, fmt.Errorf("%s=%s: want a non-empty file", EnvPromptFile, inv.PromptFile)
	}
	if inv.ExperiencesPath == "" {
		return Invocation{}, fmt.Errorf("%s is not set", EnvExperiences)
	}
	return inv, nil
}
