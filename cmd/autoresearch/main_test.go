package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
	"github.com/autoresearch-dev/autoresearch-operator/internal/version"
)

// execute runs the CLI in-process and returns its output and error.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// toyRepo commits an experiment whose Researcher is a shell command: it
// doubles SCORE in train.sh and records its strategy.
func toyRepo(t *testing.T, spec string) string {
	t.Helper()
	return toyRepoWith(t, `sed -i s/SCORE=10/SCORE=20/ train.sh && echo '| 1 |  |  |  | double SCORE |  |  |' >> $AUTORESEARCH_EXPERIENCES`, spec)
}

// toyRepoWith is toyRepo with the Researcher's command, as the experiment
// file's double-quoted YAML string holds it.
func toyRepoWith(t *testing.T, researcher, spec string) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	files := map[string]string{
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
    command: "` + researcher + `"
` + spec,
	}
	commitRepo(t, repo, files)
	return repo
}

// commitRepo makes dir a repository whose one commit holds files.
func commitRepo(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	gittest.WriteFiles(t, dir, files)
	testGit(t, dir, "init", "-q", "-b", "main")
	testGit(t, dir, "add", "-A")
	testGit(t, dir, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "-m", "baseline")
}

var (
	writeTestFiles = gittest.WriteFiles
	testGit        = gittest.Git
)

func TestRunStatusNote(t *testing.T) {
	repo := toyRepo(t, "")
	file := filepath.Join(repo, "experiment.yaml")
	wt := filepath.Join(filepath.Dir(repo), "wt")

	out, err := execute(t, "note", "-f", file, "--worktree", wt, "too early")
	if err == nil || !strings.Contains(err.Error(), "spec.guidance") {
		t.Errorf("note before the run: %v, want an error pointing to spec.guidance\n%s", err, out)
	}

	out, err = execute(t, "status", "-f", file, "--worktree", wt)
	if err != nil || !strings.Contains(out, "has not started") {
		t.Errorf("status before the run: %v\n%s", err, out)
	}

	out, err = execute(t, "run", "-f", file, "--worktree", wt)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for _, want := range []string{"Round 1/1: score=20 — improved", "# Autoresearch Complete"} {
		if !strings.Contains(out, want) {
			t.Errorf("run output lacks %q:\n%s", want, out)
		}
	}

	if out, err = execute(t, "note", "-f", file, "--worktree", wt, "try", "a", "cosine", "schedule"); err != nil {
		t.Fatalf("note: %v\n%s", err, out)
	}
	out, err = execute(t, "status", "-f", file, "--worktree", wt)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	for _, want := range []string{"Phase:      Succeeded", "Best:       score=20 (round 1", "Baseline:   score=10", "try a cosine schedule", "double SCORE"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	out, err = execute(t, "status", "-f", file, "--worktree", wt, "-o", "json")
	var st v1alpha1.AutoResearchStatus
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.Phase != v1alpha1.PhaseSucceeded || st.Best == nil || st.Best.Value != "20" {
		t.Errorf("status -o json: %v\n%s", err, out)
	}
	out, err = execute(t, "status", "-f", file, "--worktree", wt, "-o", "yaml")
	if err != nil || !strings.Contains(out, "phase: Succeeded\n") {
		t.Errorf("status -o yaml: %v\n%s", err, out)
	}

	out, err = execute(t, "run", "-f", file, "--worktree", wt)
	if err != nil || !strings.Contains(out, "toy is already finished") || !strings.Contains(out, "raise spec.maxRounds (now 1)") {
		t.Errorf("run of a finished experiment: %v, want it to say how to continue\n%s", err, out)
	}

	dir := filepath.Join(t.TempDir(), "report")
	out, err = execute(t, "report", "-f", file, "--worktree", wt, "-o", dir)
	if err != nil || !strings.Contains(out, dir) {
		t.Fatalf("report: %v\n%s", err, out)
	}
	md := gittest.ReadFile(t, filepath.Join(dir, "report.md"))
	for _, want := range []string{"Does a higher SCORE help?", "| 1 | improved | 20 | 20 | double SCORE |", "-SCORE=10\n+SCORE=20"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

// TestReportOfAHoldoutStaysOutOfTheWorktree: the report shows the hidden
// holdout's trend, so by default it goes to the holdout's directory, not
// to the state directory in the worktree, where a Researcher reads.
func TestReportOfAHoldoutStaysOutOfTheWorktree(t *testing.T) {
	hidden := filepath.Join(t.TempDir(), "hidden")
	writeTestFiles(t, hidden, map[string]string{"holdout.sh": "#!/bin/sh\necho \"score: $(cat out.txt).5\"\n"})
	repo := toyRepo(t, "  holdout: {command: 'sh \"$AUTORESEARCH_HOLDOUT_DIR/holdout.sh\"', dir: "+hidden+"}\n")
	testGit(t, repo, "rm", "-q", "--cached", "experiment.yaml")
	writeTestFiles(t, repo, map[string]string{".gitignore": "out.txt\nexperiment.yaml\n"})
	testGit(t, repo, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qam", "untrack the experiment")
	file := filepath.Join(repo, "experiment.yaml")
	wt := filepath.Join(filepath.Dir(repo), "wt")
	if out, err := execute(t, "run", "-f", file, "--worktree", wt); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	out, err := execute(t, "report", "-f", file, "--worktree", wt)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	md := gittest.ReadFile(t, filepath.Join(hidden, ".autoresearch", "toy", "report", "report.md"))
	if !strings.Contains(md, "| 1 | improved | 20 | 20 | 20.5 |") {
		t.Errorf("report.md does not show the holdout's value:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(wt, ".autoresearch", "report")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the report went into the worktree too: %v", err)
	}
}

func TestCommandsExplainTheirMistakes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "experiment.yaml")
	cases := map[string]struct {
		args []string
		want []string
	}{
		"no experiment file":  {[]string{"status", "-f", missing}, []string{"no experiment file", "autoresearch import", "examples/tiny-lm-go/experiment.yaml"}},
		"a note without text": {[]string{"note", "-f", missing}, []string{"give the note's text", "Usage: autoresearch note -f experiment.yaml"}},
		"an unknown format":   {[]string{"status", "-f", missing, "-o", "xml"}, []string{"-o json or -o yaml"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := execute(t, tc.args...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q: %v", want, err)
				}
			}
		})
	}
}

func TestRunRejectsAnInvalidProtocol(t *testing.T) {
	cases := map[string]struct {
		from, to string
		want     []string
	}{
		"a value the schema refuses": {"direction: maximize", "direction: up", []string{
			`spec.eval.direction: Unsupported value: "up": supported values: "maximize", "minimize"`,
			"some validation rules were not checked",
		}},
		"a CEL rule": {"files: [eval.sh]", "files: [eval.sh, train.sh]", []string{
			"a file cannot be both fixed and variable",
		}},
		"a rule no schema states": {"direction: maximize", "direction: maximize, pattern: 'score ('", []string{
			"spec.eval.pattern: Invalid value",
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			repo := toyRepo(t, "")
			file := filepath.Join(repo, "experiment.yaml")
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			bad := strings.Replace(string(data), tc.from, tc.to, 1)
			if bad == string(data) {
				t.Fatalf("%q is not in the experiment", tc.from)
			}
			if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = execute(t, "run", "-f", file)
			if err == nil {
				t.Fatal("an invalid protocol ran")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q: %v", want, err)
				}
			}
		})
	}
}

func TestImport(t *testing.T) {
	dir := t.TempDir()
	full := `# Autoresearch Protocol: Tiny LM

research_question: Can a schedule help?
max_rounds: 4

## Fixed
- files: eval.py
- time_limit: 5min

## Variable
- files: train.py

## Eval
- metric: val_bpb
- direction: minimize
- command: python eval.py
`
	src := filepath.Join(dir, "autoresearch-protocol.md")
	if err := os.WriteFile(src, []byte(full), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "experiment.yaml")

	_, err := execute(t, "import", src, "-o", dst)

	var exit *exitError
	if !errors.As(err, &exit) || exit.code != 3 || !strings.Contains(err.Error(), "spec.researcher.command") {
		t.Fatalf("import: %v, want exit code 3 naming spec.researcher.command", err)
	}
	data, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: tiny-lm", "timeLimit: 5m0s", "metric: val_bpb", "# MISSING: spec.researcher.command"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("imported YAML lacks %q:\n%s", want, data)
		}
	}
}

// TestImportConstraints checks that import tells which fixed conditions
// nothing enforces, until fixed-region markers hold them.
func TestImportConstraints(t *testing.T) {
	dir := t.TempDir()
	text := `# Autoresearch Protocol: Seeded

research_question: Does the seed matter?
max_rounds: 2

## Fixed
- files: eval.py
- time_limit: 5min
- Random seed: 42 (set in train.py)
- Data split: 90/10, see eval.py

## Variable
- files: train.py

## Eval
- metric: acc
- direction: maximize
- command: python eval.py
`
	src := filepath.Join(dir, "autoresearch-protocol.md")
	for name, content := range map[string]string{src: text, filepath.Join(dir, "eval.py"): "print('acc: 1')\n", filepath.Join(dir, "train.py"): "seed = 42\n"} {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const note = `not enforced: spec.fixed.constraints[0]: "Random seed: 42 (set in train.py)" is only told to the Researcher: wrap the code that holds it in train.py in`
	out, _ := execute(t, "import", src)
	if !strings.Contains(out, "constraints:\n    # "+note) || !strings.Contains(out, "\n"+note) || strings.Contains(out, "constraints[1]:") {
		t.Errorf("import without markers: want the seed, and only the seed, named as not enforced in the YAML and on stderr:\n%s", out)
	}

	marked := "# autoresearch:fixed-begin seed\nseed = 42\n# autoresearch:fixed-end\n"
	if err := os.WriteFile(filepath.Join(dir, "train.py"), []byte(marked), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ = execute(t, "import", src)
	if strings.Contains(out, "not enforced") || !strings.Contains(out, "- 'Random seed: 42 (set in train.py)'") {
		t.Errorf("import with markers: want the seed kept as a constraint and nothing named as not enforced:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	out, err := execute(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if want := "autoresearch " + version.String() + "\n"; out != want {
		t.Errorf("autoresearch version printed %q, want %q", out, want)
	}
}

// TestResearcherTextReachesNoTerminalRaw: a strategy with escape sequences
// (retitle the window, clear the screen, colour the text) reaches the
// ledger, `run`'s progress, `status` and the report without its control
// characters, and with the rest of its words; a kept change with one (erase
// the line) reaches the report's diff with it written out.
func TestResearcherTextReachesNoTerminalRaw(t *testing.T) {
	repo := toyRepoWith(t, `sed -i s/SCORE=10/SCORE=20/ train.sh && printf '# \\033[2Ktuned\\n' >> train.sh && printf '| 1 |  |  |  | double \\033]0;PWNED\\007\\033[2J\\033[31mred SCORE |  |  |\\n' >> $AUTORESEARCH_EXPERIENCES`, "")
	file, wt := filepath.Join(repo, "experiment.yaml"), filepath.Join(filepath.Dir(repo), "wt")
	outputs := map[string]string{}
	var err error
	if outputs["run"], err = execute(t, "run", "-f", file, "--worktree", wt); err != nil {
		t.Fatalf("run: %v\n%s", err, outputs["run"])
	}
	if outputs["status"], err = execute(t, "status", "-f", file, "--worktree", wt); err != nil {
		t.Fatalf("status: %v", err)
	}
	outputs["the branch's ledger"] = testGit(t, wt, "show", "autoresearch/toy:experiences.md")
	dir := filepath.Join(t.TempDir(), "report")
	if out, err := execute(t, "report", "-f", file, "--worktree", wt, "-o", dir); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	outputs["report.md"] = string(data)
	for name, out := range outputs {
		if strings.ContainsAny(out, "\x1b\x07") {
			t.Errorf("%s holds a control character:\n%q", name, out)
		}
		if !strings.Contains(out, "double ]0;PWNED[2J[31mred SCORE") {
			t.Errorf("%s lacks the strategy's words:\n%s", name, out)
		}
	}
	if !strings.Contains(outputs["report.md"], `+# \x1b[2Ktuned`) {
		t.Errorf("report.md lacks the kept change, its escape written out:\n%s", outputs["report.md"])
	}
}
