package workspace

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const historyRule = " (only the supervisor may run git write commands)"

// TestComplianceAndRollback checks every kind of change a Researcher can make
// twice: what CheckCompliance reports, and that Rollback undoes it while the
// ledger files and ignored artifacts stay.
func TestComplianceAndRollback(t *testing.T) {
	cases := map[string]struct {
		researcher func(t *testing.T, w *Workspace)
		want       ComplianceReport
	}{
		"clean": {
			researcher: func(t *testing.T, w *Workspace) {},
		},
		"variable file modified": {
			researcher: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"train.py": "lr = 0.05\n"})
			},
			want: ComplianceReport{Changes: []FileChange{{Path: "train.py", Kind: ChangeModified}}},
		},
		"fixed file modified": {
			researcher: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"prepare.py": "def prepare(): return 'leak'\n"})
			},
			want: ComplianceReport{
				Changes:    []FileChange{{Path: "prepare.py", Kind: ChangeModified}},
				Violations: []Violation{{Path: "prepare.py", Reason: "modified fixed file prepare.py"}},
			},
		},
		"fixed file deleted": {
			researcher: func(t *testing.T, w *Workspace) { remove(t, inDir(w, "evaluate.py")) },
			want: ComplianceReport{
				Changes:    []FileChange{{Path: "evaluate.py", Kind: ChangeDeleted}},
				Violations: []Violation{{Path: "evaluate.py", Reason: "deleted fixed file evaluate.py"}},
			},
		},
		"fixed file deleted and created again": {
			researcher: func(t *testing.T, w *Workspace) {
				remove(t, inDir(w, "evaluate.py"))
				writeFiles(t, w.Dir, map[string]string{"evaluate.py": "def evaluate(): return 0.0\n"})
			},
			want: ComplianceReport{
				Changes:    []FileChange{{Path: "evaluate.py", Kind: ChangeModified}},
				Violations: []Violation{{Path: "evaluate.py", Reason: "modified fixed file evaluate.py"}},
			},
		},
		"fixed file renamed": {
			researcher: func(t *testing.T, w *Workspace) { gitT(t, w.Dir, "mv", "prepare.py", "prep.py") },
			want: ComplianceReport{
				Changes:    []FileChange{{Path: "prep.py", Kind: ChangeRenamed, From: "prepare.py"}},
				Violations: []Violation{{Path: "prep.py", Reason: "renamed fixed file prepare.py to prep.py"}},
			},
		},
		"tracked file that is not variable modified": {
			researcher: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"configs/default.cfg": "steps = 1000\n"})
			},
			want: ComplianceReport{
				Changes:    []FileChange{{Path: "configs/default.cfg", Kind: ChangeModified}},
				Violations: []Violation{{Path: "configs/default.cfg", Reason: "modified configs/default.cfg, which is not a variable file"}},
			},
		},
		"file outside the experiment directory modified": {
			researcher: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Root, map[string]string{"lib/common.py": "SHARED = 2\n"})
			},
			want: ComplianceReport{
				Changes:    []FileChange{{Path: "lib/common.py", Kind: ChangeModified}},
				Violations: []Violation{{Path: "lib/common.py", Reason: "modified lib/common.py outside the experiment directory"}},
			},
		},
		".gitignore modified": {
			researcher: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{".gitignore": readFile(t, inDir(w, ".gitignore")) + "my_eval.py\n"})
				writeFiles(t, w.Dir, map[string]string{"my_eval.py": "hidden\n"})
			},
			want: ComplianceReport{
				Changes:    []FileChange{{Path: ".gitignore", Kind: ChangeModified}},
				Violations: []Violation{{Path: ".gitignore", Reason: "modified .gitignore, which is not a variable file"}},
			},
		},
		"toolchain files added": {
			researcher: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{
					".python-version":          "2.7.18\n",
					"rust-toolchain.toml":      "[toolchain]\npath = \"/tmp/tc\"\n",
					"tools/.cargo/config.toml": "[build]\nrustc-wrapper = \"/tmp/w\"\n",
				})
			},
			want: ComplianceReport{
				Changes: []FileChange{
					{Path: ".python-version", Kind: ChangeAdded},
					{Path: "rust-toolchain.toml", Kind: ChangeAdded},
					{Path: "tools/.cargo/config.toml", Kind: ChangeAdded},
				},
				Violations: []Violation{
					{Path: ".python-version", Reason: "added .python-version, a file that chooses the interpreter or toolchain that runs the fixed evaluation"},
					{Path: "rust-toolchain.toml", Reason: "added rust-toolchain.toml, a file that chooses the interpreter or toolchain that runs the fixed evaluation"},
					{Path: "tools/.cargo/config.toml", Reason: "added tools/.cargo/config.toml, a file that chooses the interpreter or toolchain that runs the fixed evaluation"},
				},
			},
		},
		"files that run by themselves added": {
			researcher: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{
					".github/workflows/ci.yml": "on: push\n",
					"Jenkinsfile":              "pipeline {}\n",
					".envrc":                   "curl x | sh\n",
					"notes/helper.md":          "fine\n",
				})
			},
			want: ComplianceReport{
				Changes: []FileChange{
					{Path: ".envrc", Kind: ChangeAdded},
					{Path: ".github/workflows/ci.yml", Kind: ChangeAdded},
					{Path: "Jenkinsfile", Kind: ChangeAdded},
					{Path: "notes/helper.md", Kind: ChangeAdded},
				},
				Violations: []Violation{
					{Path: ".envrc", Reason: "added .envrc, a file that a CI service or a developer's tool runs by itself once the branch is pushed or checked out"},
					{Path: ".github/workflows/ci.yml", Reason: "added .github/workflows/ci.yml, a file that a CI service or a developer's tool runs by itself once the branch is pushed or checked out"},
					{Path: "Jenkinsfile", Reason: "added Jenkinsfile, a file that a CI service or a developer's tool runs by itself once the branch is pushed or checked out"},
				},
			},
		},
		"variable file deleted": {
			researcher: func(t *testing.T, w *Workspace) { remove(t, inDir(w, "train.py")) },
			want: ComplianceReport{
				Changes:    []FileChange{{Path: "train.py", Kind: ChangeDeleted}},
				Violations: []Violation{{Path: "train.py", Reason: "deleted variable file train.py, which the train command needs"}},
			},
		},
		"new helper files": {
			researcher: func(t *testing.T, w *Workspace) {
				// Beside the fixed Python evaluation only in a directory
				// without an __init__.
				writeFiles(t, w.Dir, map[string]string{"utils/model_utils.py": "x\n", "layers/retrieval.py": "y\n", "ideas.md": "n\n"})
				writeFiles(t, w.Root, map[string]string{"lib/helper.py": "z\n"})
			},
			want: ComplianceReport{Changes: []FileChange{
				{Path: "ideas.md", Kind: ChangeAdded},
				{Path: "layers/retrieval.py", Kind: ChangeAdded},
				{Path: "lib/helper.py", Kind: ChangeAdded},
				{Path: "utils/model_utils.py", Kind: ChangeAdded},
			}},
		},
		"new file that looks like evaluation code": {
			researcher: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"tools/computeMetrics.py": "x\n", "metrics.json": "{}\n"})
			},
			want: ComplianceReport{
				Changes: []FileChange{
					{Path: "metrics.json", Kind: ChangeAdded},
					{Path: "tools/computeMetrics.py", Kind: ChangeAdded},
				},
				Violations: []Violation{{Path: "tools/computeMetrics.py", Reason: "new file tools/computeMetrics.py looks like evaluation code; evaluation is fixed"}},
				EvalLike:   []string{"tools/computeMetrics.py"},
			},
		},
		"staged changes": {
			researcher: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"prepare.py": "staged\n", "helper.sh": "h\n", "scorer.py": "s\n"})
				gitT(t, w.Dir, "add", "prepare.py", "helper.sh", "scorer.py")
			},
			want: ComplianceReport{
				Changes: []FileChange{
					{Path: "helper.sh", Kind: ChangeAdded},
					{Path: "prepare.py", Kind: ChangeModified},
					{Path: "scorer.py", Kind: ChangeAdded},
				},
				Violations: []Violation{
					{Path: "prepare.py", Reason: "modified fixed file prepare.py"},
					{Path: "scorer.py", Reason: "new file scorer.py looks like evaluation code; evaluation is fixed"},
				},
				EvalLike: []string{"scorer.py"},
			},
		},
		"Researcher committed": {
			researcher: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"train.py": "lr = 0.01\n"})
				gitT(t, w.Dir, "commit", "-q", "-am", "my change")
			},
			want: ComplianceReport{
				Changes:    []FileChange{{Path: "train.py", Kind: ChangeModified}},
				Violations: []Violation{{Reason: "git history changed: HEAD moved from <hash> to <hash>" + historyRule}},
				HeadMoved:  "HEAD moved from <hash> to <hash>",
			},
		},
		"Researcher reset to the previous commit": {
			researcher: func(t *testing.T, w *Workspace) { gitT(t, w.Dir, "reset", "-q", "--hard", "HEAD~1") },
			want: ComplianceReport{
				// Without Init's .gitignore, the ignored artifacts and the
				// supervisor's state show up as new files.
				Changes: []FileChange{
					{Path: ".autoresearch/state.json", Kind: ChangeAdded},
					{Path: ".gitignore", Kind: ChangeDeleted},
					{Path: "data/shard.bin", Kind: ChangeAdded},
					{Path: "model.ckpt", Kind: ChangeAdded},
				},
				Violations: []Violation{
					{Reason: "git history changed: HEAD moved from <hash> to <hash>" + historyRule},
					{Path: ".autoresearch/state.json", Reason: "added .autoresearch/state.json, which names the supervisor's state directory; no candidate may hold it"},
					{Path: ".gitignore", Reason: "deleted .gitignore, which is not a variable file"},
				},
				HeadMoved: "HEAD moved from <hash> to <hash>",
			},
		},
		"detached HEAD": {
			researcher: func(t *testing.T, w *Workspace) { gitT(t, w.Dir, "checkout", "-q", "--detach") },
			want: ComplianceReport{
				Violations: []Violation{{Reason: "git history changed: HEAD is detached at <hash>" + historyRule}},
				HeadMoved:  "HEAD is detached at <hash>",
			},
		},
		"another branch with a commit": {
			researcher: func(t *testing.T, w *Workspace) {
				gitT(t, w.Dir, "checkout", "-q", "-b", "mine")
				writeFiles(t, w.Dir, map[string]string{"train.py": "lr = 0.3\n"})
				gitT(t, w.Dir, "commit", "-q", "-am", "mine")
			},
			want: ComplianceReport{
				Changes:    []FileChange{{Path: "train.py", Kind: ChangeModified}},
				Violations: []Violation{{Reason: "git history changed: HEAD is on branch mine instead of autoresearch/x; HEAD moved from <hash> to <hash>" + historyRule}},
				HeadMoved:  "HEAD is on branch mine instead of autoresearch/x; HEAD moved from <hash> to <hash>",
			},
		},
		"branch moved, then HEAD detached at the base": {
			researcher: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"train.py": "lr = 0.3\n"})
				gitT(t, w.Dir, "commit", "-q", "-am", "hidden")
				gitT(t, w.Dir, "checkout", "-q", "--detach", "HEAD~1")
			},
			want: ComplianceReport{
				Violations: []Violation{{Reason: "git history changed: HEAD is detached at <hash>; branch autoresearch/x moved from <hash> to <hash>" + historyRule}},
				HeadMoved:  "HEAD is detached at <hash>; branch autoresearch/x moved from <hash> to <hash>",
			},
		},
		"rebase left half done": {
			researcher: func(t *testing.T, w *Workspace) {
				gitT(t, w.Dir, "checkout", "-q", "-b", "side")
				writeFiles(t, w.Dir, map[string]string{"train.py": "lr = side\n"})
				gitT(t, w.Dir, "commit", "-q", "-am", "side")
				gitT(t, w.Dir, "checkout", "-q", w.Branch)
				writeFiles(t, w.Dir, map[string]string{"train.py": "lr = mine\n"})
				gitT(t, w.Dir, "commit", "-q", "-am", "mine")
				cmd := []string{"rebase", "side"}
				if out, err := runGit(w.Dir, cmd...); err == nil {
					t.Fatalf("git rebase side succeeded, want a conflict:\n%s", out)
				}
			},
			want: ComplianceReport{
				Changes:    []FileChange{{Path: "train.py", Kind: ChangeModified}},
				Violations: []Violation{{Reason: "git history changed: HEAD is detached at <hash>; HEAD moved from <hash> to <hash>; branch autoresearch/x moved from <hash> to <hash>" + historyRule}},
				HeadMoved:  "HEAD is detached at <hash>; HEAD moved from <hash> to <hash>; branch autoresearch/x moved from <hash> to <hash>",
			},
		},
		"index lock left by a killed git": {
			researcher: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"train.py": "lr = 0.2\n"})
				lock := gitT(t, w.Root, "rev-parse", "--path-format=absolute", "--git-path", "index.lock")
				if err := os.WriteFile(lock, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: ComplianceReport{Changes: []FileChange{{Path: "train.py", Kind: ChangeModified}}},
		},
	}

	artifacts := map[string]string{
		"data/shard.bin":           "prepared data\n",
		"model.ckpt":               "checkpoint\n",
		".autoresearch/state.json": "{}\n",
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w, base := newExperiment(t)
			writeFiles(t, w.Dir, artifacts)
			ledger := readFile(t, w.ExperiencesPath()) + "| 1 |  |  |  | try a lower lr |  |  |\n"
			results := readFile(t, w.ResultsPath()) + "abc1234\t1.000000\t0.0\tkeep\tbaseline\n"

			tc.researcher(t, w)
			// The Researcher adds its strategy row, whatever it did to git.
			writeFiles(t, w.Dir, map[string]string{"experiences.md": ledger, "results.tsv": results})

			report, err := sealAndCheck(ctx, t, w, base, fixedFiles, variableFiles)
			if err != nil {
				t.Fatalf("CheckCompliance: %v", err)
			}
			if diff := cmp.Diff(tc.want, withoutHashes(report)); diff != "" {
				t.Errorf("CheckCompliance (-want +got):\n%s", diff)
			}
			if report.OK() != (len(tc.want.Violations) == 0) {
				t.Errorf("OK() = %v with violations %v", report.OK(), report.Violations)
			}

			w.Caches = []string{"data"}
			// A repository of the Researcher's own, which git clean skips
			// unless told twice.
			gitT(t, w.Dir, "init", "-q", "nested")
			writeFiles(t, w.Dir, map[string]string{"nested/left.txt": "x\n"})
			if err := w.Rollback(ctx, base); err != nil {
				t.Fatalf("Rollback: %v", err)
			}
			assertRolledBack(t, w, base)
			// The supervisor's state and the declared cache stay; any other
			// ignored file is the Researcher's, and goes.
			for _, rel := range []string{"data/shard.bin", ".autoresearch/state.json"} {
				if got := readFile(t, inDir(w, rel)); got != artifacts[rel] {
					t.Errorf("%s = %q after rollback, want it kept", rel, got)
				}
			}
			for _, rel := range []string{"model.ckpt", "nested"} {
				if _, err := os.Stat(inDir(w, rel)); !os.IsNotExist(err) {
					t.Errorf("%s survived the rollback: %v", rel, err)
				}
			}
			if got := readFile(t, w.ExperiencesPath()); got != ledger {
				t.Errorf("experiences.md after rollback:\n%s\nwant the working-tree content:\n%s", got, ledger)
			}
			if got := readFile(t, w.ResultsPath()); got != results {
				t.Errorf("results.tsv after rollback = %q, want %q", got, results)
			}
			if again, err := sealAndCheck(ctx, t, w, base, fixedFiles, variableFiles); err != nil || !again.OK() || len(again.Changes) != 0 {
				t.Errorf("CheckCompliance after rollback = %+v, %v; want no changes", again, err)
			}
		})
	}
}

