package scripted

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const experiencesHeader = "# Experiences\n" +
	"| Round | Compliance | Result | Verdict | Strategy | Insight | Note |\n" +
	"|---|---|---|---|---|---|---|\n" +
	"| 0 | ✅ | 3.09 | baseline | baseline |  |  |\n"

func TestRun(t *testing.T) {
	train := "package main\n\nconst hiddenSize = 64\nconst steps = 1500\n"
	cases := map[string]struct {
		files map[string]string
		// links are symbolic links to create in the directory: name → target.
		links     map[string]string
		steps     []Step
		round     int
		wantFiles map[string]string
		wantRow   string
		wantLog   []string
		noLog     []string
		wantErr   string
		wantExit  int
	}{
		"edit": {
			files: map[string]string{"train/main.go": train},
			steps: []Step{{Strategy: "wider", Edits: []Edit{{File: "train/main.go", Old: "hiddenSize = 64", New: "hiddenSize = 128"}}}},
			round: 1,
			wantFiles: map[string]string{
				"train/main.go": "package main\n\nconst hiddenSize = 128\nconst steps = 1500\n",
			},
			wantRow: "| 1 |  |  |  | wider |  |  |\n",
			wantLog: []string{`edit train/main.go: "hiddenSize = 64" -> "hiddenSize = 128"`, "Code ready"},
		},
		"edits build on each other": {
			files: map[string]string{"train/main.go": train},
			steps: []Step{{Strategy: "twice", Edits: []Edit{
				{File: "train/main.go", Old: "hiddenSize = 64", New: "hiddenSize = 96"},
				{File: "./train/main.go", Old: "hiddenSize = 96", New: "hiddenSize = 128"},
			}}},
			round:     1,
			wantFiles: map[string]string{"train/main.go": "package main\n\nconst hiddenSize = 128\nconst steps = 1500\n"},
			wantRow:   "| 1 |  |  |  | twice |  |  |\n",
			wantLog:   []string{"Code ready"},
		},
		"second round plays the second step": {
			files: map[string]string{"train/main.go": train},
			steps: []Step{
				{Strategy: "first", Edits: []Edit{{File: "train/main.go", Old: "hiddenSize = 64", New: "hiddenSize = 128"}}},
				{Strategy: "second", Edits: []Edit{{File: "train/main.go", Old: "steps = 1500", New: "steps = 3000"}}},
			},
			round:     2,
			wantFiles: map[string]string{"train/main.go": "package main\n\nconst hiddenSize = 64\nconst steps = 3000\n"},
			wantRow:   "| 2 |  |  |  | second |  |  |\n",
			wantLog:   []string{"round 2: second", "Code ready"},
		},
		"edit of a fixed file is the supervisor's to catch": {
			files:     map[string]string{"eval/main.go": "scale := 1.0\n"},
			steps:     []Step{{Strategy: "tamper", Edits: []Edit{{File: "eval/main.go", Old: "1.0", New: "0.5"}}}},
			round:     1,
			wantFiles: map[string]string{"eval/main.go": "scale := 0.5\n"},
			wantRow:   "| 1 |  |  |  | tamper |  |  |\n",
			wantLog:   []string{"Code ready"},
		},
		"old string not found leaves every file as it was": {
			files: map[string]string{"train/main.go": train, "other.go": "x := 1\n"},
			steps: []Step{{Strategy: "bad", Edits: []Edit{
				{File: "other.go", Old: "x := 1", New: "x := 2"},
				{File: "train/main.go", Old: "hiddenSize = 32", New: "hiddenSize = 128"},
			}}},
			round:     1,
			wantFiles: map[string]string{"train/main.go": train, "other.go": "x := 1\n"},
			wantErr:   `round 1: edit train/main.go: "hiddenSize = 32" not found`,
			noLog:     []string{"Code ready", "edit other.go"},
		},
		"old string occurs twice": {
			files:     map[string]string{"a.go": "x = 1\nx = 1\n"},
			steps:     []Step{{Strategy: "bad", Edits: []Edit{{File: "a.go", Old: "x = 1", New: "x = 2"}}}},
			round:     1,
			wantFiles: map[string]string{"a.go": "x = 1\nx = 1\n"},
			wantErr:   `edit a.go: "x = 1" occurs 2 times, want exactly once`,
		},
		"edit of a missing file": {
			files:     map[string]string{},
			steps:     []Step{{Strategy: "bad", Edits: []Edit{{File: "nope.go", Old: "a", New: "b"}}}},
			round:     1,
			wantFiles: map[string]string{},
			wantErr:   "edit nope.go:",
		},
		"write creates directories and overwrites": {
			files: map[string]string{"a.txt": "old\n"},
			steps: []Step{{Strategy: "files", Write: []FileContent{
				{File: "helpers/deep/x.go", Content: "package deep\n"},
				{File: "a.txt", Content: "new\n"},
			}}},
			round:     1,
			wantFiles: map[string]string{"a.txt": "new\n", "helpers/deep/x.go": "package deep\n"},
			wantRow:   "| 1 |  |  |  | files |  |  |\n",
			wantLog:   []string{"write helpers/deep/x.go (13 bytes)", "write a.txt (4 bytes)"},
		},
		"delete a file and a directory tree": {
			files:     map[string]string{"keep.txt": "k", "gone.txt": "g", "dir/a/b.txt": "b", "dir/c.txt": "c"},
			steps:     []Step{{Strategy: "clean up", Delete: []string{"gone.txt", "dir"}}},
			round:     1,
			wantFiles: map[string]string{"keep.txt": "k"},
			wantRow:   "| 1 |  |  |  | clean up |  |  |\n",
			wantLog:   []string{"delete gone.txt", "delete dir"},
		},
		"delete of a missing file": {
			files:     map[string]string{"keep.txt": "k"},
			steps:     []Step{{Strategy: "clean up", Delete: []string{"gone.txt"}}},
			round:     1,
			wantFiles: map[string]string{"keep.txt": "k"},
			wantErr:   "delete gone.txt:",
		},
		"run commands in the directory": {
			files:     map[string]string{"a.txt": "a\n"},
			steps:     []Step{{Strategy: "shell", Run: []string{"cat a.txt > b.txt && echo made b"}}},
			round:     1,
			wantFiles: map[string]string{"a.txt": "a\n", "b.txt": "a\n"},
			wantRow:   "| 1 |  |  |  | shell |  |  |\n",
			wantLog:   []string{"run: cat a.txt > b.txt && echo made b", "made b", "Code ready"},
		},
		"failing command is reported and ignored": {
			files:     map[string]string{},
			steps:     []Step{{Strategy: "tamper", Run: []string{"echo refused >&2; exit 7", "echo after"}}},
			round:     1,
			wantFiles: map[string]string{},
			wantRow:   "| 1 |  |  |  | tamper |  |  |\n",
			wantLog:   []string{"refused", "exit status 7 (ignored)", "after", "Code ready"},
		},
		"exit code after the edits": {
			files:     map[string]string{"train/main.go": train},
			steps:     []Step{{Strategy: "crash", Edits: []Edit{{File: "train/main.go", Old: "steps = 1500", New: "steps = 1"}}, ExitCode: 3}},
			round:     1,
			wantFiles: map[string]string{"train/main.go": "package main\n\nconst hiddenSize = 64\nconst steps = 1\n"},
			wantRow:   "| 1 |  |  |  | crash |  |  |\n",
			wantLog:   []string{"exit code 3"},
			noLog:     []string{"Code ready"},
			wantExit:  3,
		},
		"plan exhausted": {
			files:     map[string]string{"train/main.go": train},
			steps:     []Step{{Strategy: "only", Edits: []Edit{{File: "train/main.go", Old: "steps = 1500", New: "steps = 1"}}}},
			round:     2,
			wantFiles: map[string]string{"train/main.go": train},
			wantRow:   "| 2 |  |  |  | scripted plan exhausted: no change |  |  |\n",
			wantLog:   []string{"Code ready"},
		},
		"strategy is escaped for the table": {
			files:     map[string]string{},
			steps:     []Step{{Strategy: "lr 0.1 | 0.2\n  then  decay"}},
			round:     1,
			wantFiles: map[string]string{},
			wantRow:   "| 1 |  |  |  | lr 0.1 \\| 0.2 then decay |  |  |\n",
		},
		"path outside the directory": {
			files:     map[string]string{"a.txt": "a"},
			steps:     []Step{{Strategy: "escape", Write: []FileContent{{File: "../outside.txt", Content: "x"}}}},
			round:     1,
			wantFiles: map[string]string{"a.txt": "a"},
			wantErr:   `write[0].file: path "../outside.txt"`,
		},
		"absolute path": {
			files:     map[string]string{},
			steps:     []Step{{Strategy: "escape", Delete: []string{"/tmp"}}},
			round:     1,
			wantFiles: map[string]string{},
			wantErr:   `delete[0]: path "/tmp"`,
		},
		"symbolic link out of the directory": {
			files:     map[string]string{},
			links:     map[string]string{"out": "/tmp"},
			steps:     []Step{{Strategy: "escape", Write: []FileContent{{File: "out/x.txt", Content: "x"}}}},
			round:     1,
			wantFiles: map[string]string{},
			wantErr:   "write out/x.txt:",
		},
		"round zero": {
			files:     map[string]string{},
			steps:     []Step{{Strategy: "x"}},
			round:     0,
			wantFiles: map[string]string{},
			wantErr:   "round 0: rounds start at 1",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			for name, target := range tc.links {
				if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
			experiences := filepath.Join(t.TempDir(), "experiences.md")
			writeTree(t, filepath.Dir(experiences), map[string]string{"experiences.md": experiencesHeader})
			var log bytes.Buffer

			err := Run(context.Background(), Plan{Rounds: tc.steps}, tc.round, "", dir, experiences, &log)

			var exit *ExitError
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("Run() error = %v, want it to contain %q", err, tc.wantErr)
				}
			case tc.wantExit != 0:
				if !errors.As(err, &exit) || exit.Code != tc.wantExit {
					t.Errorf("Run() error = %v, want exit code %d", err, tc.wantExit)
				}
			case err != nil:
				t.Errorf("Run() error = %v", err)
			}
			if diff := cmp.Diff(tc.wantFiles, readTree(t, dir)); diff != "" {
				t.Errorf("files after Run() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(experiencesHeader+tc.wantRow, readFile(t, experiences)); diff != "" {
				t.Errorf("experiences after Run() (-want +got):\n%s", diff)
			}
			for _, line := range tc.wantLog {
				if !strings.Contains(log.String(), line) {
					t.Errorf("log lacks %q:\n%s", line, log.String())
				}
			}
			for _, line := range tc.noLog {
				if strings.Contains(log.String(), line) {
					t.Errorf("log has %q:\n%s", line, log.String())
				}
			}
		})
	}
}

