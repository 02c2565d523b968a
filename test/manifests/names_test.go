package manifests

import (
	"strings"
	"testing"
)

// Object names start with the release name, followed by the chart name
// unless the release name already holds it: a release named like the chart
// does not stutter.
func TestChartReleaseNames(t *testing.T) {
	helm := helmBinary(t)
	cases := map[string]struct {
		release    string
		args       []string
		wantPrefix string
	}{
		"named like the chart":         {release: "autoresearch-operator", wantPrefix: "autoresearch-operator"},
		"holding the chart name":       {release: "autoresearch-operator-prod", wantPrefix: "autoresearch-operator-prod"},
		"another name":                 {release: "prod", wantPrefix: "prod-autoresearch-operator"},
		"another chart name":           {release: "prod", args: []string{"--set", "nameOverride=ar"}, wantPrefix: "prod-ar"},
		"the whole prefix overridden":  {release: "prod", args: []string{"--set", "fullnameOverride=research"}, wantPrefix: "research"},
		"a release that is the prefix": {release: "ar", args: []string{"--set", "nameOverride=ar"}, wantPrefix: "ar"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rendered := helmTemplateRelease(t, helm, tc.release, tc.args...)
			find(t, rendered, "Deployment", tc.wantPrefix+"-controller-manager")
			for _, o := range rendered {
				if o.Kind == "CustomResourceDefinition" {
					continue
				}
				if !strings.HasPrefix(o.Metadata.Name, tc.wantPrefix+"-") {
					t.Errorf("%s/%s does not start with %s-", o.Kind, o.Metadata.Name, tc.wantPrefix)
				}
				if strings.Contains(o.Metadata.Name, "autoresearch-operator-autoresearch-operator") {
					t.Errorf("%s/%s stutters", o.Kind, o.Metadata.Name)
				}
			}
		})
	}
}
