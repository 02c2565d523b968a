package protocol

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden YAML files in testdata")

// olderRepo is the repository the older-layout example lives in.
var olderRepo = []string{
	"autoresearch-protocol.md", "README.md", "train.py", "model.py",
	"evaluate.py", "prepare.py", "data/loader.py",
}

func TestParseTestdata(t *testing.T) {
	cases := map[string]struct {
		repo        []string
		wantLayout  string
		wantMissing []string
	}{
		"current": {
			wantLayout:  LayoutCurrent,
			wantMissing: []string{"spec.researcher.command"},
		},
		"older": {
			repo:        olderRepo,
			wantLayout:  LayoutOlder,
			wantMissing: []string{"spec.researcher.command"},
		},
		"partial": {
			wantLayout:  LayoutCurrent,
			wantMissing: []string{"spec.fixed.timeLimit", "spec.eval.metric", "spec.researcher.command"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("testdata", name+".md"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Parse(string(text), Repo{Files: tc.repo})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if res.Layout != tc.wantLayout {
				t.Errorf("Layout = %q, want %q", res.Layout, tc.wantLayout)
			}
			if diff := cmp.Diff(tc.wantMissing, res.Missing); diff != "" {
				t.Errorf("Missing (-want +got):\n%s", diff)
			}
			got, err := YAML(res, "autoresearch-protocol.md")
			if err != nil {
				t.Fatalf("YAML: %v", err)
			}
			golden := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("YAML differs from %s (-want +got):\n%s", golden, diff)
			}
			assertRoundTrip(t, res, got)
		})
	}
}

// assertRoundTrip checks that the YAML reads back, strictly, as the object.
func assertRoundTrip(t *testing.T, res Result, out []byte) {
	t.Helper()
	var back v1alpha1.AutoResearch
	if err := yaml.UnmarshalStrict(out, &back); err != nil {
		t.Fatalf("YAML does not read back as an AutoResearch: %v\n%s", err, out)
	}
	if diff := cmp.Diff(res.Object, &back); diff != "" {
		t.Errorf("YAML read back differs from the object (-object +read back):\n%s\n%s", diff, out)
	}
}

