package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// testKey is the API key the fake servers expect; no output may show it.
const testKey = "test-key-0123456789abcdef"

// turn is one scripted answer of a fake model, in a provider-neutral form
// that each wire encodes as its API documents it.
type turn struct {
	text  string
	calls []call
	// truncated ends the answer at the output limit.
	truncated bool
	// in counts all input tokens; cacheRead and cacheWrite are parts of it.
	in, out               int64
	cacheRead, cacheWrite int64
	// status, when not 200, makes the answer an API error of errType.
	status  int
	errType string
	// message replaces the error's scripted message.
	message string
	header  map[string]string
	// raw replaces the whole body.
	raw string
}

func (t turn) errorMessage() string {
	if t.message != "" {
		return t.message
	}
	return "scripted " + t.errType
}

type call struct{ name, args string }

func toolTurn(calls ...call) turn { return turn{calls: calls, in: 100, out: 20} }

func textTurn(text string) turn { return turn{text: text, in: 100, out: 5} }

// wire is one API's exact format, as its reference shows it.
type wire interface {
	name() string
	path() string
	// encode renders the n-th answer (1-based).
	encode(t turn, n int) (status int, header http.Header, body string)
	// check fails the test when a request breaks the API's rules, and
	// returns what the fake needs of it.
	check(t *testing.T, r *http.Request, body []byte) request
	provider(url string, retry RetryPolicy) Provider
}

// request is what the fake read from one request.
type request struct {
	// results are the tool results it carries back to the model.
	results   []ToolResult
	maxTokens int
	// refusal, when set, is why the real API answers it with a 400.
	refusal string
}

// fakeAPI serves a script of turns, one per request, and records what the
// agent sent.
type fakeAPI struct {
	t      *testing.T
	wire   wire
	server *httptest.Server

	// contextWindow, when set, refuses a request whose input (the next
	// turn's in) and max_tokens do not fit, as vLLM does.
	contextWindow int64

	mu       sync.Mutex
	script   []turn
	requests int
	// seen holds what each request carried, refused ones included.
	seen []request
	// bodies are the requests' bodies.
	bodies []string
}

func newFakeAPI(t *testing.T, w wire, script ...turn) *fakeAPI {
	f := &fakeAPI{t: t, wire: w, script: script}
	f.server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.server.Close)
	return f
}

func (f *fakeAPI) serve(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.URL.Path != f.wire.path() {
		f.t.Errorf("%s %s, want POST %s", r.Method, r.URL.Path, f.wire.path())
		http.NotFound(rw, r)
		return
	}
	req := f.wire.check(f.t, r, body)
	f.mu.Lock()
	f.seen = append(f.seen, req)
	f.bodies = append(f.bodies, string(body))
	var next turn
	switch n := f.requests + 1; {
	case req.refusal != "":
		next = turn{status: 400, errType: "invalid_request_error", message: req.refusal}
	case n > len(f.script):
		f.t.Errorf("request %d, but the script has %d turns", n, len(f.script))
		next = turn{status: 500, errType: "api_error"}
	case f.contextWindow > 0 && f.script[n-1].in+int64(req.maxTokens) > f.contextWindow:
		next = turn{status: 400, errType: "BadRequestError", message: fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion).",
			f.contextWindow, f.script[n-1].in+int64(req.maxTokens), f.script[n-1].in, req.maxTokens)}
	default:
		f.requests = n
		next = f.script[n-1]
	}
	n := len(f.seen)
	f.mu.Unlock()
	status, header, out := f.wire.encode(next, n)
	for k, v := range header {
		rw.Header()[k] = v
	}
	rw.Header().Set("content-type", "application/json")
	rw.WriteHeader(status)
	// The client may have given up on this request already (the timeout
	// and retry tests); what it got is what the test checks.
	_, _ = io.WriteString(rw, out)
}

func (f *fakeAPI) provider(retry RetryPolicy) Provider { return f.wire.provider(f.server.URL, retry) }

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// sent returns the tool results of request n (1-based).
func (f *fakeAPI) sent(n int) []ToolResult { return f.request(n).results }

