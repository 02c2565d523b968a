//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/report"
)

// plugin runs `kubectl autoresearch` as a user does: kubectl finds the
// plugin binary on PATH.
type plugin struct {
	t   *testing.T
	dir string
}

func buildPlugin(t *testing.T) plugin {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-autoresearch"), "./cmd/kubectl-autoresearch")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the plugin: %v\n%s", err, out)
	}
	return plugin{t: t, dir: dir}
}

// try runs the plugin in dir and returns its stdout and stderr apart.
func (p plugin) try(dir string, args ...string) (string, string, error) {
	cmd := exec.Command(kubeBin, append([]string{"autoresearch"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+p.dir+":"+os.Getenv("PATH"), "KUBECONFIG="+filepath.Join(e2eDir, "kubeconfig"))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func (p plugin) run(dir string, args ...string) string {
	p.t.Helper()
	out, errOut, err := p.try(dir, args...)
	if err != nil {
		p.t.Fatalf("kubectl autoresearch %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// pluginToy is pipelineToy whose round 1 improves and round 2 does not.
var pluginToy = map[string]string{
	".gitignore": pipelineToy[".gitignore"],
	"train.sh":   pipelineToy["train.sh"],
	"eval.sh":    pipelineToy["eval.sh"],
	"plan.yaml": `rounds:
  - strategy: "raise SCORE to 20"
    edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=20"}]
  - strategy: "lower SCORE to 5"
    edits: [{file: train.sh, old: "SCORE=20", new: "SCORE=5"}]
`,
}

// TestKubectlPlugin runs a two-round experiment and works with it through
// the kubectl plugin alone: a note and a suspension while it runs, then
// its status, the step logs, the report, the bundle and the candidates'
// diffs from the workspace volume, each through a reader pod that is gone
// afterwards.
func TestKubectlPlugin(t *testing.T) {
	parallel(t)
	const n = "plugged"
	// Built first: the note must reach the experiment before its last
	// round starts.
	p := buildPlugin(t)
	install(t)
	m := startManager(t)
	defer m.stop()
	kubectl(t, toyManifest(n, clusterSource(t, n, pluginToy), 2), "apply", "-f", "-")
	defer kubectl(t, "", "delete", "autoresearch", n, "-n", ns, "--wait=true", "--timeout=120s")
	work := t.TempDir()

	if _, errOut, err := p.try(work, "note", n); err == nil || !strings.Contains(errOut, "Usage: kubectl autoresearch note NAME") {
		t.Errorf("note without text: %v, want its usage\n%s", err, errOut)
	}
	if _, errOut, err := p.try(work, "status", "nosuch"); err == nil || !strings.Contains(errOut, "experiment nosuch not found in namespace default") {
		t.Errorf("status of no experiment: %v\n%s", err, errOut)
	}

	const note = "try a larger learning rate"
	eventually(t, "the workspace", 5*time.Minute, func() bool { return experimentNamed(t, n).Status.Workspace != nil })
	p.run(work, "note", n, note)
	if g := experimentNamed(t, n).Spec.Guidance; len(g) != 1 || g[0] != note {
		t.Errorf("spec.guidance = %q, want the note", g)
	}
	if out := p.run(work, "suspend", n); !strings.Contains(out, "Suspended "+n) {
		t.Errorf("suspend said %q", out)
	}
	eventually(t, "the suspension", 10*time.Minute, func() bool { return experimentNamed(t, n).Status.Phase == v1alpha1.PhaseSuspended })
	if out := p.run(work, "status", n); !strings.Contains(out, "Phase:      Suspended") || !strings.Contains(out, "  - "+note) {
		t.Errorf("status while suspended:\n%s", out)
	}
	p.run(work, "resume", n)
	eventually(t, "two rounds", 15*time.Minute, func() bool {
		ar := experimentNamed(t, n)
		return ar.Status.Phase == v1alpha1.PhaseSucceeded && ar.Status.CompletedRounds == 2
	})
	ar := experimentNamed(t, n)
	noted := false
	for _, h := range ar.Status.History {
		noted = noted || h.Note == note
	}
	if !noted {
		t.Errorf("no round recorded the note; history %+v", ar.Status.History)
	}

	t.Run("status", func(t *testing.T) { pluginStatus(t, p, work, ar) })
	t.Run("logs", func(t *testing.T) { pluginLogs(t, p, work, n) })
	t.Run("report", func(t *testing.T) { pluginReport(t, p, work, n) })
	t.Run("export", func(t *testing.T) { pluginExport(t, p, work, ar) })
	t.Run("diff", func(t *testing.T) { pluginDiff(t, p, work, n) })

	if out := kubectl(t, "", "get", "pods", "-n", ns, "-l", "autoresearch.dev/reader-of="+n, "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("reader pods left behind:\n%s", out)
	}
}

func pluginStatus(t *testing.T, p plugin, work string, ar *v1alpha1.AutoResearch) {
	n := ar.Name
	out := p.run(work, "status", n)
	for _, want := range []string{"Experiment: " + n, "Workspace:  claim " + ar.Status.Workspace.ClaimName, "Phase:      Succeeded", "learning rate"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	var st v1alpha1.AutoResearchStatus
	if err := json.Unmarshal([]byte(p.run(work, "status", n, "-o", "json")), &st); err != nil || st.Phase != v1alpha1.PhaseSucceeded {
		t.Errorf("status -o json: %v, phase %s", err, st.Phase)
	}
}

func pluginLogs(t *testing.T, p plugin, work, n string) {
	if out := p.run(work, "logs", n, "--round", "1", "--step", "train"); !strings.Contains(out, "step 1 loss=0.5") {
		t.Errorf("round 1's training log:\n%s", out)
	}
	if out := p.run(work, "logs", n, "--round", "1", "--step", "eval"); !strings.Contains(out, "score: 20") {
		t.Errorf("round 1's evaluation log:\n%s", out)
	}
	if out, errOut, err := p.try(work, "logs", n, "--round", "2", "--step", "researcher"); err != nil || !strings.Contains(errOut, "its pod") {
		t.Errorf("round 2's researcher log: %v\n%s%s", err, out, errOut)
	}
	if _, errOut, err := p.try(work, "logs", n, "--round", "1", "--step", "nosuch"); err == nil || !strings.Contains(errOut, "its logs of eval, train") {
		t.Errorf("a step without a log: %v\n%s", err, errOut)
	}
	if _, errOut, err := p.try(work, "logs", n, "--round", "7"); err == nil || !strings.Contains(errOut, "round 7 not found") {
		t.Errorf("a round not run: %v\n%s", err, errOut)
	}
}

func pluginReport(t *testing.T, p plugin, work, n string) {
	dir := filepath.Join(work, "report")
	p.run(work, "report", n, "-o", dir)
	for _, f := range []string{report.PlotPNG, report.PlotSVG, report.MarkdownMD, report.HTMLFile} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, report.ResultsJSON))
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if len(r.Rounds) != 3 || r.Rounds[1].Verdict != string(v1alpha1.VerdictImproved) || !strings.Contains(r.Rounds[1].Diff, "+SCORE=20") {
		t.Errorf("results.json rounds %+v, want the baseline and two rounds, round 1 kept with its diff", r.Rounds)
	}
}

func pluginExport(t *testing.T, p plugin, work string, ar *v1alpha1.AutoResearch) {
	n := ar.Name
	bundle := filepath.Join(work, n+".bundle")
	p.run(work, "export", n, "-o", bundle)
	clone := filepath.Join(work, "clone")
	git := func(dir string, args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(work, "clone", "-q", "-b", "autoresearch/"+n, bundle, clone)
	git(clone, "merge-base", "--is-ancestor", ar.Status.Best.Commit, "HEAD")
	if data, err := os.ReadFile(filepath.Join(clone, "results.tsv")); err != nil || strings.Count(string(data), "\n") < 3 {
		t.Errorf("the clone's results.tsv: %v\n%s", err, data)
	}
	if _, errOut, err := p.try(work, "export", n, "-o", bundle); err == nil || !strings.Contains(errOut, "--force") {
		t.Errorf("export over the bundle: %v\n%s", err, errOut)
	}
}

func pluginDiff(t *testing.T, p plugin, work, n string) {
	if out := p.run(work, "diff", n, "--round", "1"); !strings.Contains(out, "+SCORE=20") {
		t.Errorf("round 1's diff:\n%s", out)
	}
	// Round 2 was rolled back; its candidate is kept all the same.
	if out := p.run(work, "diff", n, "--round", "2"); !strings.Contains(out, "+SCORE=5") {
		t.Errorf("round 2's diff:\n%s", out)
	}
}
