//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// TestQuotaAdmitsEveryStep runs two rounds of a toy in a namespace
// whose ResourceQuota, enforced by the API server and kept by the
// controller manager's quota controller, refuses every pod that does not
// state CPU and memory requests and limits, as shared clusters often do.
// The user states them for the Researcher, training and evaluation; the
// operator must state them for every container of its own image: the
// clone, the file check, the git steps and the init containers. On the
// real node those limits hold the operator's steps in its image.
func TestQuotaAdmitsEveryStep(t *testing.T) {
	parallel(t)
	const (
		n         = "quota"
		namespace = "e2e-quota"
	)
	install(t)
	kubectl(t, "", "create", "namespace", namespace)
	defer kubectl(t, "", "delete", "namespace", namespace, "--wait=true", "--timeout=180s")
	kubectl(t, fmt.Sprintf(`apiVersion: v1
kind: ResourceQuota
metadata: {name: compute, namespace: %s}
spec:
  hard: {requests.cpu: "32", requests.memory: 64Gi, limits.cpu: "64", limits.memory: 128Gi}
`, namespace), "apply", "-f", "-")
	// Until the quota controller has written the quota's status the API
	// server admits no pod at all; after it, only pods that state resources.
	eventually(t, "the quota to refuse a pod without requests and limits", time.Minute, func() bool {
		out, err := tryKubectl(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: bare, namespace: %s}
spec:
  containers: [{name: c, image: busybox}]
`, namespace), "create", "-f", "-")
		if err == nil {
			kubectl(t, "", "delete", "pod", "bare", "-n", namespace, "--wait=false")
			t.Fatal("a pod without requests and limits was admitted: the quota is not enforced")
		}
		return strings.Contains(out, "must specify")
	})

	m := startManager(t)
	defer m.stop()
	spec := strings.Replace(toyManifest(n, clusterSourceIn(t, namespace, n, pipelineToy), 2), "namespace: "+ns+"}", "namespace: "+namespace+"}", 1)
	const resources = `    resources:
      requests: {cpu: 500m, memory: 512Mi}
      limits: {cpu: "2", memory: 2Gi}
`
	spec = strings.Replace(spec, "    gpus: 1\n", "    gpus: 1\n"+resources, 1)
	spec += resources
	if strings.Count(spec, "requests: {cpu: 500m") != 2 || !strings.Contains(spec, "namespace: "+namespace) {
		t.Fatalf("the manifest did not take the namespace and the resources:\n%s", spec)
	}
	kubectl(t, spec, "apply", "-f", "-")
	defer kubectl(t, "", "delete", "autoresearch", n, "-n", namespace, "--wait=true", "--timeout=120s")

	var ar v1alpha1.AutoResearch
	get := func() {
		if err := json.Unmarshal([]byte(kubectl(t, "", "get", "autoresearch", n, "-n", namespace, "-o", "json")), &ar); err != nil {
			t.Fatal(err)
		}
	}
	pods := map[string]bool{}
	eventually(t, "the experiment to finish", 15*time.Minute, func() bool {
		for _, p := range strings.Fields(kubectl(t, "", "get", "pods", "-n", namespace, "-o", "name")) {
			pods[p] = true
		}
		refusedPods(t, namespace)
		get()
		return ar.Status.Phase == v1alpha1.PhaseSucceeded || ar.Status.Phase == v1alpha1.PhaseFailed
	})
	var verdicts []string
	for _, h := range ar.Status.History {
		verdicts = append(verdicts, string(h.Verdict))
	}
	t.Logf("phase %s, verdicts %v, %d pods seen", ar.Status.Phase, verdicts, len(pods))
	if ar.Status.Phase != v1alpha1.PhaseSucceeded || ar.Status.CompletedRounds != 2 {
		t.Errorf("phase %s after %d rounds (%s), want Succeeded after 2", ar.Status.Phase, ar.Status.CompletedRounds, ar.Status.Message)
	}
	refusedPods(t, namespace)
}

// refusedPods fails the test at the first pod the API server refused: the
// operator's CreateRefused for its own pods, the Job controller's
// FailedCreate for those of training and evaluation.
func refusedPods(t *testing.T, namespace string) {
	t.Helper()
	var events corev1.EventList
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "events", "-n", namespace, "-o", "json")), &events); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "CreateRefused" || e.Reason == "FailedCreate" {
			t.Fatalf("%s %s: %s", e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}
