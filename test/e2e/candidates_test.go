//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
)

// candidatesToy trains for a few seconds, so that two candidates' training
// overlaps when both have a GPU, and plays two candidates a round: in round
// 1 they change different lines, so that spec.combine applies both.
var candidatesToy = map[string]string{
	".gitignore": "out.txt\n",
	"train.sh":   "#!/bin/sh\necho \"probe visible-devices=$NVIDIA_VISIBLE_DEVICES\"\nSCORE=10\nsleep 4\necho \"step 1 loss=0.5\"\nBONUS=0\necho $((SCORE+BONUS)) > out.txt\n",
	"eval.sh":    "#!/bin/sh\ntest -f out.txt || { echo 'no model' >&2; exit 1; }\necho \"score: $(cat out.txt)\"\n",
	"plan.yaml": `rounds:
  - strategy: "unused"
    candidates:
      - strategy: "raise SCORE to 20"
        edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=20"}]
      - strategy: "add a BONUS of 5"
        edits: [{file: train.sh, old: "BONUS=0", new: "BONUS=5"}]
  - strategy: "unused"
    candidates:
      - strategy: "score every model 99"
        edits: [{file: eval.sh, old: "score: $(cat out.txt)", new: "score: 99"}]
      - strategy: "raise SCORE to 40"
        edits: [{file: train.sh, old: "SCORE=20", new: "SCORE=40"}]
`,
}

