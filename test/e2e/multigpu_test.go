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

// debianTorchrun is a torchrun for Debian's python3-torch, whose own fails
// before it starts a process. Bookworm's (PyTorch 1.13 on Python 3.11)
// parses its default --redirects 0 by iterating the members of a Flag enum,
// and Python 3.11 leaves NONE (0) out. Trixie's (2.6) is built without
// libuv, which every TCPStore asks for unless told otherwise, and neither
// its rendezvous nor the workers' init_process_group tell it (USE_LIBUV=0
// does not reach them). It runs PyTorch's torchrun, after mending what is
// broken; with --worker SCRIPT, it runs a worker's SCRIPT, mended the same.
const debianTorchrun = `import runpy
import sys

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing import Std

if Std.from_str("0") is None:
    parse = Std.from_str
    Std.from_str = lambda v: Std.NONE if v == "0" else parse(v)

if tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 4):

    class TCPStore(dist.TCPStore):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    dist.TCPStore = TCPStore
    sys.modules["torch.distributed.rendezvous"].TCPStore = TCPStore

if sys.argv[1:2] == ["--worker"]:
    sys.argv = sys.argv[2:]
    runpy.run_path(sys.argv[0], run_name="__main__")
else:
    from torch.distributed.run import main

    sys.exit(main())
`

// TestTorchrunOnEightGPUs runs examples/nanogpt-torch's training with
// torchrun, one process per GPU, in a training pod that asks for 8 GPUs,
// on a node that has them (E2E_GPUS, 8 by default). On the real node the
// kubelet allocates the GPUs through cmd/fake-gpu-plugin, and training
// runs in the PyTorch image; the process node's GPUs are a count, and its
// pods run this machine's python3. Either way the processes train on the
// CPU over gloo, as torchrun starts them on a GPU node over NCCL.
func TestTorchrunOnEightGPUs(t *testing.T) {
	const (
		n    = "torchrun"
		gpus = 8
	)
	// The host's userland plays the process node's training image: its
	// python3 has torch.
	node, env := processNode, `env: [{name: PATH, value: "/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin"}]`
	if onRealNode() {
		node, env = realNode, "image: "+realNodeImage(t, "torch")
	} else if exec.Command("/usr/bin/python3", "-c", "import torch.distributed.run").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no python3 with torch: install Debian's python3-torch (make test does)")
		}
		t.Skip("no python3 with torch")
	}
	if have := nodeGPUs(t, node); have < gpus {
		t.Skipf("%s has %d nvidia.com/gpu, fewer than %d: E2E_GPUS=%d", node, have, gpus, gpus)
	}
	install(t)
	m := startManager(t)
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
	if err := os.WriteFile(filepath.Join(repo, "torchrun.py"), []byte(debianTorchrun), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "commit", "-q", "-m", "forty steps, and a torchrun"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	url := "file://" + repo
	if onRealNode() {
		url = serveOnRealNode(t, ns, n, repo)
	}

	kubectl(t, fmt.Sprintf(`apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata: {name: %s, namespace: %s}
spec:
  researchQuestion: "How low can a tiny GPT push bits per byte on eight GPUs?"
  maxRounds: 1
  source:
    git: {url: %q, ref: main}
  workspace: {size: 1Gi}
  fixed:
    files: [prepare.py, eval.py, reference_kernels.py, scripted-researcher.yaml, torchrun.py]
    timeLimit: 5m
  variable:
    files: [train.py, kernels.py]
  train:
    command: "echo probe visible-devices=$NVIDIA_VISIBLE_DEVICES && python3 prepare.py && python3 torchrun.py --standalone --nproc_per_node=%d torchrun.py --worker train.py"
    outputs: [ckpt]
    gpus: %d
    %s
  eval:
    metric: val_bpb
    direction: minimize
    command: "python3 prepare.py && python3 eval.py"
  researcher:
    command: "autoresearch researcher scripted --plan scripted-researcher.yaml"
    timeout: 60s
`, n, ns, url, gpus, gpus, env), "apply", "-f", "-")
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
		log := kubectl(t, "", "logs", p.Name, "-n", ns, "-c", "train")
		if !strings.Contains(log, fmt.Sprintf("processes: %d ", gpus)) {
			t.Errorf("training pod %s did not train in %d processes:\n%s", p.Name, gpus, log)
		}
		if !onRealNode() {
			continue
		}
		// The kubelet, not only the scheduler, gave the container its GPUs.
		devices := visibleDevices(probes(log)["visible-devices"])
		if err := distinctDevices(devices, gpus, nodeGPUs(t, node)); err != nil {
			t.Errorf("training pod %s: NVIDIA_VISIBLE_DEVICES %q: %v", p.Name, devices, err)
		}
		t.Logf("training pod %s: NVIDIA_VISIBLE_DEVICES %q", p.Name, devices)
	}
}
