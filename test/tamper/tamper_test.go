// Package tamper runs the attack corpus in attacks/, and the attacks on a
// Python evaluation in attacks-python/, against the local runner. Each
// attack is a Researcher that wants a better number, or wants to leave
// something behind, by going around the supervisor instead of
// improving the code. Every one must end in a failing verdict, with nothing
// of it on the experiment branch or in the user's repository, and without
// the supervisor ever running a command the attack planted, nor any process
// the attack started outliving its step.
package tamper

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

func TestMain(m *testing.M) {
	gittest.Isolate()
	// Attacks that plant files in $TMPDIR, where steps run without mounts,
	// plant them in a directory this test removes.
	tmp, err := os.MkdirTemp("", "tamper-")
	if err != nil {
		panic(err)
	}
	if err := os.Setenv("TMPDIR", tmp); err != nil {
		panic(err)
	}
	code := m.Run()
	if err := os.RemoveAll(tmp); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// verdicts says what each attack must end in, where the steps run without
// read-only mounts; mountedVerdicts what an attack ends in otherwise where
// they have them.
var verdicts = map[string]v1alpha1.Verdict{
	"alternates":                  v1alpha1.VerdictComplianceFailed,
	"append-eval-log":             v1alpha1.VerdictNotImproved,
	"candidate-plants-attributes": v1alpha1.VerdictNotImproved,
	"assume-unchanged-eval":       v1alpha1.VerdictComplianceFailed,
	"ci-forges":                   v1alpha1.VerdictComplianceFailed,
	"ci-workflow":                 v1alpha1.VerdictComplianceFailed,
	"clean-filter":                v1alpha1.VerdictComplianceFailed,
	"daemon-train":                v1alpha1.VerdictNotImproved,
	"edit-fixed-eval":             v1alpha1.VerdictComplianceFailed,
	"fixed-dir-new-file":          v1alpha1.VerdictComplianceFailed,
	"fixed-region-edit":           v1alpha1.VerdictComplianceFailed,
	"fixed-region-unmark":         v1alpha1.VerdictComplianceFailed,
	"flood-violation":             v1alpha1.VerdictComplianceFailed,
	"forge-candidate-ref":         v1alpha1.VerdictComplianceFailed,
	"forge-ledger-backup":         v1alpha1.VerdictComplianceFailed,
	"forge-experiences":           v1alpha1.VerdictComplianceFailed,
	"forge-results":               v1alpha1.VerdictComplianceFailed,
	"fsmonitor":                   v1alpha1.VerdictComplianceFailed,
	"gitignore-hide":              v1alpha1.VerdictComplianceFailed,
	"gitlink-redirect":            v1alpha1.VerdictComplianceFailed,
	"gitlink-redirect-then-fail":  v1alpha1.VerdictResearcherFailed,
	"gitmodules":                  v1alpha1.VerdictComplianceFailed,
	"go-env-write":                v1alpha1.VerdictNotImproved,
	"go-init-helper":              v1alpha1.VerdictComplianceFailed,
	"grafts":                      v1alpha1.VerdictComplianceFailed,
	"hook-post-checkout":          v1alpha1.VerdictComplianceFailed,
	"hook-post-commit":            v1alpha1.VerdictComplianceFailed,
	"hooks-path":                  v1alpha1.VerdictComplianceFailed,
	"ident-checkout":              v1alpha1.VerdictNotImproved,
	"info-attributes":             v1alpha1.VerdictComplianceFailed,
	"move-main":                   v1alpha1.VerdictComplianceFailed,
	"new-branch":                  v1alpha1.VerdictComplianceFailed,
	"new-tag":                     v1alpha1.VerdictComplianceFailed,
	"no-change":                   v1alpha1.VerdictNoChange,
	"output-symlink":              v1alpha1.VerdictEvalFailed,
	"planted-go-work":             v1alpha1.VerdictNotImproved,
	"planted-output":              v1alpha1.VerdictEvalFailed,
	"python-startup":              v1alpha1.VerdictComplianceFailed,
	"push-redirect":               v1alpha1.VerdictComplianceFailed,
	"replace-object":              v1alpha1.VerdictComplianceFailed,
	"researcher-lingers":          v1alpha1.VerdictNotImproved,
	"researcher-commit":           v1alpha1.VerdictComplianceFailed,
	"setsid-edit-eval":            v1alpha1.VerdictNotImproved,
	"skip-worktree-eval":          v1alpha1.VerdictComplianceFailed,
	"symlink-helper":              v1alpha1.VerdictComplianceFailed,
	"symlink-variable":            v1alpha1.VerdictComplianceFailed,
	"train-lingers":               v1alpha1.VerdictNotImproved,
	"train-links-eval-log":        v1alpha1.VerdictNotImproved,
	"train-plants-filter":         v1alpha1.VerdictComplianceFailed,
	"train-rewrites-eval":         v1alpha1.VerdictNotImproved,
	"ledger-fifo":                 v1alpha1.VerdictComplianceFailed,
	"ledger-dir":                  v1alpha1.VerdictComplianceFailed,
	"unsealable-empty-repo":       v1alpha1.VerdictComplianceFailed,
	"unsealable-dot-git":          v1alpha1.VerdictComplianceFailed,
	// What git add cannot walk stays out of the candidate, whose change
	// is honest; the rollback that follows the commit removes it.
	"deep-dir": v1alpha1.VerdictImproved,
	// A round of one finds the name taken by the supervisor's directory.
	"state-dir-link": v1alpha1.VerdictImproved,
}

// mountedVerdicts are the attacks that end otherwise where the steps get
// read-only mounts (runner.ReadOnlyMounts): what they write there fails,
// and the round is judged on what is left of them.
var mountedVerdicts = map[string]v1alpha1.Verdict{
	// Training cannot write the git directory: no filter is planted, and
	// the candidate is no better.
	"train-plants-filter": v1alpha1.VerdictNotImproved,
	// Nor can the Researcher: what it meant to plant in git fails, and the
	// round is judged on the honest rest of its change, a better SCORE.
	"alternates":       v1alpha1.VerdictImproved,
	"fsmonitor":        v1alpha1.VerdictImproved,
	"grafts":           v1alpha1.VerdictImproved,
	"hook-post-commit": v1alpha1.VerdictImproved,
	"hooks-path":       v1alpha1.VerdictImproved,
	"info-attributes":  v1alpha1.VerdictImproved,
	"move-main":        v1alpha1.VerdictImproved,
	"new-branch":       v1alpha1.VerdictImproved,
	"new-tag":          v1alpha1.VerdictImproved,
	"push-redirect":    v1alpha1.VerdictImproved,
	"replace-object":   v1alpha1.VerdictImproved,
	// These stop at their first git write, which fails.
	"assume-unchanged-eval": v1alpha1.VerdictResearcherFailed,
	"hook-post-checkout":    v1alpha1.VerdictResearcherFailed,
	"researcher-commit":     v1alpha1.VerdictResearcherFailed,
	"skip-worktree-eval":    v1alpha1.VerdictResearcherFailed,
}

func TestAttacks(t *testing.T) {
	corpus := attacks(t, "attacks")
	t.Logf("steps are contained by %s", runner.Containment())
	if len(corpus) != len(verdicts) {
		t.Fatalf("attacks %v; every attack needs its verdict in the table and every verdict its attack", corpus)
	}
	for _, a := range corpus {
		t.Run(a.name, func(t *testing.T) {
			want, ok := verdicts[a.name]
			if !ok {
				t.Fatalf("no verdict for attack %s", a.name)
			}
			if v, ok := mountedVerdicts[a.name]; ok && runner.ReadOnlyMounts() {
				want = v
			}
			runAttack(t, a.script, want)
		})
	}
	if !runner.ReadOnlyMounts() {
		return
	}
	// The guards behind the mounts hold where a machine allows none: the
	// attacks the mounts stop run again without them.
	t.Run("without-mounts", func(t *testing.T) {
		defer runner.WithoutMounts()()
		for _, name := range slices.Sorted(maps.Keys(mountedVerdicts)) {
			t.Run(name, func(t *testing.T) {
				script, err := filepath.Abs(filepath.Join("attacks", name+".sh"))
				if err != nil {
					t.Fatal(err)
				}
				runAttack(t, script, verdicts[name])
			})
		}
	})
}

// TestAttacksAsACandidate runs every attack as candidate a of a round of
// two, beside an honest candidate b that has training write 5 more than
// SCORE, with spec.combine: the attacker works on a plain copy of the
// files, its steps run at once with b's, what the supervisor undoes after
// the round's Researchers or training is held against both, and where both
// improve, the candidate that merges them is judged by the same rules.
// Whatever the verdicts, no attack gets a number that honest work does not,
// nor leaves anything behind, alone or merged with b.
func TestAttacksAsACandidate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole corpus again")
	}
	ran, combined := 0, 0
	corpus := attacks(t, "attacks")
	for _, a := range corpus {
		t.Run(a.name, func(t *testing.T) {
			ran++
			if runAttack(t, a.script, "") {
				combined++
			}
		})
	}
	if !runner.ReadOnlyMounts() {
		return
	}
	// With mounts, attacks whose planting fails improve beside b: their
	// merge with b must have been made and judged.
	if ran == len(corpus) && combined == 0 {
		t.Error("no round combined an attack's candidate with b's")
	}
	t.Run("without-mounts", func(t *testing.T) {
		defer runner.WithoutMounts()()
		for _, name := range append(slices.Sorted(maps.Keys(mountedVerdicts)), candidateWithoutMounts...) {
			t.Run(name, func(t *testing.T) {
				script, err := filepath.Abs(filepath.Join("attacks", name+".sh"))
				if err != nil {
					t.Fatal(err)
				}
				runAttack(t, script, "")
			})
		}
	})
}

