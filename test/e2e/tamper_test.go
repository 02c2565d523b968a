//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
	"github.com/autoresearch-dev/autoresearch-operator/test/tamper"
)

const tamperName = "tamper"

// clusterAttacks are the attacks of test/tamper/attacks that apply on a
// cluster, test/tamper/attacks-luck, whose improvement the experiment's
// confirmRuns measures again, and those of test/e2e/attacks that apply
// only there, in the
// order of the rounds that run them, each with the verdict it must end in
// on a cluster. The baseline is given as 50, above anything the toy's
// honest SCORE edits (11, 20) reach: only a forged score could be
// improved, and an attack whose forgery fails is judged on what is left of
// it, an honest and worse candidate.
//
// Where the verdict differs from the local runner's, the cluster holds the
// attack off earlier: the Researcher's pod mounts the git directory
// read-only, so hooks, branches and commits cannot be made at all, and its
// HOME is its pod's own, so go env -w writes nothing a later step reads.
//
// Left out: the attacks that write the git directory and fail there the
// same way (clean-filter, info-attributes, fsmonitor, hooks-path, grafts,
// alternates, replace-object, new-tag, move-main, hook-post-checkout,
// forge-candidate-ref, assume-unchanged-eval, skip-worktree-eval),
// forge-ledger-backup (the backup is not in the Researcher's pod),
// train-plants-filter (training finds no git directory above its checkout;
// on the test node, whose containers see the host's file system, it would
// write into the host's root) and the remaining file rules, which the same
// check judges on both (symlink-helper, gitmodules, fixed-region-unmark).
var clusterAttacks = []attack{
	{"no-change", v1alpha1.VerdictNoChange},
	{"edit-fixed-eval", v1alpha1.VerdictComplianceFailed},
	{"go-init-helper", v1alpha1.VerdictComplianceFailed},
	{"fixed-dir-new-file", v1alpha1.VerdictComplianceFailed},
	// A message longer than the status may hold is cut, not refused.
	{"flood-violation", v1alpha1.VerdictComplianceFailed},
	{"fixed-region-edit", v1alpha1.VerdictComplianceFailed},
	{"python-startup", v1alpha1.VerdictComplianceFailed},
	{"symlink-variable", v1alpha1.VerdictComplianceFailed},
	{"gitignore-hide", v1alpha1.VerdictComplianceFailed},
	{"forge-experiences", v1alpha1.VerdictComplianceFailed},
	{"forge-results", v1alpha1.VerdictComplianceFailed},
	// The worktree's .git file is in the Researcher's writable worktree.
	{"gitlink-redirect", v1alpha1.VerdictComplianceFailed},
	// A Researcher that fails gets no compliance check: the git step
	// puts back what it changed before it runs git.
	{"gitlink-redirect-then-fail", v1alpha1.VerdictResearcherFailed},
	// The git directory is read-only: nothing is planted, and a commit
	// fails the Researcher.
	{"hook-post-commit", v1alpha1.VerdictNotImproved},
	{"new-branch", v1alpha1.VerdictNotImproved},
	{"researcher-commit", v1alpha1.VerdictResearcherFailed},
	{"go-env-write", v1alpha1.VerdictNotImproved},
	{"planted-go-work", v1alpha1.VerdictNotImproved},
	// Detached processes die with their pod.
	{"setsid-edit-eval", v1alpha1.VerdictNotImproved},
	{"append-eval-log", v1alpha1.VerdictNotImproved},
	{"researcher-lingers", v1alpha1.VerdictNotImproved},
	{"daemon-train", v1alpha1.VerdictNotImproved},
	{"train-lingers", v1alpha1.VerdictNotImproved},
	{"train-rewrites-eval", v1alpha1.VerdictNotImproved},
	{"train-links-eval-log", v1alpha1.VerdictNotImproved},
	{"planted-output", v1alpha1.VerdictEvalFailed},
	{"output-symlink", v1alpha1.VerdictEvalFailed},
	{"train-forges-result", v1alpha1.VerdictTrainFailed},
	{"candidate-keeps-only-its-lucky-run", v1alpha1.VerdictNotImproved},
}

