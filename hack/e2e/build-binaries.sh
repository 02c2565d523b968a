#!/usr/bin/env bash
# Builds, once, everything the local cluster runs, cached under bin/:
# the control plane and kubectl (hack/build-k8s-binaries.sh), the
# manager, the autoresearch CLI, and the process-kubelet node agent with
# its container init.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
K8S_BIN=${K8S_BIN:-$root/bin/k8s/1.37.2}
E2E_DIR=${E2E_DIR:-$root/bin/e2e}

"$root/hack/build-k8s-binaries.sh" "$K8S_BIN" etcd kube-apiserver kube-controller-manager kube-scheduler kubectl

cd "$root"
go build -o "$E2E_DIR/manager" ./cmd/manager
go build -o "$E2E_DIR/autoresearch" ./cmd/autoresearch
go build -o "$E2E_DIR/process-kubelet" ./cmd/process-kubelet
go build -o "$E2E_DIR/process-kubelet-init" ./cmd/process-kubelet-init
