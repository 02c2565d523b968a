package agent

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/internal/keyenv"
)

const experiencesHeader = "status: running | rounds: 0\n\n| Round | Compliance | Result | Verdict | Strategy | Insight | Note |\n|---|---|---|---|---|---|---|\n"

// workdir is an experiment directory with a variable train.py, a fixed
// eval.py, the ledger, a git directory, and links: one to a directory
// outside, one to the fixed file.
func workdir(t *testing.T) (dir, outside string) {
	t.Helper()
	base := t.TempDir()
	dir, outside = filepath.Join(base, "exp"), filepath.Join(base, "outside")
	files := map[string]string{
		"exp/train.py":        "lr = 0.1\nsteps = 100\n",
		"exp/eval.py":         "print('score: 1.0')\n",
		"exp/experiences.md":  experiencesHeader,
		"exp/results.tsv":     "round\tvalue\n",
		"exp/.git/config":     "[core]\n",
		"outside/secret.txt":  "secret\n",
		"outside/unchanged.x": "x\n",
	}
	for name, content := range files {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("eval.py", filepath.Join(dir, "alias.py")); err != nil {
		t.Fatal(err)
	}
	return dir, outside
}

func newTools(t *testing.T, dir string) *Toolbox {
	t.Helper()
	tools, err := NewToolbox(ToolboxOptions{
		Dir: dir, Fixed: []string{"eval.py"}, ExperiencesPath: filepath.Join(dir, "experiences.md"), Round: 1,
		CommandTimeout: 30 * time.Second, Env: keyenv.Without(os.Environ(), testKey), Redact: NewRedactor(testKey),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tools.Close(); err != nil {
			t.Error(err)
		}
	})
	return tools
}

// sleeps records the waits of the retry policy instead of waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return nil
}

type outcome struct {
	res        Result
	err        error
	transcript string
	log        string
	sleeps     []time.Duration
}

func runFake(t *testing.T, f *fakeAPI, dir string, budget Budget) outcome {
	t.Helper()
	return runFakeWith(t, f, dir, func(c *Config) { c.Budget = budget })
}

// runFakeWith runs the agent against f with the config that set leaves.
func runFakeWith(t *testing.T, f *fakeAPI, dir string, set func(*Config)) outcome {
	t.Helper()
	var transcript, log bytes.Buffer
	var s sleeps
	cfg := Config{
		Provider:   f.provider(RetryPolicy{Attempts: 3, Base: time.Second, Max: 4 * time.Second, Sleep: s.sleep}),
		Model:      "test-model",
		Prompt:     "Improve score. Fixed: eval.py. Variable: train.py.",
		Tools:      newTools(t, dir),
		Price:      &Price{Input: 3, Output: 15},
		Transcript: NewTranscript(&transcript, NewRedactor(testKey), nil),
		Log:        &log,
	}
	set(&cfg)
	res, err := Run(context.Background(), cfg)
	return outcome{res: res, err: err, transcript: transcript.String(), log: log.String(), sleeps: s.d}
}

func readText(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestMultiTurnEdit(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name(), func(t *testing.T) {
			dir, _ := workdir(t)
			f := newFakeAPI(t, w,
				turn{text: "Let me read the training script.", calls: []call{{ToolReadFile, `{"path":"train.py"}`}}, in: 1000, out: 50},
				toolTurn(
					call{ToolEditFile, `{"path":"train.py","old_string":"lr = 0.1","new_string":"lr = 0.2"}`},
					call{ToolRecordStrategy, `{"strategy":"double the learning rate | faster\nprogress"}`},
				),
				textTurn("Code ready"),
			)

			o := runFake(t, f, dir, Budget{MaxTurns: 10})

			if o.err != nil {
				t.Fatalf("Run: %v\n%s", o.err, o.log)
			}
			if got := readText(t, filepath.Join(dir, "train.py")); got != "lr = 0.2\nsteps = 100\n" {
				t.Errorf("train.py = %q", got)
			}
			wantLedger := experiencesHeader + "| 1 |  |  |  | double the learning rate \\| faster progress |  |  |\n"
			if diff := cmp.Diff(wantLedger, readText(t, filepath.Join(dir, "experiences.md"))); diff != "" {
				t.Errorf("experiences.md (-want +got):\n%s", diff)
			}
			want := Result{Turns: 3, Usage: Usage{InputTokens: 1200, OutputTokens: 75}, Cost: 0.004725, Priced: true,
				Strategy: `double the learning rate \| faster progress`, Final: "Code ready"}
			if diff := cmp.Diff(want, o.res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if got := o.res.CostString(); got != "0.004725" {
				t.Errorf("cost %q, want 0.004725", got)
			}
			if read := f.sent(2); len(read) != 1 || read[0].IsError || read[0].Content != "lr = 0.1\nsteps = 100\n" {
				t.Errorf("the read_file result sent back = %+v", read)
			}
			for _, r := range f.sent(3) {
				if r.IsError {
					t.Errorf("turn 2's tool failed: %s", r.Content)
				}
			}
			for _, want := range []string{`"kind":"start"`, `"kind":"system"`, `"kind":"assistant"`, `"kind":"tool"`, `"kind":"end"`, "lr = 0.2"} {
				if !strings.Contains(o.transcript, want) {
					t.Errorf("transcript lacks %s:\n%s", want, o.transcript)
				}
			}
			if strings.Contains(o.transcript+o.log, testKey) {
				t.Error("the API key appears in the transcript or log")
			}
		})
	}
}

