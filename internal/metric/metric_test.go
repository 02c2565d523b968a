package metric

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestFind(t *testing.T) {
	karpathySummary := strings.Join([]string{
		"---",
		"val_bpb:          0.997900",
		"training_seconds: 300.1",
		"peak_vram_mb:     45060.2",
	}, "\n")

	cases := map[string]struct {
		output  string
		name    string
		pattern string
		want    Value
		wantOK  bool
	}{
		"colon with aligned spaces": {
			output: karpathySummary,
			name:   "val_bpb",
			want:   Value{Name: "val_bpb", Value: 0.9979, Raw: "0.997900", Line: "val_bpb:          0.997900"},
			wantOK: true,
		},
		"equals": {
			output: "val_bpb=0.123",
			name:   "val_bpb",
			want:   Value{Name: "val_bpb", Value: 0.123, Raw: "0.123", Line: "val_bpb=0.123"},
			wantOK: true,
		},
		"equals with spaces and exponent": {
			output: "lr = 1e-3",
			name:   "lr",
			want:   Value{Name: "lr", Value: 1e-3, Raw: "1e-3", Line: "lr = 1e-3"},
			wantOK: true,
		},
		"several pairs separated by spaces": {
			output: "step 10 val_bpb=0.99 memory_gb=3.1",
			name:   "memory_gb",
			want:   Value{Name: "memory_gb", Value: 3.1, Raw: "3.1", Line: "step 10 val_bpb=0.99 memory_gb=3.1"},
			wantOK: true,
		},
		"several pairs separated by commas": {
			output: "epoch=3,loss=0.25,acc=0.9",
			name:   "loss",
			want:   Value{Name: "loss", Value: 0.25, Raw: "0.25", Line: "epoch=3,loss=0.25,acc=0.9"},
			wantOK: true,
		},
		"keras style pairs separated by dashes": {
			output: "100/100 - 2s - loss: 0.2231 - accuracy: 0.9123",
			name:   "accuracy",
			want:   Value{Name: "accuracy", Value: 0.9123, Raw: "0.9123", Line: "100/100 - 2s - loss: 0.2231 - accuracy: 0.9123"},
			wantOK: true,
		},
		"last line wins": {
			output: "val_bpb: 1.5\nsomething else\nval_bpb: 1.25\ndone",
			name:   "val_bpb",
			want:   Value{Name: "val_bpb", Value: 1.25, Raw: "1.25", Line: "val_bpb: 1.25"},
			wantOK: true,
		},
		"last reading on a line wins": {
			output: "loss=2 loss=1",
			name:   "loss",
			want:   Value{Name: "loss", Value: 1, Raw: "1", Line: "loss=2 loss=1"},
			wantOK: true,
		},
		"a later line without a reading does not hide an earlier one": {
			output: "acc: 0.5\nacc: pending",
			name:   "acc",
			want:   Value{Name: "acc", Value: 0.5, Raw: "0.5", Line: "acc: 0.5"},
			wantOK: true,
		},
		"longer name with the same prefix is skipped": {
			output: "val_bpb: 0.9 val_bpb_ema: 0.8",
			name:   "val_bpb",
			want:   Value{Name: "val_bpb", Value: 0.9, Raw: "0.9", Line: "val_bpb: 0.9 val_bpb_ema: 0.8"},
			wantOK: true,
		},
		"name inside a longer token does not match": {
			output: "xval_bpb: 0.5",
			name:   "val_bpb",
		},
		"namespaced name does not match its last part": {
			output: "train/val_bpb: 0.5 eval.val_bpb: 0.4",
			name:   "val_bpb",
		},
		"namespaced name matches in full": {
			output: "train/loss: 0.5 val/loss: 0.4",
			name:   "val/loss",
			want:   Value{Name: "val/loss", Value: 0.4, Raw: "0.4", Line: "train/loss: 0.5 val/loss: 0.4"},
			wantOK: true,
		},
		"name is case-sensitive": {
			output: "VAL_BPB: 0.5",
			name:   "val_bpb",
		},
		"name with spaces": {
			output: "Test accuracy: 93.2%",
			name:   "Test accuracy",
			want:   Value{Name: "Test accuracy", Value: 93.2, Raw: "93.2", Line: "Test accuracy: 93.2%"},
			wantOK: true,
		},
		"integer": {
			output: "tokens: 524288",
			name:   "tokens",
			want:   Value{Name: "tokens", Value: 524288, Raw: "524288", Line: "tokens: 524288"},
			wantOK: true,
		},
		"negative with capital exponent": {
			output: "reward: -1.5E+2",
			name:   "reward",
			want:   Value{Name: "reward", Value: -150, Raw: "-1.5E+2", Line: "reward: -1.5E+2"},
			wantOK: true,
		},
		"leading dot": {
			output: "acc: .5",
			name:   "acc",
			want:   Value{Name: "acc", Value: 0.5, Raw: ".5", Line: "acc: .5"},
			wantOK: true,
		},
		"sentence end after the number": {
			output: "Final val_bpb: 0.99.",
			name:   "val_bpb",
			want:   Value{Name: "val_bpb", Value: 0.99, Raw: "0.99", Line: "Final val_bpb: 0.99."},
			wantOK: true,
		},
		"dot without digits is not part of the number": {
			output: "step: 3. next",
			name:   "step",
			want:   Value{Name: "step", Value: 3, Raw: "3", Line: "step: 3. next"},
			wantOK: true,
		},
		"nan": {
			output: "loss: nan",
			name:   "loss",
			want:   Value{Name: "loss", Value: math.NaN(), Raw: "nan", Line: "loss: nan"},
			wantOK: true,
		},
		"NaN": {
			output: "loss=NaN",
			name:   "loss",
			want:   Value{Name: "loss", Value: math.NaN(), Raw: "NaN", Line: "loss=NaN"},
			wantOK: true,
		},
		"signed nan as printed by C": {
			output: "loss=-nan",
			name:   "loss",
			want:   Value{Name: "loss", Value: math.NaN(), Raw: "-nan", Line: "loss=-nan"},
			wantOK: true,
		},
		"inf": {
			output: "loss: inf",
			name:   "loss",
			want:   Value{Name: "loss", Value: math.Inf(1), Raw: "inf", Line: "loss: inf"},
			wantOK: true,
		},
		"negative inf": {
			output: "reward: -inf",
			name:   "reward",
			want:   Value{Name: "reward", Value: math.Inf(-1), Raw: "-inf", Line: "reward: -inf"},
			wantOK: true,
		},
		"Infinity": {
			output: "loss: Infinity",
			name:   "loss",
			want:   Value{Name: "loss", Value: math.Inf(1), Raw: "Infinity", Line: "loss: Infinity"},
			wantOK: true,
		},
		"number too large for a float is infinite": {
			output: "loss: 1e999",
			name:   "loss",
			want:   Value{Name: "loss", Value: math.Inf(1), Raw: "1e999", Line: "loss: 1e999"},
			wantOK: true,
		},
		"word starting with nan is not a number": {
			output: "latency: nanoseconds",
			name:   "latency",
		},
		"word starting with inf is not a number": {
			output: "status: information",
			name:   "status",
		},
		"number with a unit suffix is not a reading": {
			output: "memory: 3.1GB",
			name:   "memory",
		},
		"version string is not a reading": {
			output: "version: 1.2.3",
			name:   "version",
		},
		"number with thousands separators is not a reading": {
			output: "tokens: 1,000,000",
			name:   "tokens",
		},
		"time of day is not a reading": {
			output: "started=12:30:45",
			name:   "started",
		},
		"hexadecimal is not a reading": {
			output: "addr: 0x1f",
			name:   "addr",
		},
		"JSON": {
			output: `{"val_bpb": 0.99, "step": 10}`,
			name:   "val_bpb",
			want:   Value{Name: "val_bpb", Value: 0.99, Raw: "0.99", Line: `{"val_bpb": 0.99, "step": 10}`},
			wantOK: true,
		},
		"Python dict": {
			output: "{'eval_loss': 0.6931, 'eval_runtime': 1.2}",
			name:   "eval_loss",
			want:   Value{Name: "eval_loss", Value: 0.6931, Raw: "0.6931", Line: "{'eval_loss': 0.6931, 'eval_runtime': 1.2}"},
			wantOK: true,
		},
		"closing quote without an opening one": {
			output: `val_bpb": 0.99`,
			name:   "val_bpb",
		},
		"progress lines redrawn with carriage returns": {
			output: "step 1 loss: 3.0\rstep 2 loss: 2.5\rstep 3 loss: 2.0\ndone",
			name:   "loss",
			want:   Value{Name: "loss", Value: 2, Raw: "2.0", Line: "step 3 loss: 2.0"},
			wantOK: true,
		},
		"CRLF line endings": {
			output: "val_bpb: 0.5\r\nother: 1\r\n",
			name:   "val_bpb",
			want:   Value{Name: "val_bpb", Value: 0.5, Raw: "0.5", Line: "val_bpb: 0.5"},
			wantOK: true,
		},
		"name repeated inside a later token": {
			output: "aa: 1 aaa",
			name:   "aa",
			want:   Value{Name: "aa", Value: 1, Raw: "1", Line: "aa: 1 aaa"},
			wantOK: true,
		},
		"name without separator": {
			output: "val_bpb 0.99",
			name:   "val_bpb",
		},
		"name without number": {
			output: "val_bpb: n/a",
			name:   "val_bpb",
		},
		"not in output": {
			output: karpathySummary,
			name:   "accuracy",
		},
		"empty output": {
			name: "val_bpb",
		},
		"empty name": {
			output: karpathySummary,
		},
		"pattern with named group": {
			output:  "Eval: bpb 1.5 (n=10)\nEval: bpb 1.25 (n=10)",
			name:    "val_bpb",
			pattern: `bpb (?P<value>\S+) \(n=(\d+)\)`,
			want:    Value{Name: "val_bpb", Value: 1.25, Raw: "1.25", Line: "Eval: bpb 1.25 (n=10)"},
			wantOK:  true,
		},
		"pattern with one capture group": {
			output:  "Accuracy of the network on the 10000 test images: 93 %",
			name:    "accuracy",
			pattern: `test images: (\d+) %`,
			want:    Value{Name: "accuracy", Value: 93, Raw: "93", Line: "Accuracy of the network on the 10000 test images: 93 %"},
			wantOK:  true,
		},
		"pattern anchors apply to each line": {
			output:  "warmup\nscore 0.7\nscore 0.8\nfinal",
			name:    "score",
			pattern: `^score (.*)$`,
			want:    Value{Name: "score", Value: 0.8, Raw: "0.8", Line: "score 0.8"},
			wantOK:  true,
		},
		"pattern capture is trimmed": {
			output:  "result =  -inf ",
			name:    "result",
			pattern: `result =(.*)`,
			want:    Value{Name: "result", Value: math.Inf(-1), Raw: "-inf", Line: "result =  -inf "},
			wantOK:  true,
		},
		"pattern capture that is not a number is skipped": {
			output:  "score: 0.5\nscore: n/a",
			name:    "score",
			pattern: `score: (\S+)`,
			want:    Value{Name: "score", Value: 0.5, Raw: "0.5", Line: "score: 0.5"},
			wantOK:  true,
		},
		"pattern optional group that did not take part": {
			output:  "score",
			name:    "score",
			pattern: `score(?: (\d+))?`,
		},
		"pattern without match": {
			output:  karpathySummary,
			name:    "val_bpb",
			pattern: `bpb=(\d+)`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok, err := Find(tc.output, tc.name, tc.pattern)
			if err != nil {
				t.Fatalf("Find() error = %v", err)
			}
			if ok != tc.wantOK {
				t.Fatalf("Find() ok = %v, want %v (value %+v)", ok, tc.wantOK, got)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("Find() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindInvalidPattern(t *testing.T) {
	cases := map[string]struct {
		pattern string
		wantErr string
	}{
		"does not compile": {
			pattern: `val_bpb: (\d+`,
			wantErr: "missing closing )",
		},
		"no capture group": {
			pattern: `val_bpb: \d+`,
			wantErr: "has 0 capture groups",
		},
		"two unnamed capture groups": {
			pattern: `(val_bpb): (\d+)`,
			wantErr: "has 2 capture groups",
		},
		"named group with another name": {
			pattern: `val_bpb: (?P<bpb>\d+) (\d+)`,
			wantErr: `needs a group named "value"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ok, err := Find("val_bpb: 1 2", "val_bpb", tc.pattern)
			if err == nil {
				t.Fatal("Find() error = nil, want an error")
			}
			if ok {
				t.Error("Find() ok = true, want false with an error")
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Find() error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestAll(t *testing.T) {
	cases := map[string]struct {
		output string
		want   map[string]Value
	}{
		"karpathy summary": {
			output: "---\nval_bpb:          0.997900\ntraining_seconds: 300.1\npeak_vram_mb:     45060.2\n",
			want: map[string]Value{
				"val_bpb":          {Name: "val_bpb", Value: 0.9979, Raw: "0.997900", Line: "val_bpb:          0.997900"},
				"training_seconds": {Name: "training_seconds", Value: 300.1, Raw: "300.1", Line: "training_seconds: 300.1"},
				"peak_vram_mb":     {Name: "peak_vram_mb", Value: 45060.2, Raw: "45060.2", Line: "peak_vram_mb:     45060.2"},
			},
		},
		"later readings replace earlier ones": {
			output: "step 1 loss=3 memory_gb=3.1\nstep 2 loss=2 memory_gb=3.2",
			want: map[string]Value{
				"loss":      {Name: "loss", Value: 2, Raw: "2", Line: "step 2 loss=2 memory_gb=3.2"},
				"memory_gb": {Name: "memory_gb", Value: 3.2, Raw: "3.2", Line: "step 2 loss=2 memory_gb=3.2"},
			},
		},
		"quoted and namespaced names": {
			output: `{"train/loss": nan, 'val.acc': 0.5}`,
			want: map[string]Value{
				"train/loss": {Name: "train/loss", Value: math.NaN(), Raw: "nan", Line: `{"train/loss": nan, 'val.acc': 0.5}`},
				"val.acc":    {Name: "val.acc", Value: 0.5, Raw: "0.5", Line: `{"train/loss": nan, 'val.acc': 0.5}`},
			},
		},
		"chained separators": {
			output: "a=b=1",
			want: map[string]Value{
				"b": {Name: "b", Value: 1, Raw: "1", Line: "a=b=1"},
			},
		},
		"names must start with a letter or underscore": {
			output: "2024-01-01T12:30:45 _step: 7 1st=2",
			want: map[string]Value{
				"_step": {Name: "_step", Value: 7, Raw: "7", Line: "2024-01-01T12:30:45 _step: 7 1st=2"},
			},
		},
		"no pairs": {
			output: "hello world\nval_bpb 0.99\nmemory: 3GB",
			want:   map[string]Value{},
		},
		"empty": {
			want: map[string]Value{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := All(tc.output)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("All() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