func TestRunExperiences(t *testing.T) {
	cases := map[string]struct {
		// content is the file's content before the round; nil means no file.
		content  *string
		relative bool
		want     string
		wantErr  string
	}{
		"appends after the table": {
			content: new(experiencesHeader),
			want:    experiencesHeader + "| 1 |  |  |  | s |  |  |\n",
		},
		"ends an unterminated last line first": {
			content: new("| 0 |  |  |  | baseline |  |  |"),
			want:    "| 0 |  |  |  | baseline |  |  |\n| 1 |  |  |  | s |  |  |\n",
		},
		"empty file": {
			content: new(""),
			want:    "| 1 |  |  |  | s |  |  |\n",
		},
		"path relative to the experiment directory": {
			content:  new(experiencesHeader),
			relative: true,
			want:     experiencesHeader + "| 1 |  |  |  | s |  |  |\n",
		},
		"missing file": {
			wantErr: "experiences:",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "experiences.md")
			if tc.content != nil {
				writeTree(t, dir, map[string]string{"experiences.md": *tc.content})
			}
			arg := path
			if tc.relative {
				arg = "experiences.md"
			}
			err := Run(context.Background(), Plan{Rounds: []Step{{Strategy: "s"}}}, 1, "", dir, arg, &bytes.Buffer{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Run() error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, readFile(t, path)); diff != "" {
				t.Errorf("experiences (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunSleep(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := map[string]struct {
		ctx     context.Context
		sleep   time.Duration
		wantErr error
		wantRow string
	}{
		"sleeps and finishes": {
			ctx:     context.Background(),
			sleep:   time.Millisecond,
			wantRow: "| 1 |  |  |  | slow |  |  |\n",
		},
		"cancelled before the end of a long sleep": {
			ctx:     cancelled,
			sleep:   time.Hour,
			wantErr: context.Canceled,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"experiences.md": experiencesHeader})
			plan := Plan{Rounds: []Step{{Strategy: "slow", Sleep: metav1.Duration{Duration: tc.sleep}}}}
			var log bytes.Buffer

			err := Run(tc.ctx, plan, 1, "", dir, "experiences.md", &log)

			if !errors.Is(err, tc.wantErr) {
				t.Errorf("Run() error = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(experiencesHeader+tc.wantRow, readFile(t, filepath.Join(dir, "experiences.md"))); diff != "" {
				t.Errorf("experiences (-want +got):\n%s", diff)
			}
			if got, want := strings.Contains(log.String(), "Code ready"), tc.wantErr == nil; got != want {
				t.Errorf("log reports Code ready = %v, want %v:\n%s", got, want, log.String())
			}
		})
	}
}

func TestInvocationFromEnv(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"prompt.md": "improve val_bpb", "empty.md": ""})
	prompt := filepath.Join(dir, "prompt.md")
	cases := map[string]struct {
		env     map[string]string
		want    Invocation
		wantErr string
	}{
		"complete": {
			env:  map[string]string{EnvRound: "4", EnvPromptFile: prompt, EnvExperiences: "experiences.md"},
			want: Invocation{Round: 4, PromptFile: prompt, ExperiencesPath: "experiences.md"},
		},
		"no round": {
			env:     map[string]string{EnvPromptFile: prompt, EnvExperiences: "experiences.md"},
			wantErr: EnvRound,
		},
		"round zero": {
			env:     map[string]string{EnvRound: "0", EnvPromptFile: prompt, EnvExperiences: "experiences.md"},
			wantErr: EnvRound,
		},
		"no prompt": {
			env:     map[string]string{EnvRound: "1", EnvExperiences: "experiences.md"},
			wantErr: EnvPromptFile + " is not set",
		},
		"missing prompt file": {
			env:     map[string]string{EnvRound: "1", EnvPromptFile: filepath.Join(dir, "absent.md"), EnvExperiences: "experiences.md"},
			wantErr: "absent.md",
		},
		"empty prompt file": {
			env:     map[string]string{EnvRound: "1", EnvPromptFile: filepath.Join(dir, "empty.md"), EnvExperiences: "experiences.md"},
			wantErr: "want a non-empty file",
		},
		"prompt is a directory": {
			env:     map[string]string{EnvRound: "1", EnvPromptFile: dir, EnvExperiences: "experiences.md"},
			wantErr: "want a non-empty file",
		},
		"no experiences": {
			env:     map[string]string{EnvRound: "1", EnvPromptFile: prompt},
			wantErr: EnvExperiences + " is not set",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := InvocationFromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("InvocationFromEnv() error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("InvocationFromEnv() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("InvocationFromEnv() (-want +got):\n%s", diff)
			}
		})
	}
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree returns the regular files under dir by slash-separated path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = readFile(t, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
