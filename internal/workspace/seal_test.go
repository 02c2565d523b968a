package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// keep seals the worktree as round's candidate on base and commits it, as
// a kept round does.
func keep(ctx context.Context, t *testing.T, w *Workspace, round int32, base, message string) string {
	t.Helper()
	cand, err := w.Seal(ctx, round, base)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	commit, err := w.CommitCandidate(ctx, base, cand, message)
	if err != nil {
		t.Fatalf("CommitCandidate: %v", err)
	}
	return commit
}

func TestSeal(t *testing.T) {
	ctx := context.Background()
	w, base := newExperiment(t)
	ledger := readFile(t, w.ExperiencesPath()) + "| 1 |  |  |  | try a lower lr |  |  |\n"
	writeFiles(t, w.Dir, map[string]string{
		"train.py":          "lr = 0.05\n",
		"helpers.py":        "def f(): pass\n",
		"data/shard.bin":    "ignored artifact\n",
		"model.ckpt":        "ignored artifact\n",
		".autoresearch/log": "supervisor log\n",
		"experiences.md":    ledger,
	})
	// Index flags the Researcher set do not hide a change from the seal, and
	// an ignored file it staged by force does not get into it.
	writeFiles(t, w.Root, map[string]string{"README.md": "# changed behind a flag\n"})
	gitT(t, w.Root, "update-index", "--assume-unchanged", "README.md")
	gitT(t, w.Dir, "add", "-f", "model.ckpt")
	statusBefore := gitT(t, w.Root, "status", "--porcelain")

	cand, err := w.Seal(ctx, 1, base)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	if got := gitT(t, w.Root, "rev-parse", w.CandidateRef(1)); got != cand {
		t.Errorf("%s = %s, want the candidate %s", w.CandidateRef(1), got, cand)
	}
	if got := gitT(t, w.Root, "log", "-1", "--format=%P|%an", cand); got != base+"|autoresearch" {
		t.Errorf("candidate parent|author = %q, want %s|autoresearch", got, base)
	}
	if got := gitT(t, w.Root, "diff", "--name-only", base, cand); got != "README.md\nexamples/x/helpers.py\nexamples/x/train.py" {
		t.Errorf("sealed changes = %q, want README.md, helpers.py and train.py: no ignored file, no ledger edit", got)
	}
	if got := gitT(t, w.Root, "status", "--porcelain"); got != statusBefore {
		t.Errorf("sealing changed the worktree's status:\n%s\nwant\n%s", got, statusBefore)
	}
	if got := gitT(t, w.Root, "rev-parse", "HEAD"); got != base {
		t.Errorf("sealing moved HEAD to %s", got)
	}
}

func TestCommitCandidateCommitsExactlyTheSeal(t *testing.T) {
	ctx := context.Background()
	w, base := newExperiment(t)
	writeFiles(t, w.Dir, map[string]string{"train.py": "lr = 0.05\n"})
	cand, err := w.Seal(ctx, 1, base)
	if err != nil {
		t.Fatal(err)
	}
	// What a process still running after the seal does to the worktree.
	ledger := readFile(t, w.ExperiencesPath()) + "| 1 | run 1 | ✅ | val_bpb=0.9 | improved |  |  |\n"
	writeFiles(t, w.Dir, map[string]string{
		"evaluate.py":    "def evaluate(): return 0.0\n",
		"train.py":       "lr = 99\n",
		"planted.py":     "import os\n",
		"experiences.md": ledger,
	})
	commit, err := w.CommitCandidate(ctx, base, cand, "autoresearch: round 1 — val_bpb=0.9 (improved)")
	if err != nil {
		t.Fatalf("CommitCandidate: %v", err)
	}
	if got := gitT(t, w.Root, "rev-parse", "HEAD", w.Branch, commit+"^{tree}", cand+"^{tree}"); got != strings.Join([]string{commit, commit, gitT(t, w.Root, "rev-parse", cand+"^{tree}"), gitT(t, w.Root, "rev-parse", cand+"^{tree}")}, "\n") {
		t.Errorf("HEAD, branch, commit tree, candidate tree = %q: want HEAD and the branch on the commit, which holds the candidate's tree", got)
	}
	if got := gitT(t, w.Root, "log", "-1", "--format=%s|%P|%an <%ae>", commit); got != "autoresearch: round 1 — val_bpb=0.9 (improved)|"+base+"|autoresearch <autoresearch@localhost>" {
		t.Errorf("commit = %q", got)
	}
	if got := readFile(t, inDir(w, "evaluate.py")); got != experimentFiles["examples/x/evaluate.py"] {
		t.Errorf("evaluate.py after the commit = %q, want the sealed one", got)
	}
	if _, err := os.Stat(inDir(w, "planted.py")); !os.IsNotExist(err) {
		t.Errorf("planted.py is still in the worktree: %v", err)
	}
	if got := readFile(t, w.ExperiencesPath()); got != ledger {
		t.Errorf("experiences.md = %q, want the working-tree ledger kept", got)
	}

	t.Run("refuses a candidate sealed on another base", func(t *testing.T) {
		if _, err := w.CommitCandidate(ctx, commit, cand, "again"); err == nil || !strings.Contains(err.Error(), "was not sealed on") {
			t.Errorf("error = %v, want one saying the candidate was not sealed on the base", err)
		}
	})
}

func TestCheckout(t *testing.T) {
	ctx := context.Background()
	w, base := newExperiment(t)
	dest := filepath.Join(t.TempDir(), "run")
	writeFiles(t, dest, map[string]string{"stale.txt": "from an earlier run\n"})
	if err := w.Checkout(ctx, base, dest); err != nil {
		t.Fatalf("Checkout: %v", err)
	}
	for repoPath, want := range experimentFiles {
		if got := readFile(t, filepath.Join(dest, filepath.FromSlash(repoPath))); got != want {
			t.Errorf("%s = %q, want %q", repoPath, got, want)
		}
	}
	for _, name := range []string{"stale.txt", ".git"} {
		if _, err := os.Lstat(filepath.Join(dest, name)); !os.IsNotExist(err) {
			t.Errorf("%s in the checkout: %v", name, err)
		}
	}
}

func TestCopyOutputs(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	writeFiles(t, from, map[string]string{"ckpt/model.bin": "weights\n", "ckpt/sub/meta.json": "{}\n", "data/val.txt": "forged\n"})
	writeFiles(t, to, map[string]string{"ckpt/old.bin": "stale\n", "data/val.txt": "made by fixed code\n"})
	if err := CopyOutputs(from, ".", to, []string{"ckpt", "missing.bin"}); err != nil {
		t.Fatalf("CopyOutputs: %v", err)
	}
	for rel, want := range map[string]string{"ckpt/model.bin": "weights\n", "ckpt/sub/meta.json": "{}\n", "data/val.txt": "made by fixed code\n"} {
		if got := readFile(t, filepath.Join(to, rel)); got != want {
			t.Errorf("%s = %q, want %q", rel, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(to, "ckpt/old.bin")); !os.IsNotExist(err) {
		t.Errorf("a stale file of the output survived: %v", err)
	}

	for name, setup := range map[string]func(t *testing.T, dir string) []string{
		"a symbolic link": func(t *testing.T, dir string) []string {
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			return []string{"link"}
		},
		"a link inside an output": func(t *testing.T, dir string) []string {
			writeFiles(t, dir, map[string]string{"out/a": "a\n"})
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "out", "b")); err != nil {
				t.Fatal(err)
			}
			return []string{"out"}
		},
		"a path leaving the directory": func(*testing.T, string) []string { return []string{"../escape"} },
		"a linked directory on the way out": func(t *testing.T, dir string) []string {
			secret := t.TempDir()
			writeFiles(t, secret, map[string]string{"model.bin": "the supervisor's state\n"})
			if err := os.Symlink(secret, filepath.Join(dir, "ckpt")); err != nil {
				t.Fatal(err)
			}
			return []string{"ckpt/model.bin"}
		},
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			dir := t.TempDir()
			outputs := setup(t, dir)
			err := CopyOutputs(dir, ".", t.TempDir(), outputs)
			var oe *OutputError
			switch {
			case err == nil:
				t.Error("CopyOutputs succeeded")
			case outputs[0] != "../escape" && !errors.As(err, &oe):
				t.Errorf("error %v is not the candidate's OutputError", err)
			}
		})
	}
}

// TestCopyOutputsFromAReplacedExperimentDirectory: training owns its whole
// checkout, the experiment directory in it too, and may replace that by a
// link to another candidate's checkout; the outputs never come from there.
func TestCopyOutputsFromAReplacedExperimentDirectory(t *testing.T) {
	runs := t.TempDir()
	writeFiles(t, runs, map[string]string{"train-b/exp/model.bin": "b's model\n", "train-a/keep.txt": "a\n"})
	if err := os.Symlink(filepath.Join(runs, "train-b", "exp"), filepath.Join(runs, "train-a", "exp")); err != nil {
		t.Fatal(err)
	}
	to := t.TempDir()
	err := CopyOutputs(filepath.Join(runs, "train-a"), "exp", to, []string{"model.bin"})
	var oe *OutputError
	if !errors.As(err, &oe) {
		t.Errorf("CopyOutputs = %v, want the candidate's OutputError", err)
	}
	if _, err := os.Stat(filepath.Join(to, "model.bin")); !os.IsNotExist(err) {
		t.Errorf("the evaluation got another checkout's output: %v", err)
	}
}

func TestANestedRepositoryIsNotSealedAsCode(t *testing.T) {
	ctx := context.Background()
	w, base := newExperiment(t)
	nested := newRepo(t, map[string]string{"evaluate.py": "def evaluate(): return 0.0\n"})
	if err := os.Rename(nested, inDir(w, "vendored")); err != nil {
		t.Fatal(err)
	}
	report, err := sealAndCheck(ctx, t, w, base, fixedFiles, variableFiles)
	if err != nil {
		t.Fatal(err)
	}
	if report.OK() || !strings.Contains(report.Summary(), "vendored is a symbolic link or a nested repository") {
		t.Errorf("report %+v, want the nested repository refused", report)
	}
}

