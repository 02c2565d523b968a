package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCreate(t *testing.T) {
	ctx := context.Background()
	src := newRepo(t, experimentFiles)
	srcHead := gitT(t, src, "rev-parse", "HEAD")
	writeFiles(t, src, map[string]string{"examples/x/train.py": "lr = 0.5\n", "examples/x/scratch.py": "x = 1\n"})
	path := filepath.Join(filepath.Dir(src), "autoresearch-x")

	w, warnings, err := Create(ctx, src, "examples/x/", path, "x")
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	root, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	want := &Workspace{Root: root, Dir: filepath.Join(root, "examples", "x"), Subdir: "examples/x", Branch: "autoresearch/x"}
	if diff := cmp.Diff(want, w); diff != "" {
		t.Errorf("Create workspace (-want +got):\n%s", diff)
	}
	wantWarnings := []string{"uncommitted changes in examples/x/scratch.py, examples/x/train.py would not be in the worktree: commit them first if the experiment needs them"}
	if diff := cmp.Diff(wantWarnings, warnings); diff != "" {
		t.Errorf("Create warnings (-want +got):\n%s", diff)
	}
	if got := gitT(t, w.Root, "rev-parse", "HEAD"); got != srcHead {
		t.Errorf("worktree HEAD = %s, want the source's HEAD %s", got, srcHead)
	}
	if got := gitT(t, w.Root, "symbolic-ref", "HEAD"); got != "refs/heads/autoresearch/x" {
		t.Errorf("worktree is on %s, want refs/heads/autoresearch/x", got)
	}
	if got := readFile(t, inDir(w, "train.py")); got != "lr = 0.1\n" {
		t.Errorf("worktree train.py = %q, want the committed content", got)
	}

	t.Run("reuses the listed worktree", func(t *testing.T) {
		again, warnings, err := Create(ctx, src, "examples/x", path, "x")
		if err != nil {
			t.Fatalf("Create again: %v", err)
		}
		if diff := cmp.Diff(w, again); diff != "" {
			t.Errorf("reused workspace (-first +again):\n%s", diff)
		}
		if len(warnings) != 0 {
			t.Errorf("reuse warnings = %q, want none", warnings)
		}
	})

	t.Run("warns when the reused worktree is off its branch", func(t *testing.T) {
		gitT(t, w.Root, "checkout", "-q", "--detach")
		defer gitT(t, w.Root, "checkout", "-q", "autoresearch/x")
		_, warnings, err := Create(ctx, src, "examples/x", path, "x")
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if len(warnings) != 1 || !strings.Contains(warnings[0], "detached HEAD") {
			t.Errorf("warnings = %q, want one about the detached HEAD", warnings)
		}
	})

	t.Run("re-adds a removed worktree on the existing branch", func(t *testing.T) {
		writeFiles(t, w.Root, map[string]string{"examples/x/train.py": "lr = 0.2\n"})
		gitT(t, w.Root, "commit", "-q", "-am", "kept round")
		tip := gitT(t, w.Root, "rev-parse", "HEAD")
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		again, warnings, err := Create(ctx, src, "examples/x", path, "x")
		if err != nil {
			t.Fatalf("Create after removal: %v", err)
		}
		if got := gitT(t, again.Root, "rev-parse", "HEAD"); got != tip {
			t.Errorf("re-added worktree HEAD = %s, want the branch tip %s", got, tip)
		}
		if len(warnings) != 1 || !strings.Contains(warnings[0], "already existed") {
			t.Errorf("warnings = %q, want one saying the branch already existed", warnings)
		}
	})
}

func TestCreateRootExperiment(t *testing.T) {
	ctx := context.Background()
	src := newRepo(t, map[string]string{"train.py": "lr = 0.1\n", "evaluate.py": "x\n"})
	w, warnings, err := Create(ctx, src, ".", filepath.Join(t.TempDir(), "wt"), "root")
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if w.Subdir != "." || w.Dir != w.Root {
		t.Errorf("Subdir, Dir = %q, %q; want \".\" and the root %q", w.Subdir, w.Dir, w.Root)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %q, want none for a clean repository", warnings)
	}
}

