package agent

import (
	"context"
	"encoding/json"
)

// Provider is a model API that continues a conversation with tools.
type Provider interface {
	// Name is how errors and the transcript call the provider.
	Name() string
	// Complete sends the conversation and returns the model's next answer.
	Complete(ctx context.Context, req Request) (Response, error)
}

// Request is one call to the model.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int
}

// Role says who speaks a message.
type Role string

// The two roles of a conversation; tool results travel in user messages.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn of the conversation in a provider-neutral form.
type Message struct {
	Role Role   `json:"role"`
	Text string `json:"text,omitempty"`
	// ToolCalls are the assistant's requests to run tools.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolResults answer the previous assistant message's ToolCalls.
	ToolResults []ToolResult `json:"toolResults,omitempty"`
}

// ToolCall is the model asking to run a tool.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text of the arguments as the model sent it,
	// kept verbatim so that the conversation replays exactly.
	Arguments string `json:"arguments"`
}

// ToolResult is what a tool answered to a ToolCall.
type ToolResult struct {
	CallID  string `json:"callId"`
	Content string `json:"content"`
	IsError bool   `json:"isError,omitempty"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the tool's arguments object.
	Schema json.RawMessage
}

// Response is the model's answer to one Request.
type Response struct {
	Text      string
	ToolCalls []ToolCall
	// StopReason is the provider's own word for why the answer ended.
	StopReason string
	// Truncated is true when the answer hit the output token limit.
	Truncated bool
	Usage     Usage
}

// Usage counts tokens.
type Usage struct {
	// InputTokens counts all input tokens, the cached ones included, so
	// that it means the same with and without caching.
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	// CacheReadTokens and CacheWriteTokens are the parts of InputTokens
	// read from and written to the provider's prompt cache; they are
	// billed at their own rates.
	CacheReadTokens  int64 `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int64 `json:"cacheWriteTokens,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + o.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
	}
}

// Total is input plus output tokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }
