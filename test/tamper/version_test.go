package tamper

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
)

// versionToys are the experiments of the attacks in attacks-version/, by
// the prefix of the attack's name: a fixed Python evaluation of an error
// rate run as `python eval.py` (a pyenv shim where pyenv is installed),
// and the toy with its fixed checker in Rust, built and run by cargo (a
// rustup proxy where rustup is installed).
var versionToys = map[string]versionToy{
	"python": {
		files: map[string]string{
			"train.sh":   "#!/bin/sh\nWRONG=3\necho $WRONG 10 > out.txt\n",
			"eval.py":    "wrong, total = [int(x) for x in open(\"out.txt\").read().split()]\nprint(\"error: \" + str(wrong / total))\n",
			".gitignore": "out.txt\n",
		},
		fixed: "[eval.py]", eval: "python eval.py", metric: "error", direction: "minimize", baseline: "0.3",
	},
	"rust": {
		files: map[string]string{
			"train.sh":          Toy["train.sh"],
			"eval.sh":           "#!/bin/sh\nexec cargo run -q --offline --manifest-path check/Cargo.toml -- \"$(cat out.txt)\"\n",
			"check/Cargo.toml":  "[package]\nname = \"check\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
			"check/src/main.rs": "fn main() { println!(\"score: {}\", std::env::args().nth(1).unwrap()); }\n",
			".gitignore":        "out.txt\ntarget/\n",
		},
		fixed: "[eval.sh, check/]", eval: "./eval.sh", metric: "score", direction: "maximize", baseline: "10",
	},
}

// versionToy is an experiment of the attacks in attacks-version/.
type versionToy struct {
	files                                    map[string]string
	fixed, eval, metric, direction, baseline string
}

// experiment is the toy's experiment file, of one round, whose Researcher
// runs researcher with MARKER naming marker.
func (toy versionToy) experiment(researcher, marker string) string {
	return `apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata:
  name: toy
spec:
  researchQuestion: "Does a better number come?"
  maxRounds: 1
  baseline: {value: "` + toy.baseline + `"}
  fixed: {files: ` + toy.fixed + `, timeLimit: 10s}
  variable: {files: [train.sh]}
  train: {command: "./train.sh", outputs: [out.txt]}
  eval: {metric: ` + toy.metric + `, direction: ` + toy.direction + `, command: "` + toy.eval + `"}
  researcher:
    command: "` + researcher + `"
    env: [{name: MARKER, value: "` + marker + `"}]
`
}

// TestVersionManagerAttacks runs the attacks in attacks-version/, each a
// Researcher that has a version manager's shim (pyenv, rustup) or cargo
// run the fixed evaluation under an interpreter, a toolchain or a wrapper
// of its choosing, by a file in the candidate or above the worktree. The
// runner pins what the managers chose when the run started, compliance
// refuses such files in a candidate, and the runner refuses a round after
// which, or an evaluation before which, one above the steps' checkouts
// changed: every attack fails compliance, runs nothing it planted, and the
// best stays the baseline, with read-only mounts and without them. An
// attack that plants its file above the worktree is judged on its honest
// rest where the mounts stop it: above the worktree the Researcher writes
// only its own /tmp, or nothing, and training writes nothing at all.
func TestVersionManagerAttacks(t *testing.T) {
	for _, a := range attacks(t, "attacks-version") {
		name, script := a.name, a.script
		t.Run(name, func(t *testing.T) {
			want := v1alpha1.VerdictComplianceFailed
			if strings.HasSuffix(name, "-above") && runner.ReadOnlyMounts() {
				want = v1alpha1.VerdictNotImproved
			}
			versionAttack(t, name, script, want)
		})
		if runner.ReadOnlyMounts() {
			t.Run(name+" without mounts", func(t *testing.T) {
				defer runner.WithoutMounts()()
				versionAttack(t, name, script, v1alpha1.VerdictComplianceFailed)
			})
		}
	}
}

// versionAttack runs the attack name, the absolute path script, on its
// toy, and wants the verdict want with the baseline kept and nothing
// planted run.
func versionAttack(t *testing.T, name, script string, want v1alpha1.Verdict) {
	toy := versionToys["rust"]
	if strings.HasPrefix(name, "python") {
		toy = versionToys["python"]
		t.Setenv("PYTHON2", python2(t))
		if _, err := exec.LookPath("python"); err != nil && want != v1alpha1.VerdictComplianceFailed {
			t.Skip("no python on the PATH for the toy's evaluation, python eval.py")
		}
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "planted-command-ran")
	files := maps.Clone(toy.files)
	files["experiment.yaml"] = toy.experiment("sh "+script, marker)
	st, log := runRepo(t, filepath.Join(dir, "repo"), files)
	if roundOneVerdict(t, st.History, want) == "" {
		t.Fatalf("the run judged no round 1\n%s", log)
	}
	if st.Best == nil || st.Best.Value != toy.baseline {
		t.Errorf("best %+v, want the baseline's %s\n%s", st.Best, toy.baseline, log)
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Error("a command the attack planted ran")
	}
}

// python2 is a Python 2 that pyenv has installed, for the attacks to
// name; any name does where there is none, as compliance refuses the file
// whatever it names.
func python2(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("pyenv", "versions", "--bare").Output()
	if err == nil {
		for _, v := range strings.Fields(string(out)) {
			if strings.HasPrefix(v, "2.") {
				return v
			}
		}
	}
	t.Log("no Python 2 installed by pyenv: the attack names one that is not there")
	return "2.7.18"
}

// TestAToolchainPlantedAboveStaysRefusedOnTheNextRun plants a toolchain
// above the worktree, which without read-only mounts is the Researcher's to
// write, in the run's one round, and runs the experiment again with a
// round more and a Researcher that only adds a comment, as a user who
// raises maxRounds does: the next run compares with what the first run
// found, so its round fails compliance too and the planted cargo never
// runs the evaluation.
func TestAToolchainPlantedAboveStaysRefusedOnTheNextRun(t *testing.T) {
	defer runner.WithoutMounts()()
	toy := versionToys["rust"]
	script, err := filepath.Abs("attacks-version/rust-toolchain-above.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "planted-command-ran")
	files := maps.Clone(toy.files)
	files["experiment.yaml"] = toy.experiment("if [ $AUTORESEARCH_ROUND = 1 ]; then sh "+script+"; else echo '# tuned again' >> train.sh; fi", marker)
	x, st, log := runRepoWith(t, filepath.Join(dir, "repo"), files, runner.Options{})
	if roundOneVerdict(t, st.History, v1alpha1.VerdictComplianceFailed) == "" {
		t.Fatalf("the first run judged no round 1\n%s", log)
	}

	x.Object.Spec.MaxRounds = 2
	var again bytes.Buffer
	st, err = runner.Run(context.Background(), x, runner.Options{Out: &again})
	if err != nil {
		t.Fatalf("the second run: %v\n%s", err, again.String())
	}
	var verdict v1alpha1.Verdict
	for _, h := range st.History {
		if h.Round == 2 {
			verdict = h.Verdict
		}
	}
	if verdict != v1alpha1.VerdictComplianceFailed {
		t.Errorf("round 2 of the next run: %q, want %s\n%s\n%s", verdict, v1alpha1.VerdictComplianceFailed, log, again.String())
	}
	if st.Best == nil || st.Best.Value != toy.baseline {
		t.Errorf("best %+v, want the baseline's %s\n%s", st.Best, toy.baseline, again.String())
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Error("the planted cargo ran")
	}
}
