#!/usr/bin/env bash
# Builds the Kubernetes control-plane binaries that envtest (and the local
# dev cluster) need from the Go module proxy, for machines where
# setup-envtest cannot download them: kube-apiserver and friends from
# k8s.io/kubernetes with every staging module replaced by its published
# version, and etcd from go.etcd.io/etcd/server/v3. Results are cached.
#
#   hack/build-k8s-binaries.sh DIR [kube-apiserver kube-controller-manager kube-scheduler etcd]
#
# kubectl comes from its own published module: hack/e2e/build-binaries.sh.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.37.2}
STAGING_VERSION=${STAGING_VERSION:-0.37.2}
ETCD_VERSION=${ETCD_VERSION:-3.6.16}

out=${1:?usage: $0 DIR [binary...]}
shift
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=(kube-apiserver etcd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

missing=()
for b in "${binaries[@]}"; do
  [ -x "$out/$b" ] || missing+=("$b")
done
[ ${#missing[@]} -eq 0 ] && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

k8s_module() {
  mkdir -p "$work/k8s"
  cd "$work/k8s"
  [ -f go.mod ] && return
  go mod init example.invalid/k8sbin >/dev/null 2>&1
  gomod=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  {
    echo "require k8s.io/kubernetes v$K8S_VERSION"
    sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9.-]*\) => ./staging/src/k8s.io/.*#replace \1 => \1 v'"$STAGING_VERSION"'#p' "$gomod"
  } >> go.mod
}

main_for() {
  case "$1" in
    kube-apiserver) echo 'k8s.io/kubernetes/cmd/kube-apiserver/app|app.NewAPIServerCommand()' ;;
    kube-controller-manager) echo 'k8s.io/kubernetes/cmd/kube-controller-manager/app|app.NewControllerManagerCommand()' ;;
    kube-scheduler) echo 'k8s.io/kubernetes/cmd/kube-scheduler/app|app.NewSchedulerCommand()' ;;
  esac
}

for b in "${missing[@]}"; do
  echo "building $b (cached in $out)..." >&2
  case "$b" in
    etcd)
      mkdir -p "$work/etcd" && cd "$work/etcd"
      go mod init example.invalid/etcdbin >/dev/null 2>&1
      cat > main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
      go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >/dev/null 2>&1
      go mod tidy >/dev/null 2>&1
      go build -o "$out/etcd" .
      ;;
    kube-*)
      k8s_module
      IFS='|' read -r pkg call <<<"$(main_for "$b")"
      mkdir -p "$work/k8s/$b" && cat > "$work/k8s/$b/main.go" <<GO
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"$pkg"
)

func main() { os.Exit(cli.Run($call)) }
GO
      cd "$work/k8s" && go mod tidy >/dev/null 2>&1 && go build -o "$out/$b" "./$b"
      ;;
    *)
      echo "unknown binary $b" >&2
      exit 2
      ;;
  esac
done
