#!/usr/bin/env bash
# Builds the Kubernetes control-plane binaries that envtest (and the local
# dev cluster) need from the Go module proxy, for machines where
# setup-envtest cannot download them: kube-apiserver and friends from
# k8s.io/kubernetes with every staging module replaced by its published
# version, kubectl from its own published module k8s.io/kubectl, and etcd
# from go.etcd.io/etcd/server/v3. The Kubernetes binaries are stamped with
# the release's version, as its own build does, so that they report
# v$K8S_VERSION (`--version`, the server's /version, `kubectl version`)
# rather than v0.0.0-master. Results are cached in DIR; a cached binary
# that does not report the wanted version is built again.
#
#   hack/build-k8s-binaries.sh DIR [kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl etcd]
#   hack/build-k8s-binaries.sh --check DIR BINARY...   # exit 1 if any is missing or stale
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.37.2}
STAGING_VERSION=${STAGING_VERSION:-0.37.2}
ETCD_VERSION=${ETCD_VERSION:-3.6.16}

check=false
if [ "${1:-}" = --check ]; then
  check=true
  shift
fi
out=${1:?usage: $0 [--check] DIR [binary...]}
shift
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=(kube-apiserver etcd)

# current BINARY: whether DIR holds BINARY reporting the wanted version.
current() {
  local bin=$out/$1
  [ -x "$bin" ] || return 1
  case "$1" in
    etcd) [ "$("$bin" --version 2>/dev/null | head -n 1)" = "etcd Version: $ETCD_VERSION" ] ;;
    kubectl) [ "$("$bin" version --client 2>/dev/null | head -n 1)" = "Client Version: v$K8S_VERSION" ] ;;
    *) [ "$("$bin" --version 2>/dev/null)" = "Kubernetes v$K8S_VERSION" ] ;;
  esac
}

missing=()
for b in "${binaries[@]}"; do
  current "$b" || missing+=("$b")
done
[ ${#missing[@]} -eq 0 ] && exit 0
$check && exit 1
mkdir -p "$out"
out=$(cd "$out" && pwd)

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

# ldflags stamps the version packages as Kubernetes' hack/lib/version.sh
# does for a release build; the build date is the release's tag time.
ldflags() {
  local date pkg flags=() major=${K8S_VERSION%%.*} minor
  minor=${K8S_VERSION#*.}
  minor=${minor%%.*}
  date=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/^[[:space:]]*"Info": "\(.*\)",$/\1/p' | xargs sed -n 's/.*"Time":"\([^"]*\)".*/\1/p')
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=("-X $pkg.gitVersion=v$K8S_VERSION" "-X $pkg.gitMajor=$major" "-X $pkg.gitMinor=$minor"
      "-X $pkg.gitCommit=" "-X $pkg.gitTreeState=clean" "-X $pkg.buildDate=$date")
  done
  echo "${flags[*]}"
}

# main_for BINARY: the package of its command and the call that makes it.
main_for() {
  case "$1" in
    kube-apiserver) echo 'k8s.io/kubernetes/cmd/kube-apiserver/app|app.NewAPIServerCommand()' ;;
    kubelet) echo 'k8s.io/kubernetes/cmd/kubelet/app|app.NewKubeletCommand(context.Background())' ;;
    kube-controller-manager) echo 'k8s.io/kubernetes/cmd/kube-controller-manager/app|app.NewControllerManagerCommand()' ;;
    kube-scheduler) echo 'k8s.io/kubernetes/cmd/kube-scheduler/app|app.NewSchedulerCommand()' ;;
  esac
}

for b in "${missing[@]}"; do
  # Two builds of one binary into one DIR (make test builds the local
  # cluster's beside envtest's) take turns, and the second finds it made.
  if command -v flock >/dev/null; then
    exec {lock}>"$out/.$b.lock"
    flock "$lock"
    if current "$b"; then
      exec {lock}>&-
      continue
    fi
  fi
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
    kube-* | kubelet)
      k8s_module
      IFS='|' read -r pkg call <<<"$(main_for "$b")"
      context=
      [[ $call == *context.* ]] && context='"context"'
      mkdir -p "$work/k8s/$b" && cat > "$work/k8s/$b/main.go" <<GO
package main

import (
	$context
	"os"

	"k8s.io/component-base/cli"
	"$pkg"
)

func main() { os.Exit(cli.Run($call)) }
GO
      cd "$work/k8s" && go mod tidy >/dev/null 2>&1 && go build -ldflags "$(ldflags)" -o "$out/$b" "./$b"
      ;;
    kubectl)
      mkdir -p "$work/kubectl" && cd "$work/kubectl"
      go mod init example.invalid/kubectl >/dev/null 2>&1
      # kubectl's own main.
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
      go get "k8s.io/kubectl@v$STAGING_VERSION" "k8s.io/component-base@v$STAGING_VERSION" >/dev/null 2>&1
      go mod tidy >/dev/null 2>&1
      go build -ldflags "$(ldflags)" -o "$out/kubectl" .
      ;;
    *)
      echo "unknown binary $b" >&2
      exit 2
      ;;
  esac
  [ -z "${lock:-}" ] || exec {lock}>&-
done