func TestPathEscapesAreRefused(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name(), func(t *testing.T) {
			dir, outside := workdir(t)
			f := newFakeAPI(t, w,
				toolTurn(
					call{ToolReadFile, `{"path":"../outside/secret.txt"}`},
					call{ToolReadFile, `{"path":"` + filepath.Join(outside, "secret.txt") + `"}`},
					call{ToolReadFile, `{"path":"link/secret.txt"}`},
					call{ToolWriteFile, `{"path":"../outside/evil.txt","content":"x"}`},
					call{ToolWriteFile, `{"path":"link/evil.txt","content":"x"}`},
					call{ToolEditFile, `{"path":"link/unchanged.x","old_string":"x","new_string":"y"}`},
					call{ToolListFiles, `{"path":"link"}`},
				),
				toolTurn(call{ToolRecordStrategy, `{"strategy":"stay inside"}`}),
				textTurn("Code ready"),
			)

			o := runFake(t, f, dir, Budget{MaxTurns: 10})

			if o.err != nil {
				t.Fatalf("Run: %v", o.err)
			}
			results := f.sent(2)
			if len(results) != 7 {
				t.Fatalf("got %d tool results, want 7: %+v", len(results), results)
			}
			for i, r := range results {
				if !r.IsError || !strings.Contains(r.Content, "refused") || !strings.Contains(r.Content, "outside the working directory") {
					t.Errorf("call %d: %+v, want a refusal naming the working directory", i, r)
				}
				if strings.Contains(r.Content, "secret\n") {
					t.Errorf("call %d leaked the outside file", i)
				}
			}
			if _, err := os.Stat(filepath.Join(outside, "evil.txt")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a file was written outside: %v", err)
			}
			if got := readText(t, filepath.Join(outside, "unchanged.x")); got != "x\n" {
				t.Errorf("outside file changed to %q", got)
			}
		})
	}
}

func TestProtectedWritesAreRefused(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name(), func(t *testing.T) {
			dir, _ := workdir(t)
			calls := map[string]call{
				"fixed file":             {ToolWriteFile, `{"path":"eval.py","content":"print('score: 0.0')"}`},
				"fixed file edited":      {ToolEditFile, `{"path":"./eval.py","old_string":"1.0","new_string":"0.0"}`},
				"fixed file via link":    {ToolWriteFile, `{"path":"alias.py","content":"x"}`},
				"fixed file absolute":    {ToolEditFile, `{"path":"` + filepath.Join(dir, "eval.py") + `","old_string":"1.0","new_string":"0.0"}`},
				"ledger":                 {ToolWriteFile, `{"path":"experiences.md","content":"| 1 | ok |"}`},
				"ledger edited":          {ToolEditFile, `{"path":"experiences.md","old_string":"rounds: 0","new_string":"rounds: 9"}`},
				"results":                {ToolWriteFile, `{"path":"results.tsv","content":""}`},
				"git directory":          {ToolWriteFile, `{"path":".git/config","content":"[core]\nbare = true\n"}`},
				"git directory, dotted":  {ToolWriteFile, `{"path":"sub/../.git/hooks/pre-commit","content":"x"}`},
				"supervisor state":       {ToolWriteFile, `{"path":".autoresearch/state.json","content":"{}"}`},
				"git write in the shell": {ToolRunCommand, `{"command":"git commit -am cheat"}`},
			}
			var names []string
			var script []call
			for name, c := range calls {
				names = append(names, name)
				script = append(script, c)
			}
			f := newFakeAPI(t, w,
				toolTurn(script...),
				toolTurn(call{ToolRecordStrategy, `{"strategy":"try, and be refused"}`}),
				textTurn("Code ready"),
			)

			o := runFake(t, f, dir, Budget{MaxTurns: 10})

			if o.err != nil {
				t.Fatalf("Run: %v", o.err)
			}
			results := f.sent(2)
			if len(results) != len(names) {
				t.Fatalf("got %d tool results, want %d", len(results), len(names))
			}
			for i, r := range results {
				if !r.IsError || !strings.HasPrefix(r.Content, "refused: ") {
					t.Errorf("%s: %+v, want a refusal", names[i], r)
				}
			}
			for name, want := range map[string]string{
				"eval.py": "print('score: 1.0')\n", ".git/config": "[core]\n", "results.tsv": "round\tvalue\n",
				"experiences.md": experiencesHeader + "| 1 |  |  |  | try, and be refused |  |  |\n",
			} {
				if got := readText(t, filepath.Join(dir, name)); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, ".autoresearch")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf(".autoresearch was created: %v", err)
			}
		})
	}
}

