package workspace

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// pristineFiles is a repository whose experiment in examples/x has a fixed
// directory of Python evaluation, a fixed Go program, a fixed Python file
// at the top and a variable file with a fixed region.
var pristineFiles = map[string]string{
	"README.md":                      "# repo\n",
	"lib/common.py":                  "SHARED = 1\n",
	"examples/x/go.mod":              "module example.com/x\n\ngo 1.22\n",
	"examples/x/gocheck/main.go":     "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"val_bpb: 1.0\") }\n",
	"examples/x/gocheck/README.md":   "checks\n",
	"examples/x/eval/metric.py":      "import numpy as np\nfrom . import helpers\nfrom utils.io import load\n\n\ndef f():\n    import torch\n    return np, torch\n",
	"examples/x/eval/sub/labels.txt": "a\n",
	"examples/x/evaluate.py":         "import math, json\nfrom data import loader\nimport importlib\nimportlib.import_module(\"scorer.impl\")\n",
	"examples/x/train.py":            "import torch\n# autoresearch:fixed-begin seed\nSEED = 1\n# autoresearch:fixed-end\nlr = 0.1\n// autoresearch:fixed-begin autoresearch:fixed-end one line\n",
	"examples/x/model/__init__.py":   "",
	"examples/x/notes.md":            "notes\n",
}

var (
	pristineFixed    = []string{"eval/", "evaluate.py", "gocheck/main.go"}
	pristineVariable = []string{"train.py", "model/__init__.py"}
)

// newPristineExperiment creates and initializes the worktree of an
// experiment made of pristineFiles and returns it with its base commit.
func newPristineExperiment(t *testing.T) (*Workspace, string) {
	t.Helper()
	ctx := context.Background()
	src := newRepo(t, pristineFiles)
	w, _, err := Create(ctx, src, "examples/x", filepath.Join(filepath.Dir(src), "autoresearch-x"), "x")
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := w.Init(ctx, Ledger{MaxRounds: 10, Status: "running"}, "val_bpb", []string{"*.ckpt"}); err != nil {
		t.Fatalf("Init: %v", err)
	}
	base, err := w.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return w, base
}

