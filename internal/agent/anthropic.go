package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// DefaultAnthropicURL is the public Anthropic API; requests go to
// <base>/v1/messages.
const DefaultAnthropicURL = "https://api.anthropic.com"

// anthropicVersion is the Messages API version this client speaks.
const anthropicVersion = "2023-06-01"

// Anthropic speaks the Anthropic Messages API with tool use.
type Anthropic struct {
	url, key, keySource string
	t                   *transport
}

// NewAnthropic returns a client for the Messages API at o.BaseURL, or the
// public API when it is empty.
func NewAnthropic(o ClientOptions) *Anthropic {
	base := strings.TrimRight(o.BaseURL, "/")
	if base == "" {
		base = DefaultAnthropicURL
	}
	return &Anthropic{url: base + "/v1/messages", key: o.APIKey, keySource: o.KeySource, t: newTransport("anthropic", o)}
}

// Name implements Provider.
func (a *Anthropic) Name() string { return "anthropic" }

type anthropicRequest struct {
	Model     string             `json:"model"`
	MaxTokens int                `json:"max_tokens"`
	System    []anthropicBlock   `json:"system,omitempty"`
	Messages  []anthropicMessage `json:"messages"`
	Tools     []anthropicTool    `json:"tools,omitempty"`
}

type anthropicMessage struct {
	Role    string           `json:"role"`
	Content []anthropicBlock `json:"content"`
}

// anthropicBlock is every content block this client sends or reads: text,
// tool_use and tool_result.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// CacheControl marks the end of a prefix for the prompt cache.
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type cacheControl struct {
	Type string `json:"type"`
}

// ephemeral is the 5-minute cache, refreshed by every read: turns of an
// agent come seconds apart, well within it.
var ephemeral = &cacheControl{Type: "ephemeral"}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anthropicResponse struct {
	Type       string            `json:"type"`
	Role       string            `json:"role"`
	Content    *[]anthropicBlock `json:"content"`
	StopReason string            `json:"stop_reason"`
	Usage      *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

type anthropicError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Details struct {
			ErrorCode string `json:"error_code"`
		} `json:"details"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

// Complete implements Provider.
func (a *Anthropic) Complete(ctx context.Context, req Request) (Response, error) {
	body := anthropicRequest{Model: req.Model, MaxTokens: req.MaxTokens}
	if req.System != "" {
		// The cache prefix runs tools, system, messages: this breakpoint
		// caches the tools and the system prompt.
		body.System = []anthropicBlock{{Type: "text", Text: req.System, CacheControl: ephemeral}}
	}
	for _, m := range req.Messages {
		body.Messages = append(body.Messages, toAnthropic(m))
	}
	markCache(body.Messages)
	for _, t := range req.Tools {
		body.Tools = append(body.Tools, anthropicTool{Name: t.Name, Description: t.Description, InputSchema: t.Schema})
	}
	data, err := json.Marshal(body)
	if err != nil {
		return Response{}, err
	}
	header := http.Header{}
	header.Set("content-type", "application/json")
	header.Set("anthropic-version", anthropicVersion)
	header.Set("x-api-key", a.key)
	raw, err := a.t.post(ctx, a.url, header, data, a.classify)
	if err != nil {
		return Response{}, err
	}
	return parseAnthropic(raw)
}

func toAnthropic(m Message) anthropicMessage {
	out := anthropicMessage{Role: string(m.Role)}
	// Tool results come first in their user message, as the API requires.
	for _, r := range m.ToolResults {
		out.Content = append(out.Content, anthropicBlock{Type: "tool_result", ToolUseID: r.CallID, Content: r.Content, IsError: r.IsError})
	}
	// The API refuses a text block of whitespace alone.
	if strings.TrimSpace(m.Text) != "" {
		out.Content = append(out.Content, anthropicBlock{Type: "text", Text: m.Text})
	}
	for _, c := range m.ToolCalls {
		input := json.RawMessage(c.Arguments)
		if !json.Valid(input) {
			input = json.RawMessage("{}")
		}
		out.Content = append(out.Content, anthropicBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input})
	}
	return out
}

// markCache puts cache breakpoints on the last block of the last two user
// messages. The last one writes the history to the cache for the next
// request; the one before is where the previous request wrote, so that
// this one reads it even when its new blocks are more than the API looks
// back over (20). With the system prompt's that makes three of the four
// breakpoints allowed.
func markCache(msgs []anthropicMessage) {
	marked := 0
	for i := len(msgs) - 1; i >= 0 && marked < 2; i-- {
		if c := msgs[i].Content; msgs[i].Role == string(RoleUser) && len(c) > 0 {
			c[len(c)-1].CacheControl = ephemeral
			marked++
		}
	}
}

func parseAnthropic(raw []byte) (Response, error) {
	var r anthropicResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return Response{}, fmt.Errorf("anthropic: %w: %v; body starts %q", ErrMalformed, err, snippet(raw))
	}
	if r.Type != "message" || r.Content == nil || r.StopReason == "" || r.Usage == nil {
		return Response{}, fmt.Errorf("anthropic: %w: want a message with content, stop_reason and usage; body starts %q", ErrMalformed, snippet(raw))
	}
	resp := Response{
		StopReason: r.StopReason,
		Truncated:  r.StopReason == "max_tokens",
		Usage: Usage{
			InputTokens:      r.Usage.InputTokens + r.Usage.CacheCreationInputTokens + r.Usage.CacheReadInputTokens,
			OutputTokens:     r.Usage.OutputTokens,
			CacheReadTokens:  r.Usage.CacheReadInputTokens,
			CacheWriteTokens: r.Usage.CacheCreationInputTokens,
		},
	}
	var text []string
	for _, b := range *r.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "tool_use":
			if b.ID == "" || b.Name == "" || !isJSONObject(b.Input) {
				return Response{}, fmt.Errorf("anthropic: %w: a tool_use block needs an id, a name and an input object; body starts %q", ErrMalformed, snippet(raw))
			}
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
		}
	}
	resp.Text = strings.Join(text, "\n")
	return resp, nil
}

func (a *Anthropic) classify(status int, header http.Header, body []byte) *APIError {
	e := &APIError{Status: status, Retryable: retryableStatus(status), RequestID: header.Get("request-id")}
	var b anthropicError
	if json.Unmarshal(body, &b) == nil && b.Type == "error" {
		e.Type, e.Message = b.Error.Type, b.Error.Message
		if e.RequestID == "" {
			e.RequestID = b.RequestID
		}
		if b.Error.Type == "overloaded_error" {
			e.Retryable = true
		}
		if b.Error.Details.ErrorCode == "enforced_spend_limit_reached" {
			// Waiting does not lift a spend limit.
			e.Retryable = false
			e.Hint = "the organization's spend limit is reached"
		}
	} else {
		e.Message = snippet(body)
	}
	if e.Hint == "" {
		e.Hint = statusHint(status, keyHint(a.keySource, "ANTHROPIC_API_KEY"), a.url)
	}
	return e
}

// keyHint names where the key should be.
func keyHint(source, providerVar string) string {
	if source != "" {
		return "check the key in " + source
	}
	return "set " + providerVar + " or AUTORESEARCH_API_KEY"
}

func isJSONObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}
