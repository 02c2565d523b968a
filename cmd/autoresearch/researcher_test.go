package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// agentTestKey is the key the fake API expects; no output may show it.
const agentTestKey = "sk-ant-test-0123456789abcdefghij"

func sourceRoot() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..")
}

// recipeStub records how it was called, as the real agent's executable
// would be: its arguments one per line, and its stdin.
const recipeStub = `#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done > "$STUB_OUT/args"
cat > "$STUB_OUT/stdin"
echo "Code ready"
`

// TestRecipes runs each recipe's command line as the runner would, with a
// stub of the agent first on PATH, so that a recipe that stops passing
// the prompt, or stops parsing, fails here.
func TestRecipes(t *testing.T) {
	type expect struct {
		binary string
		// stdin is true when the prompt goes in on stdin.
		stdin bool
		// args must appear in order; PROMPT and EXPERIENCES stand for the paths.
		args []string
		// secret is the variable that must come from a Secret.
		secret string
	}
	want := map[string]expect{
		"claude-code.yaml": {binary: "claude", stdin: true, secret: "ANTHROPIC_API_KEY",
			args: []string{"-p", "--permission-mode", "acceptEdits", "--allowedTools", "Read,Edit,Write,Glob,Grep,Bash", "--max-turns", "60"}},
		"codex.yaml": {binary: "codex", stdin: true, secret: "CODEX_API_KEY",
			args: []string{"exec", "--sandbox", "workspace-write", "--skip-git-repo-check", "-"}},
		"aider.yaml": {binary: "aider", secret: "ANTHROPIC_API_KEY",
			args: []string{"--message-file", "PROMPT", "--yes-always", "--no-git", "--no-auto-commits", "--no-gitignore", "train/main.go", "EXPERIENCES"}},
	}
	files, err := filepath.Glob(filepath.Join(sourceRoot(), "examples", "recipes", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	if diff := cmp.Diff(slices.Sorted(maps.Keys(want)), names); diff != "" {
		t.Fatalf("recipes (-tested +present):\n%s", diff)
	}
	for name, exp := range want {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(sourceRoot(), "examples", "recipes", name))
			if err != nil {
				t.Fatal(err)
			}
			var recipe struct {
				Researcher v1alpha1.ResearcherSpec `json:"researcher"`
			}
			if err := yaml.UnmarshalStrict(data, &recipe); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			r := recipe.Researcher
			checkRecipeFits(t, r)
			if r.Image == "" || r.Timeout == nil {
				t.Errorf("the recipe has no image or timeout: %+v", r)
			}
			fromSecret := false
			for _, e := range r.Env {
				if strings.Contains(e.Name, "KEY") || strings.Contains(e.Name, "TOKEN") {
					if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
						t.Errorf("%s must come from a secretKeyRef", e.Name)
					}
					fromSecret = fromSecret || e.Name == exp.secret
				}
			}
			if !fromSecret {
				t.Errorf("the recipe does not take %s from a Secret", exp.secret)
			}

			work, stubOut := t.TempDir(), t.TempDir()
			bin := filepath.Join(t.TempDir(), "bin")
			prompt := filepath.Join(work, ".autoresearch", "round-1", "prompt.md")
			experiences := filepath.Join(work, "experiences.md")
			const promptText = "You are an ML researcher. Your task is to improve val_bpb (minimize).\nReport \"Code ready\".\n"
			for p, content := range map[string]string{
				prompt: promptText, experiences: "| Round |\n", filepath.Join(work, "train", "main.go"): "package main\n",
				filepath.Join(bin, exp.binary): recipeStub,
			} {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("/bin/sh", "-c", r.Command)
			cmd.Dir = work
			cmd.Env = append(os.Environ(),
				"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
				"STUB_OUT="+stubOut,
				"AUTORESEARCH_ROUND=1",
				"AUTORESEARCH_PROMPT_FILE="+prompt,
				"AUTORESEARCH_EXPERIENCES="+experiences,
				"AUTORESEARCH_RESULT_FILE="+filepath.Join(work, ".autoresearch", "round-1", "researcher-result.json"),
				"AUTORESEARCH_LOG_DIR="+filepath.Dir(prompt),
			)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Code ready") {
				t.Fatalf("sh -c %q: %v\n%s", r.Command, err, out)
			}

			args := strings.Split(strings.TrimSuffix(readResearcherFile(t, filepath.Join(stubOut, "args")), "\n"), "\n")
			if !containsInOrder(args, exp.args, map[string]string{"PROMPT": prompt, "EXPERIENCES": experiences}) {
				t.Errorf("%s got arguments %q, want %q in this order", exp.binary, args, exp.args)
			}
			stdin := readResearcherFile(t, filepath.Join(stubOut, "stdin"))
			if exp.stdin && stdin != promptText {
				t.Errorf("%s read %q on stdin, want the prompt", exp.binary, stdin)
			}
			if !exp.stdin && !slices.Contains(args, prompt) {
				t.Errorf("%s got neither the prompt on stdin nor its path: %q", exp.binary, args)
			}
		})
	}
}

