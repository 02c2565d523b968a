// Package manifests keeps the two ways of installing the operator, the
// kustomize configuration in config/ and the Helm chart in charts/, in step
// with each other and with the manifests that controller-gen generates, and
// checks what a release is built from (hack/release.sh, the Dockerfile).
package manifests