// request returns what request n (1-based) carried.
func (f *fakeAPI) request(n int) request {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n > len(f.seen) {
		return request{}
	}
	return f.seen[n-1]
}

// body returns the body of request n (1-based).
func (f *fakeAPI) body(n int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n > len(f.bodies) {
		return ""
	}
	return f.bodies[n-1]
}

func headerOf(m map[string]string) http.Header {
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}

// anthropicWire follows the Messages API reference: tool_use content
// blocks with an input object, stop_reason "tool_use", errors as
// {"type":"error","error":{"type","message"}} with a request-id header.
type anthropicWire struct{}

func (anthropicWire) name() string { return "anthropic" }
func (anthropicWire) path() string { return "/v1/messages" }

func (anthropicWire) provider(url string, retry RetryPolicy) Provider {
	return NewAnthropic(ClientOptions{BaseURL: url, APIKey: testKey, Retry: retry})
}

func (anthropicWire) encode(t turn, n int) (int, http.Header, string) {
	h := headerOf(t.header)
	h.Set("request-id", fmt.Sprintf("req_%04d", n))
	if t.raw != "" {
		return max(t.status, 200), h, t.raw
	}
	if t.status != 0 && t.status != 200 {
		body, _ := json.Marshal(map[string]any{
			"type":       "error",
			"error":      map[string]any{"type": t.errType, "message": t.errorMessage()},
			"request_id": fmt.Sprintf("req_%04d", n),
		})
		return t.status, h, string(body)
	}
	var content []map[string]any
	if t.text != "" {
		content = append(content, map[string]any{"type": "text", "text": t.text})
	}
	for i, c := range t.calls {
		content = append(content, map[string]any{
			"type": "tool_use", "id": fmt.Sprintf("toolu_%02d_%02d", n, i), "name": c.name, "input": json.RawMessage(c.args),
		})
	}
	stop := "end_turn"
	switch {
	case t.truncated:
		stop = "max_tokens"
	case len(t.calls) > 0:
		stop = "tool_use"
	}
	body, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("msg_%04d", n), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens": t.in - t.cacheRead - t.cacheWrite, "output_tokens": t.out,
			"cache_read_input_tokens": t.cacheRead, "cache_creation_input_tokens": t.cacheWrite,
		},
	})
	return 200, h, string(body)
}

// anthropicWireMessage and anthropicWireTool are a request's messages and
// tools as the Messages API reads them.
type anthropicWireMessage struct {
	Role    string           `json:"role"`
	Content []anthropicBlock `json:"content"`
}

type anthropicWireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func (anthropicWire) check(t *testing.T, r *http.Request, body []byte) request {
	for k, want := range map[string]string{"x-api-key": testKey, "anthropic-version": "2023-06-01", "content-type": "application/json"} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	var req struct {
		Model     string                 `json:"model"`
		MaxTokens int                    `json:"max_tokens"`
		System    []anthropicBlock       `json:"system"`
		Messages  []anthropicWireMessage `json:"messages"`
		Tools     []anthropicWireTool    `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body: %v\n%s", err, body)
	}
	if req.Model == "" || req.MaxTokens <= 0 || len(req.System) != 1 || req.System[0].Text == "" || len(req.Tools) == 0 {
		t.Errorf("request lacks model, max_tokens, system or tools: %s", body)
	}
	for _, tool := range req.Tools {
		if tool.Name == "" || tool.Description == "" || !isJSONObject(tool.InputSchema) {
			t.Errorf("tool %+v lacks a name, description or input_schema", tool)
		}
	}
	out := request{maxTokens: req.MaxTokens}
	breakpoints := checkAnthropicCacheEnds(t, req.System, req.Messages, body)
	for i, m := range req.Messages {
		var previous []anthropicBlock
		if i > 0 {
			previous = req.Messages[i-1].Content
		}
		breakpoints += checkAnthropicMessage(t, i, m, previous, i == len(req.Messages)-1, &out)
	}
	if breakpoints > 4 {
		out.refusal = fmt.Sprintf("A maximum of 4 blocks with cache_control may be provided. Found %d.", breakpoints)
	}
	return out
}

// checkAnthropicCacheEnds checks that the tools and system prompt, and the
// history up to the latest message, are cached for the next request. It
// returns the system prompt's cache breakpoints; those in the messages
// count in checkAnthropicMessage.
func checkAnthropicCacheEnds(t *testing.T, system []anthropicBlock, msgs []anthropicWireMessage, body []byte) int {
	breakpoints := 0
	if len(system) > 0 && system[0].CacheControl != nil {
		breakpoints++
	} else {
		t.Errorf("the system prompt has no cache_control: %s", body)
	}
	if n := len(msgs); n > 0 {
		if c := msgs[n-1].Content; len(c) == 0 || c[len(c)-1].CacheControl == nil {
			t.Errorf("the last message has no cache_control at its end: %s", body)
		}
	}
	return breakpoints
}

// checkAnthropicMessage checks message i, which follows one with the
// content previous: the roles alternate, and a user message answers every
// tool_use of the message before it, results first. The tool results of
// the last message go to out, as does the refusal of a whitespace-only
// text block. It returns the message's cache breakpoints.
func checkAnthropicMessage(t *testing.T, i int, m anthropicWireMessage, previous []anthropicBlock, last bool, out *request) int {
	want := "user"
	if i%2 == 1 {
		want = "assistant"
	}
	if m.Role != want || len(m.Content) == 0 {
		t.Errorf("message %d: role %q with %d blocks, want %q with content", i, m.Role, len(m.Content), want)
	}
	uses := map[string]bool{}
	for _, b := range previous {
		if b.Type == "tool_use" {
			uses[b.ID] = true
		}
	}
	breakpoints := 0
	seenText := false
	for _, b := range m.Content {
		if b.CacheControl != nil {
			breakpoints++
		}
		switch b.Type {
		case "tool_result":
			if seenText {
				t.Errorf("message %d: tool_result after text", i)
			}
			if !uses[b.ToolUseID] {
				t.Errorf("message %d: tool_result for %q, which the previous message did not use", i, b.ToolUseID)
			}
			delete(uses, b.ToolUseID)
			if last {
				out.results = append(out.results, ToolResult{CallID: b.ToolUseID, Content: b.Content, IsError: b.IsError})
			}
		case "text":
			seenText = true
			if strings.TrimSpace(b.Text) == "" {
				out.refusal = "messages: text content blocks must contain non-whitespace text"
			}
		case "tool_use":
			if m.Role != "assistant" || !isJSONObject(b.Input) {
				t.Errorf("message %d: bad tool_use %+v", i, b)
			}
		default:
			t.Errorf("message %d: unknown block type %q", i, b.Type)
		}
	}
	if m.Role == "user" && len(uses) > 0 {
		t.Errorf("message %d: no tool_result for %v", i, uses)
	}
	return breakpoints
}

// openaiWire follows the Chat Completions reference: message.tool_calls
// with function.arguments as a JSON string, finish_reason "tool_calls",
// errors as {"error":{"message","type","param","code"}}.
type openaiWire struct{}

func (openaiWire) name() string { return "openai" }
func (openaiWire) path() string { return "/v1/chat/completions" }

func (openaiWire) provider(url string, retry RetryPolicy) Provider {
	return NewOpenAI(ClientOptions{BaseURL: url + "/v1", APIKey: testKey, Retry: retry})
}

func (openaiWire) encode(t turn, n int) (int, http.Header, string) {
	h := headerOf(t.header)
	h.Set("x-request-id", fmt.Sprintf("req_%04d", n))
	if t.raw != "" {
		return max(t.status, 200), h, t.raw
	}
	if t.status != 0 && t.status != 200 {
		body, _ := json.Marshal(map[string]any{"error": map[string]any{
			"message": t.errorMessage(), "type": t.errType, "param": nil, "code": t.errType,
		}})
		return t.status, h, string(body)
	}
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if t.text != "" {
		msg["content"] = t.text
	}
	var calls []map[string]any
	for i, c := range t.calls {
		calls = append(calls, map[string]any{
			"id": fmt.Sprintf("call_%02d_%02d", n, i), "type": "function",
			"function": map[string]any{"name": c.name, "arguments": c.args},
		})
	}
	if calls != nil {
		msg["tool_calls"] = calls
	}
	finish := "stop"
	switch {
	case t.truncated:
		finish = "length"
	case len(t.calls) > 0:
		finish = "tool_calls"
	}
	body, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%04d", n), "object": "chat.completion", "created": 1700000000 + n, "model": "gpt-4.1-2025-04-14",
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage": map[string]any{
			"prompt_tokens": t.in, "completion_tokens": t.out, "total_tokens": t.in + t.out,
			"prompt_tokens_details": map[string]any{"cached_tokens": t.cacheRead},
		},
	})
	return 200, h, string(body)
}

// openaiWireMessage is a request's message as Chat Completions reads it.
type openaiWireMessage struct {
	Role       string           `json:"role"`
	Content    *string          `json:"content"`
	ToolCalls  []openaiToolCall `json:"tool_calls"`
	ToolCallID string           `json:"tool_call_id"`
}

func (openaiWire) check(t *testing.T, r *http.Request, body []byte) request {
	if got, want := r.Header.Get("authorization"), "Bearer "+testKey; got != want {
		t.Errorf("authorization = %q, want %q", got, want)
	}
	var req struct {
		Model               string              `json:"model"`
		MaxTokens           int                 `json:"max_tokens"`
		MaxCompletionTokens int                 `json:"max_completion_tokens"`
		Messages            []openaiWireMessage `json:"messages"`
		Tools               []openaiTool        `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body: %v\n%s", err, body)
	}
	// A compatible server (not api.openai.com) gets max_tokens.
	if req.Model == "" || req.MaxTokens <= 0 || req.MaxCompletionTokens != 0 || len(req.Tools) == 0 {
		t.Errorf("request lacks model, max_tokens or tools: %s", body)
	}
	for _, tool := range req.Tools {
		if tool.Type != "function" || tool.Function.Name == "" || !isJSONObject(tool.Function.Parameters) {
			t.Errorf("bad tool %+v", tool)
		}
	}
	if len(req.Messages) < 2 || req.Messages[0].Role != "system" || req.Messages[1].Role != "user" {
		t.Errorf("want a system then a user message first: %s", body)
	}
	c := openaiConversation{t: t, open: map[string]bool{}}
	for i, m := range req.Messages {
		c.check(i, m)
	}
	if len(c.open) > 0 {
		t.Errorf("tool calls %v unanswered", c.open)
	}
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role != "tool" {
		c.results = nil
	}
	return request{results: c.results, maxTokens: req.MaxTokens}
}

