//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
)

// The toy experiment of the holdout test: training writes SCORE, the
// evaluation prints it, and the hidden holdout runs the candidate's code
// again and scores it as the evaluation does up to 25 and badly beyond,
// where the candidate only fits the evaluation. Its values end in 918273,
// which nothing else prints. The overfit candidate also tries to copy the
// holdout's files wherever its holdout pod lets it write, for a later
// Researcher to find.
var holdoutToy = map[string]string{
	".gitignore": "out.txt\n",
	"train.sh":   "#!/bin/sh\nSCORE=10\necho \"step 1 loss=0.5\"\necho $SCORE > out.txt\n",
	"eval.sh":    "#!/bin/sh\ntest -f out.txt || { echo 'no model' >&2; exit 1; }\necho \"score: $(cat out.txt)\"\n",
	"plan.yaml": `rounds:
  - strategy: "raise SCORE to 20"
    edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=20"}]
  - strategy: "raise SCORE to 30, fitted to the evaluation"
    edits:
      - file: train.sh
        old: "SCORE=20"
        new: "SCORE=30\nif [ -n \"$AUTORESEARCH_HOLDOUT_DIR\" ]; then cp -rL \"$AUTORESEARCH_HOLDOUT_DIR\" stolen && cp -rL \"$AUTORESEARCH_HOLDOUT_DIR\" \"$HOME/stolen\" && echo copied the holdout; fi"
  - strategy: "raise SCORE to 25"
    edits: [{file: train.sh, old: "SCORE=20", new: "SCORE=25"}]
`,
}

const holdoutScript = `#!/bin/sh
./train.sh
read rows < "$AUTORESEARCH_HOLDOUT_DIR/data.txt"
s=$(cat out.txt)
if [ "$s" -gt 25 ]; then s=1; fi
echo "scoring $rows"
echo "holdout_score: $s.918273"
`

// TestHoldoutOnCluster runs the hidden holdout from a ConfigMap in its own
// pod: the candidate that only fits the evaluation is overfit and rolled
// back, the genuine improvements are kept, status.holdout shows the trend,
// and neither the workspace volume, which every Researcher mounts, nor any
// other pod's spec holds the holdout's values, data, script or directory.
func TestHoldoutOnCluster(t *testing.T) {
	parallel(t)
	const (
		n      = "holdout"
		hidden = "/srv/hidden-holdout-q9"
	)
	secrets := []string{"918273", "HOLDOUT-ROWS-5b2e", "hidden-holdout-q9", "holdout-q9-files", "holdout.sh"}
	install(t)
	m := startManager(t)
	defer m.stop()
	url := clusterSource(t, n, holdoutToy)
	script, err := json.Marshal(holdoutScript)
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: holdout-q9-files, namespace: %s}
data:
  holdout.sh: %s
  data.txt: "HOLDOUT-ROWS-5b2e"
`, ns, script), "apply", "-f", "-")
	defer kubectl(t, "", "delete", "configmap", "holdout-q9-files", "-n", ns)
	// The workspace claim outlives the experiment (reclaimPolicy Retain).
	defer kubectl(t, "", "delete", "pvc", n+"-workspace", "-n", ns, "--ignore-not-found")
	kubectl(t, toyManifest(n, url, 3)+fmt.Sprintf(`  holdout:
    command: 'sh "$AUTORESEARCH_HOLDOUT_DIR/holdout.sh"'
    metric: holdout_score
    tolerance: "0.5"
    dir: %s
    volume:
      configMap: {name: holdout-q9-files}
