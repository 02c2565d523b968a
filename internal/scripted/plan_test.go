package scripted

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

func TestLoadPlan(t *testing.T) {
	cases := map[string]struct {
		yaml    string
		want    Plan
		wantErr string
	}{
		"every step kind": {
			yaml: `
rounds:
  - strategy: "raise hidden size to 128"
    expect: improved
    edits:
      - file: train/main.go
        old: "hiddenSize = 64"
        new: "hiddenSize = 128"
    write:
      - file: helpers/x.go
        content: "package helpers\n"
    delete: [some/file]
    run: ["git commit -am x"]
    sleep: 2s
    exitCode: 3
`,
			want: Plan{Rounds: []Step{{
				Strategy: "raise hidden size to 128",
				Expect:   v1alpha1.VerdictImproved,
				Edits:    []Edit{{File: "train/main.go", Old: "hiddenSize = 64", New: "hiddenSize = 128"}},
				Write:    []FileContent{{File: "helpers/x.go", Content: "package helpers\n"}},
				Delete:   []string{"some/file"},
				Run:      []string{"git commit -am x"},
				Sleep:    metav1.Duration{Duration: 2 * time.Second},
				ExitCode: 3,
			}}},
		},
		"edit to a fixed file is allowed": {
			yaml: `
rounds:
  - strategy: tamper
    edits: [{file: eval/main.go, old: a, new: b}]
`,
			want: Plan{Rounds: []Step{{Strategy: "tamper", Edits: []Edit{{File: "eval/main.go", Old: "a", New: "b"}}}}},
		},
		"unknown field": {
			yaml:    "rounds:\n  - strategy: x\n    edit: []\n",
			wantErr: `unknown field "edit"`,
		},
		"not yaml": {
			yaml:    "rounds: [",
			wantErr: "parse plan",
		},
		"no rounds": {
			yaml:    "rounds: []\n",
			wantErr: "at least one step is required",
		},
		"missing strategy": {
			yaml:    "rounds:\n  - exitCode: 1\n",
			wantErr: "rounds[0]: strategy is required",
		},
		"unknown verdict": {
			yaml:    "rounds:\n  - strategy: x\n    expect: better\n",
			wantErr: `expect: unknown verdict "better"`,
		},
		"baseline is not a round verdict": {
			yaml:    "rounds:\n  - strategy: x\n    expect: baseline\n",
			wantErr: `expect: unknown verdict "baseline"`,
		},
		"edit path escapes": {
			yaml:    "rounds:\n  - strategy: x\n  - strategy: y\n    edits: [{file: ../x, old: a, new: b}]\n",
			wantErr: `rounds[1]: edits[0].file: path "../x"`,
		},
		"empty old string": {
			yaml:    "rounds:\n  - strategy: x\n    edits: [{file: a, old: '', new: b}]\n",
			wantErr: "edits[0].old: must not be empty",
		},
		"absolute write path": {
			yaml:    "rounds:\n  - strategy: x\n    write: [{file: /etc/x, content: a}]\n",
			wantErr: `write[0].file: path "/etc/x"`,
		},
		"delete the experiment directory": {
			yaml:    "rounds:\n  - strategy: x\n    delete: [a/..]\n",
			wantErr: `delete[0]: path "a/.."`,
		},
		"bad sleep": {
			yaml:    "rounds:\n  - strategy: x\n    sleep: soon\n",
			wantErr: "parse plan",
		},
		"negative sleep": {
			yaml:    "rounds:\n  - strategy: x\n    sleep: -1s\n",
			wantErr: "sleep: -1s is negative",
		},
		"exit code out of range": {
			yaml:    "rounds:\n  - strategy: x\n    exitCode: 256\n",
			wantErr: "exitCode: 256 is not between 0 and 255",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plan.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := LoadPlan(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("LoadPlan() error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadPlan() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LoadPlan() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadPlanMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.yaml")
	_, err := LoadPlan(path)
	if err == nil || !strings.Contains(err.Error(), "absent.yaml") {
		t.Fatalf("LoadPlan() error = %v, want one naming the missing file", err)
	}
}
