package controllers

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
	"github.com/autoresearch-dev/autoresearch-operator/internal/prompt"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// datasetTemplate is what a real cluster's training needs: a dataset, a
// service account for object storage, placement and a pull secret.
const datasetTemplate = `
metadata: {labels: {team: ml}}
spec:
  serviceAccountName: trainer
  priorityClassName: research
  runtimeClassName: nvidia
  imagePullSecrets: [{name: registry}]
  securityContext: {runAsUser: 1000, fsGroup: 1000}
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: gpu, operator: In, values: [h100]}]}]}}}
  containers:
  - name: train
    env: [{name: DATA_DIR, value: /data}]
    volumeMounts: [{name: data, mountPath: /data, readOnly: true}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: datasets}}]
`

// TestPodTemplates checks the generated training, evaluation and
// Researcher pods against a real API server: the templates' additions
// are there, shm is mounted, and what runs the step is the operator's.
func TestPodTemplates(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	const name = "shaped"
	// The API server admits a pod only with a PriorityClass and a
	// RuntimeClass that exist.
	for _, obj := range []client.Object{
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "research"}, Value: 100},
		&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "nvidia"}, Handler: "nvidia"},
	} {
		if err := k8s.Create(context.Background(), obj); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	ar := builder.MakeAutoResearch(name, ns).Question("q").MaxRounds(1).TimeLimit(time.Minute).Edit(func(s *v1alpha1.AutoResearchSpec) {
		s.Train.Shm = ptr.To(resource.MustParse("8Gi"))
		s.Train.PodTemplate = builder.PodTemplate(datasetTemplate)
		s.Eval.PodTemplate = builder.PodTemplate("spec: {containers: [{name: eval, env: [{name: SPLIT, value: val}]}]}")
		s.Researcher.PodTemplate = builder.PodTemplate("spec: {nodeSelector: {pool: cpu}, containers: [{name: researcher, env: [{name: HOME, value: /tmp}]}]}")
	}).Obj()
	if err := k8s.Create(context.Background(), ar); err != nil {
		t.Fatal(err)
	}
	finishPod(t, ns, name+"-init", 0, result(t, steps.WorkspaceResult{StartCommit: "s0", FixedHashes: map[string]string{"eval.py": "aa"}}))

	train := waitJob(t, ns, name+"-r0-train-1")
	checkDatasetPod(t, train.Spec.Template, steps.StepTrain)
	finishJob(t, ns, name+"-r0-train-1", 0, result(t, steps.TrainResult{}))
	eval := waitJob(t, ns, name+"-r0-eval-1")
	checkDatasetPod(t, eval.Spec.Template, steps.StepEval)
	if env(eval.Spec.Template.Spec.Containers[0], "SPLIT") != "val" {
		t.Errorf("eval env %v, want eval.podTemplate's SPLIT", eval.Spec.Template.Spec.Containers[0].Env)
	}
	if env(train.Spec.Template.Spec.Containers[0], "SPLIT") != "" {
		t.Errorf("train env %v has eval.podTemplate's SPLIT", train.Spec.Template.Spec.Containers[0].Env)
	}
	finishJob(t, ns, name+"-r0-eval-1", 0, result(t, steps.EvalResult{Found: true, Value: "1.0"}))

	researcher := waitPod(t, ns, name+"-r1-researcher")
	checkStepPod(t, researcher)
	c := researcher.Spec.Containers[0]
	if researcher.Spec.NodeSelector["pool"] != "cpu" || env(c, "HOME") != "/tmp" || researcher.Spec.ServiceAccountName != "" && researcher.Spec.ServiceAccountName != "default" {
		t.Errorf("researcher node selector %v, HOME %q, service account %q; want the template's and the default account", researcher.Spec.NodeSelector, env(c, "HOME"), researcher.Spec.ServiceAccountName)
	}
	if !ptr.Deref(researcher.Spec.SecurityContext.RunAsNonRoot, false) || ptr.Deref(researcher.Spec.AutomountServiceAccountToken, true) {
		t.Errorf("the Researcher pod lost its restrictions: %+v", researcher.Spec)
	}
}