`, hidden), "apply", "-f", "-")
	defer kubectl(t, "", "delete", "autoresearch", n, "-n", ns, "--wait=true", "--timeout=120s")

	// Every pod of the experiment, as it was made: finished rounds' pods
	// are deleted as the loop goes on.
	seen := seenPods(n)
	eventually(t, "the experiment to finish", 15*time.Minute, func() bool {
		p := experimentNamed(t, n).Status.Phase
		return p == v1alpha1.PhaseSucceeded || p == v1alpha1.PhaseFailed
	})
	pods := seen.close()
	ar := experimentNamed(t, n)
	var verdicts []string
	for _, h := range ar.Status.History {
		verdicts = append(verdicts, string(h.Verdict))
	}
	if got := strings.Join(verdicts, " "); got != "baseline improved overfit improved" {
		t.Fatalf("verdicts %q (phase %s: %s), want baseline improved overfit improved", got, ar.Status.Phase, ar.Status.Message)
	}
	if ar.Status.Best == nil || ar.Status.Best.Value != "25" || ar.Status.Best.Round != 3 {
		t.Errorf("best %+v, want 25 from round 3", ar.Status.Best)
	}
	var trend []string
	if h := ar.Status.Holdout; h != nil {
		for _, r := range h.Readings {
			trend = append(trend, fmt.Sprintf("%d:%s:%s", r.Round, r.Value, r.Verdict))
		}
	}
	if got, want := strings.Join(trend, " "), "0:10.918273:baseline 1:20.918273:improved 2:1.918273:overfit 3:25.918273:improved"; got != want {
		t.Errorf("status.holdout readings %q, want %q", got, want)
	}

	// What the pods of the experiment were told.
	var researchers, holdouts int
	for name, pod := range pods {
		data, err := json.Marshal(pod.Spec)
		if err != nil {
			t.Fatal(err)
		}
		switch pod.Labels["autoresearch.dev/step"] {
		case "holdout":
			holdouts++
			checkHoldoutPod(t, pod, hidden)
			continue
		case "researcher":
			researchers++
		}
		for _, s := range append(secrets, "AUTORESEARCH_HOLDOUT_DIR") {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("pod %s's spec names the holdout (%q)", name, s)
			}
		}
	}
	if researchers != 3 || holdouts != 4 {
		t.Errorf("saw %d Researcher and %d holdout pods, want 3 and 4", researchers, holdouts)
	}
	// The user reads the holdout's log where the node keeps its pods'
	// logs; the overfit candidate's attack ran there.
	var attacked bool
	for _, pod := range pods {
		if pod.Labels["autoresearch.dev/step"] == "holdout" && pod.Labels["autoresearch.dev/round"] == "2" {
			log := containerLog(t, pod, "holdout")
			attacked = bytes.Contains(log, []byte("copied the holdout")) && bytes.Contains(log, []byte("holdout_score: 1.918273"))
		}
	}
	if !attacked {
		t.Error("the overfit candidate's copy of the holdout did not run in its holdout pod")
	}

	// What a Researcher can read: the whole workspace volume.
	scanned := scanWorkspace(t, n+"-workspace", secrets)
	t.Logf("scanned %d files of the workspace; %d pods' specs", scanned, len(pods))
}

// containerLog is what the container of pod wrote, as the node keeps it:
// the process node in its state directory, the real node through kubectl
// while the pod is there.
func containerLog(t *testing.T, pod corev1.Pod, container string) []byte {
	t.Helper()
	if onRealNode() {
		return []byte(kubectl(t, "", "logs", pod.Name, "-n", ns, "-c", container))
	}
	log, err := os.ReadFile(filepath.Join(e2eDir, "state/node/pods", string(pod.UID), "containers", container, "log"))
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// scanWorkspace reports every file of the claim's volume on the node
// whose path or content holds one of secrets, and returns how many files
// it read.
func scanWorkspace(t *testing.T, claim string, secrets []string) int {
	t.Helper()
	volume := strings.TrimSpace(kubectl(t, "", "get", "pvc", claim, "-n", ns, "-o", "jsonpath={.spec.volumeName}"))
	dir := strings.TrimSpace(kubectl(t, "", "get", "pv", volume, "-o", "jsonpath={.spec.hostPath.path}"))
	return gittest.ScanForSecrets(t, dir, secrets)
}

// checkHoldoutPod checks that the holdout's pod mounts the ConfigMap
// read-only at its dir and nothing of the workspace but, in its checkout
// init container, read-only.
func checkHoldoutPod(t *testing.T, pod corev1.Pod, dir string) {
	t.Helper()
	claims := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims[v.Name] = true
		}
	}
	var atDir bool
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		for _, m := range c.VolumeMounts {
			if claims[m.Name] && (!m.ReadOnly || c.Name != "checkout") {
				t.Errorf("%s: container %s mounts the claim volume %s at %s (read-only: %t)", pod.Name, c.Name, m.Name, m.MountPath, m.ReadOnly)
			}
			if m.MountPath == dir {
				atDir = m.ReadOnly && c.Name == "holdout"
			}
		}
	}
	if !atDir {
		t.Errorf("%s does not mount the holdout read-only at %s in its holdout container", pod.Name, dir)
	}
}

// toyRepo commits files into a fresh git repository.
func toyRepo(t *testing.T, files map[string]string) string {
	dir := filepath.Join(t.TempDir(), "repo")
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "commit", "-q", "-m", "toy"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

// podRecorder keeps every pod of an experiment it sees, once a second.
type podRecorder struct {
	n    string
	mu   sync.Mutex
	pods map[string]corev1.Pod
	stop chan struct{}
	done chan struct{}
}

func seenPods(n string) *podRecorder {
	r := &podRecorder{n: n, pods: map[string]corev1.Pod{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			r.record()
			select {
			case <-r.stop:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return r
}

func (r *podRecorder) record() {
	out, err := tryKubectl("", "get", "pods", "-n", ns, "-l", "autoresearch.dev/experiment="+r.n, "-o", "json")
	if err != nil {
		return
	}
	var list corev1.PodList
	if json.Unmarshal([]byte(out), &list) != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range list.Items {
		r.pods[p.Name] = p
	}
}

// close stops recording and returns the pods seen, by name.
func (r *podRecorder) close() map[string]corev1.Pod {
	close(r.stop)
	<-r.done
	r.record()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pods
}
