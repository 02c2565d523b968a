#!/usr/bin/env bash
# Prints the directory holding kube-apiserver and etcd for envtest, making
# them first when needed: setup-envtest's download where it works, else a
# build from the Go module proxy (hack/build-k8s-binaries.sh). Both are
# cached under bin/.
set -euo pipefail
cd "$(dirname "$0")/.."

K8S_VERSION=${K8S_VERSION:-1.37.2}
built=bin/k8s/$K8S_VERSION
if hack/build-k8s-binaries.sh --check "$built" kube-apiserver etcd; then
  echo "$PWD/$built"
  exit 0
fi

if [ ! -x bin/setup-envtest ]; then
  GOBIN=$PWD/bin go install sigs.k8s.io/controller-runtime/tools/setup-envtest@latest >&2 || true
fi
if [ -x bin/setup-envtest ] && dir=$(bin/setup-envtest use "${K8S_VERSION%.*}.x" --bin-dir bin/envtest -p path 2>/dev/null) && [ -n "$dir" ]; then
  echo "$dir"
  exit 0
fi

echo "setup-envtest could not download the control plane; building kube-apiserver and etcd from source (once, about 5 minutes)..." >&2
hack/build-k8s-binaries.sh "$built" kube-apiserver etcd >&2
echo "$PWD/$built"