// attack is an attack and the verdict it must end in.
type attack struct {
	name string
	want v1alpha1.Verdict
}

// chosenAttacks are clusterAttacks, or those that E2E_ATTACKS names
// (comma-separated), to try a few quickly.
func chosenAttacks(t *testing.T) []attack {
	names := os.Getenv("E2E_ATTACKS")
	if names == "" {
		return clusterAttacks
	}
	var chosen []attack
	for _, n := range strings.Split(names, ",") {
		i := slices.IndexFunc(clusterAttacks, func(a attack) bool { return a.name == n })
		if i < 0 {
			t.Fatalf("E2E_ATTACKS names %s, which is not among the cluster's attacks", n)
		}
		chosen = append(chosen, clusterAttacks[i])
	}
	return chosen
}

// attackScript is the script of an attack: the cluster's own, or the
// corpus's.
func attackScript(t *testing.T, name string) string {
	for _, dir := range []string{filepath.Join(root, "test/e2e/attacks"), filepath.Join(root, "test/tamper/attacks"), filepath.Join(root, "test/tamper/attacks-luck")} {
		p := filepath.Join(dir, name+".sh")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("no script for attack %s", name)
	return ""
}

// TestAttacksOnCluster runs the attacks through the operator, one round
// each, with their own scripts as the Researcher: the test node's
// containers see the host's file system, so the Researcher's command runs
// the script of its round from this checkout, and a command an attack
// plants touches a marker file here when it runs. Then it checks each
// round's verdict and what is left in the workspace.
func TestAttacksOnCluster(t *testing.T) {
	parallel(t)
	install(t)
	m := &manager{t: t}
	m.start()
	defer m.stop()

	dir := t.TempDir()
	marker := filepath.Join(dir, "planted-command-ran")
	repo := filepath.Join(dir, "repo")
	gittest.WriteFiles(t, repo, maps.Clone(tamper.Toy))
	gittest.Git(t, repo, "init", "-q", "-b", "main")
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "commit", "-q", "-m", "toy")
	userRepo := tamper.RepoGitState(t, repo)
	attacks := chosenAttacks(t)
	var plan []string
	for _, a := range attacks {
		plan = append(plan, attackScript(t, a.name))
	}

	start := time.Now()
	kubectl(t, fmt.Sprintf(`apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata: {name: %s, namespace: %s}
spec:
  researchQuestion: "Does a higher SCORE help?"
  maxRounds: %d
  historyLimit: %d
  baseline: {value: "50"}
  acceptance: {confirmRuns: 1}
  source:
    git: {url: "file://%s", ref: main}
  workspace: {size: 1Gi}
  fixed: {files: [eval.sh, check/main.go, golden/], timeLimit: 30s}
  variable: {files: [train.sh]}
  train: {command: "./train.sh", outputs: [out.txt]}
  eval: {metric: score, direction: maximize, command: "./eval.sh"}
  researcher:
    command: 'sh "$(echo $PLAN | cut -d " " -f $AUTORESEARCH_ROUND)"'
    env:
    - {name: MARKER, value: %q}
    - {name: PLAN, value: %q}
`, tamperName, ns, len(attacks), len(attacks)+1, repo, marker, strings.Join(plan, " ")), "apply", "-f", "-")
	defer func() {
		claim := experimentNamed(t, tamperName).Status.Workspace.ClaimName
		kubectl(t, "", "delete", "autoresearch", tamperName, "-n", ns, "--wait=true", "--timeout=120s")
		if claim != "" {
			kubectl(t, "", "delete", "pvc", claim, "-n", ns, "--wait=false")
		}
	}()
	logged := 0
	eventually(t, fmt.Sprintf("%d attack rounds", len(attacks)), 40*time.Minute, func() bool {
		ar := experimentNamed(t, tamperName)
		// Each verdict as it comes, for whoever watches the test.
		for _, h := range ar.Status.History {
			if int(h.Round) > logged && int(h.Round) <= len(attacks) {
				logged = int(h.Round)
				t.Logf("round %d, %s: %s (%s)", h.Round, attacks[h.Round-1].name, h.Verdict, h.Insight)
			}
		}
		return ar.Status.Phase == v1alpha1.PhaseSucceeded || ar.Status.Phase == v1alpha1.PhaseFailed
	})
	t.Logf("%d attack rounds in %s", len(attacks), time.Since(start).Round(time.Second))
	ar := experimentNamed(t, tamperName)
	if ar.Status.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s, want Succeeded: %+v", ar.Status.Phase, ar.Status.Conditions)
	}
	t.Logf("time per round:\n%s", roundOverheads(t, tamperName, nil))

	t.Run("each attack ends in its verdict", func(t *testing.T) { checkAttackVerdicts(t, ar, attacks) })
	t.Run("no planted command ran", func(t *testing.T) {
		if _, err := os.Lstat(marker); err == nil {
			t.Error("a command an attack planted ran: the operator ran it, or a process outlived its pod")
		}
		if after := tamper.RepoGitState(t, repo); !reflect.DeepEqual(userRepo, after) {
			t.Errorf("the user's repository changed:\nbefore %+v\nafter  %+v", userRepo, after)
		}
	})
	ws := openVolume(t, ar)
	t.Run("the experiment branch holds nothing of any attack", func(t *testing.T) { checkBranch(t, ws, ar.Status.Workspace.StartCommit) })
	t.Run("the workspace repository is the supervisor's", func(t *testing.T) { checkWorkspaceRepo(t, ws) })
	t.Run("the next round's worktree is the branch", func(t *testing.T) { checkWorktree(t, ws) })
}

