package tamper

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
)

// TestConcurrentAttacks runs the attacks in attacks-concurrent/, each a
// step that runs beside another's evaluation — the next round's
// Researcher beside this round's — and writes the metric into it through
// /proc, in the second the evaluation takes. Every step has a /proc of
// its own, where no other step's process is: no round of PyToy gets more
// than the baseline's 10.
func TestConcurrentAttacks(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on PATH")
	}
	for name, spec := range map[string]string{
		"pipelined-researcher-writes-the-eval": "  maxRounds: 2\n  pipeline: true\n",
		"pipelined-researcher-swaps-the-index": "  maxRounds: 2\n  pipeline: true\n",
	} {
		t.Run(name, func(t *testing.T) {
			if !runner.ReadOnlyMounts() {
				t.Skip("steps get no read-only mounts here, and spec.pipeline needs them")
			}
			script, err := filepath.Abs(filepath.Join("attacks-concurrent", name+".sh"))
			if err != nil {
				t.Fatal(err)
			}
			files := map[string]string{"experiment.yaml": `apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata:
  name: concurrent
spec:
  researchQuestion: "Does a higher SCORE help?"
` + spec + `  baseline: {runs: 1}
  fixed: {files: [eval.py, reader.py], timeLimit: 20s}
  variable: {files: [train.sh]}
  train: {command: "./train.sh", outputs: [out.txt]}
  eval: {metric: score, direction: maximize, command: "sleep 1 && python3 eval.py"}
  researcher: {command: "sh ` + script + `"}
`}
			for k, v := range PyToy {
				files[k] = v
			}
			st, log := runRepo(t, filepath.Join(t.TempDir(), "repo"), files)
			if st.Phase != v1alpha1.PhaseSucceeded || st.Best == nil || st.Best.Value != "10" {
				t.Errorf("phase %s, best %+v; want the best 10\n%s", st.Phase, st.Best, log)
			}
		})
	}
}
