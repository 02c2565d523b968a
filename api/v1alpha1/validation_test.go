package v1alpha1_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
)

func TestTimeouts(t *testing.T) {
	s := builder.MakeAutoResearch("demo", "").TimeLimit(time.Minute).SpecObj()
	if got := s.ResearcherTimeout(); got != 2*time.Minute {
		t.Errorf("researcher timeout %s, want twice the time limit", got)
	}
	if got := s.EvalTimeout(); got != time.Minute {
		t.Errorf("eval timeout %s, want the time limit", got)
	}
	if s.EpochLimitString() != "" {
		t.Errorf("epoch limit %q, want none", s.EpochLimitString())
	}
	s.Fixed.EpochLimit = 3
	s.Eval.Timeout = &v1alpha1.Duration{Duration: time.Hour}
	if s.EpochLimitString() != "3" || s.EvalTimeout() != time.Hour {
		t.Errorf("epoch limit %q, eval timeout %s; want 3 and 1h", s.EpochLimitString(), s.EvalTimeout())
	}
}

// TestValidateRulesNoCRDRuleStates checks the rules only Validate states,
// which the engine runs before anything else: the CRD refuses none of these.
func TestValidateRulesNoCRDRuleStates(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*v1alpha1.AutoResearchSpec)
		want string
	}{
		"a glob over a variable file": {
			func(s *v1alpha1.AutoResearchSpec) { s.Fixed.Files = []v1alpha1.PathPattern{"*.py"} },
			`spec.fixed.files[0]: Invalid value: "*.py": covers variable file train.py, which cannot be both fixed and variable`,
		},
		"two groups, none named value": {
			func(s *v1alpha1.AutoResearchSpec) { s.Eval.Pattern = `(val|test)_bpb=([0-9.]+)` },
			"spec.eval.pattern: Invalid value: \"(val|test)_bpb=([0-9.]+)\": needs a capture group named value, as in (?P<value>[0-9.]+), to say which of its 2 groups holds the value",
		},
		"an env name with =": {
			func(s *v1alpha1.AutoResearchSpec) { s.Train.Env = []corev1.EnvVar{{Name: "WANDB_MODE=offline"}} },
			`spec.train.env[0].name: Invalid value: "WANDB_MODE=offline": must be an environment variable name`,
		},
		"a pod template with an unknown field": {
			func(s *v1alpha1.AutoResearchSpec) { s.Train.PodTemplate = builder.PodTemplate("spec: {volumez: []}") },
			`spec.train.podTemplate: Invalid value: "{\"spec\":{\"volumez\":[]}}": must be a partial pod template (metadata and spec of a pod): unknown field "spec.volumez"`,
		},
		"a pod template that adds a container": {
			func(s *v1alpha1.AutoResearchSpec) {
				s.Train.PodTemplate = builder.PodTemplate("spec: {containers: [{name: sidecar, image: busybox}]}")
			},
			`spec.train.podTemplate.spec.containers[0].name: Unsupported value: "sidecar": supported values: "train"`,
		},
		"a pod template that changes the command": {
			func(s *v1alpha1.AutoResearchSpec) {
				s.Eval.PodTemplate = builder.PodTemplate("spec: {containers: [{name: eval, command: [echo, 'val_bpb: 0']}]}")
			},
			"spec.eval.podTemplate.spec.containers[0]: Forbidden: command, args, image, workingDir and securityContext are the operator's",
		},
		"a pod template that mounts over the sealed code": {
			func(s *v1alpha1.AutoResearchSpec) {
				s.Train.PodTemplate = builder.PodTemplate("spec: {containers: [{name: train, volumeMounts: [{name: data, mountPath: /workspace/worktree/eval}]}], volumes: [{name: data, emptyDir: {}}]}")
			},
			`spec.train.podTemplate.spec.containers[0].volumeMounts[0].mountPath: Invalid value: "/workspace/worktree/eval": overlaps the operator's /workspace`,
		},
		"a pod template with a hostPath": {
			func(s *v1alpha1.AutoResearchSpec) {
				s.Train.PodTemplate = builder.PodTemplate("spec: {volumes: [{name: data, hostPath: {path: /data}}]}")
			},
			"spec.train.podTemplate.spec.volumes[0].hostPath: Forbidden: hostPath volumes are refused",
		},
		"a pod template that runs as root": {
			func(s *v1alpha1.AutoResearchSpec) {
				s.Train.PodTemplate = builder.PodTemplate("spec: {securityContext: {runAsUser: 0}}")
			},
			"spec.train.podTemplate.spec.securityContext: Forbidden: step pods run as a non-root user",
		},
		"a pod template on the host network": {
			func(s *v1alpha1.AutoResearchSpec) {
				s.Train.PodTemplate = builder.PodTemplate("spec: {hostNetwork: true}")
			},
			"spec.train.podTemplate.spec: Forbidden: hostNetwork, hostPID and hostIPC are refused",
		},
		"a pod template with init containers": {
			func(s *v1alpha1.AutoResearchSpec) {
				s.Train.PodTemplate = builder.PodTemplate("spec: {initContainers: [{name: fetch, image: busybox}]}")
			},
			"spec.train.podTemplate.spec.initContainers: Forbidden",
		},
		"a service account for the Researcher": {
			func(s *v1alpha1.AutoResearchSpec) {
				s.Researcher.PodTemplate = builder.PodTemplate("spec: {serviceAccountName: admin}")
			},
			"spec.researcher.podTemplate.spec.serviceAccountName: Forbidden: the Researcher gets no service account",
		},
		"a projected token for the Researcher": {
			func(s *v1alpha1.AutoResearchSpec) {
				s.Researcher.PodTemplate = builder.PodTemplate("spec: {volumes: [{name: t, projected: {sources: [{serviceAccountToken: {path: token}}]}}]}")
			},
			"spec.researcher.podTemplate.spec.volumes[0].projected: Forbidden: the Researcher gets no service account token",
		},
		"an empty env name": {
			func(s *v1alpha1.AutoResearchSpec) { s.Researcher.Env = []corev1.EnvVar{{Value: "sk-1"}} },
			`spec.researcher.env[0].name: Invalid value: "": must be an environment variable name`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			errs := builder.MakeAutoResearch("demo", "").Edit(tc.edit).SpecObj().Validate()
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Errorf("Validate: %v; want one error saying %q", errs, tc.want)
			}
		})
	}
}

// TestValidatePodTemplates checks that a template adding what real
// clusters need passes Validate.
func TestValidatePodTemplates(t *testing.T) {
	s := builder.MakeAutoResearch("demo", "").Edit(func(s *v1alpha1.AutoResearchSpec) {
		s.Train.PodTemplate = builder.PodTemplate(`
metadata: {labels: {team: ml}, annotations: {gke-gcsfuse/volumes: "true"}}
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
`)
		s.Eval.PodTemplate = builder.PodTemplate("spec: {containers: [{name: eval, resources: {limits: {memory: 8Gi}}}]}")
		s.Researcher.PodTemplate = builder.PodTemplate("spec: {nodeSelector: {pool: cpu}}")
	}).SpecObj()
	if errs := s.Validate(); len(errs) > 0 {
		t.Errorf("Validate: %v; want the templates accepted", errs)
	}
}