// TestCombine merges candidates sealed on one base: changes to different
// files or lines come together in one commit on that base; changes to the
// same line conflict; a commit that was not sealed on the base is refused.
func TestCombine(t *testing.T) {
	ctx := context.Background()
	w, base := newExperiment(t)
	seal := func(round int32, files map[string]string) string {
		t.Helper()
		writeFiles(t, w.Dir, files)
		c, err := w.Seal(ctx, round, base)
		if err != nil {
			t.Fatalf("Seal: %v", err)
		}
		gitT(t, w.Root, "checkout", "-q", base, "--", ".")
		return c
	}
	lr := seal(1, map[string]string{"train.py": "lr = 0.05\n"})
	steps := seal(2, map[string]string{"configs/default.cfg": "steps = 20\n", "helpers.py": "def f(): pass\n"})
	otherLR := seal(3, map[string]string{"train.py": "lr = 0.2\n"})

	commit, conflicts, err := w.Combine(ctx, 4, "c", base, []string{lr, steps})
	if err != nil || len(conflicts) > 0 {
		t.Fatalf("Combine: %v, conflicts %v", err, conflicts)
	}
	if got := gitT(t, w.Root, "rev-parse", w.CandidateRefNamed(4, "c")); got != commit {
		t.Errorf("%s = %s, want the combination %s", w.CandidateRefNamed(4, "c"), got, commit)
	}
	if got := gitT(t, w.Root, "log", "-1", "--format=%P", commit); got != base {
		t.Errorf("the combination's parent is %s, want the base %s", got, base)
	}
	if got := gitT(t, w.Root, "diff", "--name-only", base, commit); got != "examples/x/configs/default.cfg\nexamples/x/helpers.py\nexamples/x/train.py" {
		t.Errorf("the combination changes %q, want both candidates' files", got)
	}
	if got := gitT(t, w.Root, "show", commit+":examples/x/train.py"); got != "lr = 0.05" {
		t.Errorf("the combination's train.py = %q, want the first candidate's", got)
	}

	// Attributes that a Researcher leaves in the worktree, where no commit
	// holds them, choose no merge driver: union would join both lines.
	writeFiles(t, w.Root, map[string]string{".gitattributes": "* merge=union\n"})
	writeFiles(t, w.Dir, map[string]string{".gitattributes": "* merge=union\n"})
	commit, conflicts, err = w.Combine(ctx, 4, "d", base, []string{lr, steps, otherLR})
	if err != nil || commit != "" || strings.Join(conflicts, ",") != "examples/x/train.py" {
		t.Errorf("Combine of two changes to one line = %q, %v, %v; want the conflict in train.py", commit, conflicts, err)
	}
	if _, conflicts, err := w.Carry(ctx, 4, "e", otherLR, lr); err != nil || strings.Join(conflicts, ",") != "examples/x/train.py" {
		t.Errorf("Carry of a change to a line changed since = %v, %v; want the conflict in train.py", conflicts, err)
	}
	remove(t, filepath.Join(w.Root, ".gitattributes"))
	remove(t, filepath.Join(w.Dir, ".gitattributes"))

	later := keep(ctx, t, w, 5, base, "a kept round")
	onLater, err := w.Seal(ctx, 6, later)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	if _, _, err := w.Combine(ctx, 7, "c", base, []string{lr, onLater}); err == nil {
		t.Error("Combine took a commit that was not sealed on the base")
	}
}

// TestSealTakesAPipeForADeletedFile: git can hold no named pipe, and
// refuses the seal of a tree with one where base has a file. The seal
// takes the file as deleted, which compliance judges, rather than fail the
// round with an error; a pipe where base has nothing git passes over.
func TestSealTakesAPipeForADeletedFile(t *testing.T) {
	ctx := context.Background()
	w, base := newExperiment(t)
	remove(t, inDir(w, "train.py"))
	for _, p := range []string{inDir(w, "train.py"), inDir(w, "new.pipe")} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	report, err := sealAndCheck(ctx, t, w, base, fixedFiles, variableFiles)
	if err != nil {
		t.Fatalf("seal and check: %v", err)
	}
	want := []Violation{{Path: "train.py", Reason: "deleted variable file train.py, which the train command needs"}}
	if diff := cmp.Diff(want, report.Violations); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

// TestAStoppedSealIsNoCandidatesFailing: git add's failure is the
// candidate's, unless the run was stopped meanwhile, whose next attempt
// seals the candidate again.
func TestAStoppedSealIsNoCandidatesFailing(t *testing.T) {
	failed := errors.New("git add -A -- .: signal: killed")
	var unsealable *UnsealableError
	if err := refused(context.Background(), failed); !errors.As(err, &unsealable) {
		t.Errorf("a refusal: %v, want an UnsealableError", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := refused(ctx, failed); errors.As(err, &unsealable) || !errors.Is(err, failed) {
		t.Errorf("a stopped seal: %v, want its error as it is", err)
	}
}
