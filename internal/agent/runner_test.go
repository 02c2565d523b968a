package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// autoresearchOnPath builds the CLI once per test binary and puts it first
// on PATH, as the Researcher command calls `autoresearch researcher agent`.
func autoresearchOnPath(t *testing.T) {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "autoresearch-agent-bin-")
		if buildErr != nil {
			return
		}
		build := exec.Command("go", "build", "-o", filepath.Join(binDir, "autoresearch"), "./cmd/autoresearch")
		build.Dir = repoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building autoresearch: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	t.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		if err := os.RemoveAll(binDir); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

func repoRoot() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..")
}

// fakeResearcherModel is an Anthropic Messages API that edits the tiny-lm-go
// example as round 1 of its scripted plan does (learning rate 0.05 → 0.5,
// which improves val_bpb), records the strategy, and answers "Code ready"
// once it sees its tool results.
func fakeResearcherModel(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != testKey || r.Header.Get("anthropic-version") != anthropicVersion {
			t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusNotFound)
			if _, err := io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`); err != nil {
				t.Errorf("response: %v", err)
			}
			return
		}
		var req struct {
			Messages []struct {
				Role    string           `json:"role"`
				Content []anthropicBlock `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("request: %v", err)
		}
		last := req.Messages[len(req.Messages)-1]
		content := []map[string]any{
			{"type": "text", "text": "The baseline barely moves in 1500 steps; raise the learning rate."},
			{"type": "tool_use", "id": "toolu_edit", "name": ToolEditFile, "input": map[string]any{
				"path": "train/main.go", "old_string": "learningRate = 0.05", "new_string": "learningRate = 0.5"}},
			{"type": "tool_use", "id": "toolu_strategy", "name": ToolRecordStrategy, "input": map[string]any{
				"strategy": "raise the SGD learning rate from 0.05 to 0.5"}},
		}
		stop := "tool_use"
		if last.Content[0].Type == "tool_result" {
			for _, b := range last.Content {
				if b.IsError {
					t.Errorf("tool failed in the worktree: %s", b.Content)
				}
			}
			content, stop = []map[string]any{{"type": "text", "text": "Code ready"}}, "end_turn"
		}
		w.Header().Set("content-type", "application/json")
		if err := json.NewEncoder(w).Encode(map[string]any{
			"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": content,
			"stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 1500, "output_tokens": 80},
		}); err != nil {
			t.Errorf("response: %v", err)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// copyTinyLM commits the tiny-lm-go example into a fresh repository with
// the agent as its Researcher for one round.
func copyTinyLM(t *testing.T, researcher string) string {
	t.Helper()
	src := filepath.Join(repoRoot(), "examples", "tiny-lm-go")
	repo := filepath.Join(t.TempDir(), "repo")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == "data" || d.Name() == "ckpt" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(repo, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == "experiment.yaml" {
			text := string(data)
			for old, new := range map[string]string{
				"maxRounds: 6": "maxRounds: 1",
				// A busy machine must not turn the round into a timeout.
				"timeLimit: 60s": "timeLimit: 10m",
				"command: \"autoresearch researcher scripted --plan scripted-researcher.yaml\"": "command: " + researcher,
				"timeout: 30s": "timeout: 5m",
			} {
				if !strings.Contains(text, old) {
					return fmt.Errorf("experiment.yaml lacks %q", old)
				}
				text = strings.Replace(text, old, new, 1)
			}
			data = []byte(text)
		}
		return os.WriteFile(filepath.Join(repo, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=test", "-c", "user.email=test@localhost", "commit", "-q", "-m", "baseline"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

func TestAgentThroughTheLocalRunner(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the tiny-lm-go example twice")
	}
	autoresearchOnPath(t)
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("ANTHROPIC_API_KEY", testKey)
	model := fakeResearcherModel(t)
	researcher := fmt.Sprintf(`"autoresearch researcher agent --provider anthropic --model claude-sonnet-4-5 --base-url %s --fixed prepare/main.go --fixed lm/lm.go --fixed eval/main.go --max-turns 5"`, model.URL)
	repo := copyTinyLM(t, researcher)
	x, err := runner.LoadExperiment(context.Background(), filepath.Join(repo, "experiment.yaml"), filepath.Join(filepath.Dir(repo), "worktree"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer

	st, err := runner.Run(context.Background(), x, runner.Options{Out: &out})

	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if st.Phase != v1alpha1.PhaseSucceeded || st.CompletedRounds != 1 {
		t.Fatalf("phase %s after %d rounds: %s\n%s", st.Phase, st.CompletedRounds, st.Message, out.String())
	}
	r1 := st.History[len(st.History)-1]
	if r1.Round != 1 || r1.Verdict != v1alpha1.VerdictImproved || r1.Strategy != "raise the SGD learning rate from 0.05 to 0.5" {
		t.Errorf("round 1: %s with strategy %q (%s), want improved with the agent's strategy\n%s", r1.Verdict, r1.Strategy, r1.Insight, out.String())
	}
	if st.Usage.InputTokens != 3000 || st.Usage.OutputTokens != 160 || st.Usage.Cost != "0.0114" {
		t.Errorf("usage %+v, want 3000 input and 160 output tokens costing 0.0114", st.Usage)
	}
	roundDir := filepath.Join(x.Worktree, ".autoresearch", "round-1")
	for name, want := range map[string]string{"transcript.jsonl": `learningRate = 0.5`, "researcher.log": "\nCode ready\n"} {
		data, err := os.ReadFile(filepath.Join(roundDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), testKey) {
			t.Errorf("%s shows the API key", name)
		}
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks %q:\n%s", name, want, data)
		}
	}
}
