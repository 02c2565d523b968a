package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
	"github.com/autoresearch-dev/autoresearch-operator/internal/schema"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
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

// TestCRDRejectsBadProtocols applies what a YAML file can hold and a Go
// struct cannot: missing fields, explicit zeros, values of the wrong type.
// The API server and the local schema refuse each with the same words.
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
	kernel := func(drop string) []any {
		k := map[string]any{"name": "gelu", "newModule": "kernels:gelu", "baselineModule": "reference:gelu", "fixture": "reference:inputs"}
		delete(k, drop)
		return []any{k}
	}
	cases := map[string]struct {
		edit func(map[string]any)
		want string
	}{
		"question too long":             {set("researchQuestion", strings.Repeat("why? ", 820)), "spec.researchQuestion: Too long: may not be more than 4096 bytes"},
		"maxRounds zero":                {set("maxRounds", int64(0)), "spec.maxRounds: Invalid value: 0: spec.maxRounds in body should be greater than or equal to 1"},
		"maxRounds as text":             {set("maxRounds", "10"), `spec.maxRounds: Invalid value: "string": spec.maxRounds in body must be of type integer`},
		"target as a number":            {set("target", 0.95), `spec.target: Invalid value: "number": spec.target in body must be of type string`},
		"zero baseline runs":            {set("baseline.runs", int64(0)), "spec.baseline.runs: Invalid value: 0: spec.baseline.runs in body should be greater than or equal to 1"},
		"zero plateau":                  {set("plateau.rounds", int64(0)), "spec.plateau.rounds: Invalid value: 0: spec.plateau.rounds in body should be greater than or equal to 1"},
		"zero history limit":            {set("historyLimit", int64(0)), "spec.historyLimit: Invalid value: 0: spec.historyLimit in body should be greater than or equal to 1"},
		"zero epoch limit":              {set("fixed.epochLimit", int64(0)), "spec.fixed.epochLimit: Invalid value: 0: spec.fixed.epochLimit in body should be greater than or equal to 1"},
		"missing time limit":            {set("fixed.timeLimit", nil), "spec.fixed.timeLimit: Required value"},
		"time limit in words":           {set("fixed.timeLimit", "5min"), `spec.fixed.timeLimit: Invalid value: "5min": must be a duration from 1s to 168h`},
		"time limit in days":            {set("fixed.timeLimit", "1d"), `spec.fixed.timeLimit: Invalid value: "1d": must be a duration from 1s to 168h`},
		"time limit without unit":       {set("fixed.timeLimit", "300"), `spec.fixed.timeLimit: Invalid value: "300": must be a duration from 1s to 168h`},
		"time limit 2000000h":           {set("fixed.timeLimit", "2000000h"), `spec.fixed.timeLimit: Invalid value: "2000000h": must be a duration from 1s to 168h`},
		"time limit past a duration":    {set("fixed.timeLimit", "99999999999h"), `spec.fixed.timeLimit: Invalid value: "99999999999h": must be a duration from 1s to 168h`},
		"researcher timeout in words":   {set("researcher.timeout", "soon"), `spec.researcher.timeout: Invalid value: "soon": must be a duration from 1s to 168h`},
		"fixed files as text":           {set("fixed.files", "eval.py"), `spec.fixed.files: Invalid value: "string": spec.fixed.files in body must be of type array`},
		"no variable files":             {set("variable.files", []any{}), "spec.variable.files: Invalid value: 0: spec.variable.files in body should have at least 1 items"},
		"variable files missing":        {set("variable", map[string]any{}), "spec.variable.files: Required value"},
		"missing metric":                {set("eval.metric", nil), "spec.eval.metric: Required value"},
		"metric too long":               {set("eval.metric", strings.Repeat("m", 129)), "spec.eval.metric: Too long: may not be more than 128 bytes"},
		"missing direction":             {set("eval.direction", nil), "spec.eval.direction: Required value"},
		"missing eval command":          {set("eval.command", nil), "spec.eval.command: Required value"},
		"empty train command":           {set("train.command", ""), "spec.train.command: Invalid value: \"\": spec.train.command in body should be at least 1 chars long"},
		"missing researcher command":    {set("researcher.command", nil), "spec.researcher.command: Required value"},
		"empty pattern":                 {set("eval.pattern", ""), "spec.eval.pattern: Invalid value: \"\": spec.eval.pattern in body should be at least 1 chars long"},
		"GPUs as text":                  {set("train.gpus", "1"), `spec.train.gpus: Invalid value: "string": spec.train.gpus in body must be of type integer`},
		"empty image":                   {set("train.image", ""), "spec.train.image: Invalid value: \"\": spec.train.image in body should be at least 1 chars long"},
		"empty queue name":              {set("queueName", ""), "spec.queueName: Invalid value: \"\": spec.queueName in body should be at least 1 chars long"},
		"suspend as text":               {set("suspend", "yes"), `spec.suspend: Invalid value: "string": spec.suspend in body must be of type boolean`},
		"guidance note too long":        {set("guidance", []any{strings.Repeat("x", 2049)}), "spec.guidance[0]: Too long: may not be more than 2048 bytes"},
		"workspace size in words":       {set("workspace.size", "lots"), `spec.workspace.size: Invalid value: "lots": must be a positive size such as 10Gi`},
		"workspace size with a space":   {set("workspace.size", "10 Gi"), `spec.workspace.size: Invalid value: "10 Gi": must be a positive size such as 10Gi`},
		"git source without url":        {set("source.git", map[string]any{"ref": "main"}), "spec.source.git.url: Required value"},
		"pvc source without claim":      {set("source.pvc", map[string]any{"path": "repo"}), "spec.source.pvc.claimName: Required value"},
		"duplicate env names":           {set("researcher.env", []any{map[string]any{"name": "API_KEY", "value": "a"}, map[string]any{"name": "API_KEY", "value": "b"}}), `spec.researcher.env[1]: Duplicate value: {"name":"API_KEY"}`},
		"env without a name":            {set("train.env", []any{map[string]any{"value": "offline"}}), "spec.train.env[0].name: Required value"},
		"cpu request in words":          {set("train.resources", map[string]any{"requests": map[string]any{"cpu": "lots"}}), `spec.train.resources.requests.cpu: Invalid value: "lots"`},
		"kernel target without fixture": {set("kernelTargets", kernel("fixture")), "spec.kernelTargets[0].fixture: Required value"},
		"kernel target without name":    {set("kernelTargets", kernel("name")), "spec.kernelTargets[0].name: Required value"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := validSpec()
			tc.edit(spec)
			obj := experimentObject(ns, "bad", spec)
			local := obj.DeepCopy()
			err := k8s.Create(context.Background(), obj)
			if err == nil || !strings.Contains(err.Error(), tc.want) || internalError(err) {
				t.Errorf("the API server: %v\nwant an error containing %q", err, tc.want)
			}
			if err := schema.Default(local.Object); err != nil {
				t.Fatal(err)
			}
			errs, err := schema.Validate(context.Background(), local.Object)
			if err != nil {
				t.Fatal(err)
			}
			if agg := errs.ToAggregate(); agg == nil || !strings.Contains(agg.Error(), tc.want) {
				t.Errorf("the local schema: %v\nwant an error containing %q", agg, tc.want)
			}
		})
	}
}