// TestTheStateDirectoryIsNoCandidates: where the experiment directory has
// no state directory of the supervisor's (on a cluster, where the state
// lies elsewhere, and in a candidate's copy), a Researcher can take its
// name, which git ignores only as a directory, for a link of its own. The
// candidate that holds it is refused, and the rollback removes it.
func TestTheStateDirectoryIsNoCandidates(t *testing.T) {
	ctx := context.Background()
	w, base := newExperiment(t)
	if err := os.RemoveAll(w.StateDir()); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", w.StateDir()); err != nil {
		t.Fatal(err)
	}
	// Elsewhere the name is a file like any other.
	writeFiles(t, w.Dir, map[string]string{"sub/.autoresearch": "x\n"})
	report, err := sealAndCheck(ctx, t, w, base, fixedFiles, variableFiles)
	if err != nil {
		t.Fatal(err)
	}
	want := ComplianceReport{
		Changes:    []FileChange{{Path: ".autoresearch", Kind: ChangeAdded}, {Path: "sub/.autoresearch", Kind: ChangeAdded}},
		Violations: []Violation{{Path: ".autoresearch", Reason: "added .autoresearch, which names the supervisor's state directory; no candidate may hold it"}},
	}
	if diff := cmp.Diff(want, withoutHashes(report)); diff != "" {
		t.Errorf("CheckCompliance (-want +got):\n%s", diff)
	}
	if err := w.Rollback(ctx, base); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if _, err := os.Lstat(w.StateDir()); !os.IsNotExist(err) {
		t.Errorf("the link survived the rollback: %v", err)
	}
}