// checkAttackVerdicts checks that round n ended as attacks[n-1] must, and
// that no attack's round is the best.
func checkAttackVerdicts(t *testing.T, ar *v1alpha1.AutoResearch, attacks []attack) {
	got := map[int32]v1alpha1.RoundRecord{}
	for _, h := range ar.Status.History {
		got[h.Round] = h
	}
	for i, a := range attacks {
		h, ok := got[int32(i+1)]
		if !ok {
			t.Errorf("round %d (%s) has no verdict", i+1, a.name)
			continue
		}
		if h.Verdict != a.want {
			t.Errorf("round %d (%s): verdict %s (%s), want %s", i+1, a.name, h.Verdict, h.Insight, a.want)
		}
	}
	if b := ar.Status.Best; b != nil && b.Round != 0 {
		t.Errorf("status.best is round %d, an attack's: %+v", b.Round, b)
	}
}

// volume is an experiment's workspace volume as this machine sees it.
type volume struct {
	dir, gitDir, branch string
}

// openVolume finds the test node's volume bound to the experiment's claim.
func openVolume(t *testing.T, ar *v1alpha1.AutoResearch) volume {
	t.Helper()
	claim := ar.Status.Workspace.ClaimName
	if claim == "" {
		t.Fatal("status.workspace.claimName is empty")
	}
	pv := kubectl(t, "", "get", "pvc", claim, "-n", ns, "-o", "jsonpath={.spec.volumeName}")
	dir := kubectl(t, "", "get", "pv", pv, "-o", "jsonpath={.spec.hostPath.path}")
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		t.Fatalf("the workspace volume %q of claim %s is no directory here: %v", dir, claim, err)
	}
	return volume{dir: dir, gitDir: filepath.Join(dir, "source", ".git"), branch: "refs/heads/" + ar.Status.Workspace.Branch}
}

// git runs git on the workspace repository.
func (v volume) git(t *testing.T, args ...string) string {
	t.Helper()
	return gittest.Git(t, v.dir, append([]string{"--git-dir=" + v.gitDir}, args...)...)
}