func TestCreateErrors(t *testing.T) {
	ctx := context.Background()
	src := newRepo(t, experimentFiles)
	notRepo := t.TempDir()
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, empty, "init", "-q", "-b", "main")

	cases := map[string]struct {
		src, subdir, name string
		path              func() string
		want              string
	}{
		"not a repository": {
			src: notRepo, subdir: ".", name: "x",
			want: notRepo + " is not a git repository",
		},
		"no commit": {
			src: empty, subdir: ".", name: "x",
			want: "has no commit yet",
		},
		"experiment directory not committed": {
			src: src, subdir: "examples/missing", name: "x",
			want: "experiment directory examples/missing is not committed at HEAD",
		},
		"experiment directory outside the repository": {
			src: src, subdir: "../elsewhere", name: "x",
			want: `experiment directory "../elsewhere" must be relative to the repository and inside it`,
		},
		"name that is no branch name": {
			src: src, subdir: "examples/x", name: "a..b",
			want: `experiment name "a..b" does not make a valid git branch name`,
		},
		"path is another branch's worktree": {
			src: src, subdir: "examples/x", name: "x",
			path: func() string { return src },
			want: "is already a worktree on branch main, and branch autoresearch/x does not exist",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "wt")
			if tc.path != nil {
				path = tc.path()
			}
			_, _, err := Create(ctx, tc.src, tc.subdir, path, tc.name)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Create error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	w, _ := newExperiment(t)
	got, err := Open(w.Root, "examples/x", "x")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if diff := cmp.Diff(w, got); diff != "" {
		t.Errorf("Open (-created +opened):\n%s", diff)
	}

	errCases := map[string]struct {
		root, subdir, name string
		want               string
	}{
		"not a repository":     {root: t.TempDir(), subdir: ".", name: "x", want: "is not a git repository"},
		"not the top level":    {root: w.Dir, subdir: ".", name: "x", want: "not its top level"},
		"no experiment branch": {root: w.Root, subdir: "examples/x", name: "y", want: "branch autoresearch/y does not exist"},
		"no experiment dir":    {root: w.Root, subdir: "examples/y", name: "x", want: "no such file or directory"},
	}
	for name, tc := range errCases {
		t.Run(name, func(t *testing.T) {
			_, err := Open(tc.root, tc.subdir, tc.name)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestInit(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{"exp/train.py": "lr = 0.1\n", "exp/.gitignore": "*.pyc\ndata/"}
	src := newRepo(t, files)
	w, _, err := Create(ctx, src, "exp", filepath.Join(t.TempDir(), "wt"), "demo")
	if err != nil {
		t.Fatal(err)
	}
	start, _ := w.Head(ctx)
	l := Ledger{MaxRounds: 5}
	if err := w.Init(ctx, l, "val_loss", []string{"data/", "checkpoints/", " "}); err != nil {
		t.Fatalf("Init: %v", err)
	}
	head, _ := w.Head(ctx)
	if head == start {
		t.Fatal("Init made no commit")
	}
	wantFiles := map[string]string{
		".gitignore": "*.pyc\ndata/\n# autoresearch: supervisor state and training artifacts\n.autoresearch/\ncheckpoints/\n",
		"experiences.md": "# Experiences\n\nbest: none\nrounds: 0 / 5\nstatus: not_started\n\n" +
			"| Round | Compliance | Result | Verdict | Strategy | Insight | Note |\n|---|---|---|---|---|---|---|\n" +
			"| 0 | | | | baseline | | |\n",
		"results.tsv": "commit\tval_loss\tmemory_gb\tstatus\tdescription\n",
	}
	for name, want := range wantFiles {
		if diff := cmp.Diff(want, readFile(t, inDir(w, name))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	if got := gitT(t, w.Root, "log", "-1", "--format=%s|%an <%ae>|%cn <%ce>"); got != "autoresearch: start experiment demo|autoresearch <autoresearch@localhost>|autoresearch <autoresearch@localhost>" {
		t.Errorf("Init commit = %q", got)
	}
	if got := gitT(t, w.Root, "status", "--porcelain"); got != "" {
		t.Errorf("status after Init = %q, want clean", got)
	}

	if err := w.Init(ctx, Ledger{MaxRounds: 99}, "val_loss", []string{"checkpoints/"}); err != nil {
		t.Fatalf("second Init: %v", err)
	}
	if again, _ := w.Head(ctx); again != head {
		t.Errorf("second Init committed %s, want no new commit", again)
	}
	if got := readFile(t, w.ExperiencesPath()); got != wantFiles["experiences.md"] {
		t.Errorf("second Init rewrote experiences.md:\n%s", got)
	}
}

func TestInitCommitsIgnoredResults(t *testing.T) {
	ctx := context.Background()
	// karpathy's setup leaves results.tsv untracked by ignoring it.
	src := newRepo(t, map[string]string{"train.py": "x\n", ".gitignore": "results.tsv\n"})
	w, _, err := Create(ctx, src, ".", filepath.Join(t.TempDir(), "wt"), "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Init(ctx, Ledger{}, "val_bpb", nil); err != nil {
		t.Fatalf("Init: %v", err)
	}
	if got := gitT(t, w.Root, "ls-files", "results.tsv", "experiences.md"); got != "experiences.md\nresults.tsv" {
		t.Errorf("tracked ledger files = %q, want both", got)
	}
}

func TestCommitLedger(t *testing.T) {
	ctx := context.Background()
	w, base := newExperiment(t)

	hash, err := w.CommitLedger(ctx, "autoresearch: round 1 ledger")
	if err != nil || hash != "" {
		t.Fatalf("CommitLedger with nothing changed = %q, %v; want \"\", nil", hash, err)
	}

	writeFiles(t, w.Dir, map[string]string{"train.py": "lr = 0.9\n"})
	if err := AppendResult(w.ResultsPath(), "val_bpb", ResultRow{Commit: base, Value: "1.1", Status: "discard", Description: "high lr"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.ExperiencesPath(), []byte(readFile(t, w.ExperiencesPath())+"| 1 | ✅ | val_bpb=1.1 | not_improved | high lr | too high | |\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hash, err = w.CommitLedger(ctx, "autoresearch: round 1 ledger")
	if err != nil || hash == "" {
		t.Fatalf("CommitLedger = %q, %v; want a commit", hash, err)
	}
	if got := gitT(t, w.Root, "show", "--name-only", "--format=%s|%an", "HEAD"); got != "autoresearch: round 1 ledger|autoresearch\n\nexamples/x/experiences.md\nexamples/x/results.tsv" {
		t.Errorf("ledger commit = %q", got)
	}
	if got := gitT(t, w.Root, "status", "--porcelain"); got != "M examples/x/train.py" {
		t.Errorf("status after CommitLedger = %q, want train.py still modified", got)
	}
}

func TestHashFiles(t *testing.T) {
	w, _ := newExperiment(t)
	writeFiles(t, w.Dir, map[string]string{"abc.txt": "abc", "sub/empty": ""})
	got, err := w.HashFiles([]string{"abc.txt", "sub/empty"})
	if err != nil {
		t.Fatalf("HashFiles: %v", err)
	}
	want := map[string]string{
		"abc.txt":   "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		"sub/empty": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("HashFiles (-want +got):\n%s", diff)
	}
	if _, err := w.HashFiles([]string{"abc.txt", "gone.py"}); err == nil || !strings.Contains(err.Error(), "gone.py") {
		t.Errorf("HashFiles of a missing file: error = %v, want one naming gone.py", err)
	}

	sums, err := w.HashFiles([]string{"prepare.py", "evaluate.py", "abc.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := w.VerifyHashes(sums); err != nil || len(changed) != 0 {
		t.Errorf("VerifyHashes of unchanged files = %q, %v; want none", changed, err)
	}
	writeFiles(t, w.Dir, map[string]string{"prepare.py": "changed\n"})
	if err := os.Remove(inDir(w, "abc.txt")); err != nil {
		t.Fatal(err)
	}
	changed, err := w.VerifyHashes(sums)
	if err != nil {
		t.Fatalf("VerifyHashes: %v", err)
	}
	if diff := cmp.Diff([]string{"abc.txt", "prepare.py"}, changed); diff != "" {
		t.Errorf("VerifyHashes (-want +got):\n%s", diff)
	}
}

func TestHelperFiles(t *testing.T) {
	ctx := context.Background()
	w, start := newExperiment(t)
	writeFiles(t, w.Dir, map[string]string{"helpers.py": "x\n", "train.py": "lr = 1\n"})
	writeFiles(t, w.Root, map[string]string{"lib/extra.py": "y\n"})
	keep(ctx, t, w, 1, start, "round 1")
	got, err := w.HelperFiles(ctx, start)
	if err != nil {
		t.Fatalf("HelperFiles: %v", err)
	}
	if diff := cmp.Diff([]string{"helpers.py"}, got); diff != "" {
		t.Errorf("HelperFiles (-want +got):\n%s", diff)
	}
	// A kept helper may change in a later round once it counts as variable.
	writeFiles(t, w.Dir, map[string]string{"helpers.py": "x = 2\n"})
	head, _ := w.Head(ctx)
	report, err := sealAndCheck(ctx, t, w, head, fixedFiles, append(variableFiles, got...))
	if err != nil || !report.OK() {
		t.Errorf("CheckCompliance with helpers as variable files = %+v, %v; want OK", report, err)
	}
}

func TestRollbackKeepsStateDirWithoutGitignore(t *testing.T) {
	ctx := context.Background()
	src := newRepo(t, experimentFiles)
	w, _, err := Create(ctx, src, "examples/x", filepath.Join(t.TempDir(), "wt"), "x")
	if err != nil {
		t.Fatal(err)
	}
	base, _ := w.Head(ctx)
	// Before Init, nothing ignores .autoresearch/; a rollback keeps it anyway.
	writeFiles(t, w.Dir, map[string]string{".autoresearch/state.json": "{}\n", "helper.py": "h\n"})
	if err := w.Rollback(ctx, base); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if _, err := os.Stat(inDir(w, ".autoresearch/state.json")); err != nil {
		t.Errorf("state file after rollback: %v, want it kept", err)
	}
	if _, err := os.Stat(inDir(w, "helper.py")); !os.IsNotExist(err) {
		t.Errorf("helper.py after rollback: %v, want it removed", err)
	}
}

// TestGitErrorsHideCredentials checks that a failed git command does not
// repeat the token of a URL it was given.
func TestGitErrorsHideCredentials(t *testing.T) {
	_, err := Git(context.Background(), t.TempDir(), nil, "ls-remote", "https://user:s3cret@127.0.0.1:1/repo.git")
	if err == nil {
		t.Fatal("ls-remote of a closed port succeeded")
	}
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "https://***@127.0.0.1:1/repo.git") {
		t.Errorf("error %q: want the URL without its credentials", err)
	}
}

// TestGitReadsNothingOfTheUsersConfigDirectory plants, where a Researcher
// that writes the home could, an ignore rule and an attribute in
// ~/.config/git: git reads both even without a global configuration, and
// the supervisor's seal and checkout must follow neither.
func TestGitReadsNothingOfTheUsersConfigDirectory(t *testing.T) {
	ctx := context.Background()
	ws, _ := newExperiment(t)
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	if err := os.MkdirAll(filepath.Join(config, "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for file, content := range map[string]string{"ignore": "planted.txt\n", "attributes": "* ident\n"} {
		if err := os.WriteFile(filepath.Join(config, "git", file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := Git(ctx, ws.Root, nil, "check-ignore", "-v", "--no-index", "planted.txt"); err == nil {
		t.Errorf("planted.txt is ignored by the user's rule: %s", out)
	}
	if out, err := Git(ctx, ws.Root, nil, "check-attr", "ident", "--", "train.py"); err != nil || !strings.HasSuffix(out, "ident: unspecified") {
		t.Errorf("check-attr ident = %q, %v; want it unspecified", out, err)
	}
}

// TestRestoreGitStatePutsBackTheCommonDir: the worktree's git directory
// names the repository's in its commondir file; pointed at a repository of
// the Researcher's, every later git command of the supervisor's would read
// and write there. The restore puts it back first, and names it.
func TestRestoreGitStatePutsBackTheCommonDir(t *testing.T) {
	ctx := context.Background()
	ws, _ := newExperiment(t)
	saved, err := ws.SnapshotGitState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	common := gitT(t, ws.Root, "rev-parse", "--path-format=absolute", "--git-common-dir")
	evil := filepath.Join(t.TempDir(), "evil.git")
	gitT(t, t.TempDir(), "clone", "-q", "--bare", common, evil)
	commondir := filepath.Join(gitT(t, ws.Root, "rev-parse", "--absolute-git-dir"), "commondir")
	if err := os.WriteFile(commondir, []byte(evil+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, ws.Root, "rev-parse", "--path-format=absolute", "--git-common-dir"); got != evil {
		t.Fatalf("the planted commondir does not redirect git: %s", got)
	}

	undone, err := ws.RestoreGitState(ctx, saved)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"changed the worktree's git commondir"}; !slices.Equal(undone, want) {
		t.Errorf("undone %q, want %q", undone, want)
	}
	if got := gitT(t, ws.Root, "rev-parse", "--path-format=absolute", "--git-common-dir"); got != common {
		t.Errorf("git's common directory after the restore is %s, want %s", got, common)
	}
	if again, err := ws.RestoreGitState(ctx, saved); err != nil || again != nil {
		t.Errorf("a second restore undid %q (%v), want nothing", again, err)
	}
}

// TestRestoreGitState plants what a Researcher could in the repository's
// git machinery and checks that all of it is named and undone.
func TestRestoreGitState(t *testing.T) {
	ctx := context.Background()
	ws, _ := newExperiment(t)
	saved, err := ws.SnapshotGitState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	common := gitT(t, ws.Root, "rev-parse", "--path-format=absolute", "--git-common-dir")
	config := filepath.Join(common, "config")
	before, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	gitT(t, ws.Root, "config", "core.fsmonitor", "touch /tmp/x")
	if err := os.MkdirAll(filepath.Join(common, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(common, "hooks", "post-commit"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, ws.Root, "update-ref", "refs/tags/forged", "HEAD")
	// A .git of the Researcher's in the worktree, in place of the file
	// that names the repository: git would read it instead.
	link := filepath.Join(ws.Root, ".git")
	gitLink, err := os.ReadFile(link)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	gitT(t, ws.Root, "init", "-q")

	undone, err := ws.RestoreGitState(ctx, saved)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"changed the worktree's .git file", "added git hook post-commit", "changed git config", "created refs/tags/forged"}
	if !slices.Equal(undone, want) {
		t.Errorf("undone %q, want %q", undone, want)
	}
	if after, _ := os.ReadFile(config); string(after) != string(before) {
		t.Errorf("config after the restore:\n%s\nwant:\n%s", after, before)
	}
	if after, _ := os.ReadFile(link); string(after) != string(gitLink) {
		t.Errorf("the worktree's .git after the restore is %q, want %q", after, gitLink)
	}
	if again, err := ws.RestoreGitState(ctx, saved); err != nil || again != nil {
		t.Errorf("a second restore undid %q (%v), want nothing", again, err)
	}
}
