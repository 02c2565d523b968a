package workspace

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMatchPattern(t *testing.T) {
	cases := []struct {
		pattern, rel string
		want         bool
	}{
		{"eval.py", "eval.py", true},
		{"eval.py", "eval.pyc", false},
		{"eval.py", "eval.py/x", true}, // a directory named eval.py
		{"eval", "eval/main.go", true},
		{"eval", "eval/sub/deep/x.go", true},
		{"eval/", "eval/main.go", true},
		{"eval/", "evaluate.py", false},
		{"eval", "evaluation/x.go", false},
		{"eval/**", "eval/sub/x.py", true},
		{"eval/**", "eval", true},
		{"eval/*.py", "eval/metric.py", true},
		{"eval/*.py", "eval/sub/metric.py", false},
		{"eval/*.py", "eval/metric.go", false},
		{"*.py", "score.py", true},
		{"*.py", "sub/score.py", false},
		{"**/*.py", "sub/deep/score.py", true},
		{"**/*.py", "score.py", true},
		{"**/metrics.go", "a/b/metrics.go", true},
		{"data/**/labels.csv", "data/labels.csv", true},
		{"data/**/labels.csv", "data/x/y/labels.csv", true},
		{"data/**/labels.csv", "data/x/y/labels.tsv", false},
		{"e?al/[a-m]*.go", "eval/main.go", true},
		{"e?al/[a-m]*.go", "eval/zz.go", false},
		{"eval*", "evaluation/x.go", true},
		{"[", "[", false}, // a malformed pattern matches nothing
		{"Eval.py", "eval.py", false},
		{"", "eval.py", false},
	}
	for _, tc := range cases {
		if got := MatchPattern(tc.pattern, tc.rel); got != tc.want {
			t.Errorf("MatchPattern(%q, %q) = %v, want %v", tc.pattern, tc.rel, got, tc.want)
		}
	}
}

func TestExpandFixed(t *testing.T) {
	w, base := newPristineExperiment(t)
	ctx := context.Background()
	got, err := w.ExpandFixed(ctx, base, []string{"eval/", "evaluate.py", "gocheck/*.go"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"eval/metric.py", "eval/sub/labels.txt", "evaluate.py", "gocheck/main.go"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ExpandFixed (-want +got):\n%s", diff)
	}
	// Files outside the experiment directory are never fixed ones.
	if _, err := w.ExpandFixed(ctx, base, []string{"lib/**"}); err == nil || !strings.Contains(err.Error(), "lib/** matches no file") {
		t.Errorf("a pattern matching nothing: %v", err)
	}
	// The ledger is the supervisor's, whatever a pattern says.
	got, err = w.ExpandFixed(ctx, base, []string{"*.md"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"notes.md"}, got); diff != "" {
		t.Errorf("ExpandFixed(*.md) (-want +got):\n%s", diff)
	}
}
