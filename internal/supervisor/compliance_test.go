package supervisor

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/parity"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

func toySpec() *v1alpha1.AutoResearchSpec {
	return &v1alpha1.AutoResearchSpec{
		Fixed:    v1alpha1.FixedSpec{Files: []v1alpha1.PathPattern{"eval.sh"}},
		Variable: v1alpha1.VariableSpec{Files: []v1alpha1.RelativePath{"train.sh"}},
	}
}

func TestCheckCompliance(t *testing.T) {
	cases := map[string]struct {
		// kept is committed as an earlier kept round before the round starts.
		kept    map[string]string
		edit    map[string]string
		profile bool
		want    steps.ComplianceResult
		// wantViolation is part of the violation, when one is wanted.
		wantViolation string
	}{
		"variable file changed": {edit: map[string]string{"train.sh": "SCORE=20\n"}},
		"fixed file changed": {
			edit:          map[string]string{"eval.sh": "echo score: 99\n"},
			wantViolation: "eval.sh",
		},
		"helper of a kept round changed": {
			kept: map[string]string{"helpers.sh": "one\n"},
			edit: map[string]string{"helpers.sh": "two\n"},
		},
		"file of the start that is not variable changed": {
			edit:          map[string]string{"notes.txt": "changed\n"},
			wantViolation: "modified notes.txt, which is not a variable file",
		},
		"profile artifacts missing": {
			edit:    map[string]string{"train.sh": "SCORE=20\n", "profiles/round-1-before.md": "hot loop\n"},
			profile: true,
			want:    steps.ComplianceResult{Advisory: "perf mode but no profile artifacts found — Researcher skipped discipline"},
		},
		"profile artifacts present": {
			edit:    map[string]string{"train.sh": "SCORE=20\n", "profiles/round-1-before.md": "hot loop\n", "profiles/round-1-analysis.md": "fuse it\n"},
			profile: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ws, res := newWorkspace(t)
			spec := toySpec()
			if tc.profile {
				spec.Profile = &v1alpha1.ProfileSpec{Command: "./profile.sh"}
			}
			base := res.StartCommit
			if tc.kept != nil {
				writeFiles(t, ws.Dir, tc.kept)
				base = keep(t, ws, 1, base, "a kept round")
			}
			writeFiles(t, ws.Dir, tc.edit)

			got, err := CheckCompliance(ctx, ws, spec, 1, base, res.StartCommit, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantViolation != "" {
				if !strings.Contains(got.Violation, tc.wantViolation) {
					t.Errorf("violation = %q, want one naming %s", got.Violation, tc.wantViolation)
				}
				got.Violation = ""
			}
			if got.Candidate != git(t, ws.Root, "rev-parse", ws.CandidateRef(1)) {
				t.Errorf("candidate = %q, want the commit %s points at", got.Candidate, ws.CandidateRef(1))
			}
			got.Candidate = ""
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// fakePython stands in for an interpreter with torch: it answers the parity
// script, which checks every target at once, passing the target named good
// and failing the one named bad.
const fakePython = `#!/bin/sh
case "$4" in
*'"name":"good"'*) echo "PARITY_OK target=good" ;;
esac
case "$4" in
*'"name":"bad"'*) echo "PARITY_FAIL target=bad kind=numerical detail=max abs diff 0.5" >&2; exit 1 ;;
esac
`

func TestCheckParity(t *testing.T) {
	good := v1alpha1.KernelTarget{Name: "good", NewModule: "kernel:f", BaselineModule: "reference:f", Fixture: "reference:fixture"}
	bad := good
	bad.Name = "bad"
	cases := map[string]struct {
		in      steps.ComplianceResult
		targets []v1alpha1.KernelTarget
		want    steps.ComplianceResult
	}{
		"all pass":   {targets: []v1alpha1.KernelTarget{good}},
		"no targets": {},
		"one fails":  {targets: []v1alpha1.KernelTarget{good, bad}, want: steps.ComplianceResult{Parity: "PARITY_FAIL target=bad kind=numerical detail=max abs diff 0.5"}},
		"keeps the rest": {
			in:      steps.ComplianceResult{Strategy: "fuse", Advisory: "no profile"},
			targets: []v1alpha1.KernelTarget{bad},
			want:    steps.ComplianceResult{Strategy: "fuse", Advisory: "no profile", Parity: "PARITY_FAIL target=bad kind=numerical detail=max abs diff 0.5"},
		},
		"not run after a violation": {
			in:      steps.ComplianceResult{Violation: "eval.sh changed"},
			targets: []v1alpha1.KernelTarget{bad},
			want:    steps.ComplianceResult{Violation: "eval.sh changed"},
		},
	}
	dir := t.TempDir()
	python := filepath.Join(dir, "python")
	writeFiles(t, dir, map[string]string{"python": fakePython})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.in
			if err := CheckParity(context.Background(), &got, parity.Exec, python, dir, tc.targets); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckParityReportsABrokenInterpreter(t *testing.T) {
	res := steps.ComplianceResult{}
	targets := []v1alpha1.KernelTarget{{Name: "k", NewModule: "kernel:f", BaselineModule: "reference:f", Fixture: "reference:fixture"}}
	err := CheckParity(context.Background(), &res, parity.Exec, filepath.Join(t.TempDir(), "no-python"), t.TempDir(), targets)
	if err == nil {
		t.Errorf("a missing interpreter gave no error, result %+v", res)
	}
}

// TestCheckCandidateComplianceWhileTheSupervisorCommits checks a candidate
// of a round started early (spec.pipeline) after the round before it
// committed: the worktree's HEAD moved on from the candidate's base, by the
// supervisor's hand, which is no violation of the candidate's; a fixed
// file it changed still is.
func TestCheckCandidateComplianceWhileTheSupervisorCommits(t *testing.T) {
	for name, tc := range map[string]struct {
		edit          map[string]string
		wantViolation string
	}{
		"variable file changed": {edit: map[string]string{"exp/train.sh": "#!/bin/sh\nSCORE=30\n"}},
		"fixed file changed":    {edit: map[string]string{"exp/eval.sh": "echo score: 99\n"}, wantViolation: "eval.sh"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ws, res := newWorkspace(t)
			root := filepath.Join(t.TempDir(), "r2")
			if err := PrepareCandidate(ctx, ws, 2, res.StartCommit, root); err != nil {
				t.Fatal(err)
			}
			writeFiles(t, root, tc.edit)
			writeFiles(t, ws.Dir, map[string]string{"train.sh": "#!/bin/sh\nSCORE=20\n"})
			head := keep(t, ws, 1, res.StartCommit, "round 1, committed while round 2 researched")

			got, err := CheckCandidateCompliance(ctx, ws, toySpec(), 2, "", root, "", res.StartCommit, res.StartCommit, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantViolation == "" && got.Violation != "" {
				t.Errorf("violation %q, want none: HEAD is on %s, where the supervisor put it", got.Violation, head)
			}
			if tc.wantViolation != "" && (!strings.Contains(got.Violation, tc.wantViolation) || strings.Contains(got.Violation, "HEAD")) {
				t.Errorf("violation %q, want one naming %s and not HEAD", got.Violation, tc.wantViolation)
			}
		})
	}
}
