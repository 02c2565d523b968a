package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// The Researcher commands of the tests call `autoresearch researcher
// scripted`, so the tests build the real binary once and put it on PATH.
func TestMain(m *testing.M) {
	if os.Getenv(veilAsUserEnv) != "" {
		// veilAsAUser's run of one test as another user, which builds
		// nothing.
		os.Exit(m.Run())
	}
	bin, err := os.MkdirTemp("", "autoresearch-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..", "..")
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "autoresearch"), "./cmd/autoresearch")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building autoresearch: %v\n%s", err, out)
		os.Exit(1)
	}
	if err := os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The supervisor must not depend on anyone's git configuration.
	gittest.Isolate()
	code := m.Run()
	if err := os.RemoveAll(bin); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

var (
	newRepo  = gittest.NewRepo
	git      = gittest.Git
	readFile = gittest.ReadFile
)

// load loads repo's experiment.yaml, with the worktree next to repo.
func load(t *testing.T, repo string) *Experiment {
	t.Helper()
	x, err := LoadExperiment(context.Background(), filepath.Join(repo, "experiment.yaml"), filepath.Join(filepath.Dir(repo), "worktree"))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// run runs the experiment with short grace periods and returns its status
// and printed output.
func run(t *testing.T, x *Experiment, opts Options) (v1alpha1.AutoResearchStatus, string) {
	t.Helper()
	var out bytes.Buffer
	opts.Out = &out
	if opts.Grace == 0 {
		opts.Grace = 2 * time.Second
	}
	if opts.KillGrace == 0 {
		opts.KillGrace = time.Second
	}
	ctx := context.Background()
	st, err := Run(ctx, x, opts)
	if err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	return st, out.String()
}

func ledger(t *testing.T, x *Experiment) workspace.Ledger {
	t.Helper()
	l, err := workspace.ReadLedger(filepath.Join(x.Worktree, filepath.FromSlash(x.Subdir), workspace.ExperiencesFile))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func verdicts(l workspace.Ledger) []string {
	var out []string
	for _, r := range l.Rows {
		out = append(out, fmt.Sprintf("%d:%s", r.Round, r.Verdict))
	}
	return out
}

// toyFiles is a fast experiment in shell: train.sh (variable) writes its
// SCORE into out.txt, eval.sh (fixed) prints it as `score`, maximized.
func toyFiles(plan, extraSpec string) map[string]string {
	return map[string]string{
		".gitignore": "out.txt\n",
		"train.sh":   "#!/bin/sh\nSCORE=10\necho \"step 1 loss=0.5\"\necho $SCORE > out.txt\n",
		"eval.sh":    "#!/bin/sh\ntest -f out.txt || { echo 'no model' >&2; exit 1; }\necho \"score: $(cat out.txt)\"\n",
		"prepare.sh": "#!/bin/sh\necho ready\n",
		"README.md":  "a toy experiment\n",
		"plan.yaml":  plan,
		"experiment.yaml": `apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata:
  name: toy
spec:
  researchQuestion: "Does a higher SCORE help?"
  maxRounds: 3
  fixed:
    files: [eval.sh, prepare.sh, plan.yaml]
    timeLimit: 10s
  variable:
    files: [train.sh]
  train:
    command: "./prepare.sh && ./train.sh"
    outputs: [out.txt]
  eval:
    metric: score
    direction: maximize
    command: "./eval.sh"
  researcher:
    command: "autoresearch researcher scripted --plan plan.yaml"
    timeout: 20s
` + extraSpec,
	}
}