func TestRetriesHonourRetryAfter(t *testing.T) {
	cases := map[string]struct {
		wire       wire
		busy       turn
		wantSleeps func(t *testing.T, got []time.Duration)
	}{
		"anthropic 429 with retry-after": {
			wire: anthropicWire{},
			busy: turn{status: 429, errType: "rate_limit_error", header: map[string]string{"retry-after": "7"}},
			wantSleeps: func(t *testing.T, got []time.Duration) {
				if diff := cmp.Diff([]time.Duration{7 * time.Second}, got); diff != "" {
					t.Errorf("waits (-want +got):\n%s", diff)
				}
			},
		},
		"anthropic 529 overloaded, backoff": {
			wire: anthropicWire{},
			busy: turn{status: 529, errType: "overloaded_error"},
			wantSleeps: func(t *testing.T, got []time.Duration) {
				if len(got) != 1 || got[0] < 500*time.Millisecond || got[0] > time.Second {
					t.Errorf("waits %v, want one jittered backoff within [0.5s, 1s]", got)
				}
			},
		},
		"openai 429 with retry-after-ms": {
			wire: openaiWire{},
			busy: turn{status: 429, errType: "rate_limit_exceeded", header: map[string]string{"retry-after-ms": "1500", "retry-after": "2"}},
			wantSleeps: func(t *testing.T, got []time.Duration) {
				if diff := cmp.Diff([]time.Duration{1500 * time.Millisecond}, got); diff != "" {
					t.Errorf("waits (-want +got):\n%s", diff)
				}
			},
		},
		"openai 503": {
			wire: openaiWire{},
			busy: turn{status: 503, errType: "server_error", header: map[string]string{"retry-after": "3"}},
			wantSleeps: func(t *testing.T, got []time.Duration) {
				if diff := cmp.Diff([]time.Duration{3 * time.Second}, got); diff != "" {
					t.Errorf("waits (-want +got):\n%s", diff)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir, _ := workdir(t)
			f := newFakeAPI(t, tc.wire, tc.busy, toolTurn(call{ToolRecordStrategy, `{"strategy":"s"}`}), textTurn("Code ready"))

			o := runFake(t, f, dir, Budget{})

			if o.err != nil {
				t.Fatalf("Run: %v", o.err)
			}
			if f.count() != 3 {
				t.Errorf("%d requests, want 3", f.count())
			}
			if o.res.Turns != 2 {
				t.Errorf("%d turns, want 2 (a retry is not a turn)", o.res.Turns)
			}
			tc.wantSleeps(t, o.sleeps)
		})
	}
}

func TestPermanentErrorsFailClearly(t *testing.T) {
	cases := map[string]struct {
		wire     wire
		answer   turn
		wantType string
		want     []string
	}{
		"anthropic 401":      {anthropicWire{}, turn{status: 401, errType: "authentication_error"}, "apierror", []string{"anthropic: HTTP 401 authentication_error", "request req_0001", "the API key was rejected", "ANTHROPIC_API_KEY"}},
		"anthropic 404":      {anthropicWire{}, turn{status: 404, errType: "not_found_error"}, "apierror", []string{"HTTP 404", "check --model and --base-url"}},
		"anthropic 403":      {anthropicWire{}, turn{status: 403, errType: "permission_error"}, "apierror", []string{"HTTP 403", "may not use this model"}},
		"anthropic spend":    {anthropicWire{}, turn{status: 429, raw: `{"type":"error","error":{"type":"rate_limit_error","message":"spend limit","details":{"error_code":"enforced_spend_limit_reached"}}}`}, "apierror", []string{"spend limit is reached"}},
		"openai 401":         {openaiWire{}, turn{status: 401, errType: "invalid_api_key"}, "apierror", []string{"openai: HTTP 401 invalid_api_key", "OPENAI_API_KEY"}},
		"openai quota":       {openaiWire{}, turn{status: 429, errType: "insufficient_quota"}, "apierror", []string{"quota is used up"}},
		"anthropic cut JSON": {anthropicWire{}, turn{raw: `{"id":"msg_1","type":"message","content":[`}, "malformed", []string{"anthropic: malformed answer"}},
		"anthropic no usage": {anthropicWire{}, turn{raw: `{"id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":"end_turn"}`}, "malformed", []string{"want a message with content, stop_reason and usage"}},
		"anthropic bad tool": {anthropicWire{}, turn{raw: `{"type":"message","content":[{"type":"tool_use","name":"read_file","input":"x"}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`}, "malformed", []string{"tool_use block needs an id"}},
		"openai no choices":  {openaiWire{}, turn{raw: `{"object":"chat.completion","choices":[]}`}, "malformed", []string{"openai: malformed answer", "choices[0].message"}},
		"openai HTML":        {openaiWire{}, turn{raw: `<html>bad gateway</html>`}, "malformed", []string{"malformed answer", "<html>"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir, _ := workdir(t)
			f := newFakeAPI(t, tc.wire, tc.answer)

			o := runFake(t, f, dir, Budget{})

			if o.err == nil {
				t.Fatal("Run succeeded, want an error")
			}
			var apiErr *APIError
			switch tc.wantType {
			case "apierror":
				if !errors.As(o.err, &apiErr) || apiErr.Retryable {
					t.Errorf("error %v is not a permanent *APIError", o.err)
				}
			case "malformed":
				if !errors.Is(o.err, ErrMalformed) {
					t.Errorf("error %v is not ErrMalformed", o.err)
				}
			}
			for _, want := range tc.want {
				if !strings.Contains(o.err.Error(), want) {
					t.Errorf("error %q lacks %q", o.err, want)
				}
			}
			if f.count() != 1 || len(o.sleeps) != 0 {
				t.Errorf("%d requests and waits %v, want one request and no retry", f.count(), o.sleeps)
			}
			if strings.Contains(o.err.Error()+o.transcript, testKey) {
				t.Error("the API key appears in the error or transcript")
			}
			if !strings.Contains(o.transcript, `"kind":"error"`) {
				t.Errorf("transcript lacks the error:\n%s", o.transcript)
			}
		})
	}
}

func TestRetriesGiveUp(t *testing.T) {
	dir, _ := workdir(t)
	busy := turn{status: 500, errType: "api_error"}
	f := newFakeAPI(t, anthropicWire{}, busy, busy, busy)

	o := runFake(t, f, dir, Budget{})

	var apiErr *APIError
	if !errors.As(o.err, &apiErr) || apiErr.Status != http.StatusInternalServerError || !strings.Contains(o.err.Error(), "giving up after 3 attempts") {
		t.Errorf("error %v, want giving up after 3 attempts on HTTP 500", o.err)
	}
	if len(o.sleeps) != 2 {
		t.Errorf("waits %v, want 2", o.sleeps)
	}
}

func TestTurnBudget(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name(), func(t *testing.T) {
			dir, _ := workdir(t)
			f := newFakeAPI(t, w,
				toolTurn(call{ToolRecordStrategy, `{"strategy":"look around forever"}`}),
				toolTurn(call{ToolListFiles, `{}`}),
				toolTurn(call{ToolListFiles, `{}`}),
			)

			o := runFake(t, f, dir, Budget{MaxTurns: 2})

			var budget *BudgetError
			if !errors.As(o.err, &budget) {
				t.Fatalf("error %v, want a *BudgetError", o.err)
			}
			want := &BudgetError{Resource: "turns", Limit: "2 (--max-turns)", Used: "2", Strategy: "look around forever"}
			if diff := cmp.Diff(want, budget); diff != "" {
				t.Errorf("budget error (-want +got):\n%s", diff)
			}
			if o.res.Turns != 2 || o.res.Usage.Total() != 240 || f.count() != 2 {
				t.Errorf("result %+v after %d requests, want 2 turns and 240 tokens", o.res, f.count())
			}
			if !strings.Contains(o.err.Error(), `turns budget spent before "Code ready"`) {
				t.Errorf("error %q does not say which budget ran out", o.err)
			}
		})
	}
}