func checkDatasetPod(t *testing.T, tpl corev1.PodTemplateSpec, step string) {
	t.Helper()
	s := tpl.Spec
	checkStepPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: step}, Spec: s})
	c := s.Containers[0]
	if len(s.Containers) != 1 || c.Name != step || c.Command[0] != steps.Binary {
		t.Errorf("%s containers %+v; want the step wrapper alone", step, s.Containers)
	}
	if s.ServiceAccountName != "trainer" || s.PriorityClassName != "research" ||
		ptr.Deref(s.RuntimeClassName, "") != "nvidia" || len(s.ImagePullSecrets) != 1 || s.Affinity == nil || s.Affinity.NodeAffinity == nil {
		t.Errorf("%s pod spec lacks the template's placement and identity: %+v", step, s)
	}
	if tpl.Labels["team"] != "ml" || tpl.Labels[LabelStep] != step {
		t.Errorf("%s labels %v; want the template's and the operator's", step, tpl.Labels)
	}
	if ptr.Deref(s.SecurityContext.RunAsUser, 0) != 1000 || !ptr.Deref(s.SecurityContext.RunAsNonRoot, false) {
		t.Errorf("%s security context %+v; want the template's user, still non-root", step, s.SecurityContext)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m := mounts["/data"]; m.Name != "data" || !m.ReadOnly {
		t.Errorf("%s mounts %+v; want the dataset at /data", step, c.VolumeMounts)
	}
	if m := mounts[steps.WorktreeDir]; m.Name != volumeWorkspace || m.SubPath == "" {
		t.Errorf("%s mounts %+v; want the sealed checkout at the worktree", step, c.VolumeMounts)
	}
	if _, ok := mounts[shmMount]; !ok || env(c, "HOME") != homeDir || env(c, "DATA_DIR") != "/data" {
		t.Errorf("%s mounts %+v env %+v; want /dev/shm, HOME and DATA_DIR", step, c.VolumeMounts, c.Env)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range s.Volumes {
		vols[v.Name] = v
	}
	if v := vols[volumeShm]; v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit.Cmp(resource.MustParse("8Gi")) != 0 {
		t.Errorf("%s shm volume %+v, want 8Gi of memory", step, v)
	}
	if v := vols["data"]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "datasets" {
		t.Errorf("%s data volume %+v, want the datasets claim", step, v)
	}
}

func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestMergeKeepsTheOperatorsStep merges templates Validate would refuse,
// as a spec written before a rule existed could hold: what runs the step,
// its mounts and its restrictions stay the operator's.
func TestMergeKeepsTheOperatorsStep(t *testing.T) {
	b := childBuilder{ar: builder.MakeAutoResearch("x", "ns").GPUs(1).Obj(), image: "operator:1"}
	a := round.Action{Type: round.ActionRunTrain, Round: 1, Code: "c1"}
	plain, err := b.gpuJob(a)
	if err != nil {
		t.Fatal(err)
	}
	want := plain.Spec.Template
	for name, tc := range map[string]struct {
		template string
		noToken  bool
		check    func(t *testing.T, got corev1.PodTemplateSpec)
	}{
		"another command, image and privileges": {template: `spec: {containers: [{name: train, image: evil, command: [sh], args: [-c, 'echo val_bpb: 0'], workingDir: /, securityContext: {privileged: true}}]}`},
		"a mount over the sealed code": {template: `spec: {containers: [{name: train, volumeMounts: [{name: w, mountPath: /workspace/worktree}, {name: w, mountPath: /workspace}]}], volumes: [{name: w, emptyDir: {}}]}`, check: func(t *testing.T, got corev1.PodTemplateSpec) {
			if i := slices.IndexFunc(got.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "w" }); i < 0 {
				t.Errorf("the template's volume is gone: %v", got.Spec.Volumes)
			}
		}},
		"a replaced workspace volume":    {template: `spec: {volumes: [{name: workspace, emptyDir: {}}]}`},
		"init containers and sidecars":   {template: `spec: {initContainers: [{name: fetch, image: busybox}], containers: [{name: sidecar, image: busybox}]}`},
		"root, the host and no deadline": {template: `spec: {hostNetwork: true, hostPID: true, restartPolicy: Always, activeDeadlineSeconds: 999999, securityContext: {runAsUser: 0, runAsNonRoot: false, seccompProfile: {type: Unconfined}}}`},
		"operator's labels and GPUs": {template: `metadata: {labels: {autoresearch.dev/step: eval}}
spec: {containers: [{name: train, resources: {limits: {nvidia.com/gpu: 0}}}]}`},
		"a token for the Researcher": {template: `spec: {serviceAccountName: admin, automountServiceAccountToken: true, volumes: [{name: t, projected: {sources: [{serviceAccountToken: {path: token}}]}}]}`, noToken: true, check: func(t *testing.T, got corev1.PodTemplateSpec) {
			if got.Spec.ServiceAccountName != "" || ptr.Deref(got.Spec.AutomountServiceAccountToken, true) || len(got.Spec.Volumes[len(got.Spec.Volumes)-1].Projected.Sources) != 0 {
				t.Errorf("the Researcher gets a token: %+v", got.Spec)
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := mergePodTemplate(*want.DeepCopy(), builder.PodTemplate(tc.template), tc.noToken)
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
			// Apart from what the template may add, the pod is the operator's.
			got.Spec.Volumes = slices.DeleteFunc(got.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "w" || v.Name == "t" })
			if tc.noToken {
				got.Spec.AutomountServiceAccountToken = want.Spec.AutomountServiceAccountToken
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the merge changed the operator's pod (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTemplateMountsAreReadOnly: a claim a template mounts writable, as
// for a dataset, is read-only in every step, so that training cannot
// rewrite the validation split the evaluation then reads; an emptyDir,
// which dies with its pod, stays writable.
func TestTemplateMountsAreReadOnly(t *testing.T) {
	b := childBuilder{ar: builder.MakeAutoResearch("x", "ns").GPUs(1).Edit(func(s *v1alpha1.AutoResearchSpec) {
		s.Train.PodTemplate = builder.PodTemplate(`spec:
  containers: [{name: train, volumeMounts: [{name: data, mountPath: /data}, {name: scratch, mountPath: /scratch}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: datasets}}, {name: scratch, emptyDir: {}}]`)
		s.Researcher.PodTemplate = builder.PodTemplate(`spec:
  containers: [{name: researcher, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: datasets}}]`)
	}).Obj(), image: "operator:1"}
	train, err := b.gpuJob(round.Action{Type: round.ActionRunTrain, Round: 1, Code: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	eval, err := b.gpuJob(round.Action{Type: round.ActionRunEval, Round: 1, Code: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	researcher, err := b.researcherPod(round.Action{Type: round.ActionRunResearcher, Round: 1, Prompt: &prompt.Data{}})
	if err != nil {
		t.Fatal(err)
	}
	for step, c := range map[string]corev1.Container{
		"train": train.Spec.Template.Spec.Containers[0], "eval": eval.Spec.Template.Spec.Containers[0], "researcher": researcher.Spec.Containers[0],
	} {
		for _, m := range c.VolumeMounts {
			switch m.Name {
			case "data":
				if !m.ReadOnly {
					t.Errorf("%s mounts the datasets claim writable at %s", step, m.MountPath)
				}
			case "scratch", volumeWorkspace:
				if m.ReadOnly && m.MountPath != steps.GitDir {
					t.Errorf("%s mounts %s read-only at %s, want it writable", step, m.Name, m.MountPath)
				}
			}
		}
	}
}

// TestReservedMountPaths ties the paths Validate keeps templates from to
// where the operator mounts.
func TestReservedMountPaths(t *testing.T) {
	b := childBuilder{ar: builder.MakeAutoResearch("x", "ns").Edit(func(s *v1alpha1.AutoResearchSpec) {
		s.Train.Shm = ptr.To(resource.MustParse("1Gi"))
		withHoldout(s)
	}).Obj(), image: "operator:1"}
	job, err := b.gpuJob(round.Action{Type: round.ActionRunEval, Round: 1, Code: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	holdout, err := b.holdoutJob(round.Action{Type: round.ActionRunHoldout, Round: 1, Code: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := b.researcherPod(round.Action{Type: round.ActionRunResearcher, Round: 1, BaseCommit: "c0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []corev1.PodSpec{job.Spec.Template.Spec, holdout.Spec.Template.Spec, pod.Spec} {
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			for _, m := range c.VolumeMounts {
				if m.MountPath == homeDir || m.MountPath == shmMount || m.MountPath == holdoutDir {
					continue // defaults a template may replace, and the user's holdout
				}
				if !slices.ContainsFunc(v1alpha1.ReservedMountPaths, func(r string) bool { return v1alpha1.MountPathsOverlap(r, m.MountPath) }) {
					t.Errorf("container %s mounts %s, which v1alpha1.ReservedMountPaths does not reserve", c.Name, m.MountPath)
				}
			}
		}
	}
}
