package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// DefaultOpenAIURL is the public OpenAI API; requests go to
// <base>/chat/completions, so a self-hosted server's base ends in /v1.
const DefaultOpenAIURL = "https://api.openai.com/v1"

// OpenAI speaks the Chat Completions API with tool calls, as OpenAI and
// compatible servers (vLLM, llama.cpp, ...) serve it.
type OpenAI struct {
	url, key, keySource string
	// native is true for OpenAI's own API, which takes
	// max_completion_tokens; compatible servers take max_tokens.
	native bool
	t      *transport
}

// NewOpenAI returns a client for the Chat Completions API at o.BaseURL, or
// the public API when it is empty.
func NewOpenAI(o ClientOptions) *OpenAI {
	base := strings.TrimRight(o.BaseURL, "/")
	if base == "" {
		base = DefaultOpenAIURL
	}
	native := false
	if u, err := url.Parse(base); err == nil {
		native = u.Hostname() == "api.openai.com"
	}
	return &OpenAI{url: base + "/chat/completions", key: o.APIKey, keySource: o.KeySource, native: native, t: newTransport("openai", o)}
}

// Name implements Provider.
func (o *OpenAI) Name() string { return "openai" }

type openaiRequest struct {
	Model               string          `json:"model"`
	Messages            []openaiMessage `json:"messages"`
	Tools               []openaiTool    `json:"tools,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
}

type openaiMessage struct {
	Role string `json:"role"`
	// Content is null in an assistant message that only calls tools.
	Content    *string          `json:"content"`
	ToolCalls  []openaiToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

type openaiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a JSON string holding the arguments object; some
		// compatible servers send the object itself, which parsing accepts.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type openaiTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type openaiResponse struct {
	Object  string `json:"object"`
	Choices []struct {
		Message *struct {
			Role      string           `json:"role"`
			Content   *string          `json:"content"`
			Refusal   *string          `json:"refusal"`
			ToolCalls []openaiToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			// CachedTokens is the part of PromptTokens the API cached on
			// its own, for prompts from 1024 tokens on.
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

type openaiError struct {
	Error *struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// Complete implements Provider.
func (o *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	body := openaiRequest{Model: req.Model}
	if o.native {
		body.MaxCompletionTokens = req.MaxTokens
	} else {
		body.MaxTokens = req.MaxTokens
	}
	if req.System != "" {
		body.Messages = append(body.Messages, openaiMessage{Role: "system", Content: &req.System})
	}
	for _, m := range req.Messages {
		body.Messages = append(body.Messages, toOpenAI(m)...)
	}
	for _, t := range req.Tools {
		var tool openaiTool
		tool.Type = "function"
		tool.Function.Name, tool.Function.Description, tool.Function.Parameters = t.Name, t.Description, t.Schema
		body.Tools = append(body.Tools, tool)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return Response{}, err
	}
	header := http.Header{}
	header.Set("content-type", "application/json")
	if o.key != "" {
		header.Set("authorization", "Bearer "+o.key)
	}
	raw, err := o.t.post(ctx, o.url, header, data, o.classify)
	if err != nil {
		return Response{}, err
	}
	return parseOpenAI(raw)
}

// toOpenAI maps one message to the API's: each tool result is a message
// of its own with the role "tool".
func toOpenAI(m Message) []openaiMessage {
	var out []openaiMessage
	for _, r := range m.ToolResults {
		content := r.Content
		if r.IsError {
			// The API has no error flag for tool results.
			content = "ERROR: " + content
		}
		out = append(out, openaiMessage{Role: "tool", ToolCallID: r.CallID, Content: &content})
	}
	if m.Role == RoleUser && m.Text == "" {
		return out
	}
	msg := openaiMessage{Role: string(m.Role)}
	if strings.TrimSpace(m.Text) != "" || len(m.ToolCalls) == 0 {
		text := m.Text
		msg.Content = &text
	}
	for _, c := range m.ToolCalls {
		var call openaiToolCall
		call.ID, call.Type = c.ID, "function"
		call.Function.Name = c.Name
		args, _ := json.Marshal(c.Arguments)
		call.Function.Arguments = args
		msg.ToolCalls = append(msg.ToolCalls, call)
	}
	return append(out, msg)
}

func parseOpenAI(raw []byte) (Response, error) {
	var r openaiResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return Response{}, fmt.Errorf("openai: %w: %v; body starts %q", ErrMalformed, err, snippet(raw))
	}
	if len(r.Choices) == 0 || r.Choices[0].Message == nil {
		return Response{}, fmt.Errorf("openai: %w: want choices[0].message; body starts %q", ErrMalformed, snippet(raw))
	}
	choice := r.Choices[0]
	resp := Response{StopReason: choice.FinishReason, Truncated: choice.FinishReason == "length"}
	if r.Usage != nil {
		resp.Usage = Usage{InputTokens: r.Usage.PromptTokens, OutputTokens: r.Usage.CompletionTokens}
		if d := r.Usage.PromptTokensDetails; d != nil {
			resp.Usage.CacheReadTokens = d.CachedTokens
		}
	}
	if c := choice.Message.Content; c != nil {
		resp.Text = *c
	} else if ref := choice.Message.Refusal; ref != nil {
		resp.Text = *ref
	}
	for i, c := range choice.Message.ToolCalls {
		if c.Function.Name == "" {
			return Response{}, fmt.Errorf("openai: %w: a tool call needs function.name; body starts %q", ErrMalformed, snippet(raw))
		}
		id := c.ID
		if id == "" {
			// Some compatible servers leave the id out; the reply needs one.
			id = fmt.Sprintf("call_%d", i)
		}
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: id, Name: c.Function.Name, Arguments: openaiArguments(c.Function.Arguments)})
	}
	return resp, nil
}

// openaiArguments returns the arguments' JSON text, whether they came as
// the documented JSON string or as an object.
func openaiArguments(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func (o *OpenAI) classify(status int, header http.Header, body []byte) *APIError {
	e := &APIError{Status: status, Retryable: retryableStatus(status), RequestID: header.Get("x-request-id")}
	var b openaiError
	if json.Unmarshal(body, &b) == nil && b.Error != nil {
		e.Type, e.Message = b.Error.Type, b.Error.Message
		code := strings.Trim(string(b.Error.Code), `"`)
		if code == "insufficient_quota" || b.Error.Type == "insufficient_quota" {
			// Waiting does not refill a quota.
			e.Retryable = false
			e.Hint = "the account's quota is used up"
		}
	} else {
		e.Message = snippet(body)
	}
	if e.Hint == "" {
		e.Hint = statusHint(status, keyHint(o.keySource, "OPENAI_API_KEY"), o.url)
	}
	return e
}
