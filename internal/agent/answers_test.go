package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// partialEdit is an edit_file call cut off before new_string, as the
// Messages API returns it at stop_reason max_tokens: run, it would delete
// the line.
var partialEdit = call{ToolEditFile, `{"path":"train.py","old_string":"lr = 0.1"}`}

var fullEdit = call{ToolEditFile, `{"path":"train.py","old_string":"lr = 0.1","new_string":"lr = 0.2"}`}

func TestToolCallCutOffIsAskedAgain(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name(), func(t *testing.T) {
			dir, _ := workdir(t)
			f := newFakeAPI(t, w,
				turn{text: "Raising the learning rate.", calls: []call{partialEdit}, truncated: true, in: 1000, out: 8192},
				toolTurn(fullEdit, call{ToolRecordStrategy, `{"strategy":"lr 0.2"}`}),
				textTurn("Code ready"),
			)

			o := runFake(t, f, dir, Budget{})

			if o.err != nil {
				t.Fatalf("Run: %v\n%s", o.err, o.log)
			}
			if got := readText(t, filepath.Join(dir, "train.py")); got != "lr = 0.2\nsteps = 100\n" {
				t.Errorf("train.py = %q: the cut-off call was run", got)
			}
			if got := f.sent(2); len(got) != 0 {
				t.Errorf("the second request carries tool results %+v, want the first asked again", got)
			}
			if first, second := f.request(1).maxTokens, f.request(2).maxTokens; first != 8192 || second != 16384 {
				t.Errorf("max_tokens %d then %d, want 8192 then 16384", first, second)
			}
			if o.res.Turns != 3 || o.res.Usage.OutputTokens != 8192+20+5 {
				t.Errorf("result %+v, want 3 turns with the cut-off answer's tokens counted", o.res)
			}
		})
	}
}

func TestToolCallCutOffWithoutRoomIsNotRun(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name(), func(t *testing.T) {
			dir, _ := workdir(t)
			f := newFakeAPI(t, w,
				turn{calls: []call{{ToolReadFile, `{"path":"train.py"}`}, partialEdit}, truncated: true, in: 1000, out: 8192},
				toolTurn(fullEdit, call{ToolRecordStrategy, `{"strategy":"lr 0.2"}`}),
				textTurn("Code ready"),
			)

			// claude-3-5-haiku answers 8192 tokens at most: no room to ask again.
			o := runFakeWith(t, f, dir, func(c *Config) { c.Model = "claude-3-5-haiku-20241022" })

			if o.err != nil {
				t.Fatalf("Run: %v\n%s", o.err, o.log)
			}
			if got := readText(t, filepath.Join(dir, "train.py")); got != "lr = 0.2\nsteps = 100\n" {
				t.Errorf("train.py = %q: the cut-off call was run", got)
			}
			second := f.body(2)
			if !strings.Contains(second, "the call to edit_file was incomplete and was not run") {
				t.Error("the second request does not tell the model its answer was cut off")
			}
			if !strings.Contains(second, `lr = 0.1\nsteps = 100\n`) || strings.Count(second, `"edit_file"`) != 1 {
				t.Error("want the complete read_file call answered and the cut-off edit_file left out")
			}
			if got := f.request(2).maxTokens; got != 8192 {
				t.Errorf("max_tokens %d, want the model's 8192", got)
			}
		})
	}
}

func TestWhitespaceTextIsNotSentBack(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name(), func(t *testing.T) {
			dir, _ := workdir(t)
			f := newFakeAPI(t, w,
				turn{text: "\n\n", calls: []call{{ToolRecordStrategy, `{"strategy":"s"}`}}, in: 100, out: 20},
				textTurn(" \n"),
				textTurn("Code ready"),
			)

			o := runFake(t, f, dir, Budget{})

			if o.err != nil {
				t.Fatalf("Run: %v", o.err)
			}
			for n := 1; n <= 3; n++ {
				if r := f.request(n).refusal; r != "" {
					t.Errorf("request %d refused: %s", n, r)
				}
			}
		})
	}
}

func TestMaxTokensIsClamped(t *testing.T) {
	t.Run("output ceiling", func(t *testing.T) {
		dir, _ := workdir(t)
		f := newFakeAPI(t, anthropicWire{}, toolTurn(call{ToolRecordStrategy, `{"strategy":"s"}`}), textTurn("Code ready"))

		o := runFakeWith(t, f, dir, func(c *Config) { c.Model, c.MaxOutputTokens = "claude-3-5-haiku-20241022", 20000 })

		if o.err != nil {
			t.Fatalf("Run: %v", o.err)
		}
		if got := f.request(1).maxTokens; got != 8192 {
			t.Errorf("max_tokens %d, want claude-3-5-haiku's 8192", got)
		}
	})

	t.Run("context left", func(t *testing.T) {
		// A 32k-context vLLM model refuses a request whose input and
		// max_tokens exceed 32768. Reading a 79 kB file grows the input
		// to about 25.6k tokens (3.5 bytes a token), which leaves less
		// than the 8192 asked for.
		dir, _ := workdir(t)
		big := strings.Repeat(strings.Repeat("x", 39)+"\n", 1975)
		if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
		grown := int64(3000 + 50 + len(big)*2/7)
		f := newFakeAPI(t, openaiWire{},
			turn{calls: []call{{ToolReadFile, `{"path":"data.txt"}`}}, in: 3000, out: 50},
			turn{calls: []call{{ToolRecordStrategy, `{"strategy":"s"}`}}, in: grown, out: 50},
			turn{text: "Code ready", in: grown + 80, out: 5},
		)
		f.contextWindow = 32768

		o := runFakeWith(t, f, dir, func(c *Config) { c.ContextWindow = 32768 })

		if o.err != nil {
			t.Fatalf("Run: %v", o.err)
		}
		for n, in := range []int64{3000, grown, grown + 80} {
			if got := f.request(n + 1).maxTokens; in+int64(got) > 32768 || got < minAnswerTokens {
				t.Errorf("request %d: max_tokens %d with %d input tokens, want a fit in 32768", n+1, got, in)
			}
		}
	})

	t.Run("no room", func(t *testing.T) {
		l := Limits{Context: 32768, Output: 8192}
		if _, err := l.clamp(8192, contextUse{tokens: 31000}); err == nil || !strings.Contains(err.Error(), "leaves no room") {
			t.Errorf("clamp with 31000 of 32768 tokens used: %v, want no room", err)
		}
	})
}
