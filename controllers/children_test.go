package controllers

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// TestUserImagesGetTheToolsFromTheirOnlyInitContainer: every pod that runs
// a user's image runs the step wrapper from the tools volume, which its one
// init container, of the operator's image, fills on the way to its own
// step; only that container may write the volume.
func TestUserImagesGetTheToolsFromTheirOnlyInitContainer(t *testing.T) {
	b := childBuilder{ar: builder.MakeAutoResearch("x", "ns").GPUs(1).Edit(func(s *v1alpha1.AutoResearchSpec) {
		s.Researcher.Image = "researcher:1"
		s.Train.Image = "train:1"
		s.KernelTargets = []v1alpha1.KernelTarget{{Name: "rms", NewModule: "kernels:rms", BaselineModule: "eval:rms", Fixture: "eval:fixture"}}
		withHoldout(s)
	}).Obj(), image: "operator:1"}
	b.ar.Status.Workspace = &v1alpha1.WorkspaceStatus{StartCommit: "c0"}
	pods := map[string]corev1.PodSpec{}
	for _, typ := range []round.ActionType{round.ActionRunTrain, round.ActionRunEval} {
		job, err := b.gpuJob(round.Action{Type: typ, Round: 1, Code: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		pods[string(typ)] = job.Spec.Template.Spec
	}
	holdout, err := b.holdoutJob(round.Action{Type: round.ActionRunHoldout, Round: 1, Code: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	pods["holdout"] = holdout.Spec.Template.Spec
	researcher, err := b.researcherPod(round.Action{Type: round.ActionRunResearcher, Round: 1, BaseCommit: "c0"})
	if err != nil {
		t.Fatal(err)
	}
	pods["researcher"] = researcher.Spec
	pods["compliance with parity"] = b.compliancePod(round.Action{Type: round.ActionCheckCompliance, Round: 1, BaseCommit: "c0"}).Spec

	for name, spec := range pods {
		if len(spec.InitContainers) != 1 {
			t.Errorf("%s: %d init containers, want 1", name, len(spec.InitContainers))
			continue
		}
		init := spec.InitContainers[0]
		if init.Image != b.image || init.Command[0] != steps.ImageBinary || !slices.Contains(init.Args, "--install-tools="+steps.ToolsMount) {
			t.Errorf("%s: init container %s (%s %v) does not install the tools from the operator's image", name, init.Name, init.Image, init.Args)
		}
		if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == volumeTools && v.EmptyDir != nil }) {
			t.Errorf("%s: no tools emptyDir in %v", name, spec.Volumes)
		}
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == volumeTools })
			switch {
			case c.Name == init.Name && (i < 0 || c.VolumeMounts[i].ReadOnly || c.VolumeMounts[i].MountPath != steps.ToolsMount):
				t.Errorf("%s: the init container cannot write the tools at %s: %v", name, steps.ToolsMount, c.VolumeMounts)
			case c.Name != init.Name && (i < 0 || !c.VolumeMounts[i].ReadOnly):
				t.Errorf("%s: container %s does not see the tools read-only: %v", name, c.Name, c.VolumeMounts)
			}
		}
	}
}

// TestTheHoldoutWritesOnlyItsOwnPod: a claim that train.podTemplate mounts
// writable, for a dataset, is read-only in the holdout's pod, where
// candidate code holds the holdout's data, as in every step
// (TestTemplateMountsAreReadOnly); the holdout writes its emptyDirs, and
// nothing of the workspace.
func TestTheHoldoutWritesOnlyItsOwnPod(t *testing.T) {
	b := childBuilder{ar: builder.MakeAutoResearch("x", "ns").GPUs(1).Edit(func(s *v1alpha1.AutoResearchSpec) {
		s.Train.PodTemplate = builder.PodTemplate(`
spec:
  containers:
  - name: train
    volumeMounts: [{name: data, mountPath: /data}, {name: scratch, mountPath: /scratch}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: datasets}}, {name: scratch, emptyDir: {}}]
`)
		withHoldout(s)
	}).Obj(), image: "operator:1"}
	b.ar.Status.Workspace = &v1alpha1.WorkspaceStatus{StartCommit: "c0"}
	holdout, err := b.holdoutJob(round.Action{Type: round.ActionRunHoldout, Round: 1, Code: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	mount := func(spec corev1.PodSpec, path string) *corev1.VolumeMount {
		i := slices.IndexFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == path })
		if i < 0 {
			t.Fatalf("%s is not mounted in %v", path, spec.Containers[0].VolumeMounts)
		}
		return &spec.Containers[0].VolumeMounts[i]
	}
	h := holdout.Spec.Template.Spec
	if !mount(h, "/data").ReadOnly {
		t.Error("the holdout writes the dataset claim")
	}
	if mount(h, "/scratch").ReadOnly {
		t.Error("the holdout cannot write its scratch emptyDir")
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range h.Volumes {
		volumes[v.Name] = v
	}
	for _, c := range append(h.InitContainers, h.Containers...) {
		for _, m := range c.VolumeMounts {
			if !m.ReadOnly && volumes[m.Name].EmptyDir == nil {
				t.Errorf("the holdout's container %s writes %s (%+v) at %s", c.Name, m.Name, volumes[m.Name].VolumeSource, m.MountPath)
			}
		}
	}
}
