package report

import (
	"bytes"
	"context"
	"flag"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestMain(m *testing.M) {
	gittest.Isolate()
	os.Exit(m.Run())
}

// sample is a finished six-round run: three kept rounds, a rolled-back one,
// a crash and a compliance failure.
func sample() Input {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	start := metav1.NewTime(at.Add(-time.Minute))
	d := func(s time.Duration) *metav1.Duration { return &metav1.Duration{Duration: s} }
	rows := []workspace.LedgerRow{
		{Round: 0, Compliance: "✅", Result: "val_bpb=3.08", Verdict: "baseline", Strategy: "baseline", Insight: "unmodified code"},
		{Round: 1, Compliance: "✅", Result: "val_bpb=2.0", Verdict: "improved", Strategy: "raise the learning rate to 0.5", Insight: "val_bpb improved from 3.08 (R0) by 1.08"},
		{Round: 2, Compliance: "✅", Result: "val_bpb=4.4", Verdict: "not_improved", Strategy: "push the learning rate to 2.0", Insight: "no better than the best 2.0 (R1)"},
		{Round: 3, Compliance: "✅", Result: "—", Verdict: "train_failed", Strategy: "add a warmup | linear", Insight: "crash: undefined: warmupSteps"},
		{Round: 4, Compliance: "❌ files: modified fixed file eval/main.go", Result: "—", Verdict: "compliance_failed", Strategy: "score on the training text", Insight: "modified fixed file eval/main.go", Note: "keep eval honest"},
		{Round: 5, Compliance: "✅", Result: "val_bpb=1.55", Verdict: "improved", Strategy: "widen the context", Insight: "val_bpb improved from 2.0 (R1) by 0.45"},
		{Round: 6, Compliance: "✅", Result: "val_bpb=1.08", Verdict: "improved", Strategy: "train twice as long", Insight: "val_bpb improved from 1.55 (R5) by 0.47"},
	}
	return Input{
		Name: "tiny",
		Spec: v1alpha1.AutoResearchSpec{
			ResearchQuestion: "How low can bits per byte go?\n",
			MaxRounds:        6,
			Target:           "1.0",
			Eval:             v1alpha1.EvalSpec{Metric: "val_bpb", Direction: v1alpha1.DirectionMinimize},
			Guidance:         []string{"prefer small changes"},
			Holdout:          &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Metric: "holdout_bpb", Dir: "/srv/holdout"},
		},
		Status: v1alpha1.AutoResearchStatus{
			Phase:           v1alpha1.PhaseSucceeded,
			Message:         "done: 6/6 rounds; best val_bpb=1.08 (R6)",
			CompletedRounds: 6,
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionSucceeded, Status: metav1.ConditionTrue, Reason: "MaxRoundsReached"},
				{Type: v1alpha1.ConditionFailed, Status: metav1.ConditionFalse, Reason: "NoFailure"},
			},
			Best:     &v1alpha1.BestResult{Round: 6, Value: "1.08", Commit: "6666666666666666666666666666666666666666"},
			Baseline: &v1alpha1.BaselineResult{Value: "3.08", Stddev: "0.1", Samples: 3, Values: []string{"3.0", "3.08", "3.16"}},
			History: []v1alpha1.RoundRecord{
				{Round: 5, Value: "1.55", Verdict: v1alpha1.VerdictImproved, Commit: "5555555555555555555555555555555555555555", Durations: v1alpha1.StepDurations{Train: d(2 * time.Second)}, CompletionTime: &at},
				{Round: 6, Value: "1.08", Verdict: v1alpha1.VerdictImproved, Commit: "6666666666666666666666666666666666666666", StartTime: &start, CompletionTime: &at,
					Timeline: []v1alpha1.StepStart{{Step: v1alpha1.StepResearcher, Time: metav1.NewMicroTime(start.Add(1500 * time.Microsecond))}, {Step: v1alpha1.StepTrain, Time: metav1.NewMicroTime(start.Add(time.Second))}}},
			},
			VerdictCounts: map[v1alpha1.Verdict]int32{v1alpha1.VerdictImproved: 3, v1alpha1.VerdictNotImproved: 1, v1alpha1.VerdictTrainFailed: 1, v1alpha1.VerdictComplianceFailed: 1},
			Usage:         v1alpha1.Usage{GPUSeconds: 28, ResearcherSeconds: 3, InputTokens: 1200, OutputTokens: 340, Cost: "0.42"},
			Holdout: &v1alpha1.HoldoutStatus{Best: "1.31", BestRound: 6, Readings: []v1alpha1.HoldoutReading{
				{Round: 0, Value: "3.2", Verdict: v1alpha1.VerdictBaseline},
				{Round: 1, Value: "2.25", Verdict: v1alpha1.VerdictImproved},
				{Round: 5, Value: "1.8", Verdict: v1alpha1.VerdictImproved},
				{Round: 6, Value: "1.31", Verdict: v1alpha1.VerdictImproved},
			}},
		},
		Ledger: workspace.Ledger{Metric: "val_bpb", Rows: rows},
		Notes:  []string{"keep eval honest"},
		Diffs:  map[int32]string{6: "--- a/train/main.go\n+++ b/train/main.go\n@@ -1 +1 @@\n-steps := 1500\n+steps := 3000"},
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/report -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; -update rewrites it):\n%s", name, diff)
	}
}

func TestResultsJSONGolden(t *testing.T) {
	got, err := Build(sample()).JSON()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "results.json.golden", got)
}

func TestMarkdownGolden(t *testing.T) {
	golden(t, "report.md.golden", []byte(Build(sample()).Markdown(PlotPNG)))
}

