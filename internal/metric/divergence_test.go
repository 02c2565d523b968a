package metric

import (
	"strings"
	"testing"
)

func TestDivergence(t *testing.T) {
	long := "step 7 | loss: nan | " + strings.Repeat("x", 300)

	cases := map[string]struct {
		output string
		want   string
	}{
		"healthy run": {
			output: "step 1 | loss: 3.2\nstep 2 | loss: 2.9\nval_bpb: 0.99\n",
		},
		"empty": {},
		"FAIL line": {
			output: "step 00042 (1.2%) | loss: 12.5\nFAIL\n",
			want:   `training printed FAIL: "FAIL"`,
		},
		"FAIL with colon": {
			output: "FAIL: loss exploded\n",
			want:   `training printed FAIL: "FAIL: loss exploded"`,
		},
		"FAIL with space and indentation": {
			output: "  FAIL at step 3\n",
			want:   `training printed FAIL: "FAIL at step 3"`,
		},
		"FAIL after a carriage return progress line": {
			output: "\rstep 00001 | loss: 9.0\rstep 00002 | loss: 120.0\rFAIL\n",
			want:   `training printed FAIL: "FAIL"`,
		},
		"FAILED is not FAIL": {
			output: "FAILED_TESTS=0\ntests: FAIL 0\n",
		},
		"FAIL inside a line is not FAIL": {
			output: "retries before FAIL: 3\n",
		},
		"loss nan": {
			output: "step 1 | loss: 3.2\nstep 2 | loss: nan | lrm: 1.0\n",
			want:   `loss is nan: "step 2 | loss: nan | lrm: 1.0"`,
		},
		"train_loss inf": {
			output: "epoch=1 train_loss=inf val_acc=0.1",
			want:   `train_loss is inf: "epoch=1 train_loss=inf val_acc=0.1"`,
		},
		"capitalised loss name and value": {
			output: "Loss: NaN",
			want:   `Loss is NaN: "Loss: NaN"`,
		},
		"negative infinity": {
			output: `{"val_loss": -Infinity}`,
			want:   `val_loss is -Infinity: "{\"val_loss\": -Infinity}"`,
		},
		"overflowing loss": {
			output: "loss=1e400",
			want:   `loss is 1e400: "loss=1e400"`,
		},
		"first offending line is reported": {
			output: "loss: inf\nloss: nan\nFAIL\n",
			want:   `loss is inf: "loss: inf"`,
		},
		"nan in a metric that is not a loss": {
			output: "grad_norm: nan\nval_bpb: nan\n",
		},
		"loss word that is not a pair": {
			output: "loss nan\n",
		},
		"long line is truncated": {
			output: long,
			want:   `loss is nan: "` + long[:197] + `…"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Divergence(tc.output); got != tc.want {
				t.Errorf("Divergence() = %q, want %q", got, tc.want)
			}
		})
	}
}
