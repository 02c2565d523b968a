package tamper

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/internal/torchtest"
)

// nanogptModels are the models attacks-nanogpt/models.py writes, and what
// the example's evaluation must say of each: "" for a val_bpb, otherwise
// words of its error.
var nanogptModels = map[string]string{
	"uniform": "",
	// Loaded afresh for every call, it never counts past one: it scores
	// as the uniform model it starts as.
	"counts-calls":          "",
	"knows-the-first-batch": "model is not causal",
	"remembers":             "model is not causal",
	"sets-attr":             "the model sets an attribute",
	"keeps-inputs":          "the model holds a List[Tensor] attribute",
	"prints":                "the model prints",
	"warns":                 "the model warns",
	"next-row":              "model mixes the rows of a batch",
	// Without the check of file operations, 0.13 bits per byte.
	"file-state": "the model maps a file (aten::from_file in forward)",
	// Without the check of __setstate__ and with the split read after
	// the model is loaded, 0.
	"overwrites-val": "the model's code names __setstate__",
	// FileState in the function prim::fork runs: without a look into
	// the fork's graph, 0.13 bits per byte.
	"fork-file-state": "the model runs a function as a task of its own (prim::fork in forward)",
	// FileState in a context manager's __enter__: 0.13 bits per byte
	// without a refusal of what runs it.
	"enter-file-state": "the model makes an object of a class whose methods the check cannot see into (prim::CreateObject in forward)",
	// Its state in the evaluation's own batch: 0.13 bits per byte where
	// the model was given that batch rather than a copy. Given a copy,
	// every call finds no stash and reads ahead, as the checks see.
	"stashes-in-its-input": "model is not causal",
	// Its state in freed memory that torch.empty hands back: 0.13 bits
	// per byte without a refusal of such memory.
	"reads-freed-memory":        "the model reads uninitialized memory (aten::empty in forward)",
	"resizes-into-freed-memory": "the model reads uninitialized memory (aten::resize_ in forward)",
	// Past a check that named what it refused, set_ hands back freed
	// memory as well.
	"sets-into-freed-memory": "the model reads uninitialized memory (aten::set_ in forward)",
	// FileState in code that is none of the modules' methods: an
	// attribute's class's __setstate__, which loading runs, and a
	// forward hook, which calling the module runs; 0.13 bits per byte
	// each where the check walked the modules' methods alone. Then the
	// same __setstate__ in a class that no type of the loaded module
	// names, which a check of those types let through at 0.13.
	"class-setstate-state":  "the model's code names __setstate__ (code/__torch__.py)",
	"hook-file-state":       "the model has forward hooks (its top module)",
	"unlisted-object-state": "the model's code names __setstate__ (code/__torch__.py)",
	// The same __setstate__, read past by a check that parsed the sources
	// named .py with Python's parser: named .PY, which torch still finds,
	// or declared UTF-7, in which a parser that decodes as declared sees
	// it inside a string. 0.13 bits per byte each.
	"upper-case-source": "the model's code names __setstate__ (code/__torch__.PY)",
	"utf7-source":       "the model's code names __setstate__ (code/__torch__.py)",
	// The same __setstate__ behind a second central directory, which
	// Python's zip reader took for the archive's: 0.13 bits per byte.
	"two-directories": "the model's code names __setstate__ (code/__torch__.py)",
	// A buffer the archive declares larger than its data: read whole, it
	// gave earlier calls' freed memory back.
	"oversized-buffer": "the model's tensor buf reaches past the data it holds",
	// The counts of the bytes the rows hold at the next position: 3.2 bits
	// per byte, untrained, where the checks shuffled the batch's own rows
	// and swapped their ends among them.
	"column-counts": "model is not causal",
	// Honest, of many kinds of operation: what the evaluation allows
	// must be enough for honest models.
	"variety": "",
}

// TestNanoGPTEvaluationRefusesCheatingModels runs examples/nanogpt-torch's
// fixed evaluation on TorchScript models that training could export: code
// the Researcher wrote, which counts its calls, recognises the batch a
// check looks at, keeps its inputs or prints. Each is refused, or scores
// no better than the honest uniform model's 8 bits per byte.
func TestNanoGPTEvaluationRefusesCheatingModels(t *testing.T) {
	python := torchtest.Python(t)
	dir := t.TempDir()
	if out, err := exec.Command("cp", "-r", "../../examples/nanogpt-torch/.", dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the example: %v\n%s", err, out)
	}
	models, err := filepath.Abs("attacks-nanogpt/models.py")
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(python, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("prepare.py"); err != nil {
		t.Fatalf("prepare.py: %v\n%s", err, out)
	}
	for name, want := range nanogptModels {
		t.Run(name, func(t *testing.T) {
			// A model may have changed the data of the one before.
			if out, err := run("prepare.py"); err != nil {
				t.Fatalf("prepare.py: %v\n%s", err, out)
			}
			if out, err := run(models, name); err != nil {
				t.Fatalf("write the model: %v\n%s", err, out)
			}
			out, err := run("eval.py")
			switch {
			case want == "" && (err != nil || !strings.Contains(out, "val_bpb: 8.000000")):
				t.Errorf("eval.py: %v, want val_bpb 8.000000:\n%s", err, out)
			case want != "" && (err == nil || !strings.Contains(out, want)):
				t.Errorf("eval.py: %v, want it to fail saying %q:\n%s", err, want, out)
			}
		})
	}
}
