package parity

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/internal/torchtest"
)

func testdataDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func target(newModule string) Target {
	return Target{
		Name:           "rmsnorm",
		NewModule:      newModule,
		BaselineModule: "reference:rmsnorm",
		Fixture:        "reference:rmsnorm_fixture",
		Atol:           "1e-5",
		Rtol:           "1e-4",
	}
}

// failureKind is the part of a Failure a test can pin down exactly; details
// carry torch's wording and are checked by substring.
type failureKind struct {
	Target, Kind string
}

func TestCheckRunsScript(t *testing.T) {
	python := torchtest.Python(t)
	dir := testdataDir(t)
	cases := map[string]struct {
		newModule  string
		want       *failureKind
		wantDetail string
	}{
		"matching candidate": {newModule: "same:rmsnorm"},
		"in-place candidate": {newModule: "inplace:rmsnorm"},
		"chatty candidate":   {newModule: "chatty:rmsnorm"},
		"signature mismatch": {newModule: "signature:rmsnorm", want: &failureKind{"rmsnorm", KindSignature}, wantDetail: "new(x, weight, eps=1e-05) vs baseline(x, weight, eps=1e-06)"},
		"shape mismatch":     {newModule: "shape:rmsnorm", want: &failureKind{"rmsnorm", KindShape}, wantDetail: "shape (4, 8) vs (4, 8, 16)"},
		"dtype mismatch":     {newModule: "dtype:rmsnorm", want: &failureKind{"rmsnorm", KindShape}, wantDetail: "dtype torch.float64 vs torch.float32"},
		"numerical mismatch": {newModule: "numerical:rmsnorm", want: &failureKind{"rmsnorm", KindNumerical}, wantDetail: "Tensor-likes are not close!"},
		"non-tensor output":  {newModule: "nontensor:rmsnorm", want: &failureKind{"rmsnorm", KindShape}, wantDetail: "non-tensor output: new list, baseline Tensor"},
		"import error":       {newModule: "broken:rmsnorm", want: &failureKind{"rmsnorm", KindError}, wantDetail: "load new broken:rmsnorm: ModuleNotFoundError: No module named 'kernel_helpers_that_do_not_exist'"},
		"missing function":   {newModule: "same:rms_norm", want: &failureKind{"rmsnorm", KindError}, wantDetail: "AttributeError"},
		"call raises":        {newModule: "raises:rmsnorm", want: &failureKind{"rmsnorm", KindError}, wantDetail: "call new: RuntimeError: fused kernel unavailable"},
		// Attacks: candidate code that wants a verdict it did not earn.
		"forged verdict":       {newModule: "forges:rmsnorm", want: &failureKind{"rmsnorm", KindError}, wantDetail: "exited with code 0 without a result"},
		"disarmed comparison":  {newModule: "patches:rmsnorm", want: &failureKind{"rmsnorm", KindNumerical}, wantDetail: "Tensor-likes are not close!"},
		"killed checker":       {newModule: "checker:rmsnorm", want: &failureKind{"rmsnorm", KindError}, wantDetail: "without a parity verdict"},
		"exit without verdict": {newModule: "exits:rmsnorm", want: &failureKind{"rmsnorm", KindError}, wantDetail: "the candidate's process exited with code 0 without a result"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Check(context.Background(), python, dir, []Target{target(tc.newModule)})
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			var gotKind *failureKind
			if got != nil {
				gotKind = &failureKind{got.Target, got.Kind}
			}
			if diff := cmp.Diff(tc.want, gotKind); diff != "" {
				t.Fatalf("Check failure (-want +got):\n%s\nfailure: %+v", diff, got)
			}
			if got == nil {
				return
			}
			if !strings.Contains(got.Detail, tc.wantDetail) {
				t.Errorf("Detail = %q, want it to contain %q", got.Detail, tc.wantDetail)
			}
			if !strings.HasPrefix(got.Line, "PARITY_FAIL target=rmsnorm kind="+got.Kind+" detail=") {
				t.Errorf("Line = %q, want a PARITY_FAIL line for the target", got.Line)
			}
		})
	}
}