// checkRecipeFits puts the recipe into the tiny-lm-go experiment and
// validates the whole object as `autoresearch run` does.
func checkRecipeFits(t *testing.T, r v1alpha1.ResearcherSpec) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sourceRoot(), "examples", "tiny-lm-go", "experiment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var obj v1alpha1.AutoResearch
	if err := yaml.UnmarshalStrict(data, &obj); err != nil {
		t.Fatal(err)
	}
	obj.Spec.Researcher = r
	data, err = yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.ParseExperiment(data); err != nil {
		t.Errorf("the recipe does not make a valid experiment: %v", err)
	}
}

// containsInOrder reports whether want appears in got in order, not
// necessarily next to each other, with placeholders replaced.
func containsInOrder(got, want []string, placeholders map[string]string) bool {
	i := 0
	for _, g := range got {
		if i == len(want) {
			break
		}
		w := want[i]
		if p, ok := placeholders[w]; ok {
			w = p
		}
		if g == w {
			i++
		}
	}
	return i == len(want)
}

func readResearcherFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// fakeMessages is an Anthropic Messages API. In "edit" mode the model edits
// train.py and records its strategy, then answers "Code ready"; "cached" is
// "edit" with the prompt written to the cache, then read from it; in "loop"
// mode it lists files forever; in "unauthorized" mode the key is rejected.
// A response it fails to write reaches the Researcher under test as an
// error, which is where the test looks.
type fakeMessages struct {
	mode string
	mu   sync.Mutex
	n    int
}

func (f *fakeMessages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("content-type", "application/json")
	if f.mode == "unauthorized" || r.Header.Get("x-api-key") != agentTestKey {
		w.Header().Set("request-id", "req_401")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		return
	}
	toolUse := func(id, name string, input any) map[string]any {
		return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
	}
	content := []map[string]any{toolUse("toolu_1", "list_files", map[string]any{})}
	stop := "tool_use"
	if f.mode == "edit" || f.mode == "cached" {
		content = []map[string]any{
			toolUse("toolu_1", "edit_file", map[string]any{"path": "train.py", "old_string": "lr = 0.1", "new_string": "lr = 0.3"}),
			toolUse("toolu_2", "record_strategy", map[string]any{"strategy": "triple the learning rate"}),
		}
		if strings.Contains(string(body), `"tool_result"`) {
			content, stop = []map[string]any{{"type": "text", "text": "Code ready"}}, "end_turn"
		}
	}
	usage := map[string]any{"input_tokens": 1000, "output_tokens": 100}
	if f.mode == "cached" {
		usage["input_tokens"], usage["cache_creation_input_tokens"] = 100, 900
		if stop == "end_turn" {
			usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"] = 900, 0
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": content,
		"stop_reason": stop, "stop_sequence": nil, "usage": usage,
	})
}

// agentWorkdir makes an experiment directory, enters it, and sets the
// Researcher contract's variables as the runner does, without a log
// directory.
func agentWorkdir(t *testing.T) (dir, resultFile string) {
	t.Helper()
	dir = t.TempDir()
	for name, content := range map[string]string{
		"train.py": "lr = 0.1\n", "eval.py": "print('score: 1')\n", "experiences.md": "| Round | Compliance | Result | Verdict | Strategy | Insight | Note |\n|---|---|---|---|---|---|---|\n",
		"prompt.md": "Improve score by changing train.py.\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	resultFile = filepath.Join(t.TempDir(), "result.json")
	for k, v := range map[string]string{
		"AUTORESEARCH_ROUND": "1", "AUTORESEARCH_PROMPT_FILE": filepath.Join(dir, "prompt.md"),
		"AUTORESEARCH_EXPERIENCES": filepath.Join(dir, "experiences.md"), "AUTORESEARCH_RESULT_FILE": resultFile,
		"AUTORESEARCH_LOG_DIR": "", "AUTORESEARCH_FIXED_FILES": "eval.py", "AUTORESEARCH_API_KEY": "",
		"ANTHROPIC_API_KEY": agentTestKey,
	} {
		t.Setenv(k, v)
	}
	return dir, resultFile
}

func agentExitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return 1
	}
	return 0
}