// The testdata objects are compared field by field here as well as through
// the golden files, so that a wrong golden file cannot be blessed unnoticed.
func TestParseCurrentLayout(t *testing.T) {
	res := parseFile(t, "current.md", nil)
	atol, rtol := v1alpha1.NonNegativeDecimal("1e-5"), v1alpha1.NonNegativeDecimal("1.3e-6")
	want := v1alpha1.AutoResearchSpec{
		ResearchQuestion: "Can a fused attention kernel cut the step time of the small GPT without changing its loss?",
		MaxRounds:        30,
		Baseline:         &v1alpha1.BaselineSpec{Value: "41.7"},
		Fixed: v1alpha1.FixedSpec{
			Files: []v1alpha1.PathPattern{"evaluate.py", "reference/attention.py", "fixtures.py"},
			Constraints: []string{
				"random_seed: 42 (set in train.py)",
				"Data split: 90/10, see prepare.py",
				"The tokenizer stays as it is.",
				"Reference outputs come from reference/attention.py and are compared in float32.",
			},
			TimeLimit:  duration(5 * time.Minute),
			EpochLimit: 1,
		},
		Variable: v1alpha1.VariableSpec{
			Files: []v1alpha1.RelativePath{"kernels/attention.py", "train.py"},
			Range: "attention kernel implementation (Triton or CUDA), block sizes, memory layout; the model and optimizer stay as they are",
		},
		Train: v1alpha1.TrainSpec{Command: "python train.py"},
		Eval:  v1alpha1.EvalSpec{Metric: "step_ms", Direction: v1alpha1.DirectionMinimize, Command: "python evaluate.py --steps 50"},
		Profile: &v1alpha1.ProfileSpec{
			Command:         "python -m torch.utils.bottleneck train.py --steps 20",
			ExpectedRuntime: durationPtr(30 * time.Second),
		},
		KernelTargets: []v1alpha1.KernelTarget{
			{Name: "attention", NewModule: "kernels.attention:flash_attention", BaselineModule: "reference.attention:naive_attention", Fixture: "fixtures:attention_inputs", Atol: atol, Rtol: rtol},
			{Name: "softmax", NewModule: "kernels.attention:fused_softmax", BaselineModule: "reference.attention:softmax", Fixture: "fixtures:softmax_inputs", Atol: "0.0001", Rtol: "1e-4"},
		},
	}
	if diff := cmp.Diff(want, res.Object.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if got, want := res.Object.Name, "flash-attention-kernel-speedup-v2"; got != want {
		t.Errorf("name = %q, want %q", got, want)
	}
	if got, want := res.Object.Annotations[DescriptionAnnotation], "Flash Attention Kernel Speedup (v2)"; got != want {
		t.Errorf("description = %q, want %q", got, want)
	}
	if got, want := res.Object.APIVersion+" "+res.Object.Kind, "autoresearch.dev/v1alpha1 AutoResearch"; got != want {
		t.Errorf("type = %q, want %q", got, want)
	}
}

func TestParseOlderLayout(t *testing.T) {
	res := parseFile(t, "older.md", olderRepo)
	target := v1alpha1.Decimal("0.94")
	want := v1alpha1.AutoResearchSpec{
		ResearchQuestion: "Which changes to the ResNet-18 architecture and training recipe raise CIFAR-10 test accuracy the most within a fixed 10-second training budget?",
		MaxRounds:        5,
		Target:           target,
		Baseline:         &v1alpha1.BaselineSpec{Value: "0.223"},
		Fixed: v1alpha1.FixedSpec{
			Files: []v1alpha1.PathPattern{"evaluate.py", "prepare.py", "data/loader.py"},
			Constraints: []string{
				"Data pipeline: prepare.py and data/loader.py, e.g. no augmentation at test time",
				"Pressure termination code in train.py (the --time-limit flag) must keep working",
				"Results are logged to experiences.md by the Supervisor",
				"Checkpoint format: model.pt, written at the end of training",
				"Random seed: 42 (set in train.py)",
				"Data split: 90/10, see prepare.py",
			},
			TimeLimit:  duration(10 * time.Second),
			EpochLimit: 1,
		},
		Variable: v1alpha1.VariableSpec{
			Files: []v1alpha1.RelativePath{"model.py", "train.py"},
			Range: "- Model architecture in model.py can be changed\n" +
				"- Optimizer, learning-rate schedule and batch size in train.py can be tuned\n" +
				"- No pretrained weights; no extra data",
		},
		Train: v1alpha1.TrainSpec{Command: "python3 train.py"},
		Eval:  v1alpha1.EvalSpec{Metric: "test_acc", Direction: v1alpha1.DirectionMaximize, Command: "python3 evaluate.py --checkpoint model.pt"},
	}
	if diff := cmp.Diff(want, res.Object.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"spec.fixed.constraints[1]", "spec.fixed.constraints[3]", "spec.fixed.constraints[4]"}, notePaths(res.Unenforced)); diff != "" {
		t.Errorf("unenforced constraints (-want +got):\n%s", diff)
	}
	for _, note := range []string{
		`spec.fixed.files: evaluate.py inferred from "Evaluation logic: evaluate.py (do NOT modify)"`,
		`spec.fixed.files: model.pt is mentioned but is not in the repository; left out`,
		`spec.fixed.files: train.py is mentioned under both fixed and variable; kept it variable only`,
		`spec.variable.files: model.py inferred from "Model architecture in model.py can be changed"`,
	} {
		if !slices.Contains(res.Inferred, note) {
			t.Errorf("Inferred lacks %q; got:\n%s", note, strings.Join(res.Inferred, "\n"))
		}
	}
}

func TestParseNotAProtocol(t *testing.T) {
	for name, text := range map[string]string{
		"empty":       "",
		"prose":       "Some notes about a model.\nIt trains fast.\n",
		"other title": "# Meeting notes\n\n## Attendees\n- me\n",
	} {
		t.Run(name, func(t *testing.T) {
			res, err := Parse(text, Repo{})
			if err == nil {
				t.Fatalf("Parse succeeded with layout %q, want an error", res.Layout)
			}
			if res.Object == nil {
				t.Error("Object is nil")
			}
		})
	}
}