// TestCandidatesOnCluster runs rounds of two candidates on a node of two
// GPUs or more, through kubectl: each round's two candidates train at once,
// each candidate gets its own verdict, round 1's two improvements are
// combined, and each round commits its best; the kubectl plugin shows each
// candidate's logs and change. On the real node the kubelet gives the two
// candidates that train at once a GPU each, not the same one.
func TestCandidatesOnCluster(t *testing.T) {
	const n = "candidates"
	p := buildPlugin(t)
	install(t)
	m := startManager(t)
	defer m.stop()
	url := clusterSource(t, n, candidatesToy)
	defer kubectl(t, "", "delete", "pvc", n+"-workspace", "-n", ns, "--ignore-not-found")
	kubectl(t, toyManifest(n, url, 2)+"  candidates: 2\n  combine: true\n", "apply", "-f", "-")
	defer kubectl(t, "", "delete", "autoresearch", n, "-n", ns, "--wait=true", "--timeout=120s")

	// How many of the experiment's training pods run at once, and the most
	// GPUs its status says it uses, as kubectl shows them.
	type seenSoFar struct {
		most, gpus int
		badGPUs    string
	}
	stop, done := make(chan struct{}), make(chan seenSoFar)
	go func() {
		var s seenSoFar
		for {
			out, err := tryKubectl("", "get", "pods", "-n", ns, "-l", "autoresearch.dev/experiment="+n+",autoresearch.dev/step=train",
				"-o", "jsonpath={range .items[*]}{.spec.nodeName}{\" \"}{.status.phase}{\"\\n\"}{end}")
			if err == nil {
				s.most = max(s.most, runningOnANode(out))
			}
			// An empty status.gpus is none in use.
			if out, err := tryKubectl("", "get", "autoresearch", n, "-n", ns, "-o", "jsonpath={.status.gpus}"); err == nil && strings.TrimSpace(out) != "" {
				g, err := strconv.Atoi(strings.TrimSpace(out))
				if err != nil {
					s.badGPUs = out
				}
				s.gpus = max(s.gpus, g)
			}
			select {
			case <-stop:
				done <- s
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	eventually(t, "the experiment to finish", 10*time.Minute, func() bool {
		p := experimentNamed(t, n).Status.Phase
		return p == v1alpha1.PhaseSucceeded || p == v1alpha1.PhaseFailed
	})
	close(stop)
	seen := <-done
	if seen.badGPUs != "" {
		t.Errorf("status.gpus = %q, not a number", seen.badGPUs)
	}
	most, gpus := seen.most, seen.gpus

	ar := experimentNamed(t, n)
	var records, insights []string
	for _, h := range ar.Status.History {
		records = append(records, fmt.Sprintf("%d%s:%s", h.Round, h.Candidate, h.Verdict))
		insights = append(insights, fmt.Sprintf("%d%s: %s", h.Round, h.Candidate, h.Insight))
	}
	if got, want := strings.Join(records, " "), "0:baseline 1a:superseded 1b:superseded 1c:improved 2a:compliance_failed 2b:improved"; got != want {
		t.Fatalf("records %q (phase %s: %s), want %q; insights:\n%s", got, ar.Status.Phase, ar.Status.Message, want, strings.Join(insights, "\n"))
	}
	if ar.Status.Best == nil || ar.Status.Best.Value != "45" || ar.Status.Best.Round != 2 {
		t.Errorf("best %+v, want 45 from round 2: SCORE=40 on round 1's combined BONUS=5", ar.Status.Best)
	}
	if most != 2 {
		t.Errorf("at most %d training Jobs ran at once, want the two candidates' together, one GPU each", most)
	}
	if gpus != 2 {
		t.Errorf("status.gpus was at most %d, want the two candidates' two GPUs", gpus)
	}
	if onRealNode() {
		overlapsOnDistinctGPUs(t, "autoresearch.dev/experiment="+n)
	}
	if out := kubectl(t, "", "get", "autoresearch", n, "-n", ns); !strings.Contains(out, "CANDIDATES") || !strings.Contains(out, "GPUS") {
		t.Errorf("kubectl get shows no candidates or GPUs column:\n%s", out)
	}

	work := t.TempDir()
	if out := p.run(work, "logs", n, "--round", "1", "--candidate", "c", "--step", "train"); !strings.Contains(out, "step 1 loss=0.5") {
		t.Errorf("candidate 1c's training log:\n%s", out)
	}
	if out := p.run(work, "diff", n, "--round", "1", "--candidate", "c"); !strings.Contains(out, "+SCORE=20") || !strings.Contains(out, "+BONUS=5") {
		t.Errorf("candidate 1c's change, want 1a's and 1b's together:\n%s", out)
	}
	if _, errOut, err := p.try(work, "logs", n, "--round", "1"); err == nil || !strings.Contains(errOut, "name one with --candidate") {
		t.Errorf("logs of a round of candidates without one: %v\n%s", err, errOut)
	}
}

// overlapsOnDistinctGPUs checks that the experiment's training pods that
// ran at once, of which there must be some, were given different GPUs, as
// the training command printed them.
func overlapsOnDistinctGPUs(t *testing.T, sel string) {
	t.Helper()
	var list corev1.PodList
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "pods", "-n", ns, "-l", sel+",autoresearch.dev/step=train", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	type run struct {
		pod, device string
		ran         *corev1.ContainerStateTerminated
	}
	var runs []run
	for _, p := range list.Items {
		r := run{pod: p.Name, ran: terminated(map[string]corev1.Pod{p.Name: p}, p.Name, "train")}
		if r.ran == nil {
			t.Errorf("training pod %s did not end", p.Name)
			continue
		}
		r.device = probes(kubectl(t, "", "logs", p.Name, "-n", ns, "-c", "train"))["visible-devices"]
		if err := distinctDevices(visibleDevices(r.device), 1, nodeGPUs(t, realNode)); err != nil {
			t.Errorf("training pod %s: NVIDIA_VISIBLE_DEVICES %q: %v", p.Name, r.device, err)
		}
		runs = append(runs, r)
	}
	var together []string
	for i, a := range runs {
		for _, b := range runs[i+1:] {
			if !a.ran.StartedAt.Before(&b.ran.FinishedAt) || !b.ran.StartedAt.Before(&a.ran.FinishedAt) {
				continue
			}
			together = append(together, fmt.Sprintf("%s on GPU %s with %s on GPU %s", a.pod, a.device, b.pod, b.device))
			if a.device == b.device {
				t.Errorf("training pods %s and %s ran at once on the same GPU %q", a.pod, b.pod, a.device)
			}
		}
	}
	if len(together) == 0 {
		t.Errorf("none of the %d training pods ran at the same time as another", len(runs))
	}
	t.Logf("training that ran at once: %s", strings.Join(together, "; "))
}

// pipelineToy trains for a few seconds; its rounds change lines far apart,
// so that a round researched on an older best merges onto the newer one.
var pipelineToy = map[string]string{
	".gitignore": "out.txt\n",
	"train.sh":   "#!/bin/sh\nSCORE=10\nsleep 5\necho \"step 1 loss=0.5\"\nBONUS=0\necho $((SCORE+BONUS)) > out.txt\n",
	"eval.sh":    "#!/bin/sh\ntest -f out.txt || { echo 'no model' >&2; exit 1; }\necho \"score: $(cat out.txt)\"\n",
	"plan.yaml": `rounds:
  - strategy: "raise SCORE to 20"
    edits: [{file: train.sh, old: "SCORE=10", new: "SCORE=20"}]
  - strategy: "add a BONUS of 5"
    edits: [{file: train.sh, old: "BONUS=0", new: "BONUS=5"}]
  - strategy: "raise SCORE to 30"
    edits: [{file: train.sh, old: "SCORE=20", new: "SCORE=30"}]
`,
}

// toyManifest is experiment n of maxRounds rounds on a shell toy cloned
// from url, as candidatesToy is: train.sh, the variable file, writes
// out.txt, eval.sh prints its score, and plan.yaml plays the Researcher.
func toyManifest(n, url string, maxRounds int) string {
	return fmt.Sprintf(`apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata: {name: %s, namespace: %s}
spec:
  researchQuestion: "Does a higher SCORE help?"
  maxRounds: %d
  baseline: {runs: 1}
  source:
    git: {url: "%s", ref: main}
  workspace: {size: 1Gi}
  fixed:
    files: [eval.sh, plan.yaml]
    timeLimit: 60s
  variable:
    files: [train.sh]
  train:
    command: "./train.sh"
    outputs: [out.txt]
    gpus: 1
  eval:
    metric: score
    direction: maximize
    command: "./eval.sh"
  researcher:
    command: "autoresearch researcher scripted --plan plan.yaml"
    timeout: 60s
`, n, ns, maxRounds, url)
}

// TestPipelineOnCluster runs spec.pipeline through kubectl: each round's
// Researcher pod runs while the round before (or the baseline) trains, and is carried onto
// the best that round commits. Deleted, the experiment leaves its results
// on its claim's volume.
func TestPipelineOnCluster(t *testing.T) {
	const n = "pipeline"
	install(t)
	m := startManager(t)
	defer m.stop()
	url := clusterSource(t, n, pipelineToy)
	defer kubectl(t, "", "delete", "pvc", n+"-workspace", "-n", ns, "--ignore-not-found")
	kubectl(t, toyManifest(n, url, 3)+"  pipeline: true\n", "apply", "-f", "-")
	defer kubectl(t, "", "delete", "autoresearch", n, "-n", ns, "--wait=true", "--timeout=120s", "--ignore-not-found")

	seen := seenPods(n)
	eventually(t, "the experiment to finish", 10*time.Minute, func() bool {
		p := experimentNamed(t, n).Status.Phase
		return p == v1alpha1.PhaseSucceeded || p == v1alpha1.PhaseFailed
	})
	pods := seen.close()
	ar := experimentNamed(t, n)
	var records []string
	for _, h := range ar.Status.History {
		records = append(records, fmt.Sprintf("%d:%s", h.Round, h.Verdict))
	}
	if got, want := strings.Join(records, " "), "0:baseline 1:improved 2:improved 3:improved"; got != want {
		t.Fatalf("records %q (phase %s: %s), want %q", got, ar.Status.Phase, ar.Status.Message, want)
	}
	if ar.Status.Best == nil || ar.Status.Best.Value != "35" {
		t.Errorf("best %+v, want 35: round 3's SCORE on round 2's BONUS", ar.Status.Best)
	}
	// Round 1's Researcher runs while the baseline, round 0, trains.
	for r := 0; r <= 2; r++ {
		researcher := terminated(pods, fmt.Sprintf("%s-r%d-researcher", n, r+1), "researcher")
		train := terminated(pods, "", fmt.Sprintf("%s-r%d-train", n, r))
		if researcher == nil || train == nil {
			t.Errorf("round %d's Researcher or round %d's training was not seen to end", r+1, r)
			continue
		}
		if !researcher.StartedAt.Before(&train.FinishedAt) {
			t.Errorf("round %d's Researcher started at %s, after round %d's training ended at %s", r+1, researcher.StartedAt, r, train.FinishedAt)
		}
	}
	t.Run("deleting the experiment leaves its results on the claim's volume", func(t *testing.T) { retained(t, ar) })
}

// retained deletes the finished experiment ar and checks that its
// workspace claim stays (reclaimPolicy Retain, the default), owned by
// nothing, and that the volume behind it holds the experiment's branch at
// the ledger commit its status recorded.
func retained(t *testing.T, ar *v1alpha1.AutoResearch) {
	t.Helper()
	// The ledger's commit comes after the last round's verdict.
	eventually(t, "the ledger commit", 2*time.Minute, func() bool {
		ar = experimentNamed(t, ar.Name)
		return ar.Status.LedgerCommit != ""
	})
	if ar.Status.Workspace == nil || ar.Status.Workspace.ClaimName == "" {
		t.Fatalf("the status names no claim: %+v", ar.Status.Workspace)
	}
	claim := ar.Status.Workspace.ClaimName
	kubectl(t, "", "delete", "autoresearch", ar.Name, "-n", ns, "--wait=true", "--timeout=120s")
	var pvc corev1.PersistentVolumeClaim
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "pvc", claim, "-n", ns, "-o", "json")), &pvc); err != nil {
		t.Fatal(err)
	}
	if len(pvc.OwnerReferences) != 0 {
		t.Errorf("the retained claim %s is owned by %+v", claim, pvc.OwnerReferences)
	}
	dir := strings.TrimSpace(kubectl(t, "", "get", "pv", pvc.Spec.VolumeName, "-o", "jsonpath={.spec.hostPath.path}"))
	// The volume's files are the step pods' user's, not the test's.
	branch := gittest.Git(t, filepath.Join(dir, "source"), "-c", "safe.directory=*", "rev-parse", "refs/heads/autoresearch/"+ar.Name)
	if branch != ar.Status.LedgerCommit {
		t.Errorf("the retained volume's branch autoresearch/%s is at %s, want the ledger commit %s", ar.Name, branch, ar.Status.LedgerCommit)
	}
}

// terminated is how the container named container of the pod named name
// ended, or with an empty name, that of the Job pod whose name starts with
// container; nil when it was not seen to end.
func terminated(pods map[string]corev1.Pod, name, container string) *corev1.ContainerStateTerminated {
	for podName, p := range pods {
		if name != "" && podName != name || name == "" && !strings.HasPrefix(podName, container+"-") {
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			if t := c.State.Terminated; t != nil && (c.Name == container || name == "") {
				return t
			}
		}
	}
	return nil
}
