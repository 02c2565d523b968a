// Package builder makes AutoResearch objects for tests: a valid protocol to
// start from and a method for each field a test changes, as in
// MakeAutoResearch("demo", "ns").MaxRounds(3).Obj().
package builder

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
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
// invalid, and the field the refusal names.
type InvalidProtocol struct {
	Edit  func(*v1alpha1.AutoResearchSpec)
	Field string
}

// InvalidProtocols are protocols the API server refuses. The controller
// tests apply them to a real API server; the local schema and the Go rules
// must refuse each one too, so that the local runner and the cluster agree.
func InvalidProtocols() map[string]InvalidProtocol {
	return map[string]InvalidProtocol{
		"blank question":        {func(s *v1alpha1.AutoResearchSpec) { s.ResearchQuestion = "" }, "spec.researchQuestion"},
		"maxRounds zero":        {func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 0 }, "spec.maxRounds"},
		"bad target":            {func(s *v1alpha1.AutoResearchSpec) { s.Target = "low" }, "spec.target"},
		"bad baseline":          {func(s *v1alpha1.AutoResearchSpec) { s.Baseline = &v1alpha1.BaselineSpec{Value: "1,5"} }, "spec.baseline.value"},
		"negative noise factor": {func(s *v1alpha1.AutoResearchSpec) { s.Acceptance.NoiseFactor = "-1" }, "spec.acceptance.noiseFactor"},
		"short time limit":      {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.TimeLimit.Duration = time.Millisecond }, "spec.fixed.timeLimit"},
		"no variable files":     {func(s *v1alpha1.AutoResearchSpec) { s.Variable.Files = nil }, "spec.variable"},
		"absolute path":         {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.Files = []v1alpha1.PathPattern{"/etc/passwd"} }, "spec.fixed.files[0]"},
		"escaping path":         {func(s *v1alpha1.AutoResearchSpec) { s.Variable.Files = []v1alpha1.RelativePath{"../x.py"} }, "spec.variable.files[0]"},
		"escaping pattern":      {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.Files = []v1alpha1.PathPattern{"eval/../../x/**"} }, "spec.fixed.files[0]"},
		"dot pattern":           {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.Files = []v1alpha1.PathPattern{"./eval/"} }, "spec.fixed.files[0]"},
		"absolute pattern":      {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.Files = []v1alpha1.PathPattern{"/eval/**"} }, "spec.fixed.files[0]"},
		"dot segment":           {func(s *v1alpha1.AutoResearchSpec) { s.Variable.Files = []v1alpha1.RelativePath{"./eval.py"} }, "spec.variable.files[0]"},
		"double slash":          {func(s *v1alpha1.AutoResearchSpec) { s.Variable.Files = []v1alpha1.RelativePath{"src//train.py"} }, "spec.variable.files[0]"},
		"the whole directory":   {func(s *v1alpha1.AutoResearchSpec) { s.Variable.Files = []v1alpha1.RelativePath{"."} }, "spec.variable.files[0]"},
		"fixed and variable":    {func(s *v1alpha1.AutoResearchSpec) { s.Variable.Files = []v1alpha1.RelativePath{"eval.py"} }, "spec"},
		"blank constraint":      {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.Constraints = []string{"seed 42", ""} }, "spec.fixed.constraints[1]"},
		"long constraint":       {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.Constraints = []string{strings.Repeat("x", 513)} }, "spec.fixed.constraints[0]"},
		"too many constraints":  {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.Constraints = slices.Repeat([]string{"seed 42"}, 33) }, "spec.fixed.constraints"},
		"negative GPUs":         {func(s *v1alpha1.AutoResearchSpec) { s.Train.GPUs = ptr.To(int32(-1)) }, "spec.train.gpus"},
		"output is the eval":    {func(s *v1alpha1.AutoResearchSpec) { s.Train.Outputs = []v1alpha1.RelativePath{"eval.py"} }, "spec"},
		"output escapes":        {func(s *v1alpha1.AutoResearchSpec) { s.Train.Outputs = []v1alpha1.RelativePath{"../ckpt"} }, "spec.train.outputs[0]"},
		"cache escapes":         {func(s *v1alpha1.AutoResearchSpec) { s.Workspace.Caches = []v1alpha1.RelativePath{"/root/.cache"} }, "spec.workspace.caches[0]"},
		"bad metric":            {func(s *v1alpha1.AutoResearchSpec) { s.Eval.Metric = "val bpb" }, "spec.eval.metric"},
		"bad direction":         {func(s *v1alpha1.AutoResearchSpec) { s.Eval.Direction = "up" }, "spec.eval.direction"},
		"no researcher":         {func(s *v1alpha1.AutoResearchSpec) { s.Researcher.Command = "" }, "spec.researcher"},
		"empty profile":         {func(s *v1alpha1.AutoResearchSpec) { s.Profile = &v1alpha1.ProfileSpec{} }, "spec.profile.command"},
		"relative holdout dir": {func(s *v1alpha1.AutoResearchSpec) {
			s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "holdout"}
		}, "spec.holdout"},
		"bad holdout tolerance": {func(s *v1alpha1.AutoResearchSpec) {
			s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "/srv/holdout", Tolerance: "-1"}
		}, "spec.holdout.tolerance"},
		"bad holdout metric": {func(s *v1alpha1.AutoResearchSpec) {
			s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "/srv/holdout", Metric: "a b"}
		}, "spec.holdout.metric"},
		"kernel module": {func(s *v1alpha1.AutoResearchSpec) {
			s.KernelTargets = []v1alpha1.KernelTarget{{Name: "k", NewModule: "m", BaselineModule: "r:f", Fixture: "r:x"}}
		}, "spec.kernelTargets[0].newModule"},
		"git and pvc": {func(s *v1alpha1.AutoResearchSpec) {
			s.Source = v1alpha1.SourceSpec{Git: &v1alpha1.GitSource{URL: "u"}, PVC: &v1alpha1.PVCSource{ClaimName: "c"}}
		}, "spec.source"},
		"researcher timeout too low": {func(s *v1alpha1.AutoResearchSpec) {
			s.Researcher.Timeout = &v1alpha1.Duration{Duration: time.Millisecond}
		}, "spec.researcher.timeout"},
		"time limit beyond a week": {func(s *v1alpha1.AutoResearchSpec) {
			s.Fixed.TimeLimit.Duration = 2000000 * time.Hour
		}, "spec.fixed.timeLimit"},
	}
}
