// Package builder makes AutoResearch objects for tests: a valid protocol to
// start from and a method for each field a test changes, as in
// MakeAutoResearch("demo", "ns").MaxRounds(3).Obj().
package builder

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// AutoResearchWrapper builds an AutoResearch.
type AutoResearchWrapper struct {
	ar v1alpha1.AutoResearch
}

// MakeAutoResearch starts from a valid protocol: minimize val_bpb over ten
// rounds of five minutes, eval.py fixed, train.py variable.
func MakeAutoResearch(name, namespace string) *AutoResearchWrapper {
	return &AutoResearchWrapper{ar: v1alpha1.AutoResearch{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "AutoResearch"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1alpha1.AutoResearchSpec{
			ResearchQuestion: "Can the model reach a lower val_bpb in five minutes?",
			MaxRounds:        10,
			Fixed:            v1alpha1.FixedSpec{Files: []v1alpha1.PathPattern{"eval.py"}, TimeLimit: v1alpha1.Duration{Duration: 5 * time.Minute}},
			Variable:         v1alpha1.VariableSpec{Files: []v1alpha1.RelativePath{"train.py"}},
			Train:            v1alpha1.TrainSpec{Command: "python train.py", GPUs: ptr.To[int32](1)},
			Eval:             v1alpha1.EvalSpec{Metric: "val_bpb", Direction: v1alpha1.DirectionMinimize, Command: "python eval.py"},
			Researcher:       v1alpha1.ResearcherSpec{Command: "agent"},
		},
	}}
}

// Obj is the object built.
func (w *AutoResearchWrapper) Obj() *v1alpha1.AutoResearch { return w.ar.DeepCopy() }

// SpecObj is the spec built.
func (w *AutoResearchWrapper) SpecObj() *v1alpha1.AutoResearchSpec { return w.ar.Spec.DeepCopy() }

// Question sets the research question.
func (w *AutoResearchWrapper) Question(q string) *AutoResearchWrapper {
	w.ar.Spec.ResearchQuestion = q
	return w
}

// MaxRounds sets maxRounds.
func (w *AutoResearchWrapper) MaxRounds(n int32) *AutoResearchWrapper {
	w.ar.Spec.MaxRounds = n
	return w
}

// Target sets the target metric value.
func (w *AutoResearchWrapper) Target(v string) *AutoResearchWrapper {
	w.ar.Spec.Target = v1alpha1.Decimal(v)
	return w
}

// Baseline gives the baseline's value, so that round 0 measures nothing.
func (w *AutoResearchWrapper) Baseline(v string) *AutoResearchWrapper {
	w.ar.Spec.Baseline = &v1alpha1.BaselineSpec{Value: v1alpha1.Decimal(v)}
	return w
}

// BaselineRuns has round 0 measure the baseline n times.
func (w *AutoResearchWrapper) BaselineRuns(n int32) *AutoResearchWrapper {
	w.ar.Spec.Baseline = &v1alpha1.BaselineSpec{Runs: n}
	return w
}

// Metric sets the metric and whether larger is better.
func (w *AutoResearchWrapper) Metric(name string, d v1alpha1.Direction) *AutoResearchWrapper {
	w.ar.Spec.Eval.Metric, w.ar.Spec.Eval.Direction = name, d
	return w
}

// Fixed sets the fixed files.
func (w *AutoResearchWrapper) Fixed(files ...v1alpha1.PathPattern) *AutoResearchWrapper {
	w.ar.Spec.Fixed.Files = files
	return w
}

// Variable sets the variable files.
func (w *AutoResearchWrapper) Variable(files ...v1alpha1.RelativePath) *AutoResearchWrapper {
	w.ar.Spec.Variable.Files = files
	return w
}

// TimeLimit sets the training time limit.
func (w *AutoResearchWrapper) TimeLimit(d time.Duration) *AutoResearchWrapper {
	w.ar.Spec.Fixed.TimeLimit = v1alpha1.Duration{Duration: d}
	return w
}