func TestBuildRunningBest(t *testing.T) {
	r := Build(sample())
	type row struct {
		Round     int32
		Value     string
		Kept      bool
		BestSoFar string
	}
	var got []row
	for _, rd := range r.Rounds {
		got = append(got, row{rd.Round, rd.Value, rd.Kept, rd.BestSoFar})
	}
	want := []row{
		{0, "3.08", false, "3.08"}, {1, "2.0", true, "2.0"}, {2, "4.4", false, "2.0"}, {3, "", false, "2.0"},
		{4, "", false, "2.0"}, {5, "1.55", true, "1.55"}, {6, "1.08", true, "1.08"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rounds (-want +got):\n%s", diff)
	}
	if r.StopReason != "MaxRoundsReached" || r.Improvement != "-2 (-64.9%)" {
		t.Errorf("stop reason %q, improvement %q", r.StopReason, r.Improvement)
	}
}

func TestPlotPNG(t *testing.T) {
	var buf bytes.Buffer
	if err := Build(sample()).WritePlot(&buf, "png"); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("progress.png does not decode: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 960 || b.Dy() != 540 {
		t.Errorf("size %dx%d, want 960x540", b.Dx(), b.Dy())
	}
	colours := map[color.RGBA]bool{}
	inked := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			colours[c] = true
			if c != (color.RGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff}) {
				inked++
			}
		}
	}
	// Axes, grid, staircase, markers in several colours and labels.
	if len(colours) < 20 || inked < 5000 {
		t.Errorf("the plot looks blank: %d colours, %d non-white pixels", len(colours), inked)
	}
}

func TestPlotWithoutRounds(t *testing.T) {
	r := Build(Input{Name: "empty", Spec: v1alpha1.AutoResearchSpec{Eval: v1alpha1.EvalSpec{Metric: "m"}}})
	var buf bytes.Buffer
	if err := r.WritePlot(&buf, "svg"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "<svg") {
		t.Errorf("not an SVG:\n%.200s", buf.String())
	}
}

func TestHTMLIsSelfContained(t *testing.T) {
	dir := t.TempDir()
	if _, err := Build(sample()).Write(dir); err != nil {
		t.Fatal(err)
	}
	page := gittest.ReadFile(t, filepath.Join(dir, HTMLFile))
	for _, want := range []string{`src="data:image/png;base64,iVBOR`, "How low can bits per byte go?", "steps := 3000", "add a warmup | linear"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, name := range []string{PlotPNG, PlotSVG, MarkdownMD, ResultsJSON} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
}

func TestKeptDiffs(t *testing.T) {
	repo := gittest.NewRepo(t, map[string]string{"exp/train.py": "lr = 0.1\n", "exp/eval.py": "eval\n"})
	start := gittest.Git(t, repo, "rev-parse", "HEAD")
	commit := func(files map[string]string, msg string) string {
		gittest.WriteFiles(t, repo, files)
		gittest.Git(t, repo, "add", "-A")
		gittest.Git(t, repo, "commit", "-qm", msg)
		return gittest.Git(t, repo, "rev-parse", "HEAD")
	}
	commit(map[string]string{"exp/train.py": "lr = 0.5\n"}, "round 1")
	r1 := commit(map[string]string{"exp/experiences.md": "ledger 1\n"}, "ledger 1")
	commit(map[string]string{"exp/train.py": "lr = 0.5\nwarmup = 10\n", "exp/eval.py": "eval changed\n"}, "round 3")
	r3 := commit(map[string]string{"exp/experiences.md": "ledger 3\n"}, "ledger 3")
	st := v1alpha1.AutoResearchStatus{
		Workspace: &v1alpha1.WorkspaceStatus{StartCommit: start},
		History: []v1alpha1.RoundRecord{
			{Round: 0, Verdict: v1alpha1.VerdictBaseline, Commit: start},
			{Round: 1, Verdict: v1alpha1.VerdictImproved, Commit: r1},
			{Round: 2, Verdict: v1alpha1.VerdictNotImproved},
			{Round: 3, Verdict: v1alpha1.VerdictImproved, Commit: r3},
		},
	}
	// A diff driver the repository's configuration names runs nowhere:
	// neither an external diff nor a text conversion.
	ran := filepath.Join(t.TempDir(), "ran")
	script := filepath.Join(t.TempDir(), "driver.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho ran >> "+ran+"\necho forged\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "config", "diff.external", script)
	gittest.Git(t, repo, "config", "diff.forge.textconv", script)
	gittest.WriteFiles(t, repo, map[string]string{".git/info/attributes": "* diff=forge\n"})
	r, err := workspace.RepositoryOf(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	diffs, err := KeptDiffs(context.Background(), r, "exp", []v1alpha1.RelativePath{"train.py"}, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 2 || !strings.Contains(diffs[1], "-lr = 0.1\n+lr = 0.5") || !strings.Contains(diffs[3], "+warmup = 10") {
		t.Errorf("diffs = %q", diffs)
	}
	for round, d := range diffs {
		if strings.Contains(d, "eval") || strings.Contains(d, "ledger") || strings.Contains(d, "forged") {
			t.Errorf("round %d's diff reaches beyond the variable files:\n%s", round, d)
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the diff ran a driver of the repository's configuration")
	}

	// Once the history has dropped round 1, round 3's predecessor is unknown.
	st.History = st.History[2:]
	if diffs, err = KeptDiffs(context.Background(), r, "exp", []v1alpha1.RelativePath{"train.py"}, st); err != nil || len(diffs) != 0 {
		t.Errorf("with a truncated history: diffs %q, err %v", diffs, err)
	}
}
