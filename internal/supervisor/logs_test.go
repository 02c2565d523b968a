package supervisor

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

func TestReadTrainLog(t *testing.T) {
	cases := map[string]struct {
		log  string
		want steps.TrainResult
	}{
		"last loss and memory": {
			log:  "step 1 loss=2.5\nstep 2 loss=1.25\nmemory_gb: 3.2\n",
			want: steps.TrainResult{FinalLoss: "1.25", MemoryGB: "3.2"},
		},
		"train_loss wins over loss": {
			log:  "loss=2.0 train_loss=1.5\n",
			want: steps.TrainResult{FinalLoss: "1.5"},
		},
		"peak_vram_mb in GB": {
			log:  "peak_vram_mb: 2048\n",
			want: steps.TrainResult{MemoryGB: "2"},
		},
		"divergence": {
			log:  "step 1 loss=nan\nFAIL\n",
			want: steps.TrainResult{Divergence: `loss is nan: "step 1 loss=nan"`, FinalLoss: "nan"},
		},
		"nothing to read": {log: "hello\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ReadTrainLog(tc.log)); diff != "" {
				t.Errorf("ReadTrainLog (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadEvalLog(t *testing.T) {
	cases := map[string]struct {
		log, pattern string
		want         steps.EvalResult
		wantErr      bool
	}{
		"last reading":   {log: "score: 1\nscore: 2\n", want: steps.EvalResult{Found: true, Value: "2"}},
		"with a pattern": {log: "final 0.75 points\n", pattern: `final (\S+) points`, want: steps.EvalResult{Found: true, Value: "0.75"}},
		"not printed":    {log: "loss: 1\n"},
		"bad pattern":    {log: "score: 1\n", pattern: "(", wantErr: true},
		"readings asked for, as printed last": {
			log:  "memory_gb: 30\nscore: 2 train_seconds=250\nmemory_gb: 38.5\nother: 1\n",
			want: steps.EvalResult{Found: true, Value: "2", Readings: map[string]string{"memory_gb": "38.5", "train_seconds": "250"}},
		},
		"a reading not printed is missing": {
			log:  "score: 2\nmemory_gb: 38.5\n",
			want: steps.EvalResult{Found: true, Value: "2", Readings: map[string]string{"memory_gb": "38.5"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ReadEvalLog(tc.log, "score", tc.pattern, []string{"memory_gb", "train_seconds"})
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error: %t", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReadEvalLog (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChangedFixedFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"eval.sh": "echo score: 1\n", "data/prepare.py": "print(1)\n"})
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return hex.EncodeToString(h[:])
	}
	want := map[string]string{
		"eval.sh":         sum("echo score: 1\n"),
		"data/prepare.py": sum("print(2)\n"),
		"gone.py":         sum(""),
	}
	got, err := ChangedFixedFiles(dir, want)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"data/prepare.py", "gone.py"}, got); diff != "" {
		t.Errorf("changed files (-want +got):\n%s", diff)
	}
}
