package agent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := map[string]struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		"seconds":              {header: map[string]string{"retry-after": "7"}, want: 7 * time.Second, ok: true},
		"fractional seconds":   {header: map[string]string{"retry-after": "0.5"}, want: 500 * time.Millisecond, ok: true},
		"milliseconds win":     {header: map[string]string{"retry-after-ms": "250", "retry-after": "9"}, want: 250 * time.Millisecond, ok: true},
		"HTTP date":            {header: map[string]string{"retry-after": now.Add(90 * time.Second).Format(http.TimeFormat)}, want: 90 * time.Second, ok: true},
		"date in the past":     {header: map[string]string{"retry-after": now.Add(-time.Hour).Format(http.TimeFormat)}, want: 0, ok: true},
		"capped":               {header: map[string]string{"retry-after": "86400"}, want: maxRetryAfter, ok: true},
		"absent":               {header: nil, ok: false},
		"garbage":              {header: map[string]string{"retry-after": "soon"}, ok: false},
		"negative":             {header: map[string]string{"retry-after": "-3"}, ok: false},
		"bad ms, good seconds": {header: map[string]string{"retry-after-ms": "x", "retry-after": "2"}, want: 2 * time.Second, ok: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := retryAfter(headerOf(tc.header), now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("retryAfter = %s, %t; want %s, %t", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	tr := newTransport("test", ClientOptions{Retry: RetryPolicy{Base: time.Second, Max: 8 * time.Second}})
	cases := map[int][2]time.Duration{
		1:  {500 * time.Millisecond, time.Second},
		2:  {time.Second, 2 * time.Second},
		4:  {4 * time.Second, 8 * time.Second},
		9:  {4 * time.Second, 8 * time.Second},
		70: {4 * time.Second, 8 * time.Second},
	}
	for attempt, bounds := range cases {
		if got := tr.backoff(attempt); got < bounds[0] || got > bounds[1] {
			t.Errorf("backoff(%d) = %s, want within [%s, %s]", attempt, got, bounds[0], bounds[1])
		}
	}
}

func TestRetryStopsAtTheTimeBudget(t *testing.T) {
	dir, _ := workdir(t)
	f := newFakeAPI(t, anthropicWire{}, turn{status: 429, errType: "rate_limit_error", header: map[string]string{"retry-after": "600"}})

	o := runFake(t, f, dir, Budget{Timeout: time.Minute})

	if o.err == nil || !strings.Contains(o.err.Error(), "would pass the time budget") || len(o.sleeps) != 0 {
		t.Errorf("error %v with waits %v, want no wait past the budget", o.err, o.sleeps)
	}
}

func TestPrices(t *testing.T) {
	cases := map[string]struct {
		model string
		want  Price
		ok    bool
	}{
		"dated release":        {model: "claude-sonnet-4-5-20250929", want: Price{Input: 3, Output: 15}, ok: true},
		"longest prefix":       {model: "gpt-4o-mini-2024-07-18", want: Price{Input: 0.15, Output: 0.6, CacheRead: 0.075}, ok: true},
		"family":               {model: "gpt-4o-2024-08-06", want: Price{Input: 2.5, Output: 10, CacheRead: 1.25}, ok: true},
		"newer opus":           {model: "claude-opus-4-5", want: Price{Input: 5, Output: 25}, ok: true},
		"older opus":           {model: "claude-opus-4-1-20250805", want: Price{Input: 15, Output: 75}, ok: true},
		"self-hosted, unknown": {model: "Qwen/Qwen2.5-Coder-32B-Instruct", ok: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := DefaultPrices.Lookup(tc.model)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Lookup(%q) = %v, %t; want %v, %t", tc.model, got, ok, tc.want, tc.ok)
			}
		})
	}
	over := DefaultPrices.With(PriceTable{"Qwen/": {Input: 0.1, Output: 0.2}, "gpt-4o": {Input: 1, Output: 1}})
	if p, ok := over.Lookup("Qwen/Qwen2.5-Coder-32B-Instruct"); !ok || p != (Price{Input: 0.1, Output: 0.2}) {
		t.Errorf("override lookup = %v, %t", p, ok)
	}
	if p, _ := over.Lookup("gpt-4o"); p != (Price{Input: 1, Output: 1}) {
		t.Errorf("overridden gpt-4o = %v", p)
	}
	if p, _ := DefaultPrices.Lookup("gpt-4o"); p != (Price{Input: 2.5, Output: 10, CacheRead: 1.25}) {
		t.Errorf("With changed the default table: gpt-4o = %v", p)
	}
}