// TestPristineRules runs each Researcher through CheckCompliance and checks
// that the violations are exactly those wanted, each on its file, with a
// reason holding the wanted words.
func TestPristineRules(t *testing.T) {
	cases := map[string]struct {
		edit     func(t *testing.T, w *Workspace)
		fixed    []string          // instead of pristineFixed
		variable []string          // instead of pristineVariable
		want     map[string]string // path → words of its reason
	}{
		"a helper and an edit of a variable file": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"train.py": strings.Replace(pristineFiles["examples/x/train.py"], "lr = 0.1", "lr = 0.2", 1), "tools/helper.py": "x = 1\n", "gocheck/sub/x.go": "package sub\n"})
			},
		},
		"new file in a fixed directory": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"eval/zz_helper.py": "x = 1\n"})
			},
			want: map[string]string{"eval/zz_helper.py": "created fixed file eval/zz_helper.py"},
		},
		"new subdirectory of a fixed directory": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"eval/deeper/x/y.py": "x = 1\n"})
			},
			want: map[string]string{"eval/deeper/x/y.py": "created fixed file"},
		},
		"file under a fixed directory modified": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"eval/sub/labels.txt": "b\n"})
			},
			want: map[string]string{"eval/sub/labels.txt": "modified fixed file eval/sub/labels.txt"},
		},
		"file under a fixed directory deleted": {
			edit: func(t *testing.T, w *Workspace) { remove(t, inDir(w, "eval/metric.py")) },
			want: map[string]string{"eval/metric.py": "deleted fixed file eval/metric.py"},
		},
		"fixed directory renamed": {
			edit: func(t *testing.T, w *Workspace) { gitT(t, w.Dir, "mv", "eval", "evil") },
			want: map[string]string{"evil/metric.py": "renamed fixed file eval/metric.py", "evil/sub/labels.txt": "renamed fixed file eval/sub/labels.txt"},
		},
		"a name that differs from a fixed one only in case": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"GOCHECK/main.go": "package main\n", "EVAL/data.txt": "x\n"})
			},
			want: map[string]string{"GOCHECK/main.go": "differs only in case from fixed gocheck/main.go", "EVAL/data.txt": "differs only in case from fixed eval/"},
		},
		"Go init helper in a fixed Go package": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"gocheck/zz_helper.go": "package main\n\nfunc init() { println(\"val_bpb: 0.2\") }\n"})
			},
			want: map[string]string{"gocheck/zz_helper.go": "new file gocheck/zz_helper.go in the Go package of fixed file gocheck/main.go"},
		},
		"assembly and data files join a fixed Go package too": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"gocheck/x_amd64.s": "TEXT ·f(SB),0,$0\n", "gocheck/main_test.go": "package main\n"})
			},
			want: map[string]string{"gocheck/x_amd64.s": "Go package of fixed file gocheck/main.go", "gocheck/main_test.go": "Go package of fixed file gocheck/main.go"},
		},
		"Go package directory in another case": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"GoCheck/zz.go": "package main\n"})
			},
			want: map[string]string{"GoCheck/zz.go": "Go package of fixed file gocheck/main.go"},
		},
		"go.mod replace": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"go.mod": pristineFiles["examples/x/go.mod"] + "replace fmt => ./fakefmt\n"})
			},
			// The file rules find it first: go.mod is not a variable file.
			want: map[string]string{"go.mod": "modified go.mod"},
		},
		"go.mod is a variable file": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"go.mod": pristineFiles["examples/x/go.mod"] + "require example.com/y v1.0.0\n"})
			},
			variable: append([]string{"go.mod"}, pristineVariable...),
		},
		"new go.work in the experiment directory": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"go.work": "go 1.22\nuse .\n"})
			},
			want: map[string]string{"go.work": "added go.work, which decides the packages that fixed Go code in gocheck/ imports"},
		},
		"new go.work above the experiment directory": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Root, map[string]string{"go.work": "go 1.22\nuse ./examples/x\n", "examples/go.work.sum": ""})
			},
			want: map[string]string{"go.work": "added go.work, which decides", "examples/go.work.sum": "added examples/go.work.sum"},
		},
		"new vendor directory": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"vendor/modules.txt": "# example.com/y v1.0.0\n", "vendor/example.com/y/y.go": "package y\n"})
			},
			want: map[string]string{"vendor/modules.txt": "added vendor/modules.txt", "vendor/example.com/y/y.go": "added vendor/example.com/y/y.go"},
		},
		"a new go.mod beside the fixed package, not above it": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"tools/go.mod": "module tools\n"})
			},
		},
		"Python modules that shadow imports of fixed files": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{
					"numpy.py":                             "def mean(x): return 0\n",
					"math.py":                              "pi = 3\n",
					"json.cpython-312-x86_64-linux-gnu.so": "\x7fELF",
					"data/__init__.py":                     "",
					"utils/io.py":                          "def load(): pass\n",
					"scorer/impl.py":                       "",
					"torch/nn.py":                          "",
				})
			},
			want: map[string]string{
				"numpy.py":                             "new file numpy.py shadows module numpy, which fixed file eval/metric.py imports",
				"math.py":                              "shadows module math, which fixed file evaluate.py imports",
				"json.cpython-312-x86_64-linux-gnu.so": "shadows module json",
				"data/__init__.py":                     "new package directory data/ (with data/__init__.py) shadows module data, which fixed file evaluate.py imports",
				"utils/io.py":                          "new package directory utils/",
				"scorer/impl.py":                       "shadows module scorer",
				"torch/nn.py":                          "shadows module torch, which fixed file eval/metric.py imports",
			},
		},
		"Python modules that shadow what fixed code imports through other modules": {
			edit: func(t *testing.T, w *Workspace) {
				// argparse imports gettext, torch imports typing_extensions.
				writeFiles(t, w.Dir, map[string]string{
					"gettext.py":             "import builtins\n",
					"typing_extensions.py":   "",
					"locale/__init__.py":     "",
					"filelock/__init__.py":   "",
					"asyncio.cpython-311.so": "\x7fELF",
				})
			},
			want: map[string]string{
				"gettext.py":             "new file gettext.py shadows the standard library's module gettext",
				"typing_extensions.py":   "shadows whatever module named typing_extensions",
				"locale/__init__.py":     "new package directory locale/ (with locale/__init__.py) shadows the standard library's module locale",
				"filelock/__init__.py":   "shadows whatever module named filelock",
				"asyncio.cpython-311.so": "shadows the standard library's module asyncio",
			},
		},
		"new modules beside the evaluation": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{
					"helpers.py":       "",
					"dill/__init__.py": "",
					"tok_utils.py":     "",
				})
			},
			want: map[string]string{
				"helpers.py":       "new file helpers.py shadows whatever module named helpers fixed Python code imports through the modules it imports, or tries to (torch tries dill); put helper code in a variable file, or in a subdirectory without an __init__",
				"dill/__init__.py": "new package directory dill/ (with dill/__init__.py) shadows whatever module named dill",
				"tok_utils.py":     "shadows whatever module named tok_utils",
			},
		},
		"compiled Python": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{
					"__pycache__/evaluate.cpython-311.pyc": "\x00",
					"model/__pycache__/notes.txt":          "",
					"legacy.pyc":                           "\x00",
					"tools/old.PYO":                        "\x00",
				})
			},
			want: map[string]string{
				"__pycache__/evaluate.cpython-311.pyc": "added __pycache__/evaluate.cpython-311.pyc, compiled Python",
				"model/__pycache__/notes.txt":          "compiled Python",
				"legacy.pyc":                           "compiled Python",
				"tools/old.PYO":                        "compiled Python",
			},
		},
		"Python modules that shadow nothing": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{
					"model/new.py":             "", // model/ is the Researcher's package already
					"sub/numpy.py":             "", // not where Python looks
					"sub/gettext.py":           "",
					"sub/typing_extensions.py": "",
					"model/gettext.py":         "", // inside the Researcher's package
					"test/cases.txt":           "", // a namespace package: the standard library's test comes first
				})
			},
		},
		"new modules where no fixed Python file is": {
			// The evaluation is Go: nothing makes the experiment directory
			// a Python evaluation's.
			fixed: []string{"gocheck/main.go"},
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"helpers.py": "", "gettext.py": "", "dill/__init__.py": ""})
			},
		},
		"Python start-up files": {
			edit: func(t *testing.T, w *Workspace) {
				writeFiles(t, w.Dir, map[string]string{"tools/sitecustomize.py": "", "hack.pth": "import os\n", "usercustomize/__init__.py": ""})
				writeFiles(t, w.Root, map[string]string{"lib/sitecustomize.py": ""})
			},
			want: map[string]string{
				"tools/sitecustomize.py":    "a sitecustomize module, which Python runs at start-up",
				"hack.pth":                  "a .pth file",
				"usercustomize/__init__.py": "a usercustomize module",
				"lib/sitecustomize.py":      "a sitecustomize module",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, base := newPristineExperiment(t)
			tc.edit(t, w)
			fixed, variable := pristineFixed, pristineVariable
			if tc.fixed != nil {
				fixed = tc.fixed
			}
			if tc.variable != nil {
				variable = tc.variable
			}
			report, err := sealAndCheck(context.Background(), t, w, base, fixed, variable)
			if err != nil {
				t.Fatal(err)
			}
			checkViolations(t, report.Violations, tc.want)
		})
	}
}

