package protocol

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseConstraints(t *testing.T) {
	const wrapTrain = "wrap the code that holds it in train.py in `autoresearch:fixed-begin` / `autoresearch:fixed-end` comments"
	cases := map[string]struct {
		fixed      string
		repo       Repo
		want       []string
		unenforced []string
	}{
		"only fixed files named": {
			fixed: "- files: evaluate.py\n- Evaluation logic: evaluate.py (do NOT modify)\n- evaluate.py is fixed",
		},
		"keys other fields read": {
			fixed: "- files:\n  - evaluate.py\n  - prepare.py\n- time_limit: 5min\n- epoch_limit: 1",
		},
		"a condition in a variable file": {
			fixed:      "- files: evaluate.py\n- Random seed: 42 (set in train.py)",
			want:       []string{"Random seed: 42 (set in train.py)"},
			unenforced: []string{`spec.fixed.constraints[0]: "Random seed: 42 (set in train.py)" is only told to the Researcher: ` + wrapTrain},
		},
		"a variable file with fixed regions": {
			fixed: "- files: evaluate.py\n- Random seed: 42 (set in train.py)",
			repo:  Repo{Files: []string{"evaluate.py", "train.py"}, Marked: []string{"train.py"}},
			want:  []string{"Random seed: 42 (set in train.py)"},
		},
		"a condition in fixed files": {
			fixed: "- files: evaluate.py, prepare.py\n- Data split: 90/10, see prepare.py\n- The metric in evaluate.py is averaged over 3 seeds",
			want:  []string{"Data split: 90/10, see prepare.py", "The metric in evaluate.py is averaged over 3 seeds"},
		},
		"a condition in a fixed and a variable file": {
			fixed:      "- files: evaluate.py\n- evaluate.py and train.py agree on the vocabulary",
			want:       []string{"evaluate.py and train.py agree on the vocabulary"},
			unenforced: []string{`spec.fixed.constraints[0]: "evaluate.py and train.py agree on the vocabulary" is only told to the Researcher: ` + wrapTrain},
		},
		"a condition that names no file": {
			fixed:      "- files: evaluate.py\n- Batch size stays 64",
			want:       []string{"Batch size stays 64"},
			unenforced: []string{`spec.fixed.constraints[0]: "Batch size stays 64" is only told to the Researcher: it names no file of the repository; list the file that holds it in spec.fixed.files, or wrap the code that holds it in ` + "`autoresearch:fixed-begin` / `autoresearch:fixed-end`" + ` comments in the variable file it is in`},
		},
		"bullets go on, prose splits into sentences": {
			fixed: "- files: evaluate.py\n- The data split is 90/10,\n  drawn once by prepare.py\n\nThe vocabulary is fixed. Mixed precision, e.g. bf16, is allowed in evaluate.py only.",
			want: []string{
				"The data split is 90/10, drawn once by prepare.py",
				"The vocabulary is fixed.",
				"Mixed precision, e.g. bf16, is allowed in evaluate.py only.",
			},
			unenforced: []string{`spec.fixed.constraints[1]: "The vocabulary is fixed." is only told to the Researcher: it names no file of the repository; list the file that holds it in spec.fixed.files, or wrap the code that holds it in ` + "`autoresearch:fixed-begin` / `autoresearch:fixed-end`" + ` comments in the variable file it is in`},
		},
		"the loop's own files": {
			fixed: "- files: evaluate.py\n- Results are logged to experiences.md by the Supervisor",
			want:  []string{"Results are logged to experiences.md by the Supervisor"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := Parse(protocol(map[string]string{"fixed.files": tc.fixed}), tc.repo)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, res.Object.Spec.Fixed.Constraints); diff != "" {
				t.Errorf("constraints (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.unenforced, res.Unenforced); diff != "" {
				t.Errorf("unenforced (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseConstraintsFitTheAPI checks that import keeps within the API's
// limits and says what it cut.
func TestParseConstraintsFitTheAPI(t *testing.T) {
	lines := []string{"- files: evaluate.py", "- " + strings.Repeat("very long ", 60) + "in evaluate.py"}
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("- evaluate.py reads shard %d", i))
	}
	res, err := Parse(protocol(map[string]string{"fixed.files": strings.Join(lines, "\n")}), Repo{})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Object.Spec.Fixed.Constraints
	if len(got) != maxConstraints {
		t.Errorf("%d constraints, want %d", len(got), maxConstraints)
	}
	if n := len([]rune(got[0])); n != maxConstraintLength {
		t.Errorf("the long constraint has %d characters, want %d", n, maxConstraintLength)
	}
	if errs := res.Object.Spec.Validate(); len(errs) > 0 && strings.Contains(errs.ToAggregate().Error(), "constraints") {
		t.Errorf("Validate: %v", errs)
	}
	for _, want := range []string{"is longer than 512 characters; shortened", "the protocol states 41 fixed conditions; kept the first 32"} {
		if !strings.Contains(strings.Join(res.Inferred, "\n"), want) {
			t.Errorf("Inferred lacks %q:\n%s", want, strings.Join(res.Inferred, "\n"))
		}
	}
}
