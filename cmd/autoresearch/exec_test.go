package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// runStep runs a builder's command line through the CLI, as a pod would.
func runStep(t *testing.T, argv []string) (string, error) {
	t.Helper()
	if argv[0] != steps.Binary {
		t.Fatalf("argv[0] = %q, want the binary %q", argv[0], steps.Binary)
	}
	return execute(t, argv[1:]...)
}

// decodeResult reads a result file as the operator reads the termination message.
func decodeResult(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > steps.MaxResultBytes {
		t.Errorf("the result has %d bytes, more than a termination message keeps", len(data))
	}
	if err := steps.Decode(string(data), v); err != nil {
		t.Fatal(err)
	}
}

// exitCode is the code the CLI would exit with for err.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	}
	return 1
}

// ignoreRun leaves out what a test cannot pin down: durations and output tails.
var ignoreRun = cmpopts.IgnoreFields(steps.ProcessResult{}, "DurationMS", "Tail")

func TestExecTrain(t *testing.T) {
	cases := map[string]struct {
		command  []string
		timeout  time.Duration
		want     steps.TrainResult
		wantTail string
	}{
		"reads loss and memory": {
			command:  []string{"sh", "-c", `echo "round $AUTORESEARCH_ROUND limit $AUTORESEARCH_TIME_LIMIT epochs $AUTORESEARCH_EPOCH_LIMIT"; echo "step 1 loss=0.5"; echo "peak_vram_mb: 1024"`},
			want:     steps.TrainResult{FinalLoss: "0.5", MemoryGB: "1"},
			wantTail: "round 3 limit 5m0s epochs 2",
		},
		"exit code passes through": {
			command:  []string{"sh", "-c", "echo 'loss: nan'; exit 3"},
			want:     steps.TrainResult{ProcessResult: steps.ProcessResult{ExitCode: 3}, Divergence: `loss is nan: "loss: nan"`, FinalLoss: "nan"},
			wantTail: "loss: nan",
		},
		"argv without a shell": {
			command:  []string{"printf", "%s\n", "it's loss=1.5"},
			want:     steps.TrainResult{FinalLoss: "1.5"},
			wantTail: "it's loss=1.5",
		},
		"stopped at the timeout": {
			command:  []string{"sh", "-c", "echo started; sleep 30"},
			timeout:  2 * time.Second,
			want:     steps.TrainResult{ProcessResult: steps.ProcessResult{ExitCode: 143, TimedOut: true}},
			wantTail: "started",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			o := steps.ExecOptions{
				Step: steps.StepTrain, Round: 3, Workdir: dir, Timeout: time.Minute, Grace: time.Second,
				TimeLimit: 5 * time.Minute, EpochLimit: "2",
				LogPath: filepath.Join(dir, "logs", "train.log"), ResultPath: filepath.Join(dir, "result.json"),
				Command: tc.command,
			}
			if tc.timeout > 0 {
				o.Timeout = tc.timeout
			}
			_, err := runStep(t, steps.ExecArgs(steps.Binary, o))
			if got := exitCode(err); got != tc.want.ExitCode {
				t.Errorf("exit code %d (%v), want the command's %d", got, err, tc.want.ExitCode)
			}
			var got steps.TrainResult
			decodeResult(t, o.ResultPath, &got)
			if diff := cmp.Diff(tc.want, got, ignoreRun); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if !strings.Contains(got.Tail, tc.wantTail) {
				t.Errorf("tail %q lacks %q", got.Tail, tc.wantTail)
			}
			if log := readTestFile(t, o.LogPath); !strings.Contains(log, tc.wantTail) {
				t.Errorf("log lacks %q:\n%s", tc.wantTail, log)
			}
		})
	}
}

func TestExecEval(t *testing.T) {
	evalScript := "#!/bin/sh\ntouch ran\necho \"val_score: 0.75\"\n"
	sum := sha256.Sum256([]byte(evalScript))
	cases := map[string]struct {
		hashes  map[string]string
		pattern string
		// command defaults to ./eval.sh.
		command string
		want    steps.EvalResult
		wantRun bool
	}{
		"metric found": {
			hashes:  map[string]string{"eval.sh": hex.EncodeToString(sum[:])},
			want:    steps.EvalResult{Found: true, Value: "0.75"},
			wantRun: true,
		},
		"metric found with a pattern": {
			pattern: `val_score: (\S+)`,
			want:    steps.EvalResult{Found: true, Value: "0.75"},
			wantRun: true,
		},
		"a metric written to the log is not read": {
			// Past the line the wrapper ends the log with.
			command: "./eval.sh; printf '%0200d\\nval_score: 0.01\\n' 0 >> eval.log",
			want:    steps.EvalResult{Found: true, Value: "0.75"},
			wantRun: true,
		},
		"fixed file changed": {
			hashes: map[string]string{"eval.sh": strings.Repeat("0", 64)},
			want:   steps.EvalResult{FixedFilesChanged: []string{"eval.sh"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "eval.sh"), []byte(evalScript), 0o755); err != nil {
				t.Fatal(err)
			}
			o := steps.ExecOptions{
				Step: steps.StepEval, Round: 1, Workdir: dir, Timeout: time.Minute, Metric: "val_score", Pattern: tc.pattern,
				LogPath: filepath.Join(dir, "eval.log"), ResultPath: filepath.Join(dir, "result.json"),
				Command: []string{"sh", "-c", "./eval.sh"},
			}
			if tc.command != "" {
				o.Command[2] = tc.command
			}
			if tc.hashes != nil {
				o.FixedHashesFile = filepath.Join(t.TempDir(), "hashes.json")
				writeJSON(t, o.FixedHashesFile, tc.hashes)
			}
			if out, err := runStep(t, steps.ExecArgs(steps.Binary, o)); err != nil {
				t.Fatalf("exec: %v\n%s", err, out)
			}
			var got steps.EvalResult
			decodeResult(t, o.ResultPath, &got)
			if diff := cmp.Diff(tc.want, got, ignoreRun); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if _, err := os.Stat(filepath.Join(dir, "ran")); (err == nil) != tc.wantRun {
				t.Errorf("the evaluation ran: %t, want %t", err == nil, tc.wantRun)
			}
		})
	}
}

