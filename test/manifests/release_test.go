package manifests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// releaseTree copies what hack/release.sh reads into a directory of its
// own, with the chart's appVersion and kustomize's image tag replaced.
func releaseTree(t *testing.T, appVersion, imageTag string) string {
	t.Helper()
	dir := t.TempDir()
	for _, src := range []string{"hack/release.sh", "charts", "config"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(src)), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-r", filepath.Join(root, src), filepath.Join(dir, src)).CombinedOutput(); err != nil {
			t.Fatalf("cp %s: %v: %s", src, err, out)
		}
	}
	replace := func(path, old, new string) {
		data, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte(old)) {
			t.Fatalf("%s holds no %q", path, old)
		}
		if err := os.WriteFile(filepath.Join(dir, path), bytes.Replace(data, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	replace("charts/autoresearch-operator/Chart.yaml", `appVersion: "v0.1.0"`, `appVersion: "`+appVersion+`"`)
	replace("config/manager/kustomization.yaml", "newTag: v0.1.0", "newTag: "+imageTag)
	return dir
}

func runRelease(dir, version string, env ...string) (string, error) {
	cmd := exec.Command(filepath.Join(dir, "hack/release.sh"))
	cmd.Env = append(os.Environ(), append([]string{"VERSION=" + version, "PLATFORMS=", "LDFLAGS=-X main.unused=1"}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// hack/release.sh refuses a version that is no release, and a tree whose
// chart and kustomize do not both name the release's image tag, before it
// writes anything.
func TestReleaseRefuses(t *testing.T) {
	cases := map[string]struct {
		version, appVersion, imageTag, want string
	}{
		"no version":          {"", "v1.2.3", "v1.2.3", "VERSION=(none) is no release"},
		"no v":                {"1.2.3", "v1.2.3", "v1.2.3", "VERSION=1.2.3 is no release"},
		"two numbers":         {"v1.2", "v1.2.3", "v1.2.3", "is no release"},
		"a leading zero":      {"v1.02.3", "v1.2.3", "v1.2.3", "is no release"},
		"a shell word":        {"v1.2.3;true", "v1.2.3", "v1.2.3", "is no release"},
		"tags that differ":    {"v1.2.3", "v1.2.3", "v1.2.2", "appVersion (v1.2.3) and config/manager's image tag (v1.2.2) differ"},
		"tags of another one": {"v1.2.4", "v1.2.3", "v1.2.3", "are v1.2.3, not v1.2.4"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := releaseTree(t, tc.appVersion, tc.imageTag)
			out, err := runRelease(dir, tc.version, "HELM=/nonexistent/helm")
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("release.sh: %v, want a refusal saying %q:\n%s", err, tc.want, out)
			}
			if _, err := os.Stat(filepath.Join(dir, "dist")); !os.IsNotExist(err) {
				t.Errorf("release.sh made dist/ before refusing (%v)", err)
			}
		})
	}
}

// Without binaries (PLATFORMS empty), hack/release.sh writes the CRD
// bundle, the chart packaged with the release's version, the rendered
// install YAML and their checksums.
func TestReleaseManifests(t *testing.T) {
	helm := helmBinary(t)
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not found")
	}
	dir := releaseTree(t, "v1.2.3", "v1.2.3")
	out, err := runRelease(dir, "v1.2.3", "HELM="+helm, "KUBECTL="+kubectl)
	if err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	dist := filepath.Join(dir, "dist")
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"SHA256SUMS", "autoresearch-crds.yaml", "autoresearch-operator-1.2.3.tgz", "install.yaml"}
	if !slices.Equal(names, want) {
		t.Fatalf("dist/ holds %v, want %v", names, want)
	}
	chart, err := exec.Command("tar", "-xzOf", filepath.Join(dist, "autoresearch-operator-1.2.3.tgz"), "autoresearch-operator/Chart.yaml").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"version: 1.2.3", "appVersion: v1.2.3"} {
		if !strings.Contains(string(chart), "\n"+line+"\n") {
			t.Errorf("the packaged Chart.yaml lacks %q:\n%s", line, chart)
		}
	}
	install, err := os.ReadFile(filepath.Join(dist, "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(install), "image: ghcr.io/autoresearch-dev/autoresearch-operator:v1.2.3") {
		t.Error("install.yaml does not run the release's image")
	}
	check := exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = dist
	if out, err := check.CombinedOutput(); err != nil || strings.Count(string(out), ": OK") != len(want)-1 {
		t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, out)
	}
}