// protocol builds a current-layout protocol from the lines of a complete
// one, with lines replaced by key; an empty replacement drops the line.
func protocol(replace map[string]string) string {
	lines := []struct{ key, text string }{
		{"title", "# Autoresearch Protocol: Test"},
		{"research_question", "research_question: Does it work?"},
		{"max_rounds", "max_rounds: 3"},
		{"target", "target: none"},
		{"baseline", "baseline: acc = 0.5"},
		{"fixed", "## Fixed"},
		{"fixed.files", "- files: evaluate.py"},
		{"time_limit", "- time_limit: 5min"},
		{"epoch_limit", "- epoch_limit: 1"},
		{"variable", "## Variable"},
		{"variable.files", "- files: train.py"},
		{"range", "- adjustable_range: anything"},
		{"eval", "## Eval"},
		{"metric", "- metric: acc"},
		{"direction", "- direction: maximize"},
		{"command", "- command: python evaluate.py"},
		{"extra", ""},
	}
	var b strings.Builder
	for _, l := range lines {
		text, ok := replace[l.key]
		if !ok {
			text = l.text
		}
		if text != "" {
			b.WriteString(text + "\n")
		}
	}
	return b.String()
}

func TestParseTimeLimit(t *testing.T) {
	cases := map[string]struct {
		value       string
		want        time.Duration
		wantMissing bool
		wantNote    string
	}{
		"5min":        {value: "5min", want: 5 * time.Minute},
		"300s":        {value: "300s", want: 5 * time.Minute},
		"10s":         {value: "10s", want: 10 * time.Second},
		"1h":          {value: "1h", want: time.Hour},
		"2m30s":       {value: "2m30s", want: 150 * time.Second},
		"with note":   {value: "5min (whichever triggers first)", want: 5 * time.Minute},
		"words":       {value: "1 hour 30 minutes", want: 90 * time.Minute},
		"chinese":     {value: "5分钟", want: 5 * time.Minute},
		"backticks":   {value: "`90s`", want: 90 * time.Second},
		"no unit":     {value: "300", want: 5 * time.Minute, wantNote: `spec.fixed.timeLimit: "time_limit: 300" has no unit; read it as seconds`},
		"bad unit":    {value: "5 fortnights", wantMissing: true, wantNote: `spec.fixed.timeLimit: "5 fortnights" is not a duration (write 5m, 300s or 1h30m)`},
		"prose":       {value: "five minutes", wantMissing: true, wantNote: `spec.fixed.timeLimit: "five minutes" is not a duration (write 5m, 300s or 1h30m)`},
		"below 1s":    {value: "500ms", wantMissing: true, wantNote: `spec.fixed.timeLimit: "500ms" is shorter than 1s (write 5m, 300s or 1h30m)`},
		"placeholder": {value: "<value>", wantMissing: true, wantNote: `spec.fixed.timeLimit: "time_limit: <value>" is still the template's placeholder`},
		"absent":      {wantMissing: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			line := ""
			if tc.value != "" {
				line = "- time_limit: " + tc.value
			}
			res := parse(t, protocol(map[string]string{"time_limit": line}), nil)
			if got := res.Object.Spec.Fixed.TimeLimit.Duration; got != tc.want {
				t.Errorf("timeLimit = %v, want %v", got, tc.want)
			}
			if got := slices.Contains(res.Missing, "spec.fixed.timeLimit"); got != tc.wantMissing {
				t.Errorf("spec.fixed.timeLimit missing = %v, want %v (Missing %q)", got, tc.wantMissing, res.Missing)
			}
			if tc.wantNote != "" && !slices.Contains(res.Inferred, tc.wantNote) {
				t.Errorf("Inferred lacks %q; got %q", tc.wantNote, res.Inferred)
			}
		})
	}
}

