package parity

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/torchtest"
)

const nanogptDir = "../../examples/nanogpt-torch"

// examplePlan is the part of a scripted-researcher plan this test replays.
type examplePlan struct {
	Rounds []struct {
		Strategy string           `json:"strategy"`
		Expect   v1alpha1.Verdict `json:"expect"`
		Edits    []struct {
			File string `json:"file"`
			Old  string `json:"old"`
			New  string `json:"new"`
		} `json:"edits"`
	} `json:"rounds"`
}

// TestNanoGPTExampleKernels runs the nanogpt-torch example's kernel targets
// on the example as shipped and after each step of its scripted plan: parity
// must fail exactly in the rounds the plan expects to fail it.
func TestNanoGPTExampleKernels(t *testing.T) {
	python := torchtest.Python(t)
	var experiment v1alpha1.AutoResearch
	if err := yaml.UnmarshalStrict(readExample(t, "experiment.yaml"), &experiment); err != nil {
		t.Fatalf("experiment.yaml: %v", err)
	}
	var targets []Target
	for _, k := range experiment.Spec.KernelTargets {
		targets = append(targets, Target{Name: k.Name, NewModule: string(k.NewModule), BaselineModule: string(k.BaselineModule), Fixture: string(k.Fixture), Atol: string(k.Atol), Rtol: string(k.Rtol)})
	}
	if len(targets) == 0 {
		t.Fatal("experiment.yaml has no kernelTargets")
	}
	var plan examplePlan
	if err := yaml.UnmarshalStrict(readExample(t, "scripted-researcher.yaml"), &plan); err != nil {
		t.Fatalf("scripted-researcher.yaml: %v", err)
	}

	committed := map[string]string{}
	for _, name := range []string{"kernels.py", "reference_kernels.py"} {
		committed[name] = string(readExample(t, name))
	}
	if f := checkFiles(t, python, targets, committed); f != nil {
		t.Fatalf("the example as shipped fails parity: %s", f.Line)
	}
	for i, round := range plan.Rounds {
		files := map[string]string{}
		for name, content := range committed {
			files[name] = content
		}
		for _, e := range round.Edits {
			content, ok := files[e.File]
			if !ok {
				continue // only the kernel files matter to parity
			}
			if n := strings.Count(content, e.Old); n != 1 {
				t.Fatalf("round %d: %q occurs %d times in %s, want once", i+1, e.Old, n, e.File)
			}
			files[e.File] = strings.Replace(content, e.Old, e.New, 1)
		}
		f := checkFiles(t, python, targets, files)
		if got, want := f != nil, round.Expect == v1alpha1.VerdictParityFailed; got != want {
			t.Errorf("round %d (%s): parity failure = %+v, plan expects %s", i+1, round.Strategy, f, round.Expect)
		}
		if round.Expect == v1alpha1.VerdictImproved {
			committed = files
		}
	}
}

func readExample(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nanogptDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// checkFiles writes files into a fresh directory and runs Check there.
func checkFiles(t *testing.T, python string, targets []Target, files map[string]string) *Failure {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Check(context.Background(), python, dir, targets)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return f
}
