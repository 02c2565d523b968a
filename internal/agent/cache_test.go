package agent

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCachedTokensArePricedAtTheCacheRate(t *testing.T) {
	strategy := call{ToolRecordStrategy, `{"strategy":"s"}`}
	cases := map[string]struct {
		wire   wire
		script []turn
		want   Usage
		// cost at $3 and $15 per million input and output tokens.
		cost float64
	}{
		// Anthropic: writes at 1.25x, reads at 0.1x of the input price.
		"anthropic": {wire: anthropicWire{}, script: []turn{
			{calls: []call{strategy}, in: 3000, cacheWrite: 3000, out: 20},
			{text: "Code ready", in: 3100, cacheRead: 3000, cacheWrite: 100, out: 5},
		}, want: Usage{InputTokens: 6100, OutputTokens: 25, CacheReadTokens: 3000, CacheWriteTokens: 3100},
			cost: (3000*3.75 + 20*15 + 3000*0.3 + 100*3.75 + 5*15) / 1e6},
		// OpenAI reports cached_tokens only; an unlisted model reads at 0.5x.
		"openai": {wire: openaiWire{}, script: []turn{
			{calls: []call{strategy}, in: 3000, out: 20},
			{text: "Code ready", in: 3100, cacheRead: 3000, out: 5},
		}, want: Usage{InputTokens: 6100, OutputTokens: 25, CacheReadTokens: 3000},
			cost: (3000*3 + 20*15 + 100*3 + 3000*1.5 + 5*15) / 1e6},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir, _ := workdir(t)
			f := newFakeAPI(t, tc.wire, tc.script...)

			o := runFake(t, f, dir, Budget{})

			if o.err != nil {
				t.Fatalf("Run: %v", o.err)
			}
			if diff := cmp.Diff(tc.want, o.res.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			if math.Abs(o.res.Cost-tc.cost) > 1e-9 {
				t.Errorf("cost $%v, want $%v", o.res.Cost, tc.cost)
			}
		})
	}
}

// TestSessionCost bills a 31-request session on claude-sonnet-4-5 with and
// without the prompt cache. The session is shaped to bill what a session
// on the PyTorch example did without caching, about $1.01: a prefix
// (system prompt, tools, task) of 3500 tokens, and per turn 220 output
// tokens and 200 tokens of tool results. With breakpoints on the latest
// message, each request reads what the one before sent and writes what
// was added since. Run with -v for the numbers.
func TestSessionCost(t *testing.T) {
	const (
		requests = 31
		prefix   = 3500
		output   = 220
		results  = 200
	)
	var script []turn
	for k := range requests {
		in := int64(prefix + k*(output+results))
		tr := turn{calls: []call{{ToolListFiles, `{}`}}, in: in, out: output, cacheWrite: in}
		if k > 0 {
			tr.cacheRead = script[k-1].in
			tr.cacheWrite = in - tr.cacheRead
		}
		switch k {
		case requests - 2:
			tr.calls = []call{{ToolRecordStrategy, `{"strategy":"s"}`}}
		case requests - 1:
			tr.calls, tr.text = nil, "Code ready"
		}
		script = append(script, tr)
	}
	dir, _ := workdir(t)
	f := newFakeAPI(t, anthropicWire{}, script...)
	price, _ := DefaultPrices.Lookup("claude-sonnet-4-5")

	o := runFakeWith(t, f, dir, func(c *Config) { c.Model, c.Price = "claude-sonnet-4-5", &price })

	if o.err != nil || o.res.Turns != requests {
		t.Fatalf("Run: %v after %d turns", o.err, o.res.Turns)
	}
	cached := o.res.Usage
	uncached := Usage{InputTokens: cached.InputTokens, OutputTokens: cached.OutputTokens}
	before, after := price.Cost(uncached), o.res.Cost
	t.Logf("without caching: %d input tokens at the full rate, %d output: $%s", uncached.InputTokens, uncached.OutputTokens, FormatCost(before))
	t.Logf("with caching:    %d input tokens at the full rate, %d cache reads, %d cache writes, %d output: $%s",
		cached.InputTokens-cached.CacheReadTokens-cached.CacheWriteTokens, cached.CacheReadTokens, cached.CacheWriteTokens, cached.OutputTokens, FormatCost(after))
	if FormatCost(before) != "1.0137" || FormatCost(after) != "0.248985" {
		t.Errorf("billed $%s before and $%s after caching, want $1.0137 and $0.248985", FormatCost(before), FormatCost(after))
	}
}
