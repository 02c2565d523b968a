package tamper

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
)

// TestStateAttacks runs the attacks in attacks-state/, each a Researcher of
// two rounds whose second round's training reads something its candidate
// does not hold: what the rolled-back first round left behind, or what the
// Researcher left beside the candidate, in its temporary directories or in
// the kernel (shared memory, keys). The second round's code gives the
// baseline's 10 when run anew: it must be measured so, not improved, and
// not fail either, which would say nothing of the attack.
func TestStateAttacks(t *testing.T) {
	for _, a := range attacks(t, "attacks-state") {
		t.Run(a.name, func(t *testing.T) { toyAttack(t, a, 2, "", v1alpha1.VerdictNotImproved) })
	}
}

// TestLuckAttacks runs the attacks in attacks-luck/, each a candidate whose
// first run is luckier than its code, under spec.acceptance.confirmRuns of
// 2: the round is judged on the mean of its three runs, against a margin
// that their spread widens, and rolled back.
func TestLuckAttacks(t *testing.T) {
	for _, a := range attacks(t, "attacks-luck") {
		t.Run(a.name, func(t *testing.T) {
			st, log := toyAttack(t, a, 1, "  acceptance: {confirmRuns: 2}\n", v1alpha1.VerdictWithinNoise)
			if r := st.History[len(st.History)-1]; r.Value != "33" {
				t.Errorf("round 1 recorded score=%s, want the mean of its runs, 33\n%s", r.Value, log)
			}
		})
	}
}

// toyAttack runs attack a as the toy's Researcher for rounds rounds, with
// more added to the experiment's spec: the last round must end in want,
// and the best stay the baseline's 10.
func toyAttack(t *testing.T, a attack, rounds int, more string, want v1alpha1.Verdict) (v1alpha1.AutoResearchStatus, string) {
	t.Helper()
	files := maps.Clone(Toy)
	files["experiment.yaml"] = toyExperiment(a.script, rounds, "train.sh", more)
	repo := filepath.Join(t.TempDir(), "repo")
	st, log := runRepo(t, repo, files)
	roundVerdict(t, st.History, int32(rounds), want, log)
	if st.Best == nil || st.Best.Value != "10" {
		t.Errorf("best %+v; want the baseline's 10\n%s", st.Best, log)
		t.Logf("kept branch:\n%s", gittest.Git(t, repo, "diff", st.Workspace.StartCommit, "refs/heads/autoresearch/toy", "--", ".", ":!experiences.md", ":!results.tsv"))
	}
	return st, log
}

// toyExperiment is the toy's experiment file, judged against a given
// baseline of 10, with script as the Researcher for rounds rounds, the
// variable files variable, and more added to its spec.
func toyExperiment(script string, rounds int, variable, more string) string {
	return fmt.Sprintf(`apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata:
  name: toy
spec:
  researchQuestion: "Does a higher SCORE help?"
  maxRounds: %d
  baseline: {value: "10"}
  fixed: {files: [eval.sh, check/main.go, golden/], timeLimit: 30s}
  variable: {files: [%s]}
  train: {command: "./train.sh", outputs: [out.txt]}
  eval: {metric: score, direction: maximize, command: "./eval.sh"}
  researcher: {command: "sh %s"}
%s`, rounds, variable, script, more)
}

// roundVerdict logs the records of history and fails the test unless round
// n ended in want: a round that trained and was evaluated says the attack
// ran, where a failure would say nothing of it.
func roundVerdict(t *testing.T, history []v1alpha1.RoundRecord, n int32, want v1alpha1.Verdict, log string) {
	t.Helper()
	var got v1alpha1.Verdict
	for _, h := range history {
		t.Logf("round %d%s: %s %s (%s)", h.Round, h.Candidate, h.Verdict, h.Value, h.Insight)
		if h.Round == n {
			got = h.Verdict
		}
	}
	if got != want {
		t.Errorf("round %d: %q, want %q\n%s", n, got, want, log)
	}
}

// loginSessionEnv marks the run of TestKeyAttackInALoginSession's test
// inside its session keyring.
const loginSessionEnv = "AUTORESEARCH_TEST_LOGIN_SESSION"

// TestKeyAttackInALoginSession runs train-reads-the-researchers-key again
// in a runner that holds a session keyring of its own, as one started from
// a login (pam_keyinit) does: the steps would share it, and the attack
// would win there, but that each step joins a new one.
func TestKeyAttackInALoginSession(t *testing.T) {
	if os.Getenv(loginSessionEnv) != "" {
		t.Skip("this is the run inside the session keyring")
	}
	keyctl := map[string]int{"amd64": 250, "arm64": 219}[runtime.GOARCH]
	if keyctl == 0 {
		t.Skip("no keyctl(2) number for " + runtime.GOARCH)
	}
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("needs perl to join a session keyring")
	}
	// KEYCTL_JOIN_SESSION_KEYRING (1), by name, and then this test's
	// attack, in that keyring.
	join := fmt.Sprintf(`my $name = "autoresearch-login"; syscall(%d, 1, $name) > 0 or die "keyctl: $!"; exec @ARGV or die "exec: $!"`, keyctl)
	cmd := exec.Command(perl, "-e", join, os.Args[0], "-test.run=^TestStateAttacks$/^train-reads-the-researchers-key$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), loginSessionEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestStateAttacks/train-reads-the-researchers-key") {
		t.Errorf("the attack did not run in the session keyring:\n%s", out)
	}
}
