#!/usr/bin/env bash
# Builds, once, everything the local cluster runs, cached under bin/:
# the control plane (hack/build-k8s-binaries.sh), kubectl (from the
# published k8s.io/kubectl module, as kubectl's own main runs it), the
# manager, the autoresearch CLI and the process-kubelet node agent.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
K8S_BIN=${K8S_BIN:-$root/bin/k8s/1.37.2}
KUBECTL_VERSION=${KUBECTL_VERSION:-0.37.2}

"$root/hack/build-k8s-binaries.sh" "$K8S_BIN" etcd kube-apiserver kube-controller-manager kube-scheduler

if [ ! -x "$K8S_BIN/kubectl" ]; then
  echo "building kubectl (cached in $K8S_BIN)..." >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cd "$work"
  go mod init example.invalid/kubectl >/dev/null 2>&1
  cat > main.go <<'GO'
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
GO
  go get "k8s.io/kubectl@v$KUBECTL_VERSION" "k8s.io/component-base@v$KUBECTL_VERSION" >/dev/null 2>&1
  go mod tidy >/dev/null 2>&1
  go build -o "$K8S_BIN/kubectl" .
  cd "$root"
fi

cd "$root"
go build -o bin/e2e/manager ./cmd/manager
go build -o bin/e2e/autoresearch ./cmd/autoresearch
go build -o bin/e2e/process-kubelet ./cmd/process-kubelet