func TestCheckStopsAtFirstFailure(t *testing.T) {
	python := torchtest.Python(t)
	ok := target("same:rmsnorm")
	bad := target("numerical:rmsnorm")
	bad.Name = "second"
	worse := target("broken:rmsnorm")
	worse.Name = "third"
	got, err := Check(context.Background(), python, testdataDir(t), []Target{ok, bad, worse})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if got == nil || got.Target != "second" {
		t.Fatalf("Check = %+v, want the failure of target second", got)
	}
}

// TestCheckMeasuresEveryBaselineBeforeAnyCandidate: a candidate that passes
// its own target, and as it loads rewrites the fixed baseline of the target
// checked after it to agree with that target's wrong kernel, fails the
// check: every baseline is measured before any candidate's code runs. Each
// target checked by a program of its own had the second one load the
// rewritten baseline and pass.
func TestCheckMeasuresEveryBaselineBeforeAnyCandidate(t *testing.T) {
	python := torchtest.Python(t)
	dir := copyTestdata(t, "reference.py", "rewrites.py", "numerical.py")
	reference, err := os.ReadFile(filepath.Join(dir, "reference.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "later.py"), reference, 0o644); err != nil {
		t.Fatal(err)
	}
	first := target("rewrites:rmsnorm")
	second := Target{Name: "later", NewModule: "numerical:rmsnorm", BaselineModule: "later:rmsnorm", Fixture: "later:rmsnorm_fixture", Atol: "1e-5", Rtol: "1e-4"}
	got, err := Check(context.Background(), python, dir, []Target{first, second})
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Target != "later" || got.Kind != KindNumerical {
		t.Fatalf("Check = %+v, want the numerical failure of target later", got)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "later.py")); string(data) == string(reference) {
		t.Error("the candidate did not rewrite later.py: the test proves nothing")
	}
}