func TestAgentCommand(t *testing.T) {
	cases := map[string]struct {
		mode  string
		flags []string
		code  int
		// out must appear in the output, err in the error.
		out, err string
		report   steps.ResearcherReport
	}{
		"code ready": {mode: "edit", code: 0, out: "Code ready\n",
			report: steps.ResearcherReport{InputTokens: 2000, OutputTokens: 200, Cost: "0.009"}},
		"turn budget": {mode: "loop", flags: []string{"--max-turns", "2"}, code: exitBudgetSpent,
			err:    `turns budget spent before "Code ready": used 2 of 2 (--max-turns); no strategy recorded`,
			report: steps.ResearcherReport{InputTokens: 2000, OutputTokens: 200, Cost: "0.009", Error: `turns budget spent before "Code ready": used 2 of 2 (--max-turns); no strategy recorded`}},
		"price from flags": {mode: "edit", flags: []string{"--price-input", "1", "--price-output", "2"}, code: 0,
			report: steps.ResearcherReport{InputTokens: 2000, OutputTokens: 200, Cost: "0.0024"}},
		// 200 input tokens at $3, 900 written at $3.75 and 900 read at $0.30
		// per million, 200 output tokens at $15.
		"cached": {mode: "cached", code: 0, out: "(900 input tokens read from the cache, 900 written to it)",
			report: steps.ResearcherReport{InputTokens: 2000, OutputTokens: 200, CacheReadTokens: 900, CacheWriteTokens: 900, Cost: "0.007245"}},
		"cache price from flags": {mode: "cached", flags: []string{"--price-cache-read", "0.6", "--price-cache-write", "3"}, code: 0,
			report: steps.ResearcherReport{InputTokens: 2000, OutputTokens: 200, CacheReadTokens: 900, CacheWriteTokens: 900, Cost: "0.00684"}},
		"rejected key": {mode: "unauthorized", code: 1, err: "anthropic: HTTP 401 authentication_error: invalid x-api-key (request req_401) — the API key was rejected; check the key in ANTHROPIC_API_KEY",
			report: steps.ResearcherReport{Cost: "0", Error: "anthropic: HTTP 401 authentication_error: invalid x-api-key (request req_401) — the API key was rejected; check the key in ANTHROPIC_API_KEY"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir, resultFile := agentWorkdir(t)
			api := httptest.NewServer(&fakeMessages{mode: tc.mode})
			defer api.Close()
			args := append([]string{"researcher", "agent", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--base-url", api.URL}, tc.flags...)

			out, err := execute(t, args...)

			if got := agentExitCode(err); got != tc.code {
				t.Fatalf("exit code %d (%v), want %d\n%s", got, err, tc.code, out)
			}
			if tc.err != "" && (err == nil || err.Error() != tc.err) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
			if !strings.Contains(out, tc.out) {
				t.Errorf("output lacks %q:\n%s", tc.out, out)
			}
			var report steps.ResearcherReport
			if err := json.Unmarshal([]byte(readResearcherFile(t, resultFile)), &report); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.report, report); diff != "" {
				t.Errorf("result file (-want +got):\n%s", diff)
			}
			transcript := readResearcherFile(t, filepath.Join(dir, ".autoresearch", "round-1", "transcript.jsonl"))
			if !strings.Contains(transcript, `"kind":"end"`) {
				t.Errorf("transcript lacks its end:\n%s", transcript)
			}
			if errText := fmt.Sprint(err); strings.Contains(out+errText+transcript, agentTestKey) {
				t.Error("the API key appears in the output, error or transcript")
			}
		})
	}
}

func TestAgentCommandEdits(t *testing.T) {
	dir, _ := agentWorkdir(t)
	api := httptest.NewServer(&fakeMessages{mode: "edit"})
	defer api.Close()

	if out, err := execute(t, "researcher", "agent", "--provider", "anthropic", "--model", "m", "--base-url", api.URL); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	for name, want := range map[string]string{
		"train.py":       "lr = 0.3\n",
		"eval.py":        "print('score: 1')\n",
		"experiences.md": "| Round | Compliance | Result | Verdict | Strategy | Insight | Note |\n|---|---|---|---|---|---|---|\n| 1 |  |  |  | triple the learning rate |  |  |\n",
	} {
		if got := readResearcherFile(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestAgentCommandRejects(t *testing.T) {
	cases := map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"no model":          {args: []string{"--provider", "anthropic"}, want: "--model is required"},
		"unknown provider":  {args: []string{"--provider", "gemini", "--model", "m"}, want: `unknown provider "gemini": want anthropic or openai`},
		"no key":            {args: []string{"--provider", "anthropic", "--model", "m"}, env: map[string]string{"ANTHROPIC_API_KEY": ""}, want: "no API key: set AUTORESEARCH_API_KEY or ANTHROPIC_API_KEY"},
		"no OpenAI key":     {args: []string{"--provider", "openai", "--model", "m"}, want: "no API key: set AUTORESEARCH_API_KEY or OPENAI_API_KEY"},
		"named key missing": {args: []string{"--provider", "openai", "--model", "m", "--base-url", "http://127.0.0.1:1/v1", "--api-key-env", "VLLM_KEY"}, want: "no API key: set VLLM_KEY"},
		"bad cost":          {args: []string{"--provider", "anthropic", "--model", "m", "--max-cost", "lots"}, want: `--max-cost "lots": want a positive number of US dollars`},
		"cost, no price":    {args: []string{"--provider", "anthropic", "--model", "my-own-model", "--max-cost", "1"}, want: "a cost budget needs the price of my-own-model"},
		"negative price":    {args: []string{"--provider", "anthropic", "--model", "m", "--price-input", "-1"}, want: "cannot be negative"},
		"negative cache":    {args: []string{"--provider", "anthropic", "--model", "m", "--price-cache-read", "-1"}, want: "cannot be negative"},
		"negative context":  {args: []string{"--provider", "anthropic", "--model", "m", "--context-window", "-1"}, want: "--context-window -1: want a number of tokens"},
		"no round":          {args: []string{"--provider", "anthropic", "--model", "m"}, env: map[string]string{"AUTORESEARCH_ROUND": ""}, want: "AUTORESEARCH_ROUND"},
		"no prompt":         {args: []string{"--provider", "anthropic", "--model", "m"}, env: map[string]string{"AUTORESEARCH_PROMPT_FILE": "/nonexistent/prompt.md"}, want: "AUTORESEARCH_PROMPT_FILE"},
		"key on a flag":     {args: []string{"--provider", "anthropic", "--model", "m", "--api-key", "sk-1"}, want: "unknown flag: --api-key"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			agentWorkdir(t)
			t.Setenv("OPENAI_API_KEY", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}

			out, err := execute(t, append([]string{"researcher", "agent"}, tc.args...)...)

			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q\n%s", err, tc.want, out)
			}
		})
	}
}

func TestAgentFixedFiles(t *testing.T) {
	cases := map[string]struct {
		flags []string
		env   string
		want  []string
	}{
		"flags":           {flags: []string{"a.py", "b.py"}, want: []string{"a.py", "b.py"}},
		"variable":        {env: "a.py, b.py,,", want: []string{"a.py", "b.py"}},
		"both, deduped":   {flags: []string{"a.py"}, env: "b.py,a.py", want: []string{"a.py", "b.py"}},
		"none":            {want: nil},
		"spaces in names": {env: " my file.py ", want: []string{"my file.py"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, agentFixedFiles(tc.flags, tc.env)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestScriptedResearcherStillRuns(t *testing.T) {
	dir, _ := agentWorkdir(t)
	plan := "rounds:\n  - strategy: \"halve lr\"\n    edits:\n      - {file: train.py, old: \"lr = 0.1\", new: \"lr = 0.05\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := execute(t, "researcher", "scripted", "--plan", "plan.yaml")

	if err != nil || !strings.Contains(out, "Code ready") {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := readResearcherFile(t, filepath.Join(dir, "train.py")); got != "lr = 0.05\n" {
		t.Errorf("train.py = %q", got)
	}
}
