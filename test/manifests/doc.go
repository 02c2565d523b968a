// Package manifests keeps the two ways of installing the operator, the
// kustomize configuration in config/ and the Helm chart in charts/, in step
// with each other and with the manifests that controller-gen generates.
package manifests
