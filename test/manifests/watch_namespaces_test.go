package manifests

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// With watchNamespaces the chart grants the manager, in each watched
// namespace, a Role with exactly the rules of the generated ClusterRole,
// bound to its service account in the release namespace; what must stay
// cluster-wide or in the release namespace stays there.
func TestChartWatchNamespaces(t *testing.T) {
	rendered := helmTemplate(t, helmBinary(t), "--set", "watchNamespaces={team-a,team-b}")
	want := find(t, readObjects(t, root+"/config/rbac/role.yaml"), "ClusterRole", "manager-role")
	byNamespace := map[string][]object{}
	for _, o := range rendered {
		byNamespace[o.Metadata.Namespace] = append(byNamespace[o.Metadata.Namespace], o)
	}
	for _, ns := range []string{"team-a", "team-b"} {
		t.Run(ns, func(t *testing.T) {
			role := find(t, byNamespace[ns], "Role", release+"-manager-role")
			if diff := cmp.Diff(want.Rules, role.Rules); diff != "" {
				t.Errorf("the Role's rules differ from config/rbac/role.yaml (-config +chart):\n%s", diff)
			}
			binding := find(t, byNamespace[ns], "RoleBinding", release+"-manager-rolebinding")
			wantRef := map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": release + "-manager-role"}
			wantSubjects := []any{map[string]any{"kind": "ServiceAccount", "name": release + "-controller-manager", "namespace": "autoresearch-system"}}
			if diff := cmp.Diff(wantRef, binding.RoleRef); diff != "" {
				t.Errorf("the RoleBinding's roleRef (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantSubjects, binding.Subjects); diff != "" {
				t.Errorf("the RoleBinding's subjects (-want +got):\n%s", diff)
			}
		})
	}
	for _, o := range rendered {
		if (o.Kind == "Role" || o.Kind == "RoleBinding") && o.Metadata.Namespace != "team-a" && o.Metadata.Namespace != "team-b" &&
			o.Metadata.Namespace != "autoresearch-system" {
			t.Errorf("%s/%s in namespace %q, outside the watched and the release namespaces", o.Kind, o.Metadata.Name, o.Metadata.Namespace)
		}
	}
	find(t, byNamespace["autoresearch-system"], "Role", release+"-leader-election-role")
	find(t, rendered, "ClusterRole", release+"-metrics-auth-role")
}