// internalError reports whether a refusal speaks of how a rule failed to
// run rather than of what to fix.
func internalError(err error) bool {
	return strings.Contains(err.Error(), "no such key") || strings.Contains(err.Error(), "type conversion error")
}

// TestCRDRejectsTheInvalidProtocols applies the corpus that the local
// schema and the Go rules refuse too (internal/schema).
func TestCRDRejectsTheInvalidProtocols(t *testing.T) {
	ns := newNamespace(t)
	for name, tc := range builder.InvalidProtocols() {
		t.Run(name, func(t *testing.T) {
			ar := builder.MakeAutoResearch("bad", ns).Edit(tc.Edit).Obj()
			err := k8s.Create(context.Background(), ar)
			if err == nil || !strings.Contains(err.Error(), tc.Field) || !strings.Contains(err.Error(), tc.Says) || internalError(err) {
				t.Errorf("error %v\nwant one on %s saying %q", err, tc.Field, tc.Says)
			}
		})
	}
}

// TestCRDFreezesTheMeasure checks that the parts of the protocol every
// verdict was measured under cannot change once the experiment exists, as
// FrozenChanges says for the local runner, while the rest can.
func TestCRDFreezesTheMeasure(t *testing.T) {
	ns := newNamespace(t)
	ar := builder.MakeAutoResearch("frozen", ns).Baseline("1.0").GitSource("https://example.com/repo.git", "main", "exp").Edit(func(s *v1alpha1.AutoResearchSpec) {
		s.Eval.Pattern = "val_bpb=([0-9.]+)"
		s.Workspace.Size = ptr.To(resource.MustParse("10Gi"))
	}).Obj()
	if err := k8s.Create(context.Background(), ar); err != nil {
		t.Fatal(err)
	}
	const (
		fixed     = "spec.fixed: Invalid value: fixed cannot change once the experiment exists: the baseline and every verdict were measured under it; start a new experiment instead"
		train     = "spec.train: Invalid value: train.command and train.outputs cannot change once the experiment exists"
		eval      = "spec.eval: Invalid value: eval.command, eval.metric, eval.direction and eval.pattern cannot change once the experiment exists: they are the measure of every verdict"
		baseline  = "spec.baseline: Invalid value: baseline cannot change once the experiment exists"
		source    = "spec.source: Invalid value: source cannot change once the experiment exists"
		workspace = "spec.workspace: Invalid value: workspace cannot change once the experiment exists"
	)
	cases := map[string]struct {
		edit   func(*v1alpha1.AutoResearchSpec)
		frozen string // what the API server says; empty when the change is allowed
		local  string // what FrozenChanges names
	}{
		"eval command":       {func(s *v1alpha1.AutoResearchSpec) { s.Eval.Command = "echo val_bpb: 0.0001" }, eval, "spec.eval.command"},
		"metric":             {func(s *v1alpha1.AutoResearchSpec) { s.Eval.Metric = "loss" }, eval, "spec.eval.metric"},
		"direction":          {func(s *v1alpha1.AutoResearchSpec) { s.Eval.Direction = v1alpha1.DirectionMaximize }, eval, "spec.eval.direction"},
		"pattern":            {func(s *v1alpha1.AutoResearchSpec) { s.Eval.Pattern = "bpb (.*)" }, eval, "spec.eval.pattern"},
		"pattern removed":    {func(s *v1alpha1.AutoResearchSpec) { s.Eval.Pattern = "" }, eval, "spec.eval.pattern"},
		"fixed files":        {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.Files = nil }, fixed, "spec.fixed"},
		"fixed file added":   {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.Files = append(s.Fixed.Files, "data/") }, fixed, "spec.fixed"},
		"time limit":         {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.TimeLimit.Duration *= 2 }, fixed, "spec.fixed"},
		"epoch limit":        {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.EpochLimit = 3 }, fixed, "spec.fixed"},
		"constraints":        {func(s *v1alpha1.AutoResearchSpec) { s.Fixed.Constraints = []string{"seed 7"} }, fixed, "spec.fixed"},
		"train command":      {func(s *v1alpha1.AutoResearchSpec) { s.Train.Command = "python train.py --fast" }, train, "spec.train.command"},
		"train outputs":      {func(s *v1alpha1.AutoResearchSpec) { s.Train.Outputs = []v1alpha1.RelativePath{"data"} }, train, "spec.train.outputs"},
		"baseline value":     {func(s *v1alpha1.AutoResearchSpec) { s.Baseline.Value = "9" }, baseline, "spec.baseline"},
		"baseline removed":   {func(s *v1alpha1.AutoResearchSpec) { s.Baseline = nil }, baseline, "spec.baseline"},
		"source subdir":      {func(s *v1alpha1.AutoResearchSpec) { s.Source.Subdir = "other" }, source, "spec.source"},
		"source repository":  {func(s *v1alpha1.AutoResearchSpec) { s.Source.Git.URL = "https://example.com/fork.git" }, source, "spec.source"},
		"source ref":         {func(s *v1alpha1.AutoResearchSpec) { s.Source.Git.Ref = "dev" }, source, "spec.source"},
		"workspace size":     {func(s *v1alpha1.AutoResearchSpec) { s.Workspace.Size = ptr.To(resource.MustParse("20Gi")) }, workspace, "spec.workspace"},
		"workspace storage":  {func(s *v1alpha1.AutoResearchSpec) { s.Workspace.StorageClassName = ptr.To("fast") }, workspace, "spec.workspace"},
		"workspace caches":   {func(s *v1alpha1.AutoResearchSpec) { s.Workspace.Caches = []v1alpha1.RelativePath{".venv"} }, workspace, "spec.workspace"},
		"reclaim policy":     {func(s *v1alpha1.AutoResearchSpec) { s.Workspace.ReclaimPolicy = v1alpha1.ReclaimDelete }, workspace, "spec.workspace"},
		"max rounds raised":  {func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 20 }, "", ""},
		"max rounds lowered": {func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 1 }, "", ""},
		"target":             {func(s *v1alpha1.AutoResearchSpec) { s.Target = "0.9" }, "", ""},
		"guidance":           {func(s *v1alpha1.AutoResearchSpec) { s.Guidance = []string{"try AdamW"} }, "", ""},
		"suspend":            {func(s *v1alpha1.AutoResearchSpec) { s.Suspend = ptr.To(true) }, "", ""},
		"researcher":         {func(s *v1alpha1.AutoResearchSpec) { s.Researcher.Command = "other-agent" }, "", ""},
		"researcher timeout": {func(s *v1alpha1.AutoResearchSpec) { s.Researcher.Timeout = &v1alpha1.Duration{Duration: time.Hour} }, "", ""},
		"variable files":     {func(s *v1alpha1.AutoResearchSpec) { s.Variable.Files = append(s.Variable.Files, "model.py") }, "", ""},
		"training image":     {func(s *v1alpha1.AutoResearchSpec) { s.Train.Image = "trainer:v2" }, "", ""},
		"holdout added": {func(s *v1alpha1.AutoResearchSpec) {
			s.Holdout = &v1alpha1.HoldoutSpec{Command: "./holdout.sh", Dir: "/srv/holdout", Tolerance: "0"}
		}, "spec.holdout: Invalid value: holdout cannot change once the experiment exists", "spec.holdout"},
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
			case tc.frozen != "" && (err == nil || !strings.Contains(err.Error(), tc.frozen)):
				t.Errorf("update error %v\nwant it refused with %q", err, tc.frozen)
			case tc.frozen != "" && !slices.Contains(local, tc.local):
				t.Errorf("FrozenChanges %v; want %s", local, tc.local)
			}
		})
	}
}

