package tamper

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
	"github.com/autoresearch-dev/autoresearch-operator/internal/torchtest"
)

// PyToy is the repository of the Python attacks: the fixed evaluation,
// eval.py, parses its arguments with argparse and reads the score with
// the fixed reader.py.
var PyToy = map[string]string{
	"train.sh":   "#!/bin/sh\nSCORE=10\necho $SCORE > out.txt\n",
	"eval.py":    "import argparse\nimport reader\n\nargparse.ArgumentParser().parse_args()\nprint(\"score: \" + reader.read())\n",
	"reader.py":  "def read():\n    return open(\"out.txt\").read().strip()\n",
	".gitignore": "out.txt\n",
}

// TestPythonAttacks runs the attacks in attacks-python/, each a Researcher
// that changes what the fixed Python evaluation runs without touching a
// fixed file, through the modules Python finds first; every one fails
// compliance, and the best stays the baseline's.
func TestPythonAttacks(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	out, err := exec.Command(python, "-I", "-c", "import pkgutil, sys\nprint(*sorted(m.name for m in pkgutil.iter_modules() if m.name.isidentifier() and m.name not in sys.stdlib_module_names))").Output()
	if err != nil {
		t.Fatal(err)
	}
	installed := strings.Fields(string(out))
	for _, a := range attacks(t, "attacks-python") {
		name, script := a.name, a.script
		t.Run(name, func(t *testing.T) {
			evalPython, files := "python3", map[string]string{}
			switch name {
			case "installed-shadow":
				if len(installed) == 0 {
					t.Skip("python3 has no installed package to shadow")
				}
				t.Setenv("INSTALLED_MODULE", installed[0])
			case "optional-import-shadow":
				// The evaluation imports torch, which tries dill.
				evalPython = torchtest.Python(t)
				if exec.Command(evalPython, "-c", "import dill").Run() == nil {
					t.Skip("dill is installed: torch finds it")
				}
				files["eval.py"] = "import torch\n" + PyToy["eval.py"]
			}
			repo := filepath.Join(t.TempDir(), "repo")
			files["experiment.yaml"] = pyToyExperiment("pytoy", `{value: "10"}`, evalPython, script)
			for k, v := range PyToy {
				if _, ok := files[k]; !ok {
					files[k] = v
				}
			}
			st, log := runRepo(t, repo, files)
			if roundOneVerdict(t, st.History, v1alpha1.VerdictComplianceFailed) == "" {
				t.Fatalf("the run judged no round 1\n%s", log)
			}
			if st.Best == nil || st.Best.Value != "10" {
				t.Errorf("best %+v, want the baseline's 10\n%s", st.Best, log)
			}
		})
	}
}

// runRepo commits files as the repository repo and runs its
// experiment.yaml to the end with the local runner; it returns the status
// and what the run printed.
func runRepo(t *testing.T, repo string, files map[string]string) (v1alpha1.AutoResearchStatus, string) {
	t.Helper()
	_, st, log := runRepoWith(t, repo, files, runner.Options{})
	return st, log
}

// runRepoWith is runRepo with opts, and returns the experiment too.
func runRepoWith(t *testing.T, repo string, files map[string]string, opts runner.Options) (*runner.Experiment, v1alpha1.AutoResearchStatus, string) {
	t.Helper()
	gittest.WriteFiles(t, repo, files)
	gittest.Git(t, repo, "init", "-q", "-b", "main")
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "-m", "start")
	x, st, log, err := runExperiment(t, repo, opts)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	return x, st, log
}

// runExperiment runs the experiment.yaml of repo, a repository already
// made, with opts, and returns the experiment, the status, what the run
// printed and its error.
func runExperiment(t *testing.T, repo string, opts runner.Options) (*runner.Experiment, v1alpha1.AutoResearchStatus, string, error) {
	t.Helper()
	x, err := runner.LoadExperiment(context.Background(), filepath.Join(repo, "experiment.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	opts.Out = &log
	st, err := runner.Run(context.Background(), x, opts)
	return x, st, log.String(), err
}

// pyToyExperiment is the experiment file of a Python attack on PyToy: one
// round whose Researcher runs script, evaluated by evalPython.
func pyToyExperiment(name, baseline, evalPython, script string) string {
	return `apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata:
  name: ` + name + `
spec:
  researchQuestion: "Does a higher SCORE help?"
  maxRounds: 1
  baseline: ` + baseline + `
  fixed: {files: [eval.py, reader.py], timeLimit: 10s}
  variable: {files: [train.sh]}
  train: {command: "./train.sh", outputs: [out.txt]}
  eval: {metric: score, direction: maximize, command: "` + evalPython + ` eval.py"}
  researcher: {command: "sh ` + script + `"}
`
}
