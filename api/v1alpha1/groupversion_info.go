// Package v1alpha1 contains the AutoResearch API: the research protocol a user
// writes (spec) and the loop's progress the operator reports (status).
// +kubebuilder:object:generate=true
// +groupName=autoresearch.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the AutoResearch API.
	GroupVersion = schema.GroupVersion{Group: "autoresearch.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the API's types with a runtime scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &AutoResearch{}, &AutoResearchList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