func TestParseTargetAndBaseline(t *testing.T) {
	cases := map[string]struct {
		target, baseline string
		wantTarget       v1alpha1.Decimal
		wantBaseline     *v1alpha1.BaselineSpec
		wantMissing      []string
		wantNote         string
	}{
		"target none": {
			target: "target: none", baseline: "baseline: acc = 0.5",
			wantBaseline: &v1alpha1.BaselineSpec{Value: "0.5"},
		},
		"target number": {
			target: "target: 0.95", baseline: "baseline: 0.5",
			wantTarget: "0.95", wantBaseline: &v1alpha1.BaselineSpec{Value: "0.5"},
		},
		"target quoted with metric": {
			target: `target: "acc >= 0.9"`, baseline: "baseline: acc: 0.5 (VP L1)",
			wantTarget: "0.9", wantBaseline: &v1alpha1.BaselineSpec{Value: "0.5"},
		},
		"target absent": {
			baseline: "baseline: acc = 1e-3", wantBaseline: &v1alpha1.BaselineSpec{Value: "1e-3"},
		},
		"target unreadable": {
			target: "target: as high as possible", baseline: "baseline: acc = 0.5",
			wantBaseline: &v1alpha1.BaselineSpec{Value: "0.5"},
			wantMissing:  []string{"spec.target"},
			wantNote:     `spec.target: "as high as possible" is not a number, nor <metric> = <number>`,
		},
		"baseline names another metric": {
			target: "target: none", baseline: "baseline: val_acc = 0.5",
			wantBaseline: &v1alpha1.BaselineSpec{Value: "0.5"},
			wantNote:     `spec.baseline: "baseline: val_acc = 0.5" names the metric val_acc, but spec.eval.metric is acc; kept the value`,
		},
		"baseline none": {
			target: "target: none", baseline: "baseline: none",
			wantNote: `spec.baseline: left out ("baseline: none"): round 0 measures it`,
		},
		"baseline placeholder": {
			target: "target: none", baseline: "baseline: <metric> = <value from VP L1>",
			wantMissing: []string{"spec.baseline.value"},
			wantNote:    `spec.baseline.value: "<metric> = <value from VP L1>" is not a number, nor <metric> = <number>`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := parse(t, protocol(map[string]string{"target": tc.target, "baseline": tc.baseline}), nil)
			if diff := cmp.Diff(tc.wantTarget, res.Object.Spec.Target); diff != "" {
				t.Errorf("target (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantBaseline, res.Object.Spec.Baseline); diff != "" {
				t.Errorf("baseline (-want +got):\n%s", diff)
			}
			wantMissing := append(tc.wantMissing, "spec.researcher.command")
			if diff := cmp.Diff(wantMissing, res.Missing); diff != "" {
				t.Errorf("Missing (-want +got):\n%s", diff)
			}
			if tc.wantNote != "" && !slices.Contains(res.Inferred, tc.wantNote) {
				t.Errorf("Inferred lacks %q; got %q", tc.wantNote, res.Inferred)
			}
		})
	}
}