// TestExecHoldout: the holdout's result holds its metric and how it
// ended, and nothing of what it printed, which an evaluation's tail would.
func TestExecHoldout(t *testing.T) {
	for name, tc := range map[string]struct {
		command string
		want    steps.EvalResult
	}{
		"metric found": {command: "echo holdout rows 0.25; echo 'val_score: 0.5'", want: steps.EvalResult{Found: true, Value: "0.5"}},
		"failed":       {command: "echo holdout rows 0.25; exit 3", want: steps.EvalResult{ProcessResult: steps.ProcessResult{ExitCode: 3}}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			o := steps.ExecOptions{
				Step: steps.StepHoldout, Round: 1, Workdir: dir, Timeout: time.Minute, Metric: "val_score",
				LogPath: filepath.Join(dir, "holdout.log"), ResultPath: filepath.Join(dir, "result.json"),
				Command: []string{"sh", "-c", tc.command},
			}
			out, err := runStep(t, steps.ExecArgs(steps.Binary, o))
			if (err != nil) != (tc.want.ExitCode != 0) {
				t.Fatalf("exec: %v\n%s", err, out)
			}
			data, err := os.ReadFile(o.ResultPath)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), "holdout rows") {
				t.Errorf("the holdout's result %s holds its output", data)
			}
			var got steps.EvalResult
			decodeResult(t, o.ResultPath, &got)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(steps.ProcessResult{}, "DurationMS")); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExecParity(t *testing.T) {
	dir := t.TempDir()
	python := filepath.Join(dir, "python")
	fake := "#!/bin/sh\necho 'PARITY_FAIL target=rmsnorm kind=numerical detail=max abs diff 0.5' >&2\nexit 1\n"
	if err := os.WriteFile(python, []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	targets := []v1alpha1.KernelTarget{{Name: "rmsnorm", NewModule: "kernel:rmsnorm", BaselineModule: "reference:rmsnorm", Fixture: "reference:fixture"}}
	cases := map[string]struct {
		compliance *steps.ComplianceResult
		want       steps.ComplianceResult
	}{
		"completes the check's result": {
			compliance: &steps.ComplianceResult{Strategy: "fuse the norm"},
			want:       steps.ComplianceResult{Strategy: "fuse the norm", Parity: "PARITY_FAIL target=rmsnorm kind=numerical detail=max abs diff 0.5"},
		},
		"skipped after a violation": {
			compliance: &steps.ComplianceResult{Strategy: "edit eval", Violation: "modified fixed file eval.sh"},
			want:       steps.ComplianceResult{Strategy: "edit eval", Violation: "modified fixed file eval.sh"},
		},
		"without a check result": {
			want: steps.ComplianceResult{Parity: "PARITY_FAIL target=rmsnorm kind=numerical detail=max abs diff 0.5"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := steps.ExecOptions{
				Step: steps.StepParity, Workdir: dir, Targets: targets, Python: python, Timeout: time.Minute,
				ResultPath: filepath.Join(t.TempDir(), "result.json"),
			}
			if tc.compliance != nil {
				o.ComplianceFile = filepath.Join(t.TempDir(), "compliance.json")
				writeJSON(t, o.ComplianceFile, tc.compliance)
			}
			if out, err := runStep(t, steps.ExecArgs(steps.Binary, o)); err != nil {
				t.Fatalf("exec: %v\n%s", err, out)
			}
			var got steps.ComplianceResult
			decodeResult(t, o.ResultPath, &got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExecParityOutlivesNoDaemon: the candidate's kernel module, imported
// by the check, leaves a daemon that keeps writing the termination message
// (a passed check, {}); the command writes the failure after every process
// of the check is gone, so the failure is what stays.
func TestExecParityOutlivesNoDaemon(t *testing.T) {
	dir := t.TempDir()
	result := filepath.Join(dir, "result.json")
	marker := "parity-daemon-" + filepath.Base(dir)
	fake := "#!/bin/sh\nsetsid sh -c 'while :; do echo {} > \"$0\"; done' " + result + " " + marker + " </dev/null >/dev/null 2>&1 &\n" +
		"sleep 0.2\necho 'PARITY_FAIL target=k kind=numerical detail=max abs diff 0.5' >&2\nexit 1\n"
	python := filepath.Join(dir, "python")
	if err := os.WriteFile(python, []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Command("pkill", "-f", marker).Run() })
	o := steps.ExecOptions{
		Step: steps.StepParity, Workdir: dir, Python: python, Timeout: time.Minute, ResultPath: result,
		Targets: []v1alpha1.KernelTarget{{Name: "k", NewModule: "kernel:k", BaselineModule: "reference:k", Fixture: "reference:fixture"}},
	}
	if out, err := runStep(t, steps.ExecArgs(steps.Binary, o)); err != nil {
		t.Fatalf("exec: %v\n%s", err, out)
	}
	// Time for a daemon that outlived the check to write again.
	time.Sleep(500 * time.Millisecond)
	var got steps.ComplianceResult
	decodeResult(t, result, &got)
	if !strings.HasPrefix(got.Parity, "PARITY_FAIL") {
		t.Errorf("result %+v: a process of the check outlived it and wrote the result", got)
	}
}

func TestExecRejects(t *testing.T) {
	dir := t.TempDir()
	result := filepath.Join(dir, "result.json")
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"unknown step":         {[]string{"exec", "--step=lint", "--result=" + result, "--", "true"}, `--step must be train, eval, holdout or parity, got "lint"`},
		"no command":           {[]string{"exec", "--step=train", "--timeout=1m", "--result=" + result}, "no command to run"},
		"no timeout":           {[]string{"exec", "--step=eval", "--result=" + result, "--", "true"}, "--timeout must be positive"},
		"a command for parity": {[]string{"exec", "--step=parity", "--result=" + result, "--", "true"}, "the parity step runs no command"},
		"unreadable hashes":    {[]string{"exec", "--step=eval", "--timeout=1m", "--fixed-hashes=" + filepath.Join(dir, "none.json"), "--result=" + result, "--", "true"}, "--fixed-hashes"},
		"malformed targets":    {[]string{"exec", "--step=parity", "--targets=[{", "--result=" + result}, "--targets"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := execute(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tc.wantErr)
			}
			if _, err := os.Stat(result); err == nil {
				t.Errorf("a result was written for a command that did not run")
			}
		})
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestExecMakesItselfUndumpable: the step wrapper runs beside candidate
// code as the same user (kernel parity, training), which must not trace it
// nor reach its memory or descriptors through /proc to change the result
// it writes. exec runs in a process of its own here, as this one is
// undumpable once a test has run exec or the agent in it.
func TestExecMakesItselfUndumpable(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("PR_SET_DUMPABLE is Linux's")
	}
	if os.Getenv("AUTORESEARCH_TEST_EXEC_PROCESS") == "1" {
		before, err := dumpable()
		fmt.Printf("before: dumpable=%t err=%v\n", before, err)
		dir := t.TempDir()
		if _, err := execute(t, "exec", "--step", "train", "--round", "1", "--workdir", dir, "--timeout", "10s",
			"--log", filepath.Join(dir, "train.log"), "--result", filepath.Join(dir, "result"), "--", "true"); err != nil {
			t.Fatal(err)
		}
		d, err := dumpable()
		fmt.Printf("after: dumpable=%t err=%v\n", d, err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestExecMakesItselfUndumpable$", "-test.v")
	cmd.Env = append(os.Environ(), "AUTORESEARCH_TEST_EXEC_PROCESS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// A process that starts undumpable would prove nothing.
	if !strings.Contains(string(out), "before: dumpable=true err=<nil>") {
		t.Fatalf("the test process was not dumpable before exec ran:\n%s", out)
	}
	if !strings.Contains(string(out), "after: dumpable=false err=<nil>") {
		t.Errorf("after exec the process is dumpable:\n%s", out)
	}
}

// TestAgentMakesItselfUndumpable: the built-in agent's shell tool runs what
// the model chooses, as the agent's user and without the API key in its
// environment; the agent's own environment holds the key, and a dumpable
// agent's /proc/<pid>/environ would give it away. The agent runs in a
// process of its own here, as this one may be undumpable already.
func TestAgentMakesItselfUndumpable(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("PR_SET_DUMPABLE is Linux's")
	}
	if os.Getenv("AUTORESEARCH_TEST_AGENT_PROCESS") == "1" {
		// It stops at the missing model, after making itself undumpable.
		_, _ = execute(t, "researcher", "agent")
		d, err := dumpable()
		fmt.Printf("dumpable=%t err=%v\n", d, err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAgentMakesItselfUndumpable$", "-test.v")
	cmd.Env = append(os.Environ(), "AUTORESEARCH_TEST_AGENT_PROCESS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "dumpable=false err=<nil>") {
		t.Errorf("the agent left its process dumpable:\n%s", out)
	}
}