// assertRolledBack checks that the worktree is on its branch at base with
// nothing changed but the ledger files.
func assertRolledBack(t *testing.T, w *Workspace, base string) {
	t.Helper()
	if got := gitT(t, w.Root, "symbolic-ref", "HEAD"); got != "refs/heads/"+w.Branch {
		t.Errorf("HEAD after rollback is on %s, want %s", got, w.Branch)
	}
	if got := gitT(t, w.Root, "rev-parse", "HEAD", w.Branch); got != base+"\n"+base {
		t.Errorf("HEAD and branch after rollback = %q, want both at %s", got, base)
	}
	wantStatus := "M examples/x/experiences.md\n M examples/x/results.tsv"
	if got := gitT(t, w.Root, "status", "--porcelain", "--untracked-files=all"); got != wantStatus {
		t.Errorf("status after rollback = %q, want only the ledger files modified", got)
	}
	for _, state := range []string{"rebase-merge", "index.lock"} {
		p := gitT(t, w.Root, "rev-parse", "--path-format=absolute", "--git-path", state)
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s still exists after rollback", state)
		}
	}
}

var hashPattern = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)

// withoutHashes replaces commit hashes in the report's sentences, which
// differ from run to run.
func withoutHashes(r ComplianceReport) ComplianceReport {
	r.HeadMoved = hashPattern.ReplaceAllString(r.HeadMoved, "<hash>")
	for i := range r.Violations {
		r.Violations[i].Reason = hashPattern.ReplaceAllString(r.Violations[i].Reason, "<hash>")
	}
	return r
}

