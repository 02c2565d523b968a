// Package schema judges and defaults an AutoResearch object the way the API
// server does, from the CRD this project generates: its OpenAPI schema, its
// defaults and its CEL rules. The local runner uses it, so that a protocol
// a cluster refuses is refused on a workstation too, with the same
// messages.
package schema

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/config/crd"
)

// servedSchema is the CRD's schema of the served version; its structural
// form is all that defaulting needs.
type servedSchema struct {
	props      *apiextensions.JSONSchemaProps
	structural *structuralschema.Structural
}

var served = sync.OnceValues(func() (*servedSchema, error) {
	var def apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crd.AutoResearch, &def); err != nil {
		return nil, fmt.Errorf("reading the AutoResearch CRD: %w", err)
	}
	for _, v := range def.Spec.Versions {
		if v.Name != v1alpha1.GroupVersion.Version || v.Schema == nil {
			continue
		}
		var props apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &props, nil); err != nil {
			return nil, err
		}
		s, err := structuralschema.NewStructural(&props)
		if err != nil {
			return nil, fmt.Errorf("the AutoResearch CRD is not structural: %w", err)
		}
		return &servedSchema{props: &props, structural: s}, nil
	}
	return nil, fmt.Errorf("the AutoResearch CRD serves no version %s", v1alpha1.GroupVersion.Version)
})

// validators are the CRD's OpenAPI validator and its CEL rules, compiled:
// a tenth of a second of CPU, which only validation pays (every compliance
// check defaults the spec it is given).
type validators struct {
	openAPI validation.SchemaCreateValidator
	cel     *cel.Validator
}

var compile = sync.OnceValues(func() (*validators, error) {
	s, err := served()
	if err != nil {
		return nil, err
	}
	openAPI, _, err := validation.NewSchemaValidator(s.props)
	if err != nil {
		return nil, err
	}
	return &validators{openAPI: openAPI, cel: cel.NewValidator(s.structural, true, celconfig.PerCallLimit)}, nil
})

// Default fills in obj, an AutoResearch as JSON-like maps and slices, the
// defaults the API server would store.
func Default(obj map[string]any) error {
	s, err := served()
	if err != nil {
		return err
	}
	structuraldefaulting.Default(obj, s.structural)
	return nil
}

// DefaultSpec fills in the defaults the API server would store for spec.
func DefaultSpec(spec *v1alpha1.AutoResearchSpec) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	obj := map[string]any{"spec": raw}
	if err := Default(obj); err != nil {
		return err
	}
	if data, err = json.Marshal(obj["spec"]); err != nil {
		return err
	}
	*spec = v1alpha1.AutoResearchSpec{}
	return json.Unmarshal(data, spec)
}

// Validate reports what the API server would refuse obj for, with the same
// field paths and messages: types, formats, bounds and the CEL rules.
func Validate(ctx context.Context, obj map[string]any) (field.ErrorList, error) {
	s, err := served()
	if err != nil {
		return nil, err
	}
	c, err := compile()
	if err != nil {
		return nil, err
	}
	errs := validation.ValidateCustomResource(nil, obj, c.openAPI)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
	// As the API server does, the CEL rules judge only an object whose
	// shape is right.
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")), nil
		}
	}
	celErrs, _ := c.cel.Validate(ctx, nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...), nil
}
