package controllers

import (
	"fmt"
	"strconv"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/round"
)

// Labels on every child the operator creates.
const (
	LabelManagedBy  = "app.kubernetes.io/managed-by"
	LabelExperiment = "autoresearch.dev/experiment"
	LabelRound      = "autoresearch.dev/round"
	LabelStep       = "autoresearch.dev/step"
	// LabelExperimentUID on the workspace claim tells the claim of this
	// experiment from one an earlier experiment of the same name retained.
	LabelExperimentUID = "autoresearch.dev/experiment-uid"
	ManagerName        = "autoresearch-operator"
	// ControllerName reports the operator's events.
	ControllerName = "autoresearch-controller"
	// AnnotationBase on a compliance pod names the commit it checks the
	// candidate on.
	AnnotationBase = "autoresearch.dev/base"
	// LabelKueueQueue admits Jobs through Kueue.
	LabelKueueQueue = "kueue.x-k8s.io/queue-name"
)

// Step names of children, as in their names and the step label.
const (
	stepInit       = "init"
	stepResearcher = "researcher"
	stepCompliance = "compliance"
	stepTrain      = "train"
	stepEval       = "eval"
	stepHoldout    = "holdout"
	stepGit        = "git"
	stepFinish     = "finish"
)

// containerParity is the compliance pod's container that checks kernel
// parity in the training image.
const containerParity = "parity"

// Deterministic names: an operator restart finds the child it already
// created instead of creating it twice.

func workspaceClaimName(ar *v1alpha1.AutoResearch) string {
	if p := ar.Spec.Source.PVC; p != nil {
		return p.ClaimName
	}
	return ar.Name + "-workspace"
}

func initPodName(ar *v1alpha1.AutoResearch) string { return ar.Name + "-init" }

// holdoutPolicyName names the NetworkPolicy that cuts the holdout's pods
// off the network.
func holdoutPolicyName(ar *v1alpha1.AutoResearch) string { return ar.Name + "-holdout" }

func roundConfigMapName(ar *v1alpha1.AutoResearch, n int32) string {
	return fmt.Sprintf("%s-r%d-prompt", ar.Name, n)
}

// promptConfigMapName names the ConfigMap of a's prompt and hashes: the
// round's, or its candidate's in a round of several.
func promptConfigMapName(ar *v1alpha1.AutoResearch, a round.Action) string {
	return fmt.Sprintf("%s-r%s-prompt", ar.Name, label(a))
}

// label is a's round, with its candidate in a round of several: "3b".
func label(a round.Action) string {
	if a.Candidates == 0 {
		return strconv.Itoa(int(a.Round))
	}
	return round.CandidateLabel(a.Round, round.CandidateName(a.Candidate))
}

// candidate names a's candidate in a round of several, "" in a round of
// one.
func candidate(a round.Action) string {
	if a.Candidates == 0 {
		return ""
	}
	return round.CandidateName(a.Candidate)
}

// childName is the name of the child that performs an action.
func childName(ar *v1alpha1.AutoResearch, a round.Action) string {
	switch a.Type {
	case round.ActionPrepareWorkspace:
		return initPodName(ar)
	case round.ActionFinish:
		return fmt.Sprintf("%s-r%d-%s", ar.Name, a.Round, stepFinish)
	}
	step := actionStep(a.Type)
	if a.Sample > 0 {
		return fmt.Sprintf("%s-r%s-%s-%d", ar.Name, label(a), step, a.Sample)
	}
	if step == stepGit {
		return fmt.Sprintf("%s-r%d-%s", ar.Name, a.Round, step)
	}
	return fmt.Sprintf("%s-r%s-%s", ar.Name, label(a), step)
}

func actionStep(t round.ActionType) string {
	switch t {
	case round.ActionPrepareWorkspace:
		return stepInit
	case round.ActionRunResearcher:
		return stepResearcher
	case round.ActionCheckCompliance:
		return stepCompliance
	case round.ActionRunTrain:
		return stepTrain
	case round.ActionRunEval:
		return stepEval
	case round.ActionRunHoldout:
		return stepHoldout
	case round.ActionCommit, round.ActionRollback:
		return stepGit
	case round.ActionFinish:
		return stepFinish
	}
	return ""
}

func childLabels(ar *v1alpha1.AutoResearch, n int32, step string) map[string]string {
	return map[string]string{
		LabelManagedBy:  ManagerName,
		LabelExperiment: ar.Name,
		LabelRound:      strconv.Itoa(int(n)),
		LabelStep:       step,
	}
}
