package manifests

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The ServiceMonitor, when enabled, selects the metrics Service by its
// labels and scrapes its port by name, over HTTPS with a token when the
// endpoint checks tokens.
func TestChartServiceMonitor(t *testing.T) {
	helm := helmBinary(t)
	for _, o := range helmTemplate(t, helm) {
		if o.Kind == "ServiceMonitor" {
			t.Errorf("ServiceMonitor %s rendered by default: clusters without the Prometheus Operator lack its CRD", o.Metadata.Name)
		}
	}
	cases := map[string]struct {
		args       []string
		wantScheme string
		wantToken  bool
	}{
		"HTTPS": {wantScheme: "https", wantToken: true},
		"plain HTTP": {
			args:       []string{"--set", "metrics.secure=false"},
			wantScheme: "http",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rendered := helmTemplate(t, helm, append([]string{"--set", "serviceMonitor.enabled=true",
				"--set", "serviceMonitor.labels.release=prometheus", "--set", "serviceMonitor.interval=30s"}, tc.args...)...)
			sm := find(t, rendered, "ServiceMonitor", release+"-metrics")
			svc := find(t, rendered, "Service", release+"-metrics")
			if sm.APIVersion != "monitoring.coreos.com/v1" || sm.Metadata.Namespace != svc.Metadata.Namespace || sm.Metadata.Labels["release"] != "prometheus" {
				t.Errorf("ServiceMonitor %s in %q with labels %v; want monitoring.coreos.com/v1 in the Service's namespace with release: prometheus",
					sm.APIVersion, sm.Metadata.Namespace, sm.Metadata.Labels)
			}
			selector, _ := sm.Spec["selector"].(map[string]any)
			matchLabels, _ := selector["matchLabels"].(map[string]any)
			if len(matchLabels) == 0 {
				t.Fatal("the ServiceMonitor selects every Service")
			}
			for k, v := range matchLabels {
				if svc.Metadata.Labels[k] != v {
					t.Errorf("the ServiceMonitor selects %s=%v, which the metrics Service lacks (labels %v)", k, v, svc.Metadata.Labels)
				}
			}
			if diff := cmp.Diff(map[string]any{"matchNames": []any{svc.Metadata.Namespace}}, sm.Spec["namespaceSelector"]); diff != "" {
				t.Errorf("namespaceSelector (-want +got):\n%s", diff)
			}
			endpoints, _ := sm.Spec["endpoints"].([]any)
			if len(endpoints) != 1 {
				t.Fatalf("%d endpoints, want 1", len(endpoints))
			}
			ep, _ := endpoints[0].(map[string]any)
			ports, _ := svc.Spec["ports"].([]any)
			port, _ := ports[0].(map[string]any)
			if ep["port"] != port["name"] || ep["scheme"] != tc.wantScheme || ep["path"] != "/metrics" || ep["interval"] != "30s" {
				t.Errorf("endpoint %v; want port %v, scheme %s, path /metrics, interval 30s", ep, port["name"], tc.wantScheme)
			}
			if _, hasToken := ep["bearerTokenFile"]; hasToken != tc.wantToken {
				t.Errorf("endpoint sends a token: %v, want %v", hasToken, tc.wantToken)
			}
		})
	}

	t.Run("without metrics", func(t *testing.T) {
		_, err := renderChart(helm, release, "--set", "serviceMonitor.enabled=true", "--set", "metrics.enabled=false")
		if err == nil || !strings.Contains(err.Error(), "serviceMonitor.enabled needs metrics.enabled") {
			t.Errorf("rendering a ServiceMonitor without metrics: %v, want a refusal that says why", err)
		}
	})
}