// openaiConversation checks a request's messages in order: every tool call
// is answered by a tool message before the next assistant message.
type openaiConversation struct {
	t *testing.T
	// open are the tool calls not answered yet.
	open map[string]bool
	// results are the tool results since the last other message.
	results []ToolResult
}

func (c *openaiConversation) check(i int, m openaiWireMessage) {
	t := c.t
	switch m.Role {
	case "assistant":
		c.results = nil
		if len(c.open) > 0 {
			t.Errorf("message %d: tool calls %v unanswered", i, c.open)
		}
		for _, call := range m.ToolCalls {
			var args string
			if call.Type != "function" || json.Unmarshal(call.Function.Arguments, &args) != nil {
				t.Errorf("message %d: tool call %s: arguments must be a JSON string", i, call.ID)
			}
			c.open[call.ID] = true
		}
		if m.Content == nil && len(m.ToolCalls) == 0 {
			t.Errorf("message %d: assistant message without content or tool calls", i)
		}
	case "tool":
		if !c.open[m.ToolCallID] || m.Content == nil {
			t.Errorf("message %d: tool result for unknown call %q", i, m.ToolCallID)
		}
		delete(c.open, m.ToolCallID)
		c.results = append(c.results, ToolResult{CallID: m.ToolCallID, Content: strings.TrimPrefix(*m.Content, "ERROR: "), IsError: strings.HasPrefix(*m.Content, "ERROR: ")})
	case "user", "system":
		c.results = nil
		if m.Content == nil || *m.Content == "" {
			t.Errorf("message %d: %s message without content", i, m.Role)
		}
	default:
		t.Errorf("message %d: unknown role %q", i, m.Role)
	}
}

var wires = []wire{anthropicWire{}, openaiWire{}}