func TestParseHeadingsAndKeys(t *testing.T) {
	cases := map[string]map[string]string{
		"fullwidth note":      {"fixed": "## Fixed（固定）", "eval": "## Eval（评估，固定）"},
		"english note":        {"fixed": "## Fixed (do not touch)", "eval": "## Eval (fixed)"},
		"upper case":          {"fixed": "## FIXED", "variable": "## VARIABLE", "eval": "## EVAL"},
		"evaluation heading":  {"eval": "## Evaluation"},
		"plain keys":          {"metric": "metric: acc", "direction": "direction: maximize", "command": "command: python evaluate.py"},
		"bold keys":           {"metric": "- **metric**: acc", "direction": "- **direction:** maximize"},
		"quoted values":       {"metric": `- metric: "acc"`, "command": "- command: 'python evaluate.py'"},
		"backtick values":     {"metric": "- metric: `acc`", "command": "- command: `python evaluate.py`"},
		"fullwidth colon":     {"metric": "- metric：acc"},
		"star bullets":        {"metric": "* metric: acc", "direction": "+ direction: maximize"},
		"spaced keys":         {"time_limit": "- Time limit: 5min", "epoch_limit": "- epoch-limit: 1"},
		"direction spelling":  {"direction": "- direction: Maximise (higher is better)"},
		"fenced eval command": {"command": "- command:\n  ```bash\n  python evaluate.py\n  ```"},
	}
	want := v1alpha1.EvalSpec{Metric: "acc", Direction: v1alpha1.DirectionMaximize, Command: "python evaluate.py"}
	for name, replace := range cases {
		t.Run(name, func(t *testing.T) {
			res := parse(t, protocol(replace), nil)
			if diff := cmp.Diff(want, res.Object.Spec.Eval); diff != "" {
				t.Errorf("eval (-want +got):\n%s", diff)
			}
			if got := res.Object.Spec.Fixed.TimeLimit.Duration; got != 5*time.Minute {
				t.Errorf("timeLimit = %v, want 5m", got)
			}
			if diff := cmp.Diff([]string{"spec.researcher.command"}, res.Missing); diff != "" {
				t.Errorf("Missing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseFiles(t *testing.T) {
	cases := map[string]struct {
		fixed, variable string
		repo            []string
		wantFixed       []string
		wantVariable    []string
		wantMissing     []string
		wantNote        string
		// wantListed says that no file was picked out of prose.
		wantListed bool
	}{
		"listed": {
			fixed: "- files: evaluate.py, `prepare.py` (data), ./metrics.py", variable: "- files: train.py，model.py",
			wantFixed: []string{"evaluate.py", "prepare.py", "metrics.py"}, wantVariable: []string{"train.py", "model.py"},
			wantListed: true,
		},
		"nested lists": {
			fixed: "- files:\n  - evaluate.py\n  - `prepare.py`", variable: "files:\n- train.py\n- model.py\n\n- adjustable_range: all",
			wantFixed: []string{"evaluate.py", "prepare.py"}, wantVariable: []string{"train.py", "model.py"},
			wantListed: true,
		},
		"eval script added to fixed": {
			fixed: "- files: prepare.py", variable: "- files: train.py",
			wantFixed: []string{"prepare.py", "evaluate.py"}, wantVariable: []string{"train.py"},
			wantNote: `spec.fixed.files: evaluate.py added because the eval command "python evaluate.py" runs it and evaluation code must stay fixed`,
		},
		"eval script listed as variable": {
			fixed: "- files: prepare.py", variable: "- files: train.py, evaluate.py",
			wantFixed: []string{"prepare.py"}, wantVariable: []string{"train.py", "evaluate.py"},
			wantNote: `spec.variable.files: evaluate.py is run by the eval command "python evaluate.py"; evaluation code should be fixed`,
		},
		"listed on both sides": {
			fixed: "- files: evaluate.py, train.py", variable: "- files: train.py",
			wantFixed: []string{"evaluate.py", "train.py"}, wantVariable: []string{"train.py"},
			wantNote: "spec.variable.files: train.py is listed as both fixed and variable; remove it from one",
		},
		"prose without repository": {
			fixed:     "- Evaluation logic: evaluate.py (do NOT modify), e.g. the metric code",
			variable:  "- Everything in train.py and src/model.py; torch.nn.functional is fine",
			wantFixed: []string{"evaluate.py"}, wantVariable: []string{"train.py", "src/model.py"},
			wantNote: `spec.variable.files: src/model.py inferred from "Everything in train.py and src/model.py; torch.nn.functional is fine"`,
		},
		"prose matched by base name": {
			fixed: "- Evaluation: evaluate.py", variable: "- The model in model.py",
			repo:      []string{"evaluate.py", "src/model.py", "train.py"},
			wantFixed: []string{"evaluate.py"}, wantVariable: []string{"src/model.py"},
			wantNote: `spec.variable.files: src/model.py (written model.py) inferred from "The model in model.py"`,
		},
		"prose names a missing file": {
			fixed: "- Evaluation: evaluate.py and metrics.py", variable: "- train.py",
			repo:      []string{"evaluate.py", "train.py"},
			wantFixed: []string{"evaluate.py"}, wantVariable: []string{"train.py"},
			wantNote: "spec.fixed.files: metrics.py is mentioned but is not in the repository; left out",
		},
		"prose listed fixed, variable prose": {
			fixed: "- files: evaluate.py, model.py", variable: "- Change model.py and train.py",
			wantFixed: []string{"evaluate.py", "model.py"}, wantVariable: []string{"train.py"},
			wantNote: "spec.variable.files: model.py is listed as fixed; left it out of the variable files",
		},
		"nothing variable": {
			fixed: "- files: evaluate.py", variable: "- files: none",
			wantFixed: []string{"evaluate.py"}, wantVariable: []string{},
			wantMissing: []string{"spec.variable.files", "spec.train.command"},
		},
		"nothing fixed": {
			fixed: "- Nothing is fixed", variable: "- files: train.py",
			repo:      []string{"train.py"},
			wantFixed: nil, wantVariable: []string{"train.py"},
			wantMissing: []string{"spec.fixed.files"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := parse(t, protocol(map[string]string{"fixed.files": tc.fixed, "variable.files": tc.variable, "range": ""}), tc.repo)
			if diff := cmp.Diff(tc.wantFixed, v1alpha1.Strings(res.Object.Spec.Fixed.Files)); diff != "" {
				t.Errorf("fixed.files (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantVariable, v1alpha1.Strings(res.Object.Spec.Variable.Files)); diff != "" {
				t.Errorf("variable.files (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(append(tc.wantMissing, "spec.researcher.command"), res.Missing); diff != "" {
				t.Errorf("Missing (-want +got):\n%s", diff)
			}
			if tc.wantNote != "" && !slices.Contains(res.Inferred, tc.wantNote) {
				t.Errorf("Inferred lacks %q; got:\n%s", tc.wantNote, strings.Join(res.Inferred, "\n"))
			}
			if tc.wantListed {
				for _, n := range res.Inferred {
					if strings.Contains(n, " inferred from ") {
						t.Errorf("a listed file was picked out of prose: %s", n)
					}
				}
			}
		})
	}
}

func TestParseTrainCommand(t *testing.T) {
	cases := map[string]struct {
		replace     map[string]string
		want        string
		wantMissing bool
		wantNote    string
	}{
		"python": {
			want:     "python train.py",
			wantNote: `spec.train.command: "python train.py" guessed from train.py (the training script among the protocol's files), run with the eval command's interpreter "python"; the protocol has no train command, so check it`,
		},
		"eval interpreter": {
			replace: map[string]string{"command": "- command: CUDA_VISIBLE_DEVICES=0 uv run python3.11 evaluate.py --split test"},
			want:    "CUDA_VISIBLE_DEVICES=0 uv run python3.11 train.py",
		},
		"no python in eval": {
			replace: map[string]string{"command": "- command: bash eval.sh"},
			want:    "python train.py",
			wantNote: `spec.train.command: "python train.py" guessed from train.py (the training script among the protocol's files); ` +
				"the protocol has no train command, so check it",
		},
		"first variable python file": {
			replace: map[string]string{"variable.files": "- files: config.yaml, model.py, optim.py"},
			want:    "python model.py",
		},
		"training script is fixed": {
			replace: map[string]string{"fixed.files": "- files: evaluate.py, train_loop.py", "variable.files": "- files: model.py"},
			want:    "python train_loop.py",
		},
		"no python file": {
			replace:     map[string]string{"variable.files": "- files: config.yaml"},
			wantMissing: true,
		},
		"given in front matter": {
			replace: map[string]string{"title": "---\ntrain_command: torchrun --nproc_per_node 8 train.py\n---\n# Autoresearch Protocol: Test"},
			want:    "torchrun --nproc_per_node 8 train.py",
		},
		"given in a Train section": {
			replace: map[string]string{"extra": "## Train\n- command: make train"},
			want:    "make train",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := parse(t, protocol(tc.replace), nil)
			if got := res.Object.Spec.Train.Command; got != tc.want {
				t.Errorf("train.command = %q, want %q", got, tc.want)
			}
			if got := slices.Contains(res.Missing, "spec.train.command"); got != tc.wantMissing {
				t.Errorf("spec.train.command missing = %v, want %v", got, tc.wantMissing)
			}
			if tc.wantNote != "" && !slices.Contains(res.Inferred, tc.wantNote) {
				t.Errorf("Inferred lacks %q; got:\n%s", tc.wantNote, strings.Join(res.Inferred, "\n"))
			}
		})
	}
}

func TestParseRequiredValues(t *testing.T) {
	cases := map[string]struct {
		replace     map[string]string
		wantMissing []string
		wantNote    string
	}{
		"no research question": {
			replace:     map[string]string{"research_question": ""},
			wantMissing: []string{"spec.researchQuestion"},
		},
		"zero rounds": {
			replace:     map[string]string{"max_rounds": "max_rounds: 0"},
			wantMissing: []string{"spec.maxRounds"},
			wantNote:    `spec.maxRounds: "0" is not at least 1`,
		},
		"rounds in words": {
			replace:     map[string]string{"max_rounds": "max_rounds: ten"},
			wantMissing: []string{"spec.maxRounds"},
			wantNote:    `spec.maxRounds: "ten" is not a whole number`,
		},
		"bad epoch limit": {
			replace:     map[string]string{"epoch_limit": "- epoch_limit: one"},
			wantMissing: []string{"spec.fixed.epochLimit"},
		},
		"bad direction": {
			replace:     map[string]string{"direction": "- direction: <maximize / minimize>"},
			wantMissing: []string{"spec.eval.direction"},
			wantNote:    `spec.eval.direction: "direction: <maximize / minimize>" is still the template's placeholder`,
		},
		"metric with spaces": {
			replace:     map[string]string{"metric": "- metric: test accuracy"},
			wantMissing: []string{"spec.eval.metric"},
			wantNote:    `spec.eval.metric: "test accuracy" is not a metric name such as val_bpb`,
		},
		"no eval command": {
			replace:     map[string]string{"command": ""},
			wantMissing: []string{"spec.eval.command"},
		},
		"title without letters": {
			replace:     map[string]string{"title": "# Autoresearch Protocol: 注意力"},
			wantMissing: []string{"metadata.name"},
			wantNote:    `metadata.name: the title "注意力" has no letters or digits a name can be made of`,
		},
		"range placeholder": {
			replace:     map[string]string{"range": "- 可调范围: <from design doc>"},
			wantMissing: []string{"spec.variable.range"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := parse(t, protocol(tc.replace), nil)
			if diff := cmp.Diff(append(tc.wantMissing, "spec.researcher.command"), res.Missing); diff != "" {
				t.Errorf("Missing (-want +got):\n%s", diff)
			}
			if tc.wantNote != "" && !slices.Contains(res.Inferred, tc.wantNote) {
				t.Errorf("Inferred lacks %q; got:\n%s", tc.wantNote, strings.Join(res.Inferred, "\n"))
			}
			out, err := YAML(res, "p.md")
			if err != nil {
				t.Fatal(err)
			}
			assertRoundTrip(t, res, out)
		})
	}
}

func TestParseKernelTargets(t *testing.T) {
	cases := map[string]struct {
		section     string
		want        []v1alpha1.KernelTarget
		wantMissing []string
		wantNote    string
	}{
		"unfenced camel case": {
			section: "## Kernel Targets\n- name: gelu\n  newModule: kernels:gelu\n  baselineModule: ref:gelu  # reference\n  fixture: fix:gelu\n  atol: 0\n",
			want:    []v1alpha1.KernelTarget{{Name: "gelu", NewModule: "kernels:gelu", BaselineModule: "ref:gelu", Fixture: "fix:gelu", Atol: "0"}},
		},
		"bad module and tolerance": {
			section: "## Kernel Targets\n```yaml\nkernel_targets:\n  - name: gelu\n    new_module: kernels/gelu.py\n    baseline_module: ref:gelu\n    tolerance: { atol: -1, rtol: 1e-4 }\n    speed: fast\n```\n",
			want:    []v1alpha1.KernelTarget{{Name: "gelu", BaselineModule: "ref:gelu", Rtol: "1e-4"}},
			wantMissing: []string{
				"spec.kernelTargets[0].newModule", "spec.kernelTargets[0].fixture", "spec.kernelTargets[0].atol",
			},
			wantNote: `spec.kernelTargets[0].newModule: "kernels/gelu.py" is not module:function`,
		},
		"template left in": {
			section: "## Kernel Targets\n```yaml\nkernel_targets:\n  - name: <readable name>\n    new_module: <module:attr>\n    baseline_module: ref:gelu\n    fixture: fix:gelu\n```\n",
			want:    []v1alpha1.KernelTarget{{BaselineModule: "ref:gelu", Fixture: "fix:gelu"}},
			wantMissing: []string{
				"spec.kernelTargets[0].name", "spec.kernelTargets[0].newModule",
			},
		},
		"empty section": {
			section:  "## Kernel Targets\n",
			wantNote: "spec.kernelTargets: the Kernel Targets section lists no target",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := parse(t, protocol(map[string]string{"extra": tc.section}), nil)
			if diff := cmp.Diff(tc.want, res.Object.Spec.KernelTargets); diff != "" {
				t.Errorf("kernelTargets (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(append(tc.wantMissing, "spec.researcher.command"), res.Missing); diff != "" {
				t.Errorf("Missing (-want +got):\n%s", diff)
			}
			if tc.wantNote != "" && !slices.Contains(res.Inferred, tc.wantNote) {
				t.Errorf("Inferred lacks %q; got:\n%s", tc.wantNote, strings.Join(res.Inferred, "\n"))
			}
		})
	}
}

func TestParseProfile(t *testing.T) {
	cases := map[string]struct {
		section     string
		want        *v1alpha1.ProfileSpec
		wantMissing []string
	}{
		"absent": {},
		"command only": {
			section: "## Profile\n- command: python profile.py",
			want:    &v1alpha1.ProfileSpec{Command: "python profile.py"},
		},
		"no command": {
			section:     "## Profile（性能分析）\n- expected_runtime: 2 min",
			want:        &v1alpha1.ProfileSpec{ExpectedRuntime: durationPtr(2 * time.Minute)},
			wantMissing: []string{"spec.profile.command"},
		},
		"bad runtime": {
			section:     "## Profile\n- command: python profile.py\n- expected_runtime: quick",
			want:        &v1alpha1.ProfileSpec{Command: "python profile.py"},
			wantMissing: []string{"spec.profile.expectedRuntime"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := parse(t, protocol(map[string]string{"extra": tc.section}), nil)
			if diff := cmp.Diff(tc.want, res.Object.Spec.Profile); diff != "" {
				t.Errorf("profile (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(append(tc.wantMissing, "spec.researcher.command"), res.Missing); diff != "" {
				t.Errorf("Missing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSlug(t *testing.T) {
	cases := map[string]string{
		"Flash Attention Kernel Speedup (v2)": "flash-attention-kernel-speedup-v2",
		"  CIFAR-10: ResNet / speed run!  ":   "cifar-10-resnet-speed-run",
		"nanoGPT val_bpb":                     "nanogpt-val-bpb",
		"注意力 kernel 优化":                       "kernel",
		"注意力":                                 "",
		"---":                                 "",
		strings.Repeat("abc ", 20):            "abc-abc-abc-abc-abc-abc-abc-abc-abc-abc-abc-abc-abc-abc-abc-abc",
		strings.Repeat("a", 62) + " b":        strings.Repeat("a", 62),
	}
	for title, want := range cases {
		got := slug(title)
		if got != want {
			t.Errorf("slug(%q) = %q, want %q", title, got, want)
		}
		if got != "" {
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Errorf("slug(%q) = %q is not a DNS-1123 label: %v", title, got, errs)
			}
		}
	}
}

func TestParseDuration(t *testing.T) {
	cases := map[string]struct {
		want         time.Duration
		wantUnitless bool
		wantErr      bool
	}{
		"5min":       {want: 5 * time.Minute},
		"300s":       {want: 300 * time.Second},
		"10s":        {want: 10 * time.Second},
		"1h":         {want: time.Hour},
		"2m30s":      {want: 150 * time.Second},
		"1.5h":       {want: 90 * time.Minute},
		"90 seconds": {want: 90 * time.Second},
		"2 Hours":    {want: 2 * time.Hour},
		"1m 30s":     {want: 90 * time.Second},
		"500ms":      {want: 500 * time.Millisecond},
		"30秒":        {want: 30 * time.Second},
		"1小时":        {want: time.Hour},
		"45":         {want: 45 * time.Second, wantUnitless: true},
		"0s":         {wantErr: true},
		"0":          {wantUnitless: true, wantErr: true},
		"":           {wantErr: true},
		"5 weeks":    {wantErr: true},
		"5min or 3":  {wantErr: true},
		"m5":         {wantErr: true},
		"fast":       {wantErr: true},
	}
	for in, tc := range cases {
		got, unitless, err := parseDuration(in)
		if (err != nil) != tc.wantErr {
			t.Errorf("parseDuration(%q) error = %v, want error %v", in, err, tc.wantErr)
			continue
		}
		if got != tc.want || unitless != tc.wantUnitless {
			t.Errorf("parseDuration(%q) = %v, unitless %v; want %v, unitless %v", in, got, unitless, tc.want, tc.wantUnitless)
		}
	}
}

func parse(t *testing.T, text string, repo []string) Result {
	t.Helper()
	res, err := Parse(text, Repo{Files: repo})
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, text)
	}
	return res
}

func parseFile(t *testing.T, name string, repo []string) Result {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, string(text), repo)
}

func notePaths(notes []string) []string {
	var out []string
	for _, n := range notes {
		out = append(out, notePath(n))
	}
	return out
}

func duration(d time.Duration) v1alpha1.Duration { return v1alpha1.Duration{Duration: d} }

func durationPtr(d time.Duration) *v1alpha1.Duration { return &v1alpha1.Duration{Duration: d} }
