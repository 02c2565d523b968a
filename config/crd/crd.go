// Package crd holds the generated AutoResearch CustomResourceDefinition, so
// that code can judge an object by the same schema the API server uses.
package crd

import _ "embed"

// AutoResearch is the AutoResearch CRD as YAML, as controller-gen wrote it.
//
//go:embed bases/autoresearch.dev_autoresearches.yaml
var AutoResearch []byte
