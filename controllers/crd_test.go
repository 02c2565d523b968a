package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// validSpec is the smallest protocol the CRD accepts.
func validSpec() map[string]any {
	return map[string]any{
		"researchQuestion": "Does a schedule help?",
		"maxRounds":        int64(3),
		"fixed":            map[string]any{"files": []any{"eval.py"}, "timeLimit": "60s"},
		"variable":         map[string]any{"files": []any{"train.py"}},
		"train":            map[string]any{"command": "python train.py"},
		"eval":             map[string]any{"metric": "val_bpb", "direction": "minimize", "command": "python eval.py"},
		"researcher":       map[string]any{"command": "agent"},
	}
}

func experimentObject(ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoresearch.dev/v1alpha1",
		"kind":       "AutoResearch",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       spec,
	}}
}

func TestCRDRejectsBadProtocols(t *testing.T) {
	ns := newNamespace(t)
	set := func(path string, v any) func(map[string]any) {
		return func(spec map[string]any) {
			keys := strings.Split(path, ".")
			m := spec
			for _, k := range keys[:len(keys)-1] {
				next, ok := m[k].(map[string]any)
				if !ok {
					next = map[string]any{}
					m[k] = next
				}
				m = next
			}
			if v == nil {
				delete(m, keys[len(keys)-1])
			} else {
				m[keys[len(keys)-1]] = v
			}
		}
	}
	cases := map[string]struct {
		edit func(map[string]any)
		want string
	}{
		"missing metric":               {set("eval.metric", nil), "spec.eval.metric: Required value"},
		"metric with spaces":           {set("eval.metric", "val bpb"), "spec.eval.metric: Invalid value"},
		"bad direction":                {set("eval.direction", "up"), `spec.eval.direction: Unsupported value: "up"`},
		"missing eval command":         {set("eval.command", nil), "spec.eval.command: Required value"},
		"maxRounds zero":               {set("maxRounds", int64(0)), "spec.maxRounds: Invalid value: 0: spec.maxRounds in body should be greater than or equal to 1"},
		"missing research question":    {set("researchQuestion", nil), "spec.researchQuestion: Required value"},
		"file both fixed and variable": {set("variable.files", []any{"train.py", "eval.py"}), "a file cannot be both fixed and variable"},
		"no variable files":            {set("variable.files", []any{}), "spec.variable.files: Invalid value"},
		"absolute fixed path":          {set("fixed.files", []any{"/etc/passwd"}), "spec.fixed.files[0]: Invalid value: \"/etc/passwd\": must be a clean relative path"},
		"variable path escapes":        {set("variable.files", []any{"../other/train.py"}), "spec.variable.files[0]: Invalid value: \"../other/train.py\": must be a clean relative path"},
		"time limit in words":          {set("fixed.timeLimit", "5min"), "spec.fixed.timeLimit: Invalid value"},
		"time limit zero":              {set("fixed.timeLimit", "0s"), "spec.fixed.timeLimit: Invalid value"},
		"time limit past a duration":   {set("fixed.timeLimit", "99999999999h"), `spec.fixed.timeLimit: Invalid value: "99999999999h": must be a duration from 1s to 168h`},
		"researcher timeout in words":  {set("researcher.timeout", "soon"), "spec.researcher.timeout: Invalid value: \"soon\": must be a duration"},
		"missing researcher command":   {set("researcher.command", nil), "spec.researcher.command: Required value"},
		"empty train command":          {set("train.command", ""), "spec.train.command: Invalid value"},
		"train output is a fixed file": {set("train.outputs", []any{"eval.py"}), "train.outputs may not hold or lie inside a fixed or variable file"},
		"negative GPUs":                {set("train.gpus", int64(-1)), "spec.train.gpus: Invalid value: -1"},
		"target not a number":          {set("target", "low"), "spec.target: Invalid value: \"low\": must be a decimal number"},
		"baseline not a number":        {set("baseline.value", "1,5"), "spec.baseline.value: Invalid value: \"1,5\": must be a decimal number"},
		"zero baseline runs":           {set("baseline.runs", int64(0)), "spec.baseline.runs: Invalid value: 0"},
		"negative noise factor":        {set("acceptance.noiseFactor", "-1"), "spec.acceptance.noiseFactor: Invalid value: \"-1\": must be a non-negative decimal number"},
		"history limit too large":      {set("historyLimit", int64(1000)), "spec.historyLimit: Invalid value: 1000"},
		"git and pvc source":           {set("source", map[string]any{"git": map[string]any{"url": "https://x"}, "pvc": map[string]any{"claimName": "c"}}), "source takes either git or pvc, not both"},
		"kernel module without function": {set("kernelTargets", []any{map[string]any{
			"name": "k", "newModule": "kernels", "baselineModule": "ref:k", "fixture": "ref:fx",
		}}), "spec.kernelTargets[0].newModule: Invalid value"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := validSpec()
			tc.edit(spec)
			err := k8s.Create(context.Background(), experimentObject(ns, "bad", spec))
			if err == nil {
				t.Fatalf("the API server accepted it; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// TestCRDRejectsTheInvalidProtocols applies the corpus that the local
// schema and the Go rules refuse too (internal/schema).
func TestCRDRejectsTheInvalidProtocols(t *testing.T) {
	ns := newNamespace(t)
	for name, tc := range builder.InvalidProtocols() {
		t.Run(name, func(t *testing.T) {
			ar := builder.MakeAutoResearch("bad", ns).Edit(tc.Edit).Obj()
			err := k8s.Create(context.Background(), ar)
			if err == nil || !strings.Contains(err.Error(), tc.Field) {
				t.Errorf("error %v; want one on %s", err, tc.Field)
			}
		})
	}
}

// TestCRDFreezesTheMeasure checks that the parts of the protocol every
// verdict was measured under cannot change once the experiment exists, as
// FrozenChanges says for the local runner, while the rest can.
func TestCRDFreezesTheMeasure(t *testing.T) {
	ns := newNamespace(t)
	ar := builder.MakeAutoResearch("frozen", ns).Baseline("1.0").Obj()
	if err := k8s.Create(context.Background(), ar); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		edit   func(*v1alpha1.AutoResearchSpec)
		frozen string
	}{
		"eval command":     {func(s *v1alpha1.AutoResearchSpec) { s.Eval.Command = "echo val_bpb: 0.0001" }, "eval.command"},
		"metric":           {func(s *v1alpha1.AutoResearchSpec) { s.Eval.Metric = "loss" }, "eval.command"},
		"direction":        {func(s *v1alpha1.AutoResearchSpec) { s.Eval.Direction = v1alpha1.DirectionMaximize }, "eval.command"},
		"pattern added":    {func(s *v1alpha1.AutoResearchSpec) { s.Eval.Pattern = "bpb (.*)" }, "eval.command"},
		"fixed files":      {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.Files = nil }, "fixed cannot change"},
		"time limit":       {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.TimeLimit.Duration *= 2 }, "fixed cannot change"},
		"constraints":      {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.Constraints = []string{"seed 7"} }, "fixed cannot change"},
		"train command":    {func(s *v1alpha1.AutoResearchSpec) { s.Train.Command = "python train.py --fast" }, "train.command and train.outputs cannot change"},
		"train outputs":    {func(s *v1alpha1.AutoResearchSpec) { s.Train.Outputs = []v1alpha1.RelativePath{"data"} }, "train.command and train.outputs cannot change"},
		"baseline":         {func(s *v1alpha1.AutoResearchSpec) { s.Baseline.Value = "9" }, "baseline cannot change"},
		"baseline removed": {func(s *v1alpha1.AutoResearchSpec) { s.Baseline = nil }, "baseline cannot change"},
		"source":           {func(s *v1alpha1.AutoResearchSpec) { s.Source.Subdir = "other" }, "source and workspace cannot change"},
		"holdout added": {func(s *v1alpha1.AutoResearchSpec) {
			s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "/srv/holdout", Tolerance: "0"}
		}, "holdout cannot change"},
		"max rounds": {func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 20 }, ""},
		"guidance":   {func(s *v1alpha1.AutoResearchSpec) { s.Guidance = []string{"try AdamW"} }, ""},
		"researcher": {func(s *v1alpha1.AutoResearchSpec) { s.Researcher.Command = "other-agent" }, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cur := &v1alpha1.AutoResearch{}
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ar), cur); err != nil {
				t.Fatal(err)
			}
			old := cur.Spec.DeepCopy()
			tc.edit(&cur.Spec)
			err := k8s.Update(context.Background(), cur)
			local := cur.Spec.FrozenChanges(old)
			switch {
			case tc.frozen == "" && (err != nil || len(local) > 0):
				t.Errorf("update refused: %v (local: %v)", err, local)
			case tc.frozen != "" && (err == nil || !strings.Contains(err.Error(), tc.frozen) || len(local) == 0):
				t.Errorf("update error %v (local: %v); want it refused for %q", err, local, tc.frozen)
			}
		})
	}
}

