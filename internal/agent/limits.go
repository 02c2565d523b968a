package agent

import (
	"encoding/json"
	"fmt"
)

// Limits are a model's context window and the most tokens one answer may
// have.
type Limits struct {
	Context int
	Output  int
}

// ModelLimits are the limits of common model families, looked up like
// prices: the longest entry a model's name starts with.
var ModelLimits = map[string]Limits{
	"claude-opus-4-5":   {Context: 200_000, Output: 64_000},
	"claude-opus-4":     {Context: 200_000, Output: 32_000},
	"claude-sonnet-4":   {Context: 200_000, Output: 64_000},
	"claude-haiku-4-5":  {Context: 200_000, Output: 64_000},
	"claude-3-7-sonnet": {Context: 200_000, Output: 64_000},
	"claude-3-5-sonnet": {Context: 200_000, Output: 8192},
	"claude-3-5-haiku":  {Context: 200_000, Output: 8192},
	"claude-3-opus":     {Context: 200_000, Output: 4096},
	"claude-3-haiku":    {Context: 200_000, Output: 4096},
	"gpt-5":             {Context: 400_000, Output: 128_000},
	"gpt-4.1":           {Context: 1_047_576, Output: 32_768},
	"gpt-4o":            {Context: 128_000, Output: 16_384},
	"o1":                {Context: 200_000, Output: 100_000},
	"o3":                {Context: 200_000, Output: 100_000},
	"o4-mini":           {Context: 200_000, Output: 100_000},
}

// bytesPerToken is on the low side of what tokenizers average on code and
// English, so that the estimate of the history errs toward too many tokens.
const bytesPerToken = 3

// minAnswerTokens is the smallest answer worth asking for: below it a
// model cannot make a useful tool call.
const minAnswerTokens = 1024

// contextUse estimates the tokens of the conversation: the input and
// output tokens the last answer reported, plus the bytes added since.
type contextUse struct {
	tokens int64
	bytes  int
}

func (c *contextUse) add(s string) { c.bytes += len(s) }

// answered takes the usage of an answer; a server that reports no input
// tokens leaves the estimate to the bytes.
func (c *contextUse) answered(u Usage, text string, calls []ToolCall) {
	if u.InputTokens > 0 {
		c.tokens, c.bytes = u.InputTokens+u.OutputTokens, 0
		return
	}
	c.add(text)
	for _, call := range calls {
		c.add(call.Arguments)
	}
}

func (c *contextUse) addResults(results []ToolResult) {
	for _, r := range results {
		c.add(r.Content)
	}
}

func (c *contextUse) addSpecs(specs []ToolSpec) {
	data, _ := json.Marshal(specs)
	c.add(string(data))
}

func (c contextUse) estimate() int64 { return c.tokens + int64(c.bytes/bytesPerToken) }

// clamp returns want within the model's output ceiling and the room the
// history leaves in its context window; a zero limit is unknown. A
// thirty-second of the window is kept free for what the estimate misses:
// the chat template's tokens and text denser than bytesPerToken.
func (l Limits) clamp(want int, use contextUse) (int, error) {
	if l.Output > 0 {
		want = min(want, l.Output)
	}
	if l.Context <= 0 {
		return want, nil
	}
	room := int64(l.Context) - use.estimate() - int64(l.Context/32)
	if room < minAnswerTokens {
		return 0, fmt.Errorf("the conversation, about %d tokens, leaves no room for an answer in the model's context window of %d tokens (--context-window)", use.estimate(), l.Context)
	}
	return int(min(int64(want), room)), nil
}
