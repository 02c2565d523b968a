package keyenv

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWithout(t *testing.T) {
	in := []string{"PATH=/bin", "ANTHROPIC_API_KEY=a", "OPENAI_API_KEY=b", "AUTORESEARCH_API_KEY=c", "CODEX_API_KEY=d", "VLLM_KEY=s3cret-value", "HOME=/tmp"}
	want := []string{"PATH=/bin", "HOME=/tmp"}
	if diff := cmp.Diff(want, Without(in, "s3cret-value")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestPlainWords(t *testing.T) {
	for command, want := range map[string][]string{
		"autoresearch researcher agent --provider anthropic --model claude-sonnet-4-5": {"autoresearch", "researcher", "agent", "--provider", "anthropic", "--model", "claude-sonnet-4-5"},
		"  python3 agent.py\t--url=http://llm:8000/v1 ":                                {"python3", "agent.py", "--url=http://llm:8000/v1"},
		"KEY=1 agent":     nil,
		"exec agent":      nil,
		". ./agent.sh":    nil,
		"cd dir":          nil,
		"agent && other":  nil,
		"agent 'a b'":     nil,
		"agent $HOME":     nil,
		"agent > out.txt": nil,
		"agent *.py":      nil,
		"agent ~/x":       nil,
		"":                nil,
	} {
		if got := PlainWords(command); !slices.Equal(got, want) {
			t.Errorf("PlainWords(%q) = %q, want %q", command, got, want)
		}
	}
}
