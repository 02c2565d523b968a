package tamper

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
)

// TestRebaselineAttacks runs the attacks in attacks-rebaseline/, each the
// Researcher of a round that is kept, whose code does its harm only when
// --rebaseline trains it again as the baseline, where the steps get no
// read-only mounts and training can write the repository's git directory:
// what that training changes of git must be undone before the supervisor's
// next git command, and the baseline fail rather than be taken.
//
// Each runs twice: through, and stopped after the baseline's training and
// resumed, which finds no snapshot in memory to restore.
func TestRebaselineAttacks(t *testing.T) {
	for _, a := range attacks(t, "attacks-rebaseline") {
		t.Run(a.name, func(t *testing.T) { rebaselineAttack(t, a, false) })
		t.Run(a.name+"-resumed", func(t *testing.T) { rebaselineAttack(t, a, true) })
	}
}

func rebaselineAttack(t *testing.T, a attack, stopped bool) {
	defer runner.WithoutMounts()()
	marker := filepath.Join(t.TempDir(), "planted-command-ran")
	t.Setenv("MARKER", marker)
	repo := filepath.Join(t.TempDir(), "repo")
	gate := filepath.Join(t.TempDir(), "gate")
	files := maps.Clone(Toy)
	files["experiment.yaml"] = rebaselineExperiment(a.script, "30s", 1, gate)
	st, log := runRepo(t, repo, files)
	if st.Best == nil || st.Best.Value != "20" {
		t.Fatalf("the first run: best %+v, want round 1 kept at 20\n%s", st.Best, log)
	}

	// The user changes the measure, and accepts the change.
	if err := os.WriteFile(filepath.Join(repo, "experiment.yaml"), []byte(rebaselineExperiment(a.script, "31s", 2, gate)), 0o644); err != nil {
		t.Fatal(err)
	}
	if stopped {
		// Stopped once training has changed git, the run ends after the
		// step and before the evaluation; training waits at the gate until
		// the stop is made.
		if err := os.Mkdir(gate, 0o755); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		go func() {
			for {
				if cfg, _ := os.ReadFile(filepath.Join(repo, ".git", "config")); bytes.Contains(cfg, []byte("filter")) {
					close(stop)
					_ = os.WriteFile(filepath.Join(gate, "open"), nil, 0o644)
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		_, st, log, err := runExperiment(t, repo, runner.Options{Rebaseline: true, Stop: stop})
		if err := os.RemoveAll(gate); err != nil {
			t.Fatal(err)
		}
		if cr := st.CurrentRound; err != nil || st.Phase != v1alpha1.PhaseSuspended || cr == nil || cr.Number != 0 || cr.Step != v1alpha1.StepEval {
			t.Fatalf("the stopped run: phase %s (%s), round %+v, err %v, want it suspended before the baseline's evaluation\n%s", st.Phase, st.Message, st.CurrentRound, err, log)
		}
	}
	_, st, log, err := runExperiment(t, repo, runner.Options{Rebaseline: true})
	t.Logf("the run with --rebaseline: phase %s (%s), err %v", st.Phase, st.Message, err)
	if _, err := os.Lstat(marker); err == nil {
		t.Errorf("the supervisor ran a command that the baseline's training planted in git\n%s", log)
	}
	if cfg := gittest.Git(t, repo, "config", "--list", "--local"); strings.Contains(cfg, "filter.") {
		t.Errorf("the repository keeps the filter that training planted:\n%s", cfg)
	}
	if err == nil && st.Phase != v1alpha1.PhaseFailed {
		t.Errorf("the baseline whose training changed git was taken: phase %s, best %+v\n%s", st.Phase, st.Best, log)
	}
}

// rebaselineExperiment is the toy's experiment file with the baseline
// measured, the time limit limit, and script as round 1's Researcher; the
// rounds after it change nothing that counts. Where the directory gate
// exists, training ends only once it holds a file named open.
func rebaselineExperiment(script, limit string, rounds int, gate string) string {
	return fmt.Sprintf(`apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata:
  name: toy
spec:
  researchQuestion: "Does a higher SCORE help?"
  maxRounds: %d
  fixed: {files: [eval.sh, check/main.go, golden/], timeLimit: %s}
  variable: {files: [train.sh]}
  train: {command: "./train.sh && { [ ! -d %[4]s ] || until [ -e %[4]s/open ]; do sleep 0.05; done; }", outputs: [out.txt]}
  eval: {metric: score, direction: maximize, command: "./eval.sh"}
  researcher: {command: "if [ \"$AUTORESEARCH_ROUND\" = 1 ]; then sh %[3]s; else echo '# r'$AUTORESEARCH_ROUND >> train.sh; fi"}
`, rounds, limit, script, gate)
}