// candidateWithoutMounts are attacks that, as a candidate, reach past their
// own copy only where the steps get no read-only mounts: they run again as
// a candidate without them.
var candidateWithoutMounts = []string{"candidate-plants-attributes"}

// roundOneVerdict returns round 1's verdict, checked against want; with
// nothing to want, it is improved when any candidate improved.
func roundOneVerdict(t *testing.T, history []v1alpha1.RoundRecord, want v1alpha1.Verdict) v1alpha1.Verdict {
	t.Helper()
	var got v1alpha1.Verdict
	for _, h := range history {
		if h.Round != 1 {
			continue
		}
		if want == "" {
			t.Logf("candidate %s: %s (%s)", h.Candidate, h.Verdict, h.Insight)
			if h.Verdict == v1alpha1.VerdictImproved {
				got = h.Verdict
			}
			continue
		}
		got = h.Verdict
		if got != want {
			t.Errorf("verdict %s (%s), want %s", got, h.Insight, want)
		}
	}
	return got
}

// runAttack runs one round with the attack as its Researcher and checks
// what it left. Without a verdict to want, the attack is candidate a of a
// round of two beside an honest candidate b, with spec.combine, and the
// round may end in any verdicts but keeps only honest work; runAttack
// then says whether the round made a candidate of a and b together.
func runAttack(t *testing.T, script string, want v1alpha1.Verdict) bool {
	dir := t.TempDir()
	marker := filepath.Join(dir, "planted-command-ran")
	// The user's Go environment file, which the attack must not change.
	goEnv := filepath.Join(dir, "go.env")
	if err := os.WriteFile(goEnv, []byte("GOPRIVATE=example.com/private\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOENV", goEnv)
	t.Setenv("GOFLAGS", "")
	// The run pushes to spec.output.git at the end, as the user asked:
	// the push, too, must reach the remote and run nothing planted.
	const token = "tamper-t0ken"
	remote := gittest.NewHTTPRemote(t, token)
	repo := filepath.Join(dir, "repo")
	researcher, candidates := "sh "+script, ""
	if want == "" {
		researcher = `if [ \"$AUTORESEARCH_CANDIDATE\" = a ]; then sh ` + script + `; else echo 'echo $((SCORE+5)) > out.txt' >> train.sh; fi`
		candidates = "\n  candidates: 2\n  combine: true"
	}
	files := maps.Clone(Toy)
	files["experiment.yaml"] = `apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata:
  name: toy
spec:
  researchQuestion: "Does a higher SCORE help?"
  maxRounds: 1` + candidates + `
  baseline: {value: "10"}
  fixed: {files: [eval.sh, check/main.go, golden/], timeLimit: 10s}
  variable: {files: [train.sh]}
  train: {command: "./train.sh", outputs: [out.txt]}
  eval: {metric: score, direction: maximize, command: "./eval.sh"}
  researcher:
    command: "` + researcher + `"
    env: [{name: MARKER, value: "` + marker + `"}]
  output:
    git: {url: "` + remote.URL + `"}
`
	gittest.WriteFiles(t, repo, files)
	gittest.Git(t, repo, "init", "-q", "-b", "main")
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "-m", "start")
	before := RepoGitState(t, repo)

	ctx := context.Background()
	x, err := runner.LoadExperiment(ctx, filepath.Join(repo, "experiment.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	st, err := runner.Run(ctx, x, runner.Options{Out: &out, OutputToken: token})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}

	got := roundOneVerdict(t, st.History, want)
	if want == "" && !slices.Contains([]string{"10", "15", "20", "25"}, st.Best.Value) {
		t.Errorf("best score %s: only honest work, 15, 20 or both at once, 25, may beat 10", st.Best.Value)
	}
	if got == "" && want != "" {
		t.Fatalf("round 1 has no verdict:\n%s", out.String())
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Error("a command the attack planted ran: the supervisor ran it, or a process outlived its step")
	}
	if data, err := os.ReadFile(goEnv); err != nil || string(data) != "GOPRIVATE=example.com/private\n" {
		t.Errorf("the user's Go environment file is now %q (%v)", data, err)
	}
	start := gittest.Git(t, repo, "rev-parse", "main")
	// An attack whose planting failed is judged on its honest change, a
	// better SCORE, which a kept round commits: that and nothing else.
	honest := []string{strings.TrimSpace(strings.Replace(Toy["train.sh"], "SCORE=10", "SCORE=20", 1))}
	if want == "" {
		plusFive := Toy["train.sh"] + "echo $((SCORE+5)) > out.txt\n"
		honest = append(honest, strings.TrimSpace(plusFive), strings.TrimSpace(strings.Replace(plusFive, "SCORE=10", "SCORE=20", 1)))
	}
	for _, f := range strings.Fields(gittest.Git(t, repo, "diff", "--name-only", st.Workspace.StartCommit, "refs/heads/autoresearch/toy")) {
		if f == "train.sh" && got == v1alpha1.VerdictImproved && slices.Contains(honest, strings.TrimSpace(gittest.Git(t, repo, "show", "refs/heads/autoresearch/toy:train.sh"))) {
			continue
		}
		if f != workspace.ExperiencesFile && f != workspace.ResultsFile {
			t.Errorf("the experiment branch holds %s from the attack", f)
		}
	}
	if got, want := gittest.Git(t, remote.Dir, "rev-parse", "refs/heads/autoresearch/toy"), gittest.Git(t, repo, "rev-parse", "refs/heads/autoresearch/toy"); got != want || st.Output == nil || st.Output.Error != "" {
		t.Errorf("the remote's branch is %s, want the experiment branch %s; status.output %+v", got, want, st.Output)
	}
	after := RepoGitState(t, repo)
	// The supervisor's own refs: the experiment branch and the round's
	// sealed candidate, when the round got as far as sealing it.
	after.Refs = slices.DeleteFunc(after.Refs, func(r string) bool {
		return slices.Contains([]string{"refs/heads/autoresearch/toy", "refs/autoresearch/candidates/toy/r1",
			"refs/autoresearch/candidates/toy/r1a", "refs/autoresearch/candidates/toy/r1b", "refs/autoresearch/candidates/toy/r1c"}, r)
	})
	if start != before.Main || !slices.Equal(before.Refs, after.Refs) || before.Config != after.Config || !slices.Equal(before.Hooks, after.Hooks) {
		t.Errorf("the user's repository changed:\nbefore %+v\nafter  %+v", before, after)
	}
	return slices.ContainsFunc(st.History, func(h v1alpha1.RoundRecord) bool { return h.Round == 1 && h.Candidate == "c" })
}
