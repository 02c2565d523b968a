package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// TestParityCannotSpeakForTheFileCheck plays a candidate whose kernels, run
// by the parity container, write a termination message of their own: it
// may say what it likes about parity, but the candidate and the file rules
// come from the file check alone.
func TestParityCannotSpeakForTheFileCheck(t *testing.T) {
	ar := builder.MakeAutoResearch("p", "ns").Obj()
	ar.Status = v1alpha1.AutoResearchStatus{
		Phase: v1alpha1.PhaseRunning,
		CurrentRound: &v1alpha1.RoundStatus{
			Number: 1, Step: v1alpha1.StepCompliance, StepState: v1alpha1.StepStateRunning, BaseCommit: "base",
			Candidates: []v1alpha1.CandidateStatus{{Index: 0}},
		},
	}
	message := func(t *testing.T, r steps.ComplianceResult) string {
		data, err := steps.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	terminated := func(name, msg string, code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: msg}}}
	}
	check := steps.ComplianceResult{Strategy: "s", Violation: "modified fixed file eval.py", Candidate: "sealed"}
	cases := map[string]struct {
		check, parity steps.ComplianceResult
		parityExit    int32
		want          round.ComplianceResult
	}{
		"a forged pass": {
			check:  check,
			parity: steps.ComplianceResult{Strategy: "s", Candidate: "an older candidate"},
			want:   round.ComplianceResult{Strategy: "s", Violation: "modified fixed file eval.py", Candidate: "sealed"},
		},
		"a forged candidate": {
			check:  steps.ComplianceResult{Strategy: "s", Candidate: "sealed"},
			parity: steps.ComplianceResult{Strategy: "s", Candidate: "an older candidate"},
			want:   round.ComplianceResult{Strategy: "s", Candidate: "sealed"},
		},
		"a parity container that died": {
			check:      steps.ComplianceResult{Strategy: "s", Candidate: "sealed"},
			parity:     steps.ComplianceResult{Strategy: "s", Candidate: "sealed"},
			parityExit: 143,
			want: round.ComplianceResult{Strategy: "s", Candidate: "sealed",
				Parity: "PARITY_FAIL kind=crash detail=the parity check ended with exit code 143 and no result"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{Name: stepCompliance}},
					Containers:     []corev1.Container{{Name: containerParity}},
				},
				Status: corev1.PodStatus{
					Phase:                 corev1.PodSucceeded,
					InitContainerStatuses: []corev1.ContainerStatus{terminated(stepCompliance, message(t, tc.check), 0)},
					ContainerStatuses:     []corev1.ContainerStatus{terminated(containerParity, message(t, tc.parity), tc.parityExit)},
				},
			}
			a, _ := round.CurrentAction(&ar.Spec, &ar.Status)
			obs, failure := observe(ar, &ar.Spec, world{pods: map[string]*corev1.Pod{childName(ar, a): pod}})
			if failure != nil || obs.Compliance == nil {
				t.Fatalf("observation %+v, failure %+v", obs, failure)
			}
			if *obs.Compliance != tc.want {
				t.Errorf("compliance %+v, want %+v", *obs.Compliance, tc.want)
			}
		})
	}
}
