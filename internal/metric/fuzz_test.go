package metric

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func FuzzFind(f *testing.F) {
	seeds := []struct{ output, name, pattern string }{
		{"val_bpb:          0.997900\ntraining_seconds: 300.1\n", "val_bpb", ""},
		{"step 10 val_bpb=0.99 memory_gb=3.1", "memory_gb", ""},
		{"epoch=3,loss=0.25,acc=0.9", "loss", ""},
		{"lr = 1e-3", "lr", ""},
		{"loss: nan\rloss: -inf\r\nloss=+Infinity", "loss", ""},
		{`{"val_bpb": 0.99, 'step': 10}`, "step", ""},
		{"xval_bpb: 0.5 train/val_bpb=1", "val_bpb", ""},
		{"version: 1.2.3 tokens: 1,000 t=12:30 m: 3GB", "tokens", ""},
		{"a=b=1 aa: 1 aaa", "aa", ""},
		{"Eval: bpb 1.25 (n=10)", "val_bpb", `bpb (?P<value>\S+) \(n=(\d+)\)`},
		{"score 0.7\nscore 0.8", "score", `^score (.*)$`},
		{"x", "x", `(`},
		{"loss: 1e999 acc: .5 r: -1.5E+2", "r", ""},
	}
	for _, s := range seeds {
		f.Add(s.output, s.name, s.pattern)
	}
	f.Fuzz(func(t *testing.T, output, name, pattern string) {
		v, ok, err := Find(output, name, pattern)
		if err != nil {
			if pattern == "" {
				t.Fatalf("Find() without a pattern returned error %v", err)
			}
			if ok {
				t.Fatal("Find() returned ok with an error")
			}
			return
		}
		if !ok {
			if pattern == "" {
				if _, inAll := All(output)[name]; inAll {
					t.Fatalf("All() has a reading of %q that Find() does not", name)
				}
			}
			return
		}
		if v.Name != name {
			t.Errorf("Find() name = %q, want %q", v.Name, name)
		}
		if v.Raw == "" || !strings.Contains(v.Line, v.Raw) || !strings.Contains(output, v.Line) {
			t.Errorf("Find() raw %q and line %q are not taken from output %q", v.Raw, v.Line, output)
		}
		if strings.ContainsAny(v.Line, "\r\n") {
			t.Errorf("Find() line %q spans several lines", v.Line)
		}
		parsed, err := ParseDecimal(v.Raw)
		if err == nil && !sameFloat(parsed, v.Value) {
			t.Errorf("Find() value %v differs from ParseDecimal(%q) = %v", v.Value, v.Raw, parsed)
		}
		if err != nil && !math.IsInf(v.Value, 0) {
			t.Errorf("Find() raw %q is not a decimal: %v", v.Raw, err)
		}
		checkFormatRoundTrip(t, v.Value)
		if pattern == "" {
			if want, inAll := All(output)[name]; inAll {
				if diff := cmp.Diff(want, v, cmpopts.EquateNaNs()); diff != "" {
					t.Errorf("Find() and All() disagree (-All +Find):\n%s", diff)
				}
			}
		}
	})
}

func FuzzDivergence(f *testing.F) {
	seeds := []string{
		"step 1 | loss: 3.2\nval_bpb: 0.99\n",
		"FAIL\n",
		"FAIL: loss exploded",
		"\rstep 00001 | loss: 9.0\rFAIL",
		"epoch=1 train_loss=inf",
		`{"val_loss": -Infinity}`,
		"grad_norm: nan",
		"loss: nan | " + strings.Repeat("é", 300),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, output string) {
		reason := Divergence(output)
		if reason == "" {
			if got := Divergence(output + "\nFAIL\n"); got == "" {
				t.Error("Divergence() = \"\" for output that ends with a FAIL line")
			}
			return
		}
		if !strings.Contains(output, "FAIL") && !strings.Contains(strings.ToLower(output), "loss") {
			t.Errorf("Divergence() = %q for output without FAIL or a loss", reason)
		}
		// Names and numbers hold no `: "`, so the quoted line follows the first one.
		i := strings.Index(reason, `: "`)
		if i < 0 {
			t.Fatalf("Divergence() = %q quotes no line", reason)
		}
		line, err := strconv.Unquote(reason[i+2:])
		if err != nil {
			t.Fatalf("Divergence() = %q: quoted line does not unquote: %v", reason, err)
		}
		if n := len(line); n > maxQuoteLen {
			t.Errorf("Divergence() quotes %d bytes, want at most %d", n, maxQuoteLen)
		}
		if !strings.Contains(output, line) && !strings.Contains(output, strings.TrimSuffix(line, "…")) {
			t.Errorf("Divergence() quotes %q, which is not in the output", line)
		}
	})
}

func checkFormatRoundTrip(t *testing.T, v float64) {
	t.Helper()
	s := Format(v)
	got, err := ParseDecimal(s)
	if err != nil {
		t.Fatalf("ParseDecimal(Format(%v) = %q) error = %v", v, s, err)
	}
	if !sameFloat(got, v) {
		t.Errorf("ParseDecimal(Format(%v) = %q) = %v", v, s, got)
	}
}

func sameFloat(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}