// TestCRDFreezesAnOmittedSourceAndWorkspace: an experiment applied
// without source and workspace, as kubectl sends it, still takes the
// changes that are allowed, and refuses a workspace or source added later.
func TestCRDFreezesAnOmittedSourceAndWorkspace(t *testing.T) {
	ns := newNamespace(t)
	obj := experimentObject(ns, "omitted", validSpec())
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"suspend", func(s map[string]any) { s["suspend"] = true }, ""},
		{"max rounds", func(s map[string]any) { s["maxRounds"] = int64(5) }, ""},
		{"workspace size", func(s map[string]any) { s["workspace"] = map[string]any{"size": "20Gi"} }, "spec.workspace: Invalid value: workspace cannot change once the experiment exists"},
		{"git source", func(s map[string]any) {
			s["source"] = map[string]any{"git": map[string]any{"url": "https://example.com/repo.git"}}
		}, "spec.source: Invalid value: source cannot change once the experiment exists"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(obj.GroupVersionKind())
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), cur); err != nil {
				t.Fatal(err)
			}
			tc.edit(cur.Object["spec"].(map[string]any))
			err := k8s.Update(context.Background(), cur)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("update refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("update error %v\nwant it refused with %q", err, tc.want)
			}
		})
	}
}

// TestCRDRefusesALongName: a name whose children's names would pass 63
// characters is refused at apply, and so by the local runner.
func TestCRDRefusesALongName(t *testing.T) {
	ns := newNamespace(t)
	for _, n := range []int{41, 60} {
		long := builder.MakeAutoResearch(strings.Repeat("a", n), ns).Obj()
		err := k8s.Create(context.Background(), long)
		if err == nil || !strings.Contains(err.Error(), "metadata.name must be at most 40 characters") {
			t.Errorf("error %v; want the %d-character name refused", err, n)
		}
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