// TestCRDRefusesALongName: a name whose children's names would pass 63
// characters is refused at apply, and so by the local runner.
func TestCRDRefusesALongName(t *testing.T) {
	ns := newNamespace(t)
	long := builder.MakeAutoResearch(strings.Repeat("a", 41), ns).Obj()
	err := k8s.Create(context.Background(), long)
	if err == nil || !strings.Contains(err.Error(), "metadata.name must be at most 40 characters") {
		t.Errorf("error %v; want the 41-character name refused", err)
	}
	if err := k8s.Create(context.Background(), builder.MakeAutoResearch(strings.Repeat("a", 40), ns).Obj()); err != nil {
		t.Errorf("a 40-character name: %v", err)
	}
}

// TestCRDAcceptsNoFixedFiles: fixed.files is optional, and the rule that
// keeps it apart from variable.files must hold without it.
func TestCRDAcceptsNoFixedFiles(t *testing.T) {
	ns := newNamespace(t)
	ar := builder.MakeAutoResearch("nofixed", ns).Fixed().Obj()
	if err := k8s.Create(context.Background(), ar); err != nil {
		t.Errorf("a protocol without fixed files: %v", err)
	}
	if errs := ar.Spec.Validate(); len(errs) > 0 {
		t.Errorf("the Go rules refuse it: %v", errs)
	}
}

func TestCRDAcceptsTheExamples(t *testing.T) {
	ns := newNamespace(t)
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..")
	files, _ := filepath.Glob(filepath.Join(root, "examples", "*", "experiment.yaml"))
	samples, _ := filepath.Glob(filepath.Join(root, "config", "samples", "autoresearch_*.yaml"))
	files = append(files, samples...)
	if len(files) < 3 {
		t.Fatalf("found only %v; want both examples and the sample", files)
	}
	if err := k8s.Create(context.Background(), experimentObject(ns, "minimal", validSpec())); err != nil {
		t.Errorf("the minimal protocol: %v", err)
	}
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		obj.SetNamespace(ns)
		obj.SetName(fmt.Sprintf("%s-%d", obj.GetName(), i))
		if err := k8s.Create(context.Background(), obj); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