func TestFormatCost(t *testing.T) {
	cases := map[float64]string{0: "0", 0.004725: "0.004725", 1.5: "1.5", 12: "12", 0.0000004: "0", 100: "100", 2.1234567: "2.123457"}
	for in, want := range cases {
		if got := FormatCost(in); got != want {
			t.Errorf("FormatCost(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestLoadPrices(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct {
		content string
		want    PriceTable
		err     string
	}{
		"table":          {content: `{"my-model": {"input": 0.5, "output": 1.5}}`, want: PriceTable{"my-model": {Input: 0.5, Output: 1.5}}},
		"cache":          {content: `{"m": {"input": 1, "output": 2, "cacheRead": 0.1, "cacheWrite": 1.25}}`, want: PriceTable{"m": {Input: 1, Output: 2, CacheRead: 0.1, CacheWrite: 1.25}}},
		"negative":       {content: `{"m": {"input": -1, "output": 1}}`, err: "cannot be negative"},
		"negative cache": {content: `{"m": {"input": 1, "output": 1, "cacheRead": -1}}`, err: "cannot be negative"},
		"not JSON":       {content: `my-model: 1`, err: "want {\"model\""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".json")
			writeTestFile(t, p, tc.content)
			got, err := LoadPrices(p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestAPIKey(t *testing.T) {
	env := map[string]string{"AUTORESEARCH_API_KEY": "", "ANTHROPIC_API_KEY": "ant-key", "OPENAI_API_KEY": "oai-key", "VLLM_KEY": "vllm-key"}
	cases := map[string]struct {
		provider, keyEnv string
		env              map[string]string
		key, source, err string
	}{
		"anthropic":          {provider: "anthropic", env: env, key: "ant-key", source: "ANTHROPIC_API_KEY"},
		"openai":             {provider: "openai", env: env, key: "oai-key", source: "OPENAI_API_KEY"},
		"neutral wins":       {provider: "openai", env: map[string]string{"AUTORESEARCH_API_KEY": "mine", "OPENAI_API_KEY": "oai-key"}, key: "mine", source: "AUTORESEARCH_API_KEY"},
		"named variable":     {provider: "openai", keyEnv: "VLLM_KEY", env: env, key: "vllm-key", source: "VLLM_KEY"},
		"named but empty":    {provider: "openai", keyEnv: "NOPE", env: env, err: "no API key: set NOPE"},
		"none":               {provider: "anthropic", env: map[string]string{}, err: "set AUTORESEARCH_API_KEY or ANTHROPIC_API_KEY"},
		"unknown provider":   {provider: "gemini", env: env, err: `unknown provider "gemini"`},
		"whitespace trimmed": {provider: "anthropic", env: map[string]string{"ANTHROPIC_API_KEY": " k \n"}, key: "k", source: "ANTHROPIC_API_KEY"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			key, source, err := APIKey(tc.provider, tc.keyEnv, func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || key != tc.key || source != tc.source {
				t.Errorf("APIKey = %q, %q, %v; want %q, %q", key, source, err, tc.key, tc.source)
			}
		})
	}
}

func TestRedactor(t *testing.T) {
	r := NewRedactor(testKey, "short", "")
	cases := map[string]string{
		"key " + testKey + " here":               "key [REDACTED] here",
		"a short word stays":                     "a short word stays",
		"sk-ant-api03-abcdefghijklmnopqrstuvwxy": "[REDACTED]",
		"sk-proj-ABCDEFGHIJKLMNOPQRSTUV":         "[REDACTED]",
		"task-list is not a key":                 "task-list is not a key",
	}
	for in, want := range cases {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

// scripted is a Provider that plays answers without HTTP, for the loop's
// own rules; the clock advances a minute per call.
type scripted struct {
	answers []Response
	calls   int
	now     *time.Time
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Complete(context.Context, Request) (Response, error) {
	s.calls++
	*s.now = s.now.Add(time.Minute)
	if s.calls > len(s.answers) {
		return Response{}, errors.New("script exhausted")
	}
	return s.answers[s.calls-1], nil
}

func TestLoopRules(t *testing.T) {
	strategy := ToolCall{ID: "s", Name: ToolRecordStrategy, Arguments: `{"strategy":"x"}`}
	list := ToolCall{ID: "l", Name: ToolListFiles, Arguments: `{}`}
	usage := Usage{InputTokens: 1000, OutputTokens: 100}
	cases := map[string]struct {
		answers []Response
		budget  Budget
		price   *Price
		// wantErr is "" for success, else part of the error.
		wantErr string
		turns   int
	}{
		"done":                            {answers: []Response{{ToolCalls: []ToolCall{strategy}, Usage: usage}, {Text: "Code ready", Usage: usage}}, turns: 2},
		"reminded to record the strategy": {answers: []Response{{Text: "Code ready"}, {ToolCalls: []ToolCall{strategy}}, {Text: "All done. Code ready."}}, turns: 3},
		"reminded to say Code ready":      {answers: []Response{{ToolCalls: []ToolCall{strategy}}, {Text: "I changed it."}, {Text: "Code ready"}}, turns: 3},
		"truncated answer continues":      {answers: []Response{{ToolCalls: []ToolCall{strategy}}, {Text: "Code ready", Truncated: true}, {Text: "Code ready"}}, turns: 3},
		"gives up after reminders":        {answers: []Response{{Text: "no"}, {Text: "no"}, {Text: "no"}, {Text: "no"}}, wantErr: "stopped 4 times without finishing", turns: 4},
		"empty answers are reminded":      {answers: []Response{{}, {ToolCalls: []ToolCall{strategy}}, {Text: "Code ready"}}, turns: 3},
		"token budget": {answers: []Response{{ToolCalls: []ToolCall{list}, Usage: usage}, {ToolCalls: []ToolCall{list}, Usage: usage}},
			budget: Budget{MaxTokens: 2000}, wantErr: "tokens budget spent before \"Code ready\": used 2200 of 2000 (--max-tokens)", turns: 2},
		"cost budget": {answers: []Response{{ToolCalls: []ToolCall{list}, Usage: usage}, {ToolCalls: []ToolCall{list}, Usage: usage}},
			budget: Budget{MaxCost: 0.005}, price: &Price{Input: 3, Output: 15}, wantErr: "cost budget spent before \"Code ready\": used $0.009 of $0.005", turns: 2},
		"cost budget needs a price": {budget: Budget{MaxCost: 1}, wantErr: "a cost budget needs the price", turns: 0},
		"time budget": {answers: []Response{{ToolCalls: []ToolCall{list}}, {ToolCalls: []ToolCall{list}}, {ToolCalls: []ToolCall{list}}},
			budget: Budget{Timeout: 2*time.Minute + time.Second}, wantErr: "time budget spent before \"Code ready\": used 3m0s of 2m1s (--timeout)", turns: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir, _ := workdir(t)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			p := &scripted{answers: tc.answers, now: &now}

			res, err := Run(context.Background(), Config{
				Provider: p, Model: "m", Prompt: "task", Tools: newTools(t, dir), Budget: tc.budget, Price: tc.price,
				Now: func() time.Time { return now },
			})

			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Run: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if res.Turns != tc.turns || p.calls != tc.turns {
				t.Errorf("%d turns and %d calls, want %d", res.Turns, p.calls, tc.turns)
			}
		})
	}
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHungRequestIsRetried(t *testing.T) {
	var calls int
	var mu sync.Mutex
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			t.Errorf("request body: %v", err)
		}
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			// Hang until the client gives up on this try, or the test ends.
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.Header().Set("content-type", "application/json")
		if _, err := io.WriteString(w, `{"type":"message","role":"assistant","content":[{"type":"text","text":"Code ready"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`); err != nil {
			t.Errorf("response: %v", err)
		}
	}))
	defer srv.Close()
	defer close(release)
	var s sleeps
	var retries []Retry
	p := NewAnthropic(ClientOptions{BaseURL: srv.URL, APIKey: testKey, RequestTimeout: 200 * time.Millisecond,
		Retry: RetryPolicy{Attempts: 2, Sleep: s.sleep}, OnRetry: func(r Retry) { retries = append(retries, r) }})

	resp, err := p.Complete(context.Background(), Request{Model: "m", MaxTokens: 10, Messages: []Message{{Role: RoleUser, Text: "hi"}}})

	if err != nil || resp.Text != "Code ready" || resp.Usage != (Usage{InputTokens: 3, OutputTokens: 2}) {
		t.Fatalf("Complete = %+v, %v", resp, err)
	}
	if len(retries) != 1 || !strings.Contains(retries[0].Err.Error(), "no answer within 200ms") {
		t.Errorf("retries %+v, want one after a try without an answer", retries)
	}
}

func TestStoppedRunSaysSo(t *testing.T) {
	dir, _ := workdir(t)
	now := time.Now()
	p := &scripted{now: &now}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, err := Run(ctx, Config{Provider: p, Model: "m", Prompt: "task", Tools: newTools(t, dir)})

	if err == nil || err.Error() != `stopped before "Code ready": context canceled` || p.calls != 0 {
		t.Errorf("error %v after %d calls, want a stop before any call", err, p.calls)
	}
}

func TestOpenAICompatibleQuirks(t *testing.T) {
	cases := map[string]struct {
		body string
		want []ToolCall
	}{
		"documented string arguments": {
			body: `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}]},"finish_reason":"tool_calls"}]}`,
			want: []ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a"}`}},
		},
		"object arguments, no id": {
			body: `{"choices":[{"message":{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"read_file","arguments":{"path":"a"}}}]},"finish_reason":"tool_calls"}]}`,
			want: []ToolCall{{ID: "call_0", Name: "read_file", Arguments: `{"path":"a"}`}},
		},
		"broken arguments reach the tool": {
			body: `{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"read_file","arguments":"{\"path\":"}}]},"finish_reason":"tool_calls"}]}`,
			want: []ToolCall{{ID: "c", Name: "read_file", Arguments: `{"path":`}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, err := parseOpenAI([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, resp.ToolCalls); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenAIMaxTokensField(t *testing.T) {
	cases := map[string]bool{
		"":                            true,
		"https://api.openai.com/v1":   true,
		"http://vllm:8000/v1":         false,
		"http://localhost:8080/v1/":   false,
		"https://api.openai.com.evil": false,
	}
	for base, native := range cases {
		if got := NewOpenAI(ClientOptions{BaseURL: base}).native; got != native {
			t.Errorf("NewOpenAI(%q).native = %t, want %t", base, got, native)
		}
	}
}
