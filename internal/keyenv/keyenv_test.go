package keyenv

import (
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
