package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestToolCalls(t *testing.T) {
	long := strings.Repeat("line\n", 2500)
	cases := map[string]struct {
		call    call
		wantErr bool
		// want must all appear in the result.
		want []string
		// files are checked after the call.
		files map[string]string
	}{
		"read a file":               {call: call{ToolReadFile, `{"path":"train.py"}`}, want: []string{"lr = 0.1\nsteps = 100\n"}},
		"read a part":               {call: call{ToolReadFile, `{"path":"long.txt","offset":2499,"limit":5}`}, want: []string{"line\nline\n"}},
		"read a long file":          {call: call{ToolReadFile, `{"path":"long.txt"}`}, want: []string{"[lines 1-2000 of 2500; read on with offset=2001]"}},
		"read past the end":         {call: call{ToolReadFile, `{"path":"train.py","offset":9}`}, wantErr: true, want: []string{"has 2 lines; offset 9 is past the end"}},
		"read a missing file":       {call: call{ToolReadFile, `{"path":"nope.py"}`}, wantErr: true, want: []string{"nope.py does not exist"}},
		"read a directory":          {call: call{ToolReadFile, `{"path":"sub"}`}, wantErr: true, want: []string{"is a directory"}},
		"read a binary file":        {call: call{ToolReadFile, `{"path":"blob.bin"}`}, wantErr: true, want: []string{"binary file"}},
		"read the git directory":    {call: call{ToolReadFile, `{"path":".git/config"}`}, wantErr: true, want: []string{"refused: .git/config is in the git directory"}},
		"list":                      {call: call{ToolListFiles, `{}`}, want: []string{"train.py 21\n", "sub/\nsub/helper.py 2", "link -> "}},
		"list leaves out git":       {call: call{ToolListFiles, `{"path":"."}`}, want: []string{"alias.py -> eval.py"}},
		"write a helper":            {call: call{ToolWriteFile, `{"path":"new/dir/helper.py","content":"x = 1\n"}`}, want: []string{"wrote 6 bytes to new/dir/helper.py"}, files: map[string]string{"new/dir/helper.py": "x = 1\n"}},
		"write without content":     {call: call{ToolWriteFile, `{"path":"a.py"}`}, wantErr: true, want: []string{"content is missing"}},
		"edit replace all":          {call: call{ToolEditFile, `{"path":"twice.py","old_string":"a","new_string":"b","replace_all":true}`}, want: []string{"replaced 2 occurrences"}, files: map[string]string{"twice.py": "b b\n"}},
		"edit ambiguous":            {call: call{ToolEditFile, `{"path":"twice.py","old_string":"a","new_string":"b"}`}, wantErr: true, want: []string{"occurs 2 times"}, files: map[string]string{"twice.py": "a a\n"}},
		"edit not found":            {call: call{ToolEditFile, `{"path":"train.py","old_string":"lr=0.1","new_string":"lr=1"}`}, wantErr: true, want: []string{"old_string not found in train.py"}},
		"edit nothing":              {call: call{ToolEditFile, `{"path":"train.py","old_string":"lr","new_string":"lr"}`}, wantErr: true, want: []string{"the same"}},
		"unknown argument":          {call: call{ToolReadFile, `{"file":"train.py"}`}, wantErr: true, want: []string{`unknown field "file"`}},
		"arguments not JSON":        {call: call{ToolReadFile, `{"path":`}, wantErr: true, want: []string{"the arguments of read_file are not valid"}},
		"unknown tool":              {call: call{"delete_file", `{}`}, wantErr: true, want: []string{`there is no tool "delete_file"`}},
		"empty path":                {call: call{ToolReadFile, `{"path":" "}`}, wantErr: true, want: []string{"path is empty"}},
		"command":                   {call: call{ToolRunCommand, `{"command":"echo hello; echo oops >&2"}`}, want: []string{"hello\noops\n[exit code 0 after "}},
		"command fails":             {call: call{ToolRunCommand, `{"command":"echo partial; exit 3"}`}, wantErr: true, want: []string{"partial\n", "exit code 3 after"}},
		"command runs in the dir":   {call: call{ToolRunCommand, `{"command":"cat train.py"}`}, want: []string{"lr = 0.1"}},
		"command sees no key":       {call: call{ToolRunCommand, `{"command":"echo \"[$ANTHROPIC_API_KEY][$AUTORESEARCH_API_KEY]\""}`}, want: []string{"[][]"}},
		"command output redacted":   {call: call{ToolRunCommand, `{"command":"echo ` + testKey + `"}`}, want: []string{"[REDACTED]"}},
		"read-only git is fine":     {call: call{ToolRunCommand, `{"command":"git --version"}`}, want: []string{"git version"}},
		"git reset is refused":      {call: call{ToolRunCommand, `{"command":"ls && git -C . reset --hard"}`}, wantErr: true, want: []string{"refused: git commands that change the repository"}},
		"strategy":                  {call: call{ToolRecordStrategy, `{"strategy":"  wider\nmodel  "}`}, want: []string{"recorded: | 1 |  |  |  | wider model |  |  |"}, files: map[string]string{"experiences.md": experiencesHeader + "| 1 |  |  |  | wider model |  |  |\n"}},
		"empty strategy":            {call: call{ToolRecordStrategy, `{"strategy":" \n "}`}, wantErr: true, want: []string{"strategy is empty"}},
		"strategy too long":         {call: call{ToolRecordStrategy, fmt.Sprintf(`{"strategy":"%s"}`, strings.Repeat("x", 501))}, wantErr: true, want: []string{"keep it under 500"}},
		"absolute path inside":      {call: call{ToolReadFile, `{"path":"DIR/train.py"}`}, want: []string{"lr = 0.1"}},
		"dot-dot that stays inside": {call: call{ToolReadFile, `{"path":"sub/../train.py"}`}, want: []string{"lr = 0.1"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir, _ := workdir(t)
			extra := map[string]string{"long.txt": long, "sub/helper.py": "h\n", "twice.py": "a a\n", "blob.bin": "\x00\x01\x02"}
			for p, content := range extra {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("ANTHROPIC_API_KEY", testKey)
			tools := newTools(t, dir)
			args := strings.ReplaceAll(tc.call.args, "DIR", dir)

			res := tools.Call(context.Background(), ToolCall{ID: "c1", Name: tc.call.name, Arguments: args})

			if res.CallID != "c1" || res.IsError != tc.wantErr {
				t.Errorf("result %+v, want CallID c1 and IsError %t", res, tc.wantErr)
			}
			for _, want := range tc.want {
				if !strings.Contains(res.Content, want) {
					t.Errorf("result %q lacks %q", res.Content, want)
				}
			}
			for p, want := range tc.files {
				if got := readText(t, filepath.Join(dir, p)); got != want {
					t.Errorf("%s = %q, want %q", p, got, want)
				}
			}
		})
	}
}

func TestListFilesLeavesOutGitAndState(t *testing.T) {
	dir, _ := workdir(t)
	if err := os.MkdirAll(filepath.Join(dir, ".autoresearch", "round-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	tools := newTools(t, dir)

	res := tools.Call(context.Background(), ToolCall{ID: "1", Name: ToolListFiles, Arguments: `{}`})

	want := []string{"alias.py -> eval.py", "eval.py 20", "experiences.md 129", "link -> " + filepath.Join(filepath.Dir(dir), "outside"), "results.tsv 12", "train.py 21"}
	if diff := cmp.Diff(want, strings.Split(res.Content, "\n")); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}
}

func TestRecordStrategyTwiceKeepsTheLast(t *testing.T) {
	dir, _ := workdir(t)
	tools := newTools(t, dir)
	for _, s := range []string{"first idea", "better idea"} {
		if res := tools.Call(context.Background(), ToolCall{Name: ToolRecordStrategy, Arguments: fmt.Sprintf(`{"strategy":%q}`, s)}); res.IsError {
			t.Fatal(res.Content)
		}
	}
	want := experiencesHeader + "| 1 |  |  |  | first idea |  |  |\n| 1 |  |  |  | better idea |  |  |\n"
	if diff := cmp.Diff(want, readText(t, filepath.Join(dir, "experiences.md"))); diff != "" {
		t.Errorf("experiences.md (-want +got):\n%s", diff)
	}
	if got := tools.Strategy(); got != "better idea" {
		t.Errorf("Strategy() = %q", got)
	}
}

func TestCommandTimeoutKillsTheGroup(t *testing.T) {
	dir, _ := workdir(t)
	tools, err := NewToolbox(ToolboxOptions{Dir: dir, Round: 1, CommandTimeout: time.Second, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	defer tools.Close()

	// The background child writes a file if it survives the group kill.
	res := tools.Call(context.Background(), ToolCall{Name: ToolRunCommand, Arguments: `{"command":"(sleep 3; touch survived) & echo started; sleep 60","timeout_seconds":600}`})

	if !res.IsError || !strings.Contains(res.Content, "started") || !strings.Contains(res.Content, "did not finish within 1s and was killed") {
		t.Errorf("result %+v, want the output and a timeout error capped at 1s", res)
	}
	if err := survivorAppears(dir); err == nil {
		t.Error("a child of the timed-out command survived")
	}
}

// survivorAppears waits for the would-be survivor's file longer than it sleeps.
func survivorAppears(dir string) error {
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(dir, "survived")); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return os.ErrNotExist
}

func TestCommandOutputIsCapped(t *testing.T) {
	dir, _ := workdir(t)
	tools, err := NewToolbox(ToolboxOptions{Dir: dir, Round: 1, OutputLimit: 100, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	defer tools.Close()

	res := tools.Call(context.Background(), ToolCall{Name: ToolRunCommand, Arguments: `{"command":"echo HEAD; seq 1 10000; echo TAIL"}`})

	if res.IsError || !strings.HasPrefix(res.Content, "HEAD\n") || !strings.Contains(res.Content, "TAIL\n[exit code 0") || !strings.Contains(res.Content, "bytes of output left out") {
		t.Errorf("result %q, want head, tail and a note of what was left out", res.Content)
	}
	if len(res.Content) > 300 {
		t.Errorf("result is %d bytes, want about 100 plus notes", len(res.Content))
	}
}

func TestHeadTail(t *testing.T) {
	cases := map[string]struct {
		writes []string
		want   string
	}{
		"short":        {writes: []string{"ab", "cd"}, want: "abcd\n"},
		"exact":        {writes: []string{"0123456789"}, want: "0123456789\n"},
		"long":         {writes: []string{"0123456789", "abcdef"}, want: "01234\n[… 6 bytes of output left out …]\nbcdef\n"},
		"many writes":  {writes: []string{"01", "23", "45", "67", "89", "ab"}, want: "01234\n[… 2 bytes of output left out …]\n789ab\n"},
		"empty output": {writes: nil, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := &headTail{limit: 10}
			for _, w := range tc.writes {
				if n, err := h.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if diff := cmp.Diff(tc.want, h.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestGitWrite(t *testing.T) {
	cases := map[string]bool{
		"git commit -am x":                  true,
		"cd sub && git checkout -- .":       true,
		"git -C .. push":                    true,
		"(git stash)":                       true,
		"git diff HEAD":                     false,
		"git log --oneline | head":          false,
		"git status":                        false,
		"echo digit commits":                false,
		"python train.py --git-commit-hash": false,
	}
	for command, want := range cases {
		if got := gitWrite.MatchString(command); got != want {
			t.Errorf("gitWrite(%q) = %t, want %t", command, got, want)
		}
	}
}

// TestFixedPatternsRefuseWrites checks that fixed directories and globs,
// not only fixed files, are refused to the write tools.
func TestFixedPatternsRefuseWrites(t *testing.T) {
	dir, _ := workdir(t)
	if err := os.MkdirAll(filepath.Join(dir, "evaldir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tools, err := NewToolbox(ToolboxOptions{Dir: dir, Round: 1, Env: os.Environ(), Fixed: []string{"evaldir/", "metrics/**/*.py"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tools.Close() })
	for path, want := range map[string]string{
		"evaldir/zz_helper.py":    "inside evaldir, a fixed directory",
		"metrics/a/b/score.py":    "matches metrics/**/*.py, a fixed pattern",
		"sub/../metrics/score.py": "matches metrics/**/*.py, a fixed pattern",
		"metrics/notes.md":        "",
	} {
		res := tools.Call(context.Background(), ToolCall{ID: "c", Name: ToolWriteFile, Arguments: fmt.Sprintf(`{"path":%q,"content":"x = 1\n"}`, path)})
		if want == "" {
			if res.IsError {
				t.Errorf("writing %s: %s", path, res.Content)
			}
			continue
		}
		if !res.IsError || !strings.Contains(res.Content, want) {
			t.Errorf("writing %s: %+v, want it refused with %q", path, res, want)
		}
	}
}
