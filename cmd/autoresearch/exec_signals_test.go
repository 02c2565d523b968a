package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// TestExecOutlastsTheSignalsOfItsCommand: in its pod the step wrapper is
// the container's first process, which training may signal. Training that
// forges a result in the wrapper's place and then sends the wrapper a
// hangup, quit or user signal must find its forgery overwritten by the
// wrapper's own result, read from its output.
func TestExecOutlastsTheSignalsOfItsCommand(t *testing.T) {
	if dir := os.Getenv("AUTORESEARCH_TEST_EXEC_DIR"); dir != "" {
		result := filepath.Join(dir, "result.json")
		forge := fmt.Sprintf(`printf '{"exitCode":0,"finalLoss":"0.0001"}' > %s; : > %s; sleep 2; echo loss=0.5`,
			result, filepath.Join(dir, "forged"))
		_, err := runStep(t, steps.ExecArgs(steps.Binary, steps.ExecOptions{
			Step: steps.StepTrain, Round: 1, Workdir: dir, Timeout: time.Minute, Grace: time.Second, TimeLimit: time.Minute,
			LogPath: filepath.Join(dir, "train.log"), ResultPath: result, Command: []string{"sh", "-c", forge},
		}))
		fmt.Printf("exec: %v\n", err)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestExecOutlastsTheSignalsOfItsCommand$", "-test.v")
	cmd.Env = append(os.Environ(), "AUTORESEARCH_TEST_EXEC_DIR="+dir)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "forged")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the command never forged its result:\n%s", out.String())
		}
	}
	for _, s := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2} {
		if err := cmd.Process.Signal(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "exec: <nil>") {
		t.Errorf("the wrapper did not finish (%v):\n%s", err, out.String())
	}
	var got steps.TrainResult
	decodeResult(t, filepath.Join(dir, "result.json"), &got)
	if got.FinalLoss != "0.5" {
		t.Errorf("the result holds final loss %q, want the output's 0.5", got.FinalLoss)
	}
}
