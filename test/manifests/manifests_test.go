package manifests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"

	autoresearchv1alpha1 "github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

const (
	root     = "../.."
	chartDir = root + "/charts/autoresearch-operator"
	// release is the Helm release name the rendering tests use; with it the
	// chart's objects are named like the kustomize ones, bar the prefix.
	release = "autoresearch-operator"
)

// object is the part of a manifest these tests look at.
type object struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   objectMeta        `json:"metadata"`
	Rules      []any             `json:"rules,omitempty"`
	RoleRef    map[string]any    `json:"roleRef,omitempty"`
	Subjects   []any             `json:"subjects,omitempty"`
	Spec       map[string]any    `json:"spec,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
}

type objectMeta struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// parseObjects reads every non-empty document of a multi-document YAML stream.
func parseObjects(t *testing.T, source string, data []byte) []object {
	t.Helper()
	var objs []object
	for i, doc := range documentSeparator.Split(string(data), -1) {
		var obj object
		if err := yaml.UnmarshalStrict([]byte(doc), &map[string]any{}); err != nil {
			t.Fatalf("%s: document %d is not valid YAML: %v", source, i, err)
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%s: document %d: %v", source, i, err)
		}
		if obj.Kind == "" {
			continue
		}
		objs = append(objs, obj)
	}
	return objs
}

func readObjects(t *testing.T, path string) []object {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseObjects(t, path, data)
}

// find returns the one object of kind whose name is name.
func find(t *testing.T, objs []object, kind, name string) object {
	t.Helper()
	var found []object
	for _, o := range objs {
		if o.Kind == kind && o.Metadata.Name == name {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("found %d %s objects named %q, want 1", len(found), kind, name)
	}
	return found[0]
}

func kindsAndNames(objs []object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Kind+"/"+o.Metadata.Name)
	}
	return out
}

// The chart cannot read files outside its directory, so it carries copies of
// the generated CRD and manager ClusterRole; `make manifests` refreshes them.
func TestChartCopiesOfGeneratedManifests(t *testing.T) {
	cases := map[string]struct {
		generated, chartCopy string
	}{
		"manager ClusterRole": {
			generated: root + "/config/rbac/role.yaml",
			chartCopy: chartDir + "/files/manager-role.yaml",
		},
	}
	crds, err := filepath.Glob(root + "/config/crd/bases/*.yaml")
	if err != nil || len(crds) == 0 {
		t.Fatalf("no generated CRDs in config/crd/bases (err %v)", err)
	}
	for _, crd := range crds {
		cases["CRD "+filepath.Base(crd)] = struct{ generated, chartCopy string }{crd, chartDir + "/crds/" + filepath.Base(crd)}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(tc.generated)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(tc.chartCopy)
			if err != nil {
				t.Fatalf("%v: run make manifests", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s differs from %s; run make manifests (-generated +chart):\n%s", tc.chartCopy, tc.generated, diff)
			}
		})
	}

	chartCRDs, err := filepath.Glob(chartDir + "/crds/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(baseNames(crds), baseNames(chartCRDs)); diff != "" {
		t.Errorf("the chart's crds/ holds other CRDs than config/crd/bases; run make manifests (-generated +chart):\n%s", diff)
	}
}

func baseNames(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	return out
}

// kustomization is the part of a kustomization.yaml that names other files.
type kustomization struct {
	Resources      []string `json:"resources"`
	Components     []string `json:"components"`
	Configurations []string `json:"configurations"`
	Patches        []struct {
		Path string `json:"path"`
	} `json:"patches"`
}

// Every YAML file under config/ parses, every file a kustomization names
// exists, and every manifest belongs to some kustomization.
func TestConfigKustomizations(t *testing.T) {
	configDir := filepath.Join(root, "config")
	referenced := map[string]bool{}
	var manifests []string
	err := filepath.WalkDir(configDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if d.Name() != "kustomization.yaml" {
			parseObjects(t, path, data)
			manifests = append(manifests, path)
			return nil
		}
		var k kustomization
		if err := yaml.Unmarshal(data, &k); err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		refs := append(append(append([]string{}, k.Resources...), k.Components...), k.Configurations...)
		for _, p := range k.Patches {
			refs = append(refs, p.Path)
		}
		for _, ref := range refs {
			target := filepath.Join(filepath.Dir(path), ref)
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s names %s: %v", path, ref, err)
			}
			referenced[target] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range manifests {
		if !referenced[m] {
			t.Errorf("%s is in no kustomization", m)
		}
	}
}

// helmBinary is $HELM, or helm on the PATH.
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	h, err := exec.LookPath("helm")
	if err != nil {
		t.Skip("helm not found: run make helm-lint, which installs it into bin/ and runs these tests with it")
	}
	return h
}

func helmTemplate(t *testing.T, helm string, args ...string) []object {
	t.Helper()
	return helmTemplateRelease(t, helm, release, args...)
}

// helmTemplateRelease renders the chart as the release releaseName.
func helmTemplateRelease(t *testing.T, helm, releaseName string, args ...string) []object {
	t.Helper()
	out, err := renderChart(helm, releaseName, args...)
	if err != nil {
		t.Fatal(err)
	}
	return parseObjects(t, "helm template", out)
}

// renderChart runs helm template; its error holds what helm said.
func renderChart(helm, releaseName string, args ...string) ([]byte, error) {
	cmdArgs := append([]string{"template", releaseName, chartDir, "--namespace", "autoresearch-system", "--include-crds", "--kube-version", "1.37.2"}, args...)
	var stderr bytes.Buffer
	cmd := exec.Command(helm, cmdArgs...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm %s: %w\n%s", strings.Join(cmdArgs, " "), err, stderr.String())
	}
	return out, nil
}

// The chart's roles grant exactly what config/rbac grants, and its CRD is
// the generated one.
func TestChartMatchesConfig(t *testing.T) {
	rendered := helmTemplate(t, helmBinary(t))

	cases := map[string]struct {
		file, kind, configName string
	}{
		"manager":             {"role.yaml", "ClusterRole", "manager-role"},
		"leader election":     {"leader_election_role.yaml", "Role", "leader-election-role"},
		"metrics auth":        {"metrics_auth_role.yaml", "ClusterRole", "metrics-auth-role"},
		"metrics reader":      {"metrics_reader_role.yaml", "ClusterRole", "metrics-reader"},
		"AutoResearch editor": {"autoresearch_editor_role.yaml", "ClusterRole", "editor-role"},
		"AutoResearch viewer": {"autoresearch_viewer_role.yaml", "ClusterRole", "viewer-role"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := find(t, readObjects(t, filepath.Join(root, "config/rbac", tc.file)), tc.kind, tc.configName)
			got := find(t, rendered, tc.kind, release+"-"+tc.configName)
			if len(want.Rules) == 0 {
				t.Fatalf("config/rbac/%s has no rules", tc.file)
			}
			if diff := cmp.Diff(want.Rules, got.Rules); diff != "" {
				t.Errorf("the chart's %s rules differ from config/rbac/%s (-config +chart):\n%s", tc.kind, tc.file, diff)
			}
		})
	}

	t.Run("CRD", func(t *testing.T) {
		for _, want := range readObjects(t, root+"/config/crd/bases/autoresearch.dev_autoresearches.yaml") {
			got := find(t, rendered, "CustomResourceDefinition", want.Metadata.Name)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the chart's CRD differs from the generated one (-config +chart):\n%s", diff)
			}
		}
	})

	t.Run("manager pod", func(t *testing.T) {
		want := podSpec(t, find(t, readObjects(t, root+"/config/manager/manager.yaml"), "Deployment", "controller-manager"))
		got := podSpec(t, find(t, rendered, "Deployment", release+"-controller-manager"))
		for _, field := range []string{"securityContext", "terminationGracePeriodSeconds"} {
			if diff := cmp.Diff(want[field], got[field]); diff != "" {
				t.Errorf("pod %s differs (-config +chart):\n%s", field, diff)
			}
		}
		wantC, gotC := manager(t, want), manager(t, got)
		for _, field := range []string{"securityContext", "command", "livenessProbe", "readinessProbe", "resources"} {
			if diff := cmp.Diff(wantC[field], gotC[field]); diff != "" {
				t.Errorf("manager container %s differs (-config +chart):\n%s", field, diff)
			}
		}
	})
}

func podSpec(t *testing.T, deployment object) map[string]any {
	t.Helper()
	template, _ := deployment.Spec["template"].(map[string]any)
	spec, ok := template["spec"].(map[string]any)
	if !ok {
		t.Fatalf("Deployment %s has no pod spec", deployment.Metadata.Name)
	}
	return spec
}

func manager(t *testing.T, pod map[string]any) map[string]any {
	t.Helper()
	containers, _ := pod["containers"].([]any)
	for _, c := range containers {
		if c, ok := c.(map[string]any); ok && c["name"] == "manager" {
			return c
		}
	}
	t.Fatal("no manager container")
	return nil
}

// imageEnv is the manager's AUTORESEARCH_IMAGE, which must name its own image.
func imageEnv(t *testing.T, container map[string]any) string {
	t.Helper()
	env, _ := container["env"].([]any)
	for _, e := range env {
		if e, ok := e.(map[string]any); ok && e["name"] == "AUTORESEARCH_IMAGE" {
			v, _ := e["value"].(string)
			return v
		}
	}
	t.Fatal("the manager container has no AUTORESEARCH_IMAGE")
	return ""
}

func stringsOf(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, s := range list {
		if s, ok := s.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func TestChartValues(t *testing.T) {
	helm := helmBinary(t)
	metricsObjects := []string{
		"ClusterRole/" + release + "-metrics-auth-role",
		"ClusterRole/" + release + "-metrics-reader",
		"ClusterRoleBinding/" + release + "-metrics-auth-rolebinding",
		"Service/" + release + "-metrics",
	}
	metricsPolicy := "NetworkPolicy/" + release + "-allow-metrics-traffic"
	dashboard := "ConfigMap/" + release + "-grafana-dashboard"
	const defaultStepResources = `--step-resources={"limits":{"cpu":"1","memory":"512Mi"},"requests":{"cpu":"100m","memory":"128Mi"}}`
	defaultArgs := []string{
		"--leader-elect=true", "--health-probe-bind-address=:8081",
		"--metrics-bind-address=:8443", "--metrics-secure=true", "--zap-log-level=info", defaultStepResources,
	}
	defaultImage := "ghcr.io/autoresearch-dev/autoresearch-operator:v0.1.0"
	cases := map[string]struct {
		args        []string
		wantPresent []string
		wantAbsent  []string
		wantArgs    []string
		wantImage   string
		// wantResearcherPolicy lists the namespaces that get the Researcher's
		// egress policy.
		wantResearcherPolicy []string
	}{
		"defaults": {
			wantPresent: append([]string{
				metricsPolicy,
				"Role/" + release + "-leader-election-role",
				"ServiceAccount/" + release + "-controller-manager",
			}, metricsObjects...),
			wantAbsent:           []string{dashboard},
			wantArgs:             defaultArgs,
			wantImage:            defaultImage,
			wantResearcherPolicy: []string{"autoresearch-system"},
		},
		"network policies off": {
			args:       []string{"--set", "networkPolicy.enabled=false"},
			wantAbsent: []string{metricsPolicy},
			wantArgs:   defaultArgs,
			wantImage:  defaultImage,
		},
		"metrics off, no leader election, image by digest": {
			args: []string{
				"--set", "metrics.enabled=false", "--set", "leaderElect=false",
				"--set", "image.repository=registry.local/op", "--set", "image.digest=sha256:" + strings.Repeat("0123", 16),
				"--set", "extraArgs={--zap-devel}",
			},
			wantAbsent: append([]string{metricsPolicy, "Role/" + release + "-leader-election-role"}, metricsObjects...),
			wantArgs: []string{
				"--leader-elect=false", "--health-probe-bind-address=:8081",
				"--metrics-bind-address=0", "--zap-log-level=info", defaultStepResources, "--zap-devel",
			},
			wantImage:            "registry.local/op@sha256:" + strings.Repeat("0123", 16),
			wantResearcherPolicy: []string{"autoresearch-system"},
		},
		"watched namespaces: Roles there instead of the ClusterRole, and the researcher policy there": {
			args:                 []string{"--set", "watchNamespaces={team-a,team-b}"},
			wantPresent:          []string{"Role/" + release + "-manager-role", "RoleBinding/" + release + "-manager-rolebinding"},
			wantAbsent:           []string{"ClusterRole/" + release + "-manager-role", "ClusterRoleBinding/" + release + "-manager-rolebinding"},
			wantArgs:             append(append([]string{}, defaultArgs...), "--watch-namespaces=team-a,team-b"),
			wantImage:            defaultImage,
			wantResearcherPolicy: []string{"team-a", "team-b"},
		},
		"researcher policy in the experiment namespaces, image tag": {
			args:                 []string{"--set", "networkPolicy.researcher.namespaces={team-a,team-b}", "--set", "image.tag=dev"},
			wantArgs:             defaultArgs,
			wantImage:            "ghcr.io/autoresearch-dev/autoresearch-operator:dev",
			wantResearcherPolicy: []string{"team-a", "team-b"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rendered := helmTemplate(t, helm, tc.args...)
			have := map[string]bool{}
			for _, kn := range kindsAndNames(rendered) {
				have[kn] = true
			}
			for _, kn := range tc.wantPresent {
				if !have[kn] {
					t.Errorf("%s is missing; rendered %v", kn, kindsAndNames(rendered))
				}
			}
			for _, kn := range tc.wantAbsent {
				if have[kn] {
					t.Errorf("%s is rendered, want it absent", kn)
				}
			}

			var researcherPolicy []string
			for _, o := range rendered {
				if o.Kind == "NetworkPolicy" && o.Metadata.Name == release+"-researcher-egress" {
					researcherPolicy = append(researcherPolicy, o.Metadata.Namespace)
				}
			}
			if diff := cmp.Diff(tc.wantResearcherPolicy, researcherPolicy, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("namespaces with the researcher egress policy (-want +got):\n%s", diff)
			}

			c := manager(t, podSpec(t, find(t, rendered, "Deployment", release+"-controller-manager")))
			if diff := cmp.Diff(tc.wantArgs, stringsOf(c["args"])); diff != "" {
				t.Errorf("manager args mismatch (-want +got):\n%s", diff)
			}
			if c["image"] != tc.wantImage || imageEnv(t, c) != tc.wantImage {
				t.Errorf("image %v, AUTORESEARCH_IMAGE %q; want both %q", c["image"], imageEnv(t, c), tc.wantImage)
			}
		})
	}
}

// The Grafana dashboard, when enabled, is a ConfigMap that Grafana's sidecar
// picks up by its label, holding dashboards/autoresearch.json as it is.
func TestChartGrafanaDashboard(t *testing.T) {
	rendered := helmTemplate(t, helmBinary(t), "--set", "grafanaDashboard.enabled=true",
		"--set", "grafanaDashboard.namespace=monitoring", "--set", "grafanaDashboard.annotations.grafana_folder=AutoResearch")
	cm := find(t, rendered, "ConfigMap", release+"-grafana-dashboard")
	if cm.Metadata.Namespace != "monitoring" || cm.Metadata.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap in namespace %q with labels %v; want monitoring and grafana_dashboard: \"1\"", cm.Metadata.Namespace, cm.Metadata.Labels)
	}
	file, err := os.ReadFile(chartDir + "/dashboards/autoresearch.json")
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(file, &want); err != nil {
		t.Fatalf("dashboards/autoresearch.json: %v", err)
	}
	if err := json.Unmarshal([]byte(cm.Data["autoresearch.json"]), &got); err != nil {
		t.Fatalf("the ConfigMap's autoresearch.json: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the ConfigMap's dashboard differs from dashboards/autoresearch.json (-file +ConfigMap):\n%s", diff)
	}
}

// kubectl builds every kustomization that is meant to be applied, and
// config/default the way `make deploy` applies it.
func TestKustomizeBuild(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not found")
	}
	build := func(t *testing.T, dir string) []object {
		t.Helper()
		var stderr bytes.Buffer
		cmd := exec.Command(kubectl, "kustomize", filepath.Join(root, dir))
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
		}
		return parseObjects(t, "kubectl kustomize "+dir, out)
	}

	cases := map[string]struct {
		dir       string
		wantKinds []string
	}{
		"CRD only":          {"config/crd", []string{"CustomResourceDefinition"}},
		"sample experiment": {"config/samples", []string{"AutoResearch"}},
		"researcher policy": {"config/network-policy/researcher", []string{"NetworkPolicy"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var kinds []string
			for _, o := range build(t, tc.dir) {
				kinds = append(kinds, o.Kind)
			}
			if diff := cmp.Diff(tc.wantKinds, kinds); diff != "" {
				t.Errorf("kinds built from %s (-want +got):\n%s", tc.dir, diff)
			}
		})
	}

	t.Run("default", func(t *testing.T) {
		objs := build(t, "config/default")
		for _, o := range objs {
			if o.Kind != "CustomResourceDefinition" && !strings.HasPrefix(o.Metadata.Name, "autoresearch-") {
				t.Errorf("%s/%s lacks the autoresearch- prefix", o.Kind, o.Metadata.Name)
			}
			if o.Metadata.Namespace != "" && o.Metadata.Namespace != "autoresearch-system" {
				t.Errorf("%s/%s is in namespace %q, want autoresearch-system", o.Kind, o.Metadata.Name, o.Metadata.Namespace)
			}
		}
		find(t, objs, "Namespace", "autoresearch-system")
		want := find(t, readObjects(t, root+"/config/rbac/role.yaml"), "ClusterRole", "manager-role")
		got := find(t, objs, "ClusterRole", "autoresearch-manager-role")
		if diff := cmp.Diff(want.Rules, got.Rules); diff != "" {
			t.Errorf("manager ClusterRole rules differ from config/rbac/role.yaml (-want +got):\n%s", diff)
		}
		c := manager(t, podSpec(t, find(t, objs, "Deployment", "autoresearch-controller-manager")))
		if c["image"] != imageEnv(t, c) {
			t.Errorf("image %v, AUTORESEARCH_IMAGE %q; want them equal", c["image"], imageEnv(t, c))
		}
	})
}

// Every sample is an AutoResearch the API accepts: no unknown fields, and
// the rules the CRD's validation also enforces.
func TestSamples(t *testing.T) {
	samples, err := filepath.Glob(root + "/config/samples/autoresearch_*.yaml")
	if err != nil || len(samples) == 0 {
		t.Fatalf("no samples in config/samples (err %v)", err)
	}
	for _, path := range samples {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var ar autoresearchv1alpha1.AutoResearch
			if err := yaml.UnmarshalStrict(data, &ar); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if ar.APIVersion != autoresearchv1alpha1.GroupVersion.String() || ar.Kind != "AutoResearch" {
				t.Errorf("%s is a %s %s, want an AutoResearch of %s", path, ar.APIVersion, ar.Kind, autoresearchv1alpha1.GroupVersion)
			}
			if err := ar.Spec.Validate(); err != nil {
				t.Errorf("%s: %v", path, err)
			}
		})
	}
}

// TestImageTagsAgree: a release is a tag vX.Y.Z; the chart's appVersion
// and the tag kustomize gives the image both name it, so that both ways of
// installing run the same image (see config/manager/kustomization.yaml).
func TestImageTagsAgree(t *testing.T) {
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	var kustomization struct {
		Images []struct {
			Name    string `json:"name"`
			NewTag  string `json:"newTag"`
			NewName string `json:"newName"`
		} `json:"images"`
	}
	for path, into := range map[string]any{chartDir + "/Chart.yaml": &chart, root + "/config/manager/kustomization.yaml": &kustomization} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, into); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if len(kustomization.Images) != 1 {
		t.Fatalf("config/manager/kustomization.yaml names %d images, want the operator's alone", len(kustomization.Images))
	}
	if got := kustomization.Images[0].NewTag; got != chart.AppVersion {
		t.Errorf("kustomize tags the image %q, the chart's appVersion is %q: release both as the same tag", got, chart.AppVersion)
	}
}