// Train sets the training command and image.
func (w *AutoResearchWrapper) Train(command, image string) *AutoResearchWrapper {
	w.ar.Spec.Train.Command, w.ar.Spec.Train.Image = command, image
	return w
}

// GPUs sets how many GPUs training and evaluation request.
func (w *AutoResearchWrapper) GPUs(n int32) *AutoResearchWrapper {
	w.ar.Spec.Train.GPUs = &n
	return w
}

// Eval sets the evaluation command.
func (w *AutoResearchWrapper) Eval(command string) *AutoResearchWrapper {
	w.ar.Spec.Eval.Command = command
	return w
}

// Researcher sets the Researcher's command and image.
func (w *AutoResearchWrapper) Researcher(command, image string) *AutoResearchWrapper {
	w.ar.Spec.Researcher.Command, w.ar.Spec.Researcher.Image = command, image
	return w
}

// ResearcherEnv adds to the Researcher's environment.
func (w *AutoResearchWrapper) ResearcherEnv(env ...corev1.EnvVar) *AutoResearchWrapper {
	w.ar.Spec.Researcher.Env = append(w.ar.Spec.Researcher.Env, env...)
	return w
}

// GitSource clones url at ref, with the experiment in subdir.
func (w *AutoResearchWrapper) GitSource(url, ref string, subdir v1alpha1.RelativePath) *AutoResearchWrapper {
	w.ar.Spec.Source = v1alpha1.SourceSpec{Git: &v1alpha1.GitSource{URL: url, Ref: ref}, Subdir: subdir}
	return w
}

// Guidance adds notes from the human on the loop.
func (w *AutoResearchWrapper) Guidance(notes ...string) *AutoResearchWrapper {
	w.ar.Spec.Guidance = append(w.ar.Spec.Guidance, notes...)
	return w
}

// Suspend sets spec.suspend.
func (w *AutoResearchWrapper) Suspend(s bool) *AutoResearchWrapper {
	w.ar.Spec.Suspend = &s
	return w
}

// Edit changes anything else.
func (w *AutoResearchWrapper) Edit(edit func(*v1alpha1.AutoResearchSpec)) *AutoResearchWrapper {
	edit(&w.ar.Spec)
	return w
}

// InvalidProtocol is an edit that makes the protocol of MakeAutoResearch
// invalid, the field the refusal names and words of the refusal that tell
// a user what to fix.
type InvalidProtocol struct {
	Edit  func(*v1alpha1.AutoResearchSpec)
	Field string
	Says  string
}

