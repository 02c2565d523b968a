package manifests

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// The namespace the operator is installed into enforces the restricted Pod
// Security Standard, and the manager's pod, as the chart and kustomize
// render it, passes the checks the API server's PodSecurity admission runs.
func TestRestrictedPodSecurity(t *testing.T) {
	helm := helmBinary(t)
	config := readObjects(t, root+"/config/manager/manager.yaml")

	t.Run("namespaces", func(t *testing.T) {
		for _, o := range helmTemplate(t, helm) {
			if o.Kind == "Namespace" {
				t.Errorf("the chart renders Namespace %s unless namespace.create is set", o.Metadata.Name)
			}
		}
		namespaces := map[string]object{
			"chart":     find(t, helmTemplate(t, helm, "--set", "namespace.create=true"), "Namespace", "autoresearch-system"),
			"kustomize": find(t, config, "Namespace", "system"),
		}
		for from, ns := range namespaces {
			if got := ns.Metadata.Labels[psapi.EnforceLevelLabel]; got != string(psapi.LevelRestricted) {
				t.Errorf("the %s's namespace has %s=%q, want restricted", from, psapi.EnforceLevelLabel, got)
			}
		}
	})

	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	restricted := psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()}
	deployments := map[string]object{
		"chart":     find(t, helmTemplate(t, helm), "Deployment", release+"-controller-manager"),
		"kustomize": find(t, config, "Deployment", "controller-manager"),
	}
	for from, d := range deployments {
		t.Run("manager pod of the "+from, func(t *testing.T) {
			var pod corev1.PodTemplateSpec
			data, err := json.Marshal(d.Spec["template"])
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &pod); err != nil {
				t.Fatal(err)
			}
			result := policy.AggregateCheckResults(evaluator.EvaluatePod(restricted, &pod.ObjectMeta, &pod.Spec))
			if !result.Allowed {
				t.Errorf("the restricted Pod Security Standard forbids the manager pod: %s: %s", result.ForbiddenReason(), result.ForbiddenDetail())
			}
		})
	}
}