// copyTestdata copies the named files of testdata into a new directory,
// which it returns.
func copyTestdata(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCheckRelativeDir(t *testing.T) {
	python := torchtest.Python(t)
	got, err := Check(context.Background(), python, "testdata", []Target{target("same:rmsnorm")})
	if err != nil || got != nil {
		t.Fatalf("Check in a relative dir = %+v, %v; want a pass", got, err)
	}
}

func TestCheckLeavesNoBytecode(t *testing.T) {
	python := torchtest.Python(t)
	dir := copyTestdata(t, "reference.py", "same.py")
	got, err := Check(context.Background(), python, dir, []Target{target("same:rmsnorm")})
	if err != nil || got != nil {
		t.Fatalf("Check = %+v, %v; want a pass", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "__pycache__")); !os.IsNotExist(err) {
		t.Errorf("Check left %s/__pycache__ behind (stat: %v)", dir, err)
	}
}

// disarmingDill is a module of the name torch tries to import and, where
// it is not installed, does not find: from the checkout, it would load in
// the checker and disarm its failures.
const disarmingDill = `import __main__
if hasattr(__main__, "fail") and hasattr(__main__, "NAME"):
    __main__.fail = lambda kind, detail: None
def extend(*args, **kwargs): pass
`

// TestCheckLoadsNothingOfTheCheckoutButTheFixedModules: a candidate that
// forgets the square root, beside a module named like one torch looks for,
// still fails parity: the checker imports torch with nothing of the
// checkout on its path.
func TestCheckLoadsNothingOfTheCheckoutButTheFixedModules(t *testing.T) {
	python := torchtest.Python(t)
	dir := copyTestdata(t, "reference.py", "numerical.py")
	if err := os.WriteFile(filepath.Join(dir, "dill.py"), []byte(disarmingDill), 0o644); err != nil {
		t.Fatal(err)
	}
	// Also where the training environment puts the checkout on the path.
	t.Setenv("PYTHONPATH", dir)
	got, err := Check(context.Background(), python, dir, []Target{target("numerical:rmsnorm")})
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Kind != KindNumerical {
		t.Fatalf("Check = %+v, want a numerical failure", got)
	}
}

func TestCheckErrors(t *testing.T) {
	cases := map[string]struct {
		python  string
		targets []Target
		ctx     func() context.Context
		wantErr string
	}{
		"invalid tolerance": {
			python:  "python3",
			targets: []Target{{Name: "k", NewModule: "a:f", BaselineModule: "b:f", Fixture: "b:fx", Atol: "tiny", Rtol: "1e-4"}},
			wantErr: `atol "tiny" is not a finite non-negative decimal`,
		},
		"missing interpreter": {
			python:  filepath.Join(t.TempDir(), "no-python"),
			targets: []Target{target("same:rmsnorm")},
			wantErr: "no-python",
		},
		"cancelled context": {
			python:  "python3",
			targets: []Target{target("same:rmsnorm")},
			ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			},
			wantErr: context.Canceled.Error(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx()
			}
			got, err := Check(ctx, tc.python, testdataDir(t), tc.targets)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Check error = %v, want one containing %q", err, tc.wantErr)
			}
			if got != nil {
				t.Errorf("Check failure = %+v, want nil alongside an error", got)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		mutate  func(*Target)
		wantErr string
	}{
		"valid":                  {mutate: func(*Target) {}},
		"default tolerances":     {mutate: func(t *Target) { t.Atol, t.Rtol = "", "" }},
		"name with space":        {mutate: func(t *Target) { t.Name = "rms norm" }, wantErr: "without spaces"},
		"module without colon":   {mutate: func(t *Target) { t.NewModule = "kernels.rmsnorm" }, wantErr: `newModule "kernels.rmsnorm"`},
		"fixture without name":   {mutate: func(t *Target) { t.Fixture = "reference:" }, wantErr: `fixture "reference:"`},
		"only atol":              {mutate: func(t *Target) { t.Rtol = "" }, wantErr: "set together"},
		"negative rtol":          {mutate: func(t *Target) { t.Rtol = "-1" }, wantErr: `rtol "-1"`},
		"not a number tolerance": {mutate: func(t *Target) { t.Atol = "NaN" }, wantErr: `atol "NaN"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tgt := target("same:rmsnorm")
			tc.mutate(&tgt)
			err := tgt.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestCommandPassesTargetAsJSON(t *testing.T) {
	tgt := target(`x"; import os; os.system("boom") #:f`)
	got := Command("/usr/bin/python3", []Target{tgt}, "/work/exp")
	want := []string{
		"/usr/bin/python3", "-B", "-c", Script(),
		`{"dir":"/work/exp","targets":[{"name":"rmsnorm","new_module":"x\"; import os; os.system(\"boom\") #:f","baseline_module":"reference:rmsnorm",` +
			`"fixture":"reference:rmsnorm_fixture","atol":"1e-5","rtol":"1e-4"}]}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Command (-want +got):\n%s", diff)
	}
}

func TestParseOutput(t *testing.T) {
	cases := map[string]struct {
		// targets are the kernels:rmsnorm target alone unless set.
		targets  []Target
		output   string
		exitCode int
		want     *Failure
	}{
		"ok": {
			output: "PARITY_OK target=rmsnorm\n",
		},
		"ok after candidate chatter": {
			output: "compiling fused kernel\nPARITY_OK target=rmsnorm\n",
		},
		"fail line": {
			output:   "PARITY_FAIL target=rmsnorm kind=numerical detail=Tensor-likes are not close! Mismatched elements: 3 / 64\n",
			exitCode: 1,
			want: &Failure{
				Target: "rmsnorm", Kind: "numerical", Detail: "Tensor-likes are not close! Mismatched elements: 3 / 64",
				Line: "PARITY_FAIL target=rmsnorm kind=numerical detail=Tensor-likes are not close! Mismatched elements: 3 / 64",
			},
		},
		"fail line with empty detail": {
			output:   "PARITY_FAIL target=rmsnorm kind=shape detail=\n",
			exitCode: 1,
			want:     &Failure{Target: "rmsnorm", Kind: "shape", Detail: "", Line: "PARITY_FAIL target=rmsnorm kind=shape detail="},
		},
		"fail line of another target is not ours": {
			output:   "PARITY_FAIL target=gelu kind=shape detail=x\n",
			exitCode: 1,
			want: &Failure{
				Target: "rmsnorm", Kind: "error", Detail: "exit code 1 without a parity verdict: PARITY_FAIL target=gelu kind=shape detail=x",
				Line: "PARITY_FAIL target=rmsnorm kind=error detail=exit code 1 without a parity verdict: PARITY_FAIL target=gelu kind=shape detail=x",
			},
		},
		"ok of another target": {
			output: "PARITY_OK target=rmsnorm2\n",
			want: &Failure{
				Target: "rmsnorm", Kind: "error", Detail: "exit code 0 without a parity verdict: PARITY_OK target=rmsnorm2",
				Line: "PARITY_FAIL target=rmsnorm kind=error detail=exit code 0 without a parity verdict: PARITY_OK target=rmsnorm2",
			},
		},
		"ok with non-zero exit": {
			output:   "PARITY_OK target=rmsnorm\n",
			exitCode: 3,
			want: &Failure{
				Target: "rmsnorm", Kind: "error", Detail: "exit code 3 without a parity verdict: PARITY_OK target=rmsnorm",
				Line: "PARITY_FAIL target=rmsnorm kind=error detail=exit code 3 without a parity verdict: PARITY_OK target=rmsnorm",
			},
		},
		"crash without fail line": {
			output:   "Traceback (most recent call last):\n  File \"<string>\", line 1\nSyntaxError: invalid syntax\n",
			exitCode: 1,
			want: &Failure{
				Target: "rmsnorm", Kind: "error",
				Detail: `exit code 1 without a parity verdict: Traceback (most recent call last): File "<string>", line 1 SyntaxError: invalid syntax`,
				Line:   `PARITY_FAIL target=rmsnorm kind=error detail=exit code 1 without a parity verdict: Traceback (most recent call last): File "<string>", line 1 SyntaxError: invalid syntax`,
			},
		},
		"killed without output": {
			exitCode: -1,
			want: &Failure{
				Target: "rmsnorm", Kind: "error", Detail: "exit code -1 without a parity verdict",
				Line: "PARITY_FAIL target=rmsnorm kind=error detail=exit code -1 without a parity verdict",
			},
		},
		"a later target's failure": {
			targets:  []Target{target("kernels:rmsnorm"), {Name: "gelu"}},
			output:   "PARITY_OK target=rmsnorm\nPARITY_FAIL target=gelu kind=numerical detail=x\n",
			exitCode: 1,
			want:     &Failure{Target: "gelu", Kind: "numerical", Detail: "x", Line: "PARITY_FAIL target=gelu kind=numerical detail=x"},
		},
		"every target but one ok": {
			targets: []Target{target("kernels:rmsnorm"), {Name: "gelu"}},
			output:  "PARITY_OK target=rmsnorm\n",
			want: &Failure{
				Target: "gelu", Kind: "error", Detail: "exit code 0 without a parity verdict: PARITY_OK target=rmsnorm",
				Line: "PARITY_FAIL target=gelu kind=error detail=exit code 0 without a parity verdict: PARITY_OK target=rmsnorm",
			},
		},
		"every target ok": {
			targets: []Target{target("kernels:rmsnorm"), {Name: "gelu"}},
			output:  "PARITY_OK target=rmsnorm\nPARITY_OK target=gelu\n",
		},
		"long output keeps the tail": {
			output:   strings.Repeat("a", 1000) + "\nRuntimeError: out of memory\n",
			exitCode: 1,
			want: &Failure{
				Target: "rmsnorm", Kind: "error",
				Detail: "exit code 1 without a parity verdict: …" + strings.Repeat("a", tailLimit-len(" RuntimeError: out of memory")) + " RuntimeError: out of memory",
				Line:   "PARITY_FAIL target=rmsnorm kind=error detail=exit code 1 without a parity verdict: …" + strings.Repeat("a", tailLimit-len(" RuntimeError: out of memory")) + " RuntimeError: out of memory",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			targets := tc.targets
			if targets == nil {
				targets = []Target{target("kernels:rmsnorm")}
			}
			got := ParseOutput(targets, tc.output, tc.exitCode)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseOutput (-want +got):\n%s", diff)
			}
		})
	}
}