// checkViolations wants exactly one violation on each path of want, whose
// reason holds its words, and no other.
func checkViolations(t *testing.T, got []Violation, want map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	for _, v := range got {
		words, ok := want[v.Path]
		switch {
		case !ok:
			t.Errorf("unwanted violation on %q: %s", v.Path, v.Reason)
		case seen[v.Path]:
			t.Errorf("second violation on %q: %s", v.Path, v.Reason)
		case !strings.Contains(v.Reason, words):
			t.Errorf("violation on %q: %q\nwant it to hold %q", v.Path, v.Reason, words)
		}
		seen[v.Path] = true
	}
	for p := range want {
		if !seen[p] {
			t.Errorf("no violation on %q (got %+v)", p, got)
		}
	}
}

// TestCheckPristineReadsCommits checks that the rules judge the commits
// they are given, not the working tree.
func TestCheckPristineReadsCommits(t *testing.T) {
	ctx := context.Background()
	w, base := newPristineExperiment(t)
	writeFiles(t, w.Dir, map[string]string{"gocheck/zz_helper.go": "package main\n"})
	cand, err := w.Seal(ctx, 1, base)
	if err != nil {
		t.Fatal(err)
	}
	remove(t, inDir(w, "gocheck/zz_helper.go"))
	got, err := w.CheckPristine(ctx, base, cand, pristineFixed, pristineVariable)
	if err != nil {
		t.Fatal(err)
	}
	checkViolations(t, got, map[string]string{"gocheck/zz_helper.go": "Go package of fixed file gocheck/main.go"})
	if got, err := w.CheckPristine(ctx, base, base, pristineFixed, pristineVariable); err != nil || len(got) != 0 {
		t.Errorf("base against itself: %v, %v", got, err)
	}
}

func TestParsePythonImports(t *testing.T) {
	src := strings.Join([]string{
		"import os",
		"import numpy as np, torch.nn as nn",
		"import a.b.c",
		"from x.y import z",
		"from q import (r,",
		"    s)",
		"from . import helpers, other as o",
		"from .. import (up1,",
		"   up2)",
		"from .rel import thing",
		"from ...far.mod import thing",
		"if True: import inline",
		"try:",
		"    import indented",
		"except ImportError: import fallback",
		"x = 1; import after_semicolon",
		"import \\",
		"    continued",
		"# import commented",
		"mod = importlib.import_module('dyn.sub')",
		"m = __import__(\"dunder\")",
		"\rimport after_cr",
	}, "\n")
	got := map[pythonImport]bool{}
	for _, imp := range parsePythonImports(src) {
		got[imp] = true
	}
	for _, want := range []pythonImport{
		{0, "os"}, {0, "numpy"}, {0, "torch"}, {0, "a"}, {0, "x"}, {0, "q"},
		{1, "helpers"}, {1, "other"}, {2, "up1"}, {2, "up2"}, {1, "rel"}, {3, "far"},
		{0, "inline"}, {0, "indented"}, {0, "fallback"}, {0, "after_semicolon"}, {0, "continued"},
		{0, "dyn"}, {0, "dunder"}, {0, "after_cr"},
	} {
		if !got[want] {
			t.Errorf("import %+v not found in %v", want, got)
		}
	}
	for _, unwanted := range []pythonImport{{0, "commented"}, {0, "np"}, {0, "z"}, {0, "r"}, {0, "thing"}} {
		if got[unwanted] {
			t.Errorf("found import %+v, which is none", unwanted)
		}
	}
}