// InvalidProtocols are protocols the API server refuses, each a mistake a
// user could make. The controller tests apply them to a real API server;
// the local schema refuses each one with the same words and the Go rules
// on the same field, so that the local runner and the cluster agree.
func InvalidProtocols() map[string]InvalidProtocol {
	type spec = v1alpha1.AutoResearchSpec
	kernel := func(edit func(*v1alpha1.KernelTarget)) func(*spec) {
		return func(s *spec) {
			k := v1alpha1.KernelTarget{Name: "gelu", NewModule: "kernels:gelu", BaselineModule: "reference:gelu", Fixture: "reference:inputs"}
			edit(&k)
			s.KernelTargets = []v1alpha1.KernelTarget{k}
		}
	}
	const (
		cleanPath    = "must be a clean relative path inside the experiment directory, such as train/main.go"
		cleanPattern = "must be a clean relative path or glob inside the experiment directory, such as eval.py, eval/ or eval/**/*.py"
		decimal      = "must be a finite decimal number such as 0.95 or -1.5e-3, with an exponent of at most two digits"
		nonNegative  = "must be a finite non-negative decimal number such as 0.001 or 1e-5"
		duration     = "must be a duration from 1s to 168h such as 90s, 5m or 1h30m"
		bothFixed    = "a file cannot be both fixed and variable: fixed.files names a variable file or a directory that holds one"
		functionRef  = "must name a function as module:function, such as kernels.attention:flash_forward"
		metricName   = "must be the name the eval command prints the metric under, such as val_bpb"
	)
	return map[string]InvalidProtocol{
		// The question and the commands.
		"no question":           {func(s *spec) { s.ResearchQuestion = "" }, "spec.researchQuestion", "Required value"},
		"blank question":        {func(s *spec) { s.ResearchQuestion = " \n " }, "spec.researchQuestion", "must not be blank: say what the experiment tries to find out"},
		"blank train command":   {func(s *spec) { s.Train.Command = "  " }, "spec.train.command", "must not be blank: give the command that trains a candidate"},
		"blank eval command":    {func(s *spec) { s.Eval.Command = "\t" }, "spec.eval.command", "must not be blank: give the fixed evaluation command"},
		"blank researcher":      {func(s *spec) { s.Researcher.Command = " " }, "spec.researcher.command", "must not be blank: give the command that starts the Researcher"},
		"no researcher":         {func(s *spec) { s.Researcher.Command = "" }, "spec.researcher", "Required value"},
		"blank profile command": {func(s *spec) { s.Profile = &v1alpha1.ProfileSpec{Command: " "} }, "spec.profile.command", "must not be blank: give the command that profiles the training code"},
		"empty profile":         {func(s *spec) { s.Profile = &v1alpha1.ProfileSpec{} }, "spec.profile.command", "Required value"},

		// Rounds and numbers.
		"maxRounds zero":          {func(s *spec) { s.MaxRounds = 0 }, "spec.maxRounds", "Required value"},
		"maxRounds negative":      {func(s *spec) { s.MaxRounds = -5 }, "spec.maxRounds", "should be greater than or equal to 1"},
		"maxRounds too large":     {func(s *spec) { s.MaxRounds = 100001 }, "spec.maxRounds", "should be less than or equal to 100000"},
		"plateau negative":        {func(s *spec) { s.Plateau = &v1alpha1.PlateauSpec{Rounds: -1} }, "spec.plateau.rounds", "should be greater than or equal to 1"},
		"plateau too long":        {func(s *spec) { s.Plateau = &v1alpha1.PlateauSpec{Rounds: 10001} }, "spec.plateau.rounds", "should be less than or equal to 10000"},
		"plateau action unknown":  {func(s *spec) { s.Plateau = &v1alpha1.PlateauSpec{Action: "Halt"} }, "spec.plateau.action", `Unsupported value: "Halt"`},
		"empty budget":            {func(s *spec) { s.Budget = &v1alpha1.BudgetSpec{} }, "spec.budget", "set deadline, gpuHours, researcherTokens or cost"},
		"budget hours negative":   {func(s *spec) { s.Budget = &v1alpha1.BudgetSpec{GPUHours: "-1"} }, "spec.budget.gpuHours", "must be a finite non-negative decimal number"},
		"budget tokens negative":  {func(s *spec) { s.Budget = &v1alpha1.BudgetSpec{ResearcherTokens: -5} }, "spec.budget.researcherTokens", "should be greater than or equal to 1"},
		"minImprovement negative": {func(s *spec) { s.Acceptance.MinImprovement = "-0.1" }, "spec.acceptance.minImprovement", "must be a finite non-negative decimal number"},
		"constraint without limit": {func(s *spec) {
			s.Eval.Constraints = []v1alpha1.EvalConstraint{{Metric: "memory_gb"}}
		}, "spec.eval.constraints[0]", "set min, max or both"},
		"constraint bad reading": {func(s *spec) {
			s.Eval.Constraints = []v1alpha1.EvalConstraint{{Metric: "memory gb", Max: "40"}}
		}, "spec.eval.constraints[0].metric", "must be the name the eval command prints the reading under, such as memory_gb"},
		"constraint limit not a number": {func(s *spec) {
			s.Eval.Constraints = []v1alpha1.EvalConstraint{{Metric: "memory_gb", Max: "forty"}}
		}, "spec.eval.constraints[0].max", "must be a finite decimal number"},
		"history limit too large": {func(s *spec) { s.HistoryLimit = 101 }, "spec.historyLimit", "should be less than or equal to 100"},
		"history limit negative":  {func(s *spec) { s.HistoryLimit = -1 }, "spec.historyLimit", "should be greater than or equal to 1"},
		"epoch limit negative":    {func(s *spec) { s.Fixed.EpochLimit = -1 }, "spec.fixed.epochLimit", "should be greater than or equal to 1"},
		"negative GPUs":           {func(s *spec) { s.Train.GPUs = ptr.To(int32(-1)) }, "spec.train.gpus", "should be greater than or equal to 0"},
		"too many GPUs":           {func(s *spec) { s.Train.GPUs = ptr.To(int32(65)) }, "spec.train.gpus", "should be less than or equal to 64"},
		"too many baseline runs":  {func(s *spec) { s.Baseline = &v1alpha1.BaselineSpec{Runs: 21} }, "spec.baseline.runs", "should be less than or equal to 20"},
		"combine one candidate":   {func(s *spec) { s.Combine = ptr.To(true) }, "spec.combine", "combine needs candidates from 2 to 15"},
		"combine 16 candidates":   {func(s *spec) { s.Combine, s.Candidates = ptr.To(true), 16 }, "spec.combine", "combine needs candidates from 2 to 15"},

		// Decimals.
		"target in words":        {func(s *spec) { s.Target = "low" }, "spec.target", decimal},
		"infinite target":        {func(s *spec) { s.Target = "1e999" }, "spec.target", decimal},
		"baseline with a comma":  {func(s *spec) { s.Baseline = &v1alpha1.BaselineSpec{Value: "1,5"} }, "spec.baseline.value", decimal},
		"infinite baseline":      {func(s *spec) { s.Baseline = &v1alpha1.BaselineSpec{Value: "-1e999"} }, "spec.baseline.value", decimal},
		"baseline with a unit":   {func(s *spec) { s.Baseline = &v1alpha1.BaselineSpec{Value: "0.99bpb"} }, "spec.baseline.value", decimal},
		"negative noise factor":  {func(s *spec) { s.Acceptance.NoiseFactor = "-1" }, "spec.acceptance.noiseFactor", nonNegative},
		"negative min delta":     {func(s *spec) { s.Acceptance.MinDelta = "-0.01" }, "spec.acceptance.minDelta", nonNegative},
		"min delta as a percent": {func(s *spec) { s.Acceptance.MinDelta = "1%" }, "spec.acceptance.minDelta", nonNegative},

		// Durations.
		"time limit zero":            {func(s *spec) { s.Fixed.TimeLimit.Duration = 0 }, "spec.fixed.timeLimit", duration},
		"time limit negative":        {func(s *spec) { s.Fixed.TimeLimit.Duration = -5 * time.Minute }, "spec.fixed.timeLimit", duration},
		"short time limit":           {func(s *spec) { s.Fixed.TimeLimit.Duration = time.Millisecond }, "spec.fixed.timeLimit", duration},
		"time limit beyond a week":   {func(s *spec) { s.Fixed.TimeLimit.Duration = 2000000 * time.Hour }, "spec.fixed.timeLimit", duration},
		"eval timeout zero":          {func(s *spec) { s.Eval.Timeout = &v1alpha1.Duration{} }, "spec.eval.timeout", duration},
		"eval timeout beyond a week": {func(s *spec) { s.Eval.Timeout = &v1alpha1.Duration{Duration: 200 * time.Hour} }, "spec.eval.timeout", duration},
		"researcher timeout too low": {func(s *spec) { s.Researcher.Timeout = &v1alpha1.Duration{Duration: time.Millisecond} }, "spec.researcher.timeout", duration},
		"profile runtime beyond week": {func(s *spec) {
			s.Profile = &v1alpha1.ProfileSpec{Command: "python profile.py", ExpectedRuntime: &v1alpha1.Duration{Duration: 169 * time.Hour}}
		}, "spec.profile.expectedRuntime", duration},

		// Paths and patterns.
		"no variable files":         {func(s *spec) { s.Variable.Files = nil }, "spec.variable", "Required value"},
		"escaping variable file":    {func(s *spec) { s.Variable.Files = []v1alpha1.RelativePath{"../x.py"} }, "spec.variable.files[0]", cleanPath},
		"dot segment":               {func(s *spec) { s.Variable.Files = []v1alpha1.RelativePath{"./eval.py"} }, "spec.variable.files[0]", cleanPath},
		"double slash":              {func(s *spec) { s.Variable.Files = []v1alpha1.RelativePath{"train//main.go"} }, "spec.variable.files[0]", cleanPath},
		"the whole directory":       {func(s *spec) { s.Variable.Files = []v1alpha1.RelativePath{"."} }, "spec.variable.files[0]", cleanPath},
		"variable directory with /": {func(s *spec) { s.Variable.Files = []v1alpha1.RelativePath{"src/"} }, "spec.variable.files[0]", cleanPath},
		"duplicate variable file":   {func(s *spec) { s.Variable.Files = []v1alpha1.RelativePath{"train.py", "model.py", "train.py"} }, "spec.variable.files[2]", "Duplicate value"},
		"too many variable files": {func(s *spec) {
			s.Variable.Files = nil
			for i := range 65 {
				s.Variable.Files = append(s.Variable.Files, v1alpha1.RelativePath(fmt.Sprintf("src/f%d.py", i)))
			}
		}, "spec.variable.files", "must have at most 64 items"},
		"absolute fixed file":  {func(s *spec) { s.Fixed.Files = []v1alpha1.PathPattern{"/etc/passwd"} }, "spec.fixed.files[0]", cleanPattern},
		"escaping pattern":     {func(s *spec) { s.Fixed.Files = []v1alpha1.PathPattern{"eval/../../x/**"} }, "spec.fixed.files[0]", cleanPattern},
		"dot pattern":          {func(s *spec) { s.Fixed.Files = []v1alpha1.PathPattern{"./eval/"} }, "spec.fixed.files[0]", cleanPattern},
		"absolute pattern":     {func(s *spec) { s.Fixed.Files = []v1alpha1.PathPattern{"/eval/**"} }, "spec.fixed.files[0]", cleanPattern},
		"duplicate fixed file": {func(s *spec) { s.Fixed.Files = []v1alpha1.PathPattern{"eval.py", "eval.py"} }, "spec.fixed.files[1]", "Duplicate value"},
		"broken glob":          {func(s *spec) { s.Fixed.Files = []v1alpha1.PathPattern{"data/[a-c.csv"} }, "spec.fixed.files[0]", "is not a valid glob: close each [ with ]"},
		"partial ** segment":   {func(s *spec) { s.Fixed.Files = []v1alpha1.PathPattern{"eval/**.py"} }, "spec.fixed.files[0]", "** must be a whole path segment"},
		"fixed and variable":   {func(s *spec) { s.Variable.Files = []v1alpha1.RelativePath{"train.py", "eval.py"} }, "spec.fixed.files", bothFixed},
		"fixed directory over a variable file": {func(s *spec) {
			s.Fixed.Files, s.Variable.Files = []v1alpha1.PathPattern{"train"}, []v1alpha1.RelativePath{"train/main.go"}
		}, "spec.fixed.files", bothFixed},
		"fixed directory/ over a variable file": {func(s *spec) {
			s.Fixed.Files, s.Variable.Files = []v1alpha1.PathPattern{"src/"}, []v1alpha1.RelativePath{"src/train.py"}
		}, "spec.fixed.files", bothFixed},
		"output is the eval": {func(s *spec) { s.Train.Outputs = []v1alpha1.RelativePath{"eval.py"} }, "spec.train.outputs", "train.outputs may not hold or lie inside a fixed or variable file"},
		"output holds a variable": {func(s *spec) {
			s.Variable.Files, s.Train.Outputs = []v1alpha1.RelativePath{"src/train.py"}, []v1alpha1.RelativePath{"src"}
		}, "spec.train.outputs", "train.outputs may not hold or lie inside a fixed or variable file"},
		"output escapes":          {func(s *spec) { s.Train.Outputs = []v1alpha1.RelativePath{"../ckpt"} }, "spec.train.outputs[0]", cleanPath},
		"absolute output":         {func(s *spec) { s.Train.Outputs = []v1alpha1.RelativePath{"/tmp/ckpt"} }, "spec.train.outputs[0]", cleanPath},
		"cache escapes":           {func(s *spec) { s.Workspace.Caches = []v1alpha1.RelativePath{"/root/.cache"} }, "spec.workspace.caches[0]", cleanPath},
		"cache with a trailing /": {func(s *spec) { s.Workspace.Caches = []v1alpha1.RelativePath{".venv/"} }, "spec.workspace.caches[0]", cleanPath},
		"subdir escapes":          {func(s *spec) { s.Source.Subdir = "../other" }, "spec.source.subdir", cleanPath},

		// Constraints.
		"empty constraint":     {func(s *spec) { s.Fixed.Constraints = []string{"seed 42", ""} }, "spec.fixed.constraints[1]", "should be at least 1 chars long"},
		"blank constraint":     {func(s *spec) { s.Fixed.Constraints = []string{"seed 42", "  "} }, "spec.fixed.constraints[1]", "must not be blank: state the constraint in words, or remove the entry"},
		"long constraint":      {func(s *spec) { s.Fixed.Constraints = []string{strings.Repeat("x", 513)} }, "spec.fixed.constraints[0]", "may not be more than 512"},
		"too many constraints": {func(s *spec) { s.Fixed.Constraints = slices.Repeat([]string{"seed 42"}, 33) }, "spec.fixed.constraints", "must have at most 32 items"},

		// The evaluation.
		"metric with a space":          {func(s *spec) { s.Eval.Metric = "val bpb" }, "spec.eval.metric", metricName},
		"metric starting with a digit": {func(s *spec) { s.Eval.Metric = "1loss" }, "spec.eval.metric", metricName},
		"metric with its colon":        {func(s *spec) { s.Eval.Metric = "val_bpb:" }, "spec.eval.metric", metricName},
		"direction in words":           {func(s *spec) { s.Eval.Direction = "up" }, "spec.eval.direction", `Unsupported value: "up": supported values: "maximize", "minimize"`},
		"direction capitalized":        {func(s *spec) { s.Eval.Direction = "Minimize" }, "spec.eval.direction", `Unsupported value: "Minimize"`},
		"pattern not a regex":          {func(s *spec) { s.Eval.Pattern = "val_bpb=([0-9.]+" }, "spec.eval.pattern", "error parsing regexp: missing closing )"},
		"pattern with a bad class":     {func(s *spec) { s.Eval.Pattern = "val_bpb=([0-9.+)" }, "spec.eval.pattern", "error parsing regexp: missing closing ]"},
		"pattern without group":        {func(s *spec) { s.Eval.Pattern = "val_bpb=[0-9.]+" }, "spec.eval.pattern", "must have a capture group around the value"},
		"pattern with escaped parens":  {func(s *spec) { s.Eval.Pattern = `bpb \(val\) [0-9.]+` }, "spec.eval.pattern", "must have a capture group around the value"},

		// Kernel targets.
		"kernel module without function": {kernel(func(k *v1alpha1.KernelTarget) { k.NewModule = "kernels" }), "spec.kernelTargets[0].newModule", functionRef},
		"kernel baseline as a path":      {kernel(func(k *v1alpha1.KernelTarget) { k.BaselineModule = "reference/gelu.py:gelu" }), "spec.kernelTargets[0].baselineModule", functionRef},
		"kernel fixture without module":  {kernel(func(k *v1alpha1.KernelTarget) { k.Fixture = "inputs" }), "spec.kernelTargets[0].fixture", functionRef},
		"unnamed kernel target":          {kernel(func(k *v1alpha1.KernelTarget) { k.Name = "" }), "spec.kernelTargets[0].name", "Required value"},
		"negative atol":                  {kernel(func(k *v1alpha1.KernelTarget) { k.Atol = "-1e-5" }), "spec.kernelTargets[0].atol", nonNegative},
		"infinite rtol":                  {kernel(func(k *v1alpha1.KernelTarget) { k.Rtol = "1e400" }), "spec.kernelTargets[0].rtol", nonNegative},
		"duplicate kernel names": {func(s *spec) {
			k := v1alpha1.KernelTarget{Name: "gelu", NewModule: "kernels:gelu", BaselineModule: "reference:gelu", Fixture: "reference:inputs"}
			s.KernelTargets = []v1alpha1.KernelTarget{k, k}
		}, "spec.kernelTargets[1]", "Duplicate value"},
		"too many kernel targets": {func(s *spec) {
			for i := range 33 {
				s.KernelTargets = append(s.KernelTargets, v1alpha1.KernelTarget{Name: fmt.Sprintf("k%d", i), NewModule: "kernels:k", BaselineModule: "reference:k", Fixture: "reference:inputs"})
			}
		}, "spec.kernelTargets", "must have at most 32 items"},
		"kernel targets without fixed files": {func(s *spec) {
			kernel(func(*v1alpha1.KernelTarget) {})(s)
			s.Fixed.Files = nil
		}, "spec.kernelTargets", "kernelTargets need their baseline modules listed in fixed.files"},

		// The hidden holdout.
		"relative holdout dir": {func(s *spec) {
			s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "holdout"}
		}, "spec.holdout", "dir must be an absolute path outside the repository"},
		"bad holdout tolerance": {func(s *spec) {
			s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "/srv/holdout", Tolerance: "-1"}
		}, "spec.holdout.tolerance", nonNegative},
		"holdout volume of two kinds": {func(s *spec) {
			s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "/holdout", Volume: &v1alpha1.HoldoutVolume{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "holdout"}},
				Secret:    &corev1.SecretVolumeSource{SecretName: "holdout"},
			}}
		}, "spec.holdout.volume", "set exactly one of configMap, secret and persistentVolumeClaim"},
		"empty holdout volume": {func(s *spec) {
			s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "/holdout", Volume: &v1alpha1.HoldoutVolume{}}
		}, "spec.holdout.volume", "set exactly one of configMap, secret and persistentVolumeClaim"},
		"holdout volume over the workspace": {func(s *spec) {
			s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "/workspace/holdout", Volume: &v1alpha1.HoldoutVolume{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "holdout"}},
			}}
		}, "spec.holdout.dir", "with a volume, dir is where the holdout's pod mounts it"},
		"holdout volume at an unclean dir": {func(s *spec) {
			s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "/srv/../workspace", Volume: &v1alpha1.HoldoutVolume{
				Secret: &corev1.SecretVolumeSource{SecretName: "holdout"},
			}}
		}, "spec.holdout.dir", "with a volume, dir is where the holdout's pod mounts it"},
		"holdout on the workspace claim": {func(s *spec) {
			s.Source = v1alpha1.SourceSpec{PVC: &v1alpha1.PVCSource{ClaimName: "data"}}
			s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "/holdout", Volume: &v1alpha1.HoldoutVolume{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
			}}
		}, "spec.holdout.volume.persistentVolumeClaim.claimName", "the holdout's claim may not be the workspace claim"},
		"bad holdout metric": {func(s *spec) {
			s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "/srv/holdout", Metric: "a b"}
		}, "spec.holdout.metric", "must be the name the holdout command prints its metric under, such as val_bpb"},

		// Where the experiment runs.
		"git and pvc": {func(s *spec) {
			s.Source = v1alpha1.SourceSpec{Git: &v1alpha1.GitSource{URL: "u"}, PVC: &v1alpha1.PVCSource{ClaimName: "c"}}
		}, "spec.source", "source takes either git or pvc, not both"},
		"negative workspace size": {func(s *spec) { s.Workspace.Size = ptr.To(resource.MustParse("-1Gi")) }, "spec.workspace.size", "must be a positive size such as 10Gi"},
		"zero workspace size":     {func(s *spec) { s.Workspace.Size = ptr.To(resource.MustParse("0")) }, "spec.workspace.size", "must be a positive size such as 10Gi"},
		"zero shm":                {func(s *spec) { s.Train.Shm = ptr.To(resource.MustParse("0")) }, "spec.train.shm", "must be a positive size such as 8Gi"},
		"unknown access mode": {func(s *spec) {
			s.Workspace.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadWriteSometimes"}
		}, "spec.workspace.accessModes[0]", `Unsupported value: "ReadWriteSometimes": supported values: "ReadWriteOnce", "ReadWriteMany", "ReadWriteOncePod"`},
		"read-only workspace": {func(s *spec) {
			s.Workspace.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany}
		}, "spec.workspace.accessModes[1]", `Unsupported value: "ReadOnlyMany"`},
		"output url with a token": {func(s *spec) {
			s.Output = &v1alpha1.OutputSpec{Git: &v1alpha1.GitOutput{URL: "https://bot:ghp_secret@github.com/org/results.git"}}
		}, "spec.output.git", "url must not hold a password or token: put it in the Secret that secretRef names, under the key token"},
		"source url with a token": {func(s *spec) {
			s.Source = v1alpha1.SourceSpec{Git: &v1alpha1.GitSource{URL: "https://bot:ghp_secret@github.com/org/repo.git"}}
		}, "spec.source.git", "url must not hold a password or token: the clone keeps its url in a git directory the Researcher reads; put it in the Secret that credentialsSecret names"},
		"output url as a path": {func(s *spec) {
			s.Output = &v1alpha1.OutputSpec{Git: &v1alpha1.GitOutput{URL: "/srv/git/results.git"}}
		}, "spec.output.git", "url must be an https://, http:// or ssh:// URL, or user@host:path"},
		"output url over file": {func(s *spec) {
			s.Output = &v1alpha1.OutputSpec{Git: &v1alpha1.GitOutput{URL: "file:///srv/git/results.git"}}
		}, "spec.output.git", "url must be an https://, http:// or ssh:// URL, or user@host:path"},
		"output secret without a name": {func(s *spec) {
			s.Output = &v1alpha1.OutputSpec{Git: &v1alpha1.GitOutput{URL: "https://example.com/r.git", SecretRef: &v1alpha1.SecretReference{}}}
		}, "spec.output.git.secretRef.name", "Required value"},
		"empty output":                {func(s *spec) { s.Output = &v1alpha1.OutputSpec{} }, "spec.output", "should have at least 1 properties"},
		"reclaim policy in lowercase": {func(s *spec) { s.Workspace.ReclaimPolicy = "retain" }, "spec.workspace.reclaimPolicy", `Unsupported value: "retain": supported values: "Retain", "Delete"`},
		"recycled workspace":          {func(s *spec) { s.Workspace.ReclaimPolicy = "Recycle" }, "spec.workspace.reclaimPolicy", `Unsupported value: "Recycle"`},
		"storage class with a space":  {func(s *spec) { s.Workspace.StorageClassName = ptr.To("Fast SSD") }, "spec.workspace.storageClassName", "must be the name of a StorageClass"},
		"toleration operator in lower case": {func(s *spec) {
			s.Train.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: "exists"}}
		}, "spec.train.tolerations[0]", "operator must be Exists or Equal"},
		"unknown toleration effect": {func(s *spec) {
			s.Train.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: "NoScheduling"}}
		}, "spec.train.tolerations[0]", "effect must be NoSchedule, PreferNoSchedule or NoExecute"},
		"toleration Exists with a value": {func(s *spec) {
			s.Train.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Value: "present"}}
		}, "spec.train.tolerations[0]", "a toleration with operator Exists takes no value"},
	}
}

// PodTemplate is a podTemplate field written in YAML.
func PodTemplate(text string) *v1alpha1.PodTemplate {
	raw, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		panic(err)
	}
	return &v1alpha1.PodTemplate{RawExtension: runtime.RawExtension{Raw: raw}}
}
