//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// processNode is the node cluster.sh starts by default.
const processNode = "process-node"

// debianTorchrun is a torchrun for Debian bookworm's python3-torch
// (PyTorch 1.13 on Python 3.11), whose own fails before it starts a
// process: it parses its default --redirects 0 by iterating the members of
// a Flag enum, and Python 3.11 leaves NONE (0) out. It runs PyTorch's
// torchrun, after mending the parse where it is broken.
const debianTorchrun = `#!/usr/bin/python3
import sys

from torch.distributed.elastic.multiprocessing import Std
from torch.distributed.run import main

if Std.from_str("0") is None:
    parse = Std.from_str
    Std.from_str = lambda v: Std.NONE if v == "0" else parse(v)
sys.exit(main())
`

// TestTorchrunOnEightGPUs runs examples/nanogpt-torch's training with
// torchrun, one process per GPU, in training and evaluation pods that ask
// for 8 GPUs, on a node that has them (E2E_GPUS, 8 by default). The
// process-kubelet's GPUs are a count: the processes train on the CPU over
// gloo, as torchrun starts them on a GPU node over NCCL.
func TestTorchrunOnEightGPUs(t *testing.T) {
	const (
		n    = "torchrun"
		gpus = 8
	)
	if exec.Command("/usr/bin/python3", "-c", "import torch.distributed.run").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no python3 with torch: install Debian's python3-torch (make test does)")
		}
		t.Skip("no python3 with torch")
	}
	if have := nodeGPUs(t, processNode); have < gpus {
		t.Skipf("%s has %d nvidia.com/gpu, fewer than %d: E2E_GPUS=%d make e2e", processNode, have, gpus, gpus)
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "torchrun"), []byte(debianTorchrun), 0o755); err != nil {
		t.Fatal(err)
	}
	install(t)
	m := &manager{t: t}
	m.start()
	defer m.stop()

	// Forty steps rather than two hundred: the eight processes share this
	// machine's cores, and most of their time is importing torch.
	repo := sourceRepo(t, "nanogpt-torch")
	train := filepath.Join(repo, "train.py")
	code, err := os.ReadFile(train)
	if err != nil {
		t.Fatal(err)
	}
	fewer := strings.Replace(string(code), "max_steps = 200\n", "max_steps = 40\n", 1)
	if fewer == string(code) {
		t.Fatal("train.py has no max_steps = 200 to lower")
	}
	if err := os.WriteFile(train, []byte(fewer), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", repo, "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "commit", "-q", "-am", "forty steps").CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v: %s", err, out)
	}

	kubectl(t, fmt.Sprintf(`apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata: {name: %s, namespace: %s}
spec:
  researchQuestion: "How low can a tiny GPT push bits per byte on eight GPUs?"
  maxRounds: 1
  source:
    git: {url: "file://%s", ref: main}
  workspace: {size: 1Gi}
  fixed:
    files: [prepare.py, eval.py, reference_kernels.py, scripted-researcher.yaml]
    timeLimit: 5m
  variable:
    files: [train.py, kernels.py]
  train:
    command: "python3 prepare.py && torchrun --standalone --nproc_per_node=%d train.py"
    outputs: [ckpt]
    gpus: %d
    # The host's userland plays the training image: its python3 has torch.
    env: [{name: PATH, value: "%s:/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin"}]
  eval:
    metric: val_bpb
    direction: minimize
    command: "python3 prepare.py && python3 eval.py"
  researcher:
    command: "autoresearch researcher scripted --plan scripted-researcher.yaml"
    timeout: 60s
`, n, ns, repo, gpus, gpus, bin), "apply", "-f", "-")
	defer kubectl(t, "", "delete", "autoresearch", n, "-n", ns, "--wait=true", "--timeout=120s")

	start := time.Now()
	eventually(t, "the torchrun experiment to finish", 10*time.Minute, func() bool {
		p := experimentNamed(t, n).Status.Phase
		return p == v1alpha1.PhaseSucceeded || p == v1alpha1.PhaseFailed
	})
	t.Logf("baseline and one round in %s", time.Since(start).Round(time.Second))
	ar := experimentNamed(t, n)
	var verdicts []string
	for _, h := range ar.Status.History {
		verdicts = append(verdicts, fmt.Sprintf("%s %s", h.Verdict, h.Value))
	}
	t.Logf("rounds: %q", verdicts)
	// Round 1 of the plan raises the learning rate, which helps.
	if len(ar.Status.History) != 2 || ar.Status.History[0].Verdict != v1alpha1.VerdictBaseline || ar.Status.History[1].Verdict != v1alpha1.VerdictImproved {
		t.Errorf("rounds %q (phase %s: %s), want the baseline and improved", verdicts, ar.Status.Phase, ar.Status.Message)
	}

	sel := "autoresearch.dev/experiment=" + n + ",autoresearch.dev/step=train"
	var list corev1.PodList
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "pods", "-n", ns, "-l", sel, "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		t.Fatal("no training pod is left to check")
	}
	for _, p := range list.Items {
		if req := p.Spec.Containers[0].Resources.Limits[gpu]; req.Value() != gpus {
			t.Errorf("training pod %s asks for %s GPUs, want %d", p.Name, req.String(), gpus)
		}
		if log := kubectl(t, "", "logs", p.Name, "-n", ns, "-c", "train"); !strings.Contains(log, fmt.Sprintf("processes: %d ", gpus)) {
			t.Errorf("training pod %s did not train in %d processes:\n%s", p.Name, gpus, log)
		}
	}
}
