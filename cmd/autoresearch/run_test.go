package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
)

// `autoresearch run` pushes to spec.output.git with the token of
// AUTORESEARCH_OUTPUT_TOKEN, which no step inherits.
func TestRunPushesWithTheTokenOfTheEnvironment(t *testing.T) {
	remote := gittest.NewHTTPRemote(t, "t0ken-from-env")
	seen := filepath.Join(t.TempDir(), "researcher.env")
	repo := filepath.Join(t.TempDir(), "repo")
	commitRepo(t, repo, map[string]string{
		"train.sh":   "#!/bin/sh\nSCORE=10\necho $SCORE > out.txt\n",
		"eval.sh":    "#!/bin/sh\necho \"score: $(cat out.txt)\"\n",
		".gitignore": "out.txt\n",
		"experiment.yaml": `apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata:
  name: toy
spec:
  researchQuestion: "Does a higher SCORE help?"
  maxRounds: 1
  fixed: {files: [eval.sh], timeLimit: 10s}
  variable: {files: [train.sh]}
  train: {command: "./train.sh", outputs: [out.txt]}
  eval: {metric: score, direction: maximize, command: "./eval.sh"}
  researcher:
    command: "env > ` + seen + ` && sed -i s/SCORE=10/SCORE=20/ train.sh"
  output:
    git: {url: "` + remote.URL + `"}
`,
	})
	t.Setenv(envOutputToken, "t0ken-from-env")
	out, err := execute(t, "run", "-f", filepath.Join(repo, "experiment.yaml"), "--worktree", filepath.Join(filepath.Dir(repo), "wt"))
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if got, want := testGit(t, remote.Dir, "rev-parse", "autoresearch/toy"), testGit(t, filepath.Join(filepath.Dir(repo), "wt"), "rev-parse", "HEAD"); got != want {
		t.Errorf("the remote's branch is %s, want the ledger commit %s\n%s", got, want, out)
	}
	env, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the Researcher did not run: %v\n%s", err, out)
	}
	if strings.Contains(string(env), "t0ken-from-env") {
		t.Errorf("the Researcher's environment holds the push token:\n%s", env)
	}
}
