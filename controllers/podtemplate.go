package controllers

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

// mergePodTemplate merges a user's partial pod template over a generated
// one the way Kubernetes applies a strategic merge patch (containers,
// volumes and env by name, volume mounts by path), then puts back what the
// operator's step needs: its init containers and no others; its containers
// and no others, each with its image, command, args, working directory,
// security context, termination message, mounts, AUTORESEARCH_ variables,
// PATH and GPUs; its volumes; the restart policy, the deadline, the
// restricted security context with a non-root user, no host namespaces and
// its labels. A mount that overlaps one of the operator's is dropped. For
// the Researcher (noToken), no service account and no token either.
// Validate refuses most of what this drops; the merge holds anyway.
func mergePodTemplate(generated corev1.PodTemplateSpec, t *v1alpha1.PodTemplate, noToken bool) (corev1.PodTemplateSpec, error) {
	if t == nil || len(t.Raw) == 0 {
		return generated, nil
	}
	base, err := json.Marshal(generated)
	if err != nil {
		return generated, err
	}
	patched, err := strategicpatch.StrategicMergePatch(base, t.Raw, corev1.PodTemplateSpec{})
	if err != nil {
		return generated, fmt.Errorf("merging the pod template: %w", err)
	}
	var merged corev1.PodTemplateSpec
	if err := json.Unmarshal(patched, &merged); err != nil {
		return generated, fmt.Errorf("merging the pod template: %w", err)
	}
	out := corev1.PodTemplateSpec{Spec: merged.Spec}
	out.Labels, out.Annotations = merged.Labels, merged.Annotations
	if len(generated.Labels) > 0 && out.Labels == nil {
		out.Labels = map[string]string{}
	}
	maps.Copy(out.Labels, generated.Labels)
	keepOperatorsSpec(&out.Spec, &generated.Spec, noToken)
	return out, nil
}

func keepOperatorsSpec(s, gen *corev1.PodSpec, noToken bool) {
	s.InitContainers = gen.InitContainers
	s.EphemeralContainers = nil
	s.RestartPolicy = gen.RestartPolicy
	s.ActiveDeadlineSeconds = gen.ActiveDeadlineSeconds
	s.HostNetwork, s.HostPID, s.HostIPC = false, false, false
	sc := s.SecurityContext
	if sc == nil {
		sc = gen.SecurityContext.DeepCopy()
	}
	sc.RunAsNonRoot = ptr.To(true)
	if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		sc.RunAsUser = gen.SecurityContext.RunAsUser
	}
	sc.SeccompProfile = gen.SecurityContext.SeccompProfile
	s.SecurityContext = sc

	containers := make([]corev1.Container, 0, len(gen.Containers))
	for _, g := range gen.Containers {
		c := g
		if i := slices.IndexFunc(s.Containers, func(m corev1.Container) bool { return m.Name == g.Name }); i >= 0 {
			c = keepOperatorsContainer(s.Containers[i], g)
		}
		containers = append(containers, c)
	}
	s.Containers = containers

	volumes := slices.Clone(gen.Volumes)
	for _, v := range s.Volumes {
		if slices.ContainsFunc(gen.Volumes, func(g corev1.Volume) bool { return g.Name == v.Name }) {
			continue
		}
		if noToken && v.Projected != nil {
			v.Projected.Sources = slices.DeleteFunc(v.Projected.Sources, func(p corev1.VolumeProjection) bool { return p.ServiceAccountToken != nil })
		}
		volumes = append(volumes, v)
	}
	s.Volumes = volumes
	readOnlyTemplateMounts(s, gen)
	if noToken {
		s.ServiceAccountName, s.DeprecatedServiceAccount = "", ""
		s.AutomountServiceAccountToken = ptr.To(false)
	}
}

// readOnlyTemplateMounts makes the mounts the template added to s's
// containers read-only, but those of emptyDirs, which die with the pod: a
// claim, or any volume that outlives the pod, mounted writable would let
// one step's code (training, a Researcher) change what another's (the
// evaluation) reads, such as the validation split of a dataset.
func readOnlyTemplateMounts(s, gen *corev1.PodSpec) {
	inPod := map[string]bool{}
	for _, v := range s.Volumes {
		inPod[v.Name] = v.EmptyDir != nil
	}
	for i := range s.Containers {
		c := &s.Containers[i]
		for j := range c.VolumeMounts {
			m := &c.VolumeMounts[j]
			if !slices.ContainsFunc(gen.Containers[i].VolumeMounts, func(g corev1.VolumeMount) bool { return g.Name == m.Name && g.MountPath == m.MountPath }) {
				m.ReadOnly = m.ReadOnly || !inPod[m.Name]
			}
		}
	}
}

// keepOperatorsContainer is the merged container c with what runs the
// step taken from the generated g.
func keepOperatorsContainer(c, g corev1.Container) corev1.Container {
	c.Image, c.Command, c.Args, c.WorkingDir = g.Image, g.Command, g.Args, g.WorkingDir
	c.SecurityContext = g.SecurityContext
	c.TerminationMessagePath, c.TerminationMessagePolicy = g.TerminationMessagePath, g.TerminationMessagePolicy
	c.Lifecycle = g.Lifecycle
	mounts := slices.Clone(g.VolumeMounts)
	for _, m := range c.VolumeMounts {
		if !slices.ContainsFunc(g.VolumeMounts, func(o corev1.VolumeMount) bool { return v1alpha1.MountPathsOverlap(m.MountPath, o.MountPath) }) {
			mounts = append(mounts, m)
		}
	}
	c.VolumeMounts = mounts
	for _, e := range g.Env {
		if !strings.HasPrefix(e.Name, "AUTORESEARCH_") && e.Name != "PATH" {
			continue
		}
		if i := slices.IndexFunc(c.Env, func(m corev1.EnvVar) bool { return m.Name == e.Name }); i >= 0 {
			c.Env[i] = e
		} else {
			c.Env = append(c.Env, e)
		}
	}
	keepGPUs(&c.Resources.Limits, g.Resources.Limits)
	keepGPUs(&c.Resources.Requests, g.Resources.Requests)
	return c
}

func keepGPUs(dst *corev1.ResourceList, src corev1.ResourceList) {
	q, ok := src[GPUResource]
	if !ok {
		return
	}
	if *dst == nil {
		*dst = corev1.ResourceList{}
	}
	(*dst)[GPUResource] = q
}