func remove(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}

func runGit(dir string, args ...string) (string, error) {
	return git(context.Background(), dir, args...)
}

func TestRollbackRestoresDeletedLedger(t *testing.T) {
	ctx := context.Background()
	w, base := newExperiment(t)
	committed := readFile(t, w.ExperiencesPath())
	remove(t, w.ExperiencesPath())
	if err := w.Rollback(ctx, base); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if got := readFile(t, w.ExperiencesPath()); got != committed {
		t.Errorf("experiences.md after rollback = %q, want the base version %q", got, committed)
	}
}

func TestComplianceSubdirAtRoot(t *testing.T) {
	ctx := context.Background()
	src := newRepo(t, map[string]string{"train.py": "x\n", "evaluate.py": "e\n", "lib/a.py": "a\n"})
	w, _, err := Create(ctx, src, ".", filepath.Join(t.TempDir(), "wt"), "r")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Init(ctx, Ledger{}, "acc", nil); err != nil {
		t.Fatal(err)
	}
	base, _ := w.Head(ctx)
	writeFiles(t, w.Root, map[string]string{"lib/a.py": "b\n", "train.py": "y\n", ".autoresearch/log": "l\n"})
	report, err := sealAndCheck(ctx, t, w, base, []string{"evaluate.py"}, []string{"./train.py"})
	if err != nil {
		t.Fatal(err)
	}
	want := ComplianceReport{
		Changes: []FileChange{
			{Path: "lib/a.py", Kind: ChangeModified},
			{Path: "train.py", Kind: ChangeModified},
		},
		Violations: []Violation{{Path: "lib/a.py", Reason: "modified lib/a.py, which is not a variable file"}},
	}
	if diff := cmp.Diff(want, report); diff != "" {
		t.Errorf("CheckCompliance (-want +got):\n%s", diff)
	}
}

