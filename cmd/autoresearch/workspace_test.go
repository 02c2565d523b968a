package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// volume is a workspace volume in a temp dir, laid out as in the pods.
type volume struct {
	upstream, source, state, results string
	wt                               steps.Worktree
}

func newVolume(t *testing.T) volume {
	t.Helper()
	root := t.TempDir()
	v := volume{
		upstream: filepath.Join(root, "upstream"),
		source:   filepath.Join(root, "workspace", "source"),
		state:    filepath.Join(root, "workspace", "state"),
		results:  filepath.Join(root, "results"),
		wt:       steps.Worktree{Dir: filepath.Join(root, "workspace", "worktree"), Subdir: "exp", Name: "toy"},
	}
	commitRepo(t, v.upstream, map[string]string{
		"exp/train.sh": "#!/bin/sh\nSCORE=10\n",
		"exp/eval.sh":  "#!/bin/sh\necho score: 10\n",
		"README.md":    "a toy\n",
	})
	if err := os.MkdirAll(v.results, 0o755); err != nil {
		t.Fatal(err)
	}
	return v
}

// result is a fresh result path for a step.
func (v volume) result(step string) string { return filepath.Join(v.results, step+".json") }

// dir is the experiment directory in the worktree.
func (v volume) dir() string { return filepath.Join(v.wt.Dir, "exp") }

var toySpec = v1alpha1.AutoResearchSpec{
	MaxRounds: 2,
	Fixed:     v1alpha1.FixedSpec{Files: []v1alpha1.PathPattern{"eval.sh"}},
	Variable:  v1alpha1.VariableSpec{Files: []v1alpha1.RelativePath{"train.sh"}},
	Eval:      v1alpha1.EvalSpec{Metric: "score", Direction: v1alpha1.DirectionMaximize, Command: "./eval.sh"},
}

// TestWorkspaceStepsThroughTheBuilders runs a baseline and two rounds, one
// kept and one that changes a fixed file, with the command lines the
// operator builds, each step twice where a pod may run again.
// assertCommittedAsSealed checks that a kept round made two commits on
// start, its code exactly as candidate was sealed and then its ledger, and
// that the git step's result is HEAD.
func assertCommittedAsSealed(t *testing.T, dir, start, candidate, result string) {
	t.Helper()
	n := testGit(t, dir, "rev-list", "--count", start+"..HEAD")
	diff := testGit(t, dir, "diff", "--name-only", candidate, "HEAD~1")
	if n != "2" || diff != "" || result != testGit(t, dir, "rev-parse", "HEAD") {
		t.Errorf("%s commits after the start, differing from the candidate in %q, and result %s: want the round's code, as sealed, and ledger commits, at HEAD", n, diff, result)
	}
}

// runTestStep runs a step's command line and fails the test if it fails.
func runTestStep(t *testing.T, argv []string) {
	t.Helper()
	if out, err := runStep(t, argv); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv[1:3], " "), err, out)
	}
}