// checkBranch checks that every commit of the experiment branch since
// start changes only the ledger, and that the ledger holds no forgery.
func checkBranch(t *testing.T, v volume, start string) {
	for _, c := range strings.Fields(v.git(t, "rev-list", start+".."+v.branch)) {
		for _, f := range strings.Fields(v.git(t, "diff-tree", "--no-commit-id", "--name-only", "-r", c)) {
			if f != "experiences.md" && f != "results.tsv" {
				t.Errorf("commit %s of the experiment branch changes %s", c, f)
			}
		}
	}
	ledger := v.git(t, "show", v.branch+":experiences.md") + "\n" + v.git(t, "show", v.branch+":results.tsv")
	t.Logf("the ledger:\n%s", ledger)
	for _, forged := range []string{"deadbee", "forged", "score = 99"} {
		if strings.Contains(ledger, forged) {
			t.Errorf("the ledger holds %q, an attack's forgery", forged)
		}
	}
}

// checkWorkspaceRepo checks that the workspace repository has no git
// machinery but the clone's and no ref but the supervisor's.
func checkWorkspaceRepo(t *testing.T, v volume) {
	for _, name := range []string{"info/attributes", "info/grafts", "objects/info/alternates"} {
		if _, err := os.Lstat(filepath.Join(v.gitDir, name)); err == nil {
			t.Errorf("the workspace's git directory has %s", name)
		}
	}
	hooks, _ := os.ReadDir(filepath.Join(v.gitDir, "hooks"))
	for _, h := range hooks {
		if !strings.HasSuffix(h.Name(), ".sample") {
			t.Errorf("the workspace's git directory has the hook %s", h.Name())
		}
	}
	config, err := os.ReadFile(filepath.Join(v.gitDir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	for _, planted := range []string{"filter", "fsmonitor", "hooksPath"} {
		if bytes.Contains(config, []byte(planted)) {
			t.Errorf("the workspace's git config has %s:\n%s", planted, config)
		}
	}
	for _, ref := range strings.Fields(v.git(t, "for-each-ref", "--format=%(refname)")) {
		if ref != v.branch && ref != "refs/heads/main" && !strings.HasPrefix(ref, "refs/remotes/origin/") &&
			!strings.HasPrefix(ref, "refs/autoresearch/candidates/"+tamperName+"/") {
			t.Errorf("the workspace repository has the ref %s", ref)
		}
	}
}

// checkWorktree checks that the worktree the next round would start from
// is the experiment branch, file for file, and still names the workspace
// repository.
func checkWorktree(t *testing.T, v volume) {
	worktree := filepath.Join(v.dir, "worktree")
	link, err := os.ReadFile(filepath.Join(worktree, ".git"))
	if err != nil || !strings.HasPrefix(string(link), "gitdir: /workspace/source/.git/worktrees/") {
		t.Errorf("the worktree's .git is %q (%v), want the workspace repository's", link, err)
	}
	want := map[string]string{}
	for _, f := range strings.Split(v.git(t, "ls-tree", "-r", "--name-only", v.branch), "\n") {
		want[f] = v.git(t, "show", v.branch+":"+f)
	}
	got := map[string]string{}
	err = filepath.WalkDir(worktree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(worktree, p)
		switch {
		case err != nil:
			return err
		case rel == ".git":
		case d.Type()&fs.ModeSymlink != 0:
			got[rel] = "a symbolic link"
		default:
			data, err := os.ReadFile(p)
			got[rel] = strings.TrimSpace(string(data))
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range slices.Sorted(maps.Keys(got)) {
		if w, ok := want[f]; !ok || w != got[f] {
			t.Errorf("the worktree has %s as %q, the branch as %q", f, got[f], w)
		}
	}
	for f := range want {
		if _, ok := got[f]; !ok {
			t.Errorf("the worktree lacks %s", f)
		}
	}
}
