package scripted

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

const demoDir = "../../examples/tiny-lm-go"

// TestDemoPlan replays the tiny-lm-go demo plan on a git copy of the example
// the way the loop would: an improved round's changes are committed, every
// other round is rolled back, so each step must apply to the last committed
// version. It also checks that the plan fits the experiment: one step per
// round, and only the compliance round touches a fixed file.
func TestDemoPlan(t *testing.T) {
	spec := loadDemoSpec(t, "experiment.yaml")
	replayDemoPlan(t, spec, []v1alpha1.Verdict{
		v1alpha1.VerdictImproved,
		v1alpha1.VerdictNotImproved,
		v1alpha1.VerdictTrainFailed,
		v1alpha1.VerdictComplianceFailed,
		v1alpha1.VerdictImproved,
		v1alpha1.VerdictImproved,
	})
}

// TestDemoHoldoutPlan replays the plan of `make demo-holdout` as
// TestDemoPlan does, and checks its experiment: a hidden holdout that
// scores the candidate's checkpoint on a text in its own directory, and a
// seed for that text, in the Makefile, that no file of the example holds.
func TestDemoHoldoutPlan(t *testing.T) {
	spec := loadDemoSpec(t, "holdout/experiment.yaml")
	h := spec.Holdout
	if h == nil {
		t.Fatal("holdout/experiment.yaml names no spec.holdout")
	}
	if !filepath.IsAbs(h.Dir) || !strings.Contains(h.Command, "$AUTORESEARCH_HOLDOUT_DIR/") || h.Tolerance == "" {
		t.Errorf("spec.holdout %+v: want an absolute dir, a command that reads from $AUTORESEARCH_HOLDOUT_DIR and a tolerance", h)
	}
	if !slices.Contains(spec.Fixed.Files, v1alpha1.PathPattern("holdout/")) {
		t.Errorf("fixed files %v leave out holdout/, where the plan is", spec.Fixed.Files)
	}
	replayDemoPlan(t, spec, []v1alpha1.Verdict{
		v1alpha1.VerdictImproved,
		v1alpha1.VerdictImproved,
		v1alpha1.VerdictImproved,
		v1alpha1.VerdictOverfit,
		v1alpha1.VerdictImproved,
	})

	m := regexp.MustCompile(`(?m)^DEMO_HOLDOUT_SEED \?= (\d+)$`).FindStringSubmatch(readFile(t, "../../Makefile"))
	if m == nil {
		t.Fatal("the Makefile sets no DEMO_HOLDOUT_SEED")
	}
	err := filepath.WalkDir(demoDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if strings.Contains(readFile(t, path), m[1]) {
			t.Errorf("%s holds the holdout's seed %s", path, m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// loadDemoSpec reads an experiment file of the example.
func loadDemoSpec(t *testing.T, name string) v1alpha1.AutoResearchSpec {
	t.Helper()
	var experiment v1alpha1.AutoResearch
	if err := yaml.UnmarshalStrict([]byte(readFile(t, filepath.Join(demoDir, name))), &experiment); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return experiment.Spec
}

// replayDemoPlan replays the plan that spec's Researcher plays, whose steps
// must expect wantExpects, on a git copy of the example.
func replayDemoPlan(t *testing.T, spec v1alpha1.AutoResearchSpec, wantExpects []v1alpha1.Verdict) {
	t.Helper()
	args := strings.Fields(spec.Researcher.Command)
	i := slices.Index(args, "--plan")
	if i < 0 || i == len(args)-1 {
		t.Fatalf("researcher command %q names no --plan file", spec.Researcher.Command)
	}
	plan, err := LoadPlan(filepath.Join(demoDir, args[i+1]))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(plan.Rounds), int(spec.MaxRounds); got != want {
		t.Errorf("plan has %d steps, experiment runs %d rounds", got, want)
	}
	var expects []v1alpha1.Verdict
	for _, s := range plan.Rounds {
		expects = append(expects, s.Expect)
	}
	if diff := cmp.Diff(wantExpects, expects); diff != "" {
		t.Errorf("the demo's verdicts (-want +got):\n%s", diff)
	}

	repo := t.TempDir()
	copyExample(t, demoDir, repo)
	git(t, repo, "init", "-q")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "baseline")
	experiences := filepath.Join(t.TempDir(), "experiences.md")
	writeTree(t, filepath.Dir(experiences), map[string]string{"experiences.md": experiencesHeader})

	for i, step := range plan.Rounds {
		round := i + 1
		var log bytes.Buffer
		if err := Run(context.Background(), plan, round, "", repo, experiences, &log); err != nil {
			t.Fatalf("round %d (%s): %v\n%s", round, step.Strategy, err, log.String())
		}
		git(t, repo, "add", "-A")
		changed := strings.Fields(git(t, repo, "diff", "--cached", "--name-only"))
		touchesFixed := slices.ContainsFunc(changed, func(f string) bool {
			return slices.ContainsFunc(spec.Fixed.Files, func(p v1alpha1.PathPattern) bool { return p.Matches(f) })
		})
		onlyVariable := !slices.ContainsFunc(changed, func(f string) bool { return !slices.Contains(spec.Variable.Files, v1alpha1.RelativePath(f)) })
		switch {
		case len(changed) == 0:
			t.Errorf("round %d (%s) changed nothing", round, step.Strategy)
		case step.Expect == v1alpha1.VerdictComplianceFailed && !touchesFixed:
			t.Errorf("round %d (%s) is meant to fail compliance but changes only %v", round, step.Strategy, changed)
		case step.Expect != v1alpha1.VerdictComplianceFailed && !onlyVariable:
			t.Errorf("round %d (%s) changes %v, beyond the variable files %v", round, step.Strategy, changed, spec.Variable.Files)
		}
		if !testing.Short() {
			checkBuild(t, repo, round, step)
		}
		if step.Expect == v1alpha1.VerdictImproved {
			git(t, repo, "commit", "-q", "-m", step.Strategy)
		} else {
			git(t, repo, "reset", "-q", "--hard")
			git(t, repo, "clean", "-fdq")
		}
	}
	if got := strings.Count(readFile(t, experiences), "\n") - strings.Count(experiencesHeader, "\n"); got != len(plan.Rounds) {
		t.Errorf("experiences gained %d rows, want %d", got, len(plan.Rounds))
	}
}

// checkBuild compiles the example's training program: it must build in
// every round except the one that is meant to fail training.
func checkBuild(t *testing.T, repo string, round int, step Step) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", os.DevNull, "./train")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if wantFail := step.Expect == v1alpha1.VerdictTrainFailed; (err != nil) != wantFail {
		t.Errorf("round %d (%s): go build ./train error = %v, want failure %v\n%s", round, step.Strategy, err, wantFail, out)
	}
}

// copyExample copies the example's source, leaving out its git-ignored
// data and checkpoints.
func copyExample(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() && (rel == "data" || rel == "ckpt") {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		writeTree(t, dst, map[string]string{rel: readFile(t, path)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}