func TestSummary(t *testing.T) {
	cases := map[string]struct {
		report ComplianceReport
		want   string
	}{
		"ok": {want: ""},
		"two": {
			report: ComplianceReport{Violations: []Violation{{Reason: "modified fixed file a.py"}, {Reason: "deleted fixed file b.py"}}},
			want:   "modified fixed file a.py; deleted fixed file b.py",
		},
		"many": {
			report: ComplianceReport{Violations: []Violation{{Reason: "1"}, {Reason: "2"}, {Reason: "3"}, {Reason: "4"}, {Reason: "5"}, {Reason: "6"}, {Reason: "7"}}},
			want:   "1; 2; 3; 4; 5; and 2 more",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.report.Summary(); got != tc.want {
				t.Errorf("Summary() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLooksLikeEvalCode(t *testing.T) {
	cases := map[string]bool{
		"evaluate.py":          true,
		"eval.py":              true,
		"my_eval.py":           true,
		"compute_metrics.py":   true,
		"computeMetrics.py":    true,
		"metric.py":            true,
		"accuracy.py":          true,
		"Score.py":             true,
		"scorer.sh":            true,
		"tools/EvalHelper.cpp": true,
		"evaluate":             true,
		"retrieval.py":         false,
		"geometric.py":         false,
		"underscore.py":        false,
		"metrics.json":         false,
		"eval_notes.md":        false,
		".eval":                false,
		"model.py":             false,
	}
	for name, want := range cases {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			if got := looksLikeEvalCode(name); got != want {
				t.Errorf("looksLikeEvalCode(%q) = %v, want %v", name, got, want)
			}
		})
	}
}
