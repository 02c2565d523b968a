package v1alpha1

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/json"
)

// PodTemplate is a partial corev1.PodTemplateSpec, merged over a pod the
// operator generates as a strategic merge patch. It is kept schemaless so
// that the CRD does not inline the whole pod schema; Validate decodes it
// strictly instead.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:Schemaless
// +kubebuilder:validation:Type=object
type PodTemplate struct {
	runtime.RawExtension `json:",inline"`
}

// ReservedMountPaths are where the operator mounts the workspace, the
// sealed code, its tools, the holdout's scratch space, the prompt and the fixed
// files' hashes. A template may mount nothing at or under them, nor above
// them.
var ReservedMountPaths = []string{"/workspace", "/autoresearch-tools", "/autoresearch-holdout", "/etc/autoresearch", "/etc/autoresearch-hashes", "/dev/termination-log"}

// Decode returns the template as a pod template, refusing unknown fields.
func (t *PodTemplate) Decode() (*corev1.PodTemplateSpec, error) {
	var pt corev1.PodTemplateSpec
	if t == nil || len(t.Raw) == 0 {
		return &pt, nil
	}
	strict, err := json.UnmarshalStrict(t.Raw, &pt)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, strict[0]
	}
	return &pt, nil
}

// validatePodTemplate refuses a template that would add containers, take
// the host's namespaces or paths, run as root, or override what the
// operator's step needs. container is the name of the step's container;
// researcher says whether it shapes the untrusted Researcher's pod.
func validatePodTemplate(p *field.Path, t *PodTemplate, container string, researcher bool) field.ErrorList {
	if t == nil {
		return nil
	}
	pt, err := t.Decode()
	if err != nil {
		return field.ErrorList{field.Invalid(p, string(t.Raw), "must be a partial pod template (metadata and spec of a pod): "+err.Error())}
	}
	sp := p.Child("spec")
	s := pt.Spec
	errs := validateTemplateContainers(sp, &s, container)
	if s.HostNetwork || s.HostPID || s.HostIPC {
		errs = append(errs, field.Forbidden(sp, "hostNetwork, hostPID and hostIPC are refused: step pods keep the restricted Pod Security Standard"))
	}
	if sc := s.SecurityContext; sc != nil {
		if (sc.RunAsUser != nil && *sc.RunAsUser == 0) || (sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot) {
			errs = append(errs, field.Forbidden(sp.Child("securityContext"), "step pods run as a non-root user: set runAsUser to a UID other than 0"))
		}
	}
	for i, v := range s.Volumes {
		vp := sp.Child("volumes").Index(i)
		if v.HostPath != nil {
			errs = append(errs, field.Forbidden(vp.Child("hostPath"), "hostPath volumes are refused: use a persistentVolumeClaim, such as one on a local PersistentVolume"))
		}
		if researcher && v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(src corev1.VolumeProjection) bool { return src.ServiceAccountToken != nil }) {
			errs = append(errs, field.Forbidden(vp.Child("projected"), "the Researcher gets no service account token"))
		}
	}
	if researcher && (s.ServiceAccountName != "" || s.DeprecatedServiceAccount != "" || ptr.Deref(s.AutomountServiceAccountToken, false)) {
		errs = append(errs, field.Forbidden(sp.Child("serviceAccountName"), "the Researcher gets no service account: give it API keys through researcher.env's secretKeyRefs"))
	}
	return errs
}

// validateTemplateContainers allows only a patch of the step's container
// that leaves what it runs to the operator.
func validateTemplateContainers(sp *field.Path, s *corev1.PodSpec, container string) field.ErrorList {
	var errs field.ErrorList
	if len(s.InitContainers) > 0 {
		errs = append(errs, field.Forbidden(sp.Child("initContainers"), "the operator's init containers prepare the step; a template adds none"))
	}
	if len(s.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(sp.Child("ephemeralContainers"), "a template adds no containers"))
	}
	for i, c := range s.Containers {
		cp := sp.Child("containers").Index(i)
		if c.Name != container {
			errs = append(errs, field.NotSupported(cp.Child("name"), c.Name, []string{container}))
			continue
		}
		if len(c.Command) > 0 || len(c.Args) > 0 || c.Image != "" || c.WorkingDir != "" || c.SecurityContext != nil {
			errs = append(errs, field.Forbidden(cp, "command, args, image, workingDir and securityContext are the operator's: set the spec's command and image instead"))
		}
		for j, m := range c.VolumeMounts {
			if r := reservedBy(m.MountPath); r != "" {
				errs = append(errs, field.Invalid(cp.Child("volumeMounts").Index(j).Child("mountPath"), m.MountPath, fmt.Sprintf("overlaps the operator's %s; mount elsewhere, such as /data", r)))
			}
		}
	}
	return errs
}

// reservedBy returns the reserved path that p overlaps, or "".
func reservedBy(p string) string {
	for _, r := range ReservedMountPaths {
		if MountPathsOverlap(p, r) {
			return r
		}
	}
	return ""
}

// MountPathsOverlap reports whether a and b are the same path or one
// holds the other, so that a mount at one hides or is hidden by the other.
func MountPathsOverlap(a, b string) bool {
	a, b = strings.TrimSuffix(path.Clean(a), "/")+"/", strings.TrimSuffix(path.Clean(b), "/")+"/"
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}