func TestWorkspaceStepsThroughTheBuilders(t *testing.T) {
	v := newVolume(t)

	init := steps.InitOptions{
		Worktree: v.wt, Repo: v.source, CloneURL: "file://" + v.upstream, Ref: "main",
		Metric: "score", MaxRounds: 2, Fixed: []string{"eval.sh"}, ResultPath: v.result("init"),
	}
	var ws steps.WorkspaceResult
	for range 2 {
		runTestStep(t, steps.InitArgs(steps.Binary, init))
		decodeResult(t, init.ResultPath, &ws)
	}
	if ws.Error != "" || ws.Branch != "autoresearch/toy" || ws.StartCommit != testGit(t, v.wt.Dir, "rev-parse", "HEAD") || len(ws.FixedHashes) != 1 {
		t.Fatalf("workspace result %+v: want branch autoresearch/toy at HEAD with eval.sh's hash", ws)
	}
	start := ws.StartCommit

	// Round 1: the baseline's row is recorded before the Researcher, which doubles SCORE.
	baseline := steps.LedgerUpdate{Metric: "score", Best: "10", MaxRounds: 2, Status: "running", Round: &steps.LedgerRound{
		Round: 0, Strategy: "baseline", Compliance: "✅", Value: "10", Verdict: string(v1alpha1.VerdictBaseline), Commit: start,
	}}
	prepare := steps.PrepareOptions{Worktree: v.wt, StateDir: v.state, Round: 1, Base: start, Ledger: &baseline}
	for range 2 {
		runTestStep(t, steps.PrepareArgs(steps.Binary, prepare))
	}
	researcher(t, v, "train.sh", "#!/bin/sh\nSCORE=20\n", 1, "double SCORE")
	check := steps.CheckOptions{
		Worktree: v.wt, StateDir: v.state, Round: 1, Base: start, Start: start, Spec: &toySpec,
		AlsoWrite: v.result("compliance-shared"), ResultPath: v.result("check"),
	}
	for range 2 {
		runTestStep(t, steps.CheckArgs(steps.Binary, check))
	}
	var compliance, shared steps.ComplianceResult
	decodeResult(t, check.ResultPath, &compliance)
	decodeResult(t, check.AlsoWrite, &shared)
	candidate := testGit(t, v.wt.Dir, "rev-parse", "refs/autoresearch/candidates/toy/r1")
	if diff := cmp.Diff(steps.ComplianceResult{Strategy: "double SCORE", Candidate: candidate}, compliance); diff != "" {
		t.Errorf("round 1 compliance (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(compliance, shared); diff != "" {
		t.Errorf("the copy for the parity step differs (-result +copy):\n%s", diff)
	}

	commit := steps.GitOptions{
		Worktree: v.wt, StateDir: v.state, Action: steps.GitCommit, Base: start, Candidate: candidate, Message: "autoresearch: round 1 — score=20 (improved)",
		Ledger: steps.LedgerUpdate{Metric: "score", Best: "20", BestRound: 1, Rounds: 1, MaxRounds: 2, Status: "running", MemoryGB: "0.5",
			Round: &steps.LedgerRound{Round: 1, Strategy: "double SCORE", Compliance: "✅", Value: "20", Verdict: string(v1alpha1.VerdictImproved)}},
		ResultPath: v.result("commit"),
	}
	remote := filepath.Join(t.TempDir(), "results.git")
	committed := commitAndPush(t, commit, remote)
	assertCommittedAsSealed(t, v.wt.Dir, start, candidate, committed.Commit)
	checkPushed(t, committed, remote, "refs/autoresearch/candidates/toy/r1", candidate)

	// Round 2: the Researcher edits the fixed evaluation; the spec comes from a file.
	prepare = steps.PrepareOptions{Worktree: v.wt, StateDir: v.state, Round: 2, Base: committed.Commit}
	runTestStep(t, steps.PrepareArgs(steps.Binary, prepare))
	researcher(t, v, "eval.sh", "#!/bin/sh\necho score: 99\n", 2, "edit the evaluation")
	specFile := filepath.Join(t.TempDir(), "spec.yaml")
	data, err := yaml.Marshal(toySpec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(specFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	check = steps.CheckOptions{Worktree: v.wt, StateDir: v.state, Round: 2, Base: committed.Commit, Start: start, SpecFile: specFile, ResultPath: v.result("check-2")}
	runTestStep(t, steps.CheckArgs(steps.Binary, check))
	decodeResult(t, check.ResultPath, &compliance)
	if compliance.Strategy != "edit the evaluation" || !strings.Contains(compliance.Violation, "modified fixed file eval.sh") {
		t.Errorf("round 2 compliance %+v, want the strategy and a violation for eval.sh", compliance)
	}

	header := steps.LedgerUpdate{Metric: "score", Best: "20", BestRound: 1, Rounds: 2, MaxRounds: 2, Status: "running"}
	rollback := steps.GitOptions{
		Worktree: v.wt, StateDir: v.state, Action: steps.GitRollback, Base: committed.Commit,
		Ledger: withRow(header, steps.LedgerRound{Round: 2, Strategy: "edit the evaluation", Compliance: "❌ files: " + compliance.Violation,
			Verdict: string(v1alpha1.VerdictComplianceFailed), Commit: compliance.Candidate}),
		ResultPath: v.result("rollback"),
	}
	var rolledBack steps.GitResult
	for range 2 {
		runTestStep(t, steps.GitArgs(steps.Binary, rollback))
		decodeResult(t, rollback.ResultPath, &rolledBack)
	}
	if rolledBack.Commit != committed.Commit {
		t.Errorf("rolled back to %s, want round 1's %s", rolledBack.Commit, committed.Commit)
	}
	if got := readTestFile(t, filepath.Join(v.dir(), "eval.sh")); got != "#!/bin/sh\necho score: 10\n" {
		t.Errorf("eval.sh after the rollback = %q", got)
	}

	header.Status = "completed"
	secret := t.TempDir()
	if err := os.WriteFile(filepath.Join(secret, "token"), []byte("unused by file://"), 0o600); err != nil {
		t.Fatal(err)
	}
	finish := steps.FinishOptions{Worktree: v.wt, StateDir: v.state, Ledger: header, ResultPath: v.result("finish"), Push: &steps.PushOptions{URL: "file://" + remote, SecretDir: secret}}
	runTestStep(t, steps.FinishArgs(steps.Binary, finish))
	var finished steps.GitResult
	decodeResult(t, finish.ResultPath, &finished)
	if finished.Commit != testGit(t, v.wt.Dir, "rev-parse", "HEAD") || testGit(t, v.wt.Dir, "status", "--porcelain") != "" {
		t.Errorf("finish result %+v: want HEAD, with the ledger committed", finished)
	}
	checkPushed(t, finished, remote, "autoresearch/toy", finished.Commit)

	ledger, err := workspace.ReadLedger(filepath.Join(v.dir(), "experiences.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range ledger.Rows {
		rows = append(rows, r.Strategy+": "+r.Verdict)
	}
	want := []string{"baseline: baseline", "double SCORE: improved", "edit the evaluation: compliance_failed"}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("ledger rows (-want +got):\n%s", diff)
	}
	if ledger.Status != "completed" || ledger.Best != "20" || ledger.Rounds != 2 {
		t.Errorf("ledger header %+v, want completed, best 20 after 2 rounds", ledger)
	}
	tsv := strings.Split(strings.TrimSpace(readTestFile(t, filepath.Join(v.dir(), "results.tsv"))), "\n")
	wantTSV := []string{
		"commit\tscore\tmemory_gb\tstatus\tdescription",
		start[:7] + "\t10.000000\t0.0\tkeep\tbaseline",
		testGit(t, v.wt.Dir, "rev-parse", "--short=7", committed.Commit+"~1") + "\t20.000000\t0.5\tkeep\tdouble SCORE",
		testGit(t, v.wt.Dir, "rev-parse", "--short=7", "refs/autoresearch/candidates/toy/r2") + "\t0.000000\t0.0\tdiscard\tedit the evaluation [compliance_failed]",
	}
	if diff := cmp.Diff(wantTSV, tsv); diff != "" {
		t.Errorf("results.tsv (-want +got):\n%s", diff)
	}
}

// TestTheGitStepPutsBackWhatAFailedResearcherChanged plays a Researcher
// that points the worktree's .git file at a copy of the repository, whose
// configuration smudges and cleans every file through a command of its
// own, and then fails: no compliance check follows it, which would have
// put git back, and the rollback that follows must not run the command,
// nor roll back in the copy.
func TestTheGitStepPutsBackWhatAFailedResearcherChanged(t *testing.T) {
	v := newVolume(t)
	init := steps.InitOptions{
		Worktree: v.wt, Repo: v.source, CloneURL: "file://" + v.upstream, Ref: "main",
		Metric: "score", MaxRounds: 2, Fixed: []string{"eval.sh"}, ResultPath: v.result("init"),
	}
	runTestStep(t, steps.InitArgs(steps.Binary, init))
	var ws steps.WorkspaceResult
	decodeResult(t, init.ResultPath, &ws)
	start := ws.StartCommit
	runTestStep(t, steps.PrepareArgs(steps.Binary, steps.PrepareOptions{Worktree: v.wt, StateDir: v.state, Round: 1, Base: start}))
	gitFile := readTestFile(t, filepath.Join(v.wt.Dir, ".git"))

	marker := filepath.Join(t.TempDir(), "planted-command-ran")
	// Where a rollback's git clean leaves it.
	shadow := filepath.Join(v.dir(), ".autoresearch", "shadow-git")
	real := testGit(t, v.wt.Dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err := os.MkdirAll(filepath.Dir(shadow), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", real, shadow).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := os.RemoveAll(filepath.Join(shadow, "worktrees")); err != nil {
		t.Fatal(err)
	}
	testGit(t, v.wt.Dir, "--git-dir="+shadow, "symbolic-ref", "HEAD", "refs/heads/autoresearch/toy")
	for _, kv := range [][2]string{{"core.bare", "false"}, {"filter.pwn.smudge", "touch " + marker + "; cat"}, {"filter.pwn.clean", "touch " + marker + "; cat"}} {
		testGit(t, v.wt.Dir, "--git-dir="+shadow, "config", kv[0], kv[1])
	}
	writeTestFiles(t, shadow, map[string]string{"info/attributes": "* filter=pwn\n"})
	writeTestFiles(t, v.wt.Dir, map[string]string{".git": "gitdir: " + shadow + "\n"})
	// A file the rollback checks out again.
	if err := os.Remove(filepath.Join(v.dir(), "train.sh")); err != nil {
		t.Fatal(err)
	}

	rollback := steps.GitOptions{
		Worktree: v.wt, StateDir: v.state, Action: steps.GitRollback, Base: start,
		Ledger: steps.LedgerUpdate{Metric: "score", Rounds: 1, MaxRounds: 2, Status: "running", Round: &steps.LedgerRound{
			Round: 1, Strategy: "crash", Compliance: "✅", Verdict: string(v1alpha1.VerdictResearcherFailed),
		}},
		ResultPath: v.result("rollback"),
	}
	runTestStep(t, steps.GitArgs(steps.Binary, rollback))
	if _, err := os.Lstat(marker); err == nil {
		t.Error("the git step ran the command the Researcher planted in its repository")
	}
	if got := readTestFile(t, filepath.Join(v.wt.Dir, ".git")); got != gitFile {
		t.Errorf("the worktree's .git file after the git step: %q, want %q", got, gitFile)
	}
	if got := readTestFile(t, filepath.Join(v.dir(), "train.sh")); got != "#!/bin/sh\nSCORE=10\n" {
		t.Errorf("train.sh after the rollback = %q", got)
	}
}

// researcher does a Researcher's work: it writes file and appends its
// strategy row to the ledger.
func researcher(t *testing.T, v volume, file, content string, round int, strategy string) {
	t.Helper()
	writeTestFiles(t, v.dir(), map[string]string{file: content})
	f, err := os.OpenFile(filepath.Join(v.dir(), "experiences.md"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("| " + string(rune('0'+round)) + " |  |  |  | " + strategy + " |  |  |\n"); err != nil {
		t.Fatal(err)
	}
}

func TestWorkspaceInitReportsFailures(t *testing.T) {
	cases := map[string]struct {
		change  func(*steps.InitOptions)
		wantErr string
	}{
		"missing fixed file": {func(o *steps.InitOptions) { o.Fixed = []string{"nope.sh"} }, "fixed files: fixed nope.sh matches no file in the start commit"},
		"unknown ref":        {func(o *steps.InitOptions) { o.Ref = "nope" }, "ref nope is neither in the clone nor on its remote"},
		"no such remote":     {func(o *steps.InitOptions) { o.CloneURL += "-missing" }, "cloning file://"},
		"an error too long for a termination message": {
			func(o *steps.InitOptions) { o.Ref = strings.Repeat("x", 5000) }, "ref xxx",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := newVolume(t)
			o := steps.InitOptions{
				Worktree: v.wt, Repo: v.source, CloneURL: "file://" + v.upstream,
				Metric: "score", MaxRounds: 2, Fixed: []string{"eval.sh"}, ResultPath: v.result("init"),
			}
			tc.change(&o)
			_, err := runStep(t, steps.InitArgs(steps.Binary, o))
			if exitCode(err) != 1 {
				t.Errorf("exit code %d (%v), want 1", exitCode(err), err)
			}
			var res steps.WorkspaceResult
			decodeResult(t, o.ResultPath, &res)
			if !strings.Contains(res.Error, tc.wantErr) {
				t.Errorf("result error %q, want one containing %q", res.Error, tc.wantErr)
			}
		})
	}
}

// TestWorkspaceStepInstallsTheTools: with --install-tools, a step first
// copies the binary that runs it into the directory, where the user's image
// of the same pod runs the step wrapper from; a directory it cannot write
// fails the step before it starts.
func TestWorkspaceStepInstallsTheTools(t *testing.T) {
	v := newVolume(t)
	tools := t.TempDir()
	init := steps.InitOptions{
		Worktree: v.wt, Repo: v.source, CloneURL: "file://" + v.upstream, Ref: "main",
		Metric: "score", MaxRounds: 2, Fixed: []string{"eval.sh"}, ResultPath: v.result("init"),
	}
	if out, err := runStep(t, append(steps.InitArgs(steps.Binary, init), "--install-tools="+tools)); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	var ws steps.WorkspaceResult
	decodeResult(t, init.ResultPath, &ws)
	if ws.Error != "" || ws.StartCommit == "" {
		t.Errorf("the step itself did not run as without the flag: %+v", ws)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	installed := filepath.Join(tools, "autoresearch")
	got, err := os.ReadFile(installed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s has %d bytes that are not the %d of %s", installed, len(got), len(want), self)
	}
	if fi, err := os.Stat(installed); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("%s: %v, mode %v, want 0755", installed, err, fi.Mode())
	}

	again := init
	again.ResultPath = v.result("init-again")
	if _, err := runStep(t, append(steps.InitArgs(steps.Binary, again), "--install-tools="+filepath.Join(tools, "missing"))); err == nil {
		t.Fatal("a step whose tools directory is missing succeeded")
	}
	if _, err := os.Stat(again.ResultPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the step ran although it could not install the tools (its result: %v)", err)
	}
}

func TestWorkspaceStepsReject(t *testing.T) {
	v := newVolume(t)
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"check without a spec":    {[]string{"workspace", "check", "--name=toy", "--base=HEAD", "--start=HEAD"}, "spec"},
		"commit without a ledger": {[]string{"workspace", "commit", "--name=toy", "--base=HEAD", "--message=m"}, "ledger"},
		"empty ledger":            {[]string{"workspace", "finish", "--name=toy", "--worktree=" + v.wt.Dir, "--ledger="}, "--ledger is empty"},
		"malformed ledger":        {[]string{"workspace", "rollback", "--name=toy", "--base=HEAD", "--ledger={"}, "--ledger"},
		"no worktree":             {[]string{"workspace", "prepare", "--name=toy", "--worktree=" + v.wt.Dir, "--base=HEAD"}, v.wt.Dir},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := execute(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func withRow(u steps.LedgerUpdate, r steps.LedgerRound) steps.LedgerUpdate {
	u.Round = &r
	return u
}

// commitAndPush runs the commit step twice, as a retried step would: the
// first try pushes to a remote that is not there, which fails the push and
// not the step; the second pushes to remote, a bare repository it makes.
func commitAndPush(t *testing.T, commit steps.GitOptions, remote string) steps.GitResult {
	t.Helper()
	var res steps.GitResult
	for i, url := range []string{"file://" + filepath.Join(t.TempDir(), "missing.git"), "file://" + remote} {
		commit.Push = &steps.PushOptions{URL: url, Candidates: true}
		if out, err := runStep(t, steps.GitArgs(steps.Binary, commit)); err != nil {
			t.Fatalf("commit: %v\n%s", err, out)
		}
		res = steps.GitResult{}
		decodeResult(t, commit.ResultPath, &res)
		if i == 0 {
			if res.Push == nil || res.Push.Error == "" || res.Commit == "" {
				t.Errorf("a commit whose push failed: %+v, want the commit and the push's error", res)
			}
			testGit(t, filepath.Dir(remote), "init", "--quiet", "--bare", remote)
		}
	}
	return res
}

// checkPushed checks a git step's result that pushed the branch to remote,
// where ref is now want.
func checkPushed(t *testing.T, res steps.GitResult, remote, ref, want string) {
	t.Helper()
	if res.Push == nil || res.Push.Commit != res.Commit || res.Push.Error != "" || testGit(t, remote, "rev-parse", "autoresearch/toy") != res.Commit {
		t.Errorf("the push %+v did not leave the step's commit %s on the remote", res.Push, res.Commit)
	}
	if got := testGit(t, remote, "rev-parse", ref); got != want {
		t.Errorf("the remote's %s is %s, want %s", ref, got, want)
	}
}
