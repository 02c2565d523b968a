#!/usr/bin/env bash
# Writes the artifacts of release $VERSION (vX.Y.Z, or vX.Y.Z-rc.1) into
# dist/; `make release VERSION=vX.Y.Z` runs it:
#
#   autoresearch_<os>_<arch>.tar.gz          the CLI          } linux and darwin,
#   kubectl-autoresearch_<os>_<arch>.tar.gz  the kubectl plugin } amd64 and arm64;
#       static (CGO_ENABLED=0), -trimpath, stamped with $VERSION by $LDFLAGS
#       (the Makefile's VERSION_LDFLAGS, as `make build` stamps); the
#       plugin's archives are the ones plugins/krew/autoresearch.yaml names
#   autoresearch-crds.yaml                   the CRD bundle
#   autoresearch-operator-X.Y.Z.tgz          the Helm chart (helm package)
#   install.yaml                             config/default, rendered
#   SHA256SUMS                               of all of the above
#
# The operator image is the release's tag: the chart's appVersion and the tag
# config/manager/kustomization.yaml gives the image must both be $VERSION,
# so that `helm install` and `kubectl apply -f install.yaml` run the same
# image. Bump both in the release's commit; the script refuses otherwise.
#
# Environment: VERSION, LDFLAGS, HELM, KUBECTL (default kubectl), PLATFORMS
# (os/arch pairs; empty builds no binaries),
# DIST (default dist/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PLATFORMS=${PLATFORMS-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
DIST=${DIST:-$root/dist}
KUBECTL=${KUBECTL:-kubectl}
chart=$root/charts/autoresearch-operator

fail() { echo "release: $*" >&2; exit 1; }

version=${VERSION:-}
[[ $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] ||
  fail "VERSION=${version:-(none)} is no release: give vX.Y.Z, e.g. make release VERSION=v0.2.0"

app=$(sed -n 's/^appVersion: "\(.*\)"$/\1/p' "$chart/Chart.yaml")
tag=$(sed -n 's/^  newTag: \(.*\)$/\1/p' "$root/config/manager/kustomization.yaml")
[ -n "$app" ] && [ "$app" = "$tag" ] ||
  fail "the chart's appVersion (${app:-none}) and config/manager's image tag (${tag:-none}) differ: set both to $version"
[ "$app" = "$version" ] ||
  fail "the chart's appVersion and config/manager's image tag are $app, not $version: set both to $version and commit"
: "${LDFLAGS:?LDFLAGS must stamp the version (make release sets it)}" "${HELM:?HELM must name helm (make release sets it)}"

rm -rf "$DIST"
mkdir -p "$DIST"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cd "$root"
for platform in $PLATFORMS; do
  os=${platform%/*} arch=${platform#*/}
  for cmd in autoresearch kubectl-autoresearch; do
    mkdir -p "$work/$cmd-$os-$arch"
    CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w $LDFLAGS" \
      -o "$work/$cmd-$os-$arch/$cmd" "./cmd/$cmd"
    tar -C "$work/$cmd-$os-$arch" --owner=0 --group=0 --numeric-owner -czf "$DIST/${cmd}_${os}_${arch}.tar.gz" "$cmd"
  done
done

cat config/crd/bases/*.yaml >"$DIST/autoresearch-crds.yaml"
"$HELM" package "$chart" --version "${version#v}" --destination "$DIST" >/dev/null
"$KUBECTL" kustomize config/default >"$DIST/install.yaml"

(cd "$DIST" && sha256sum -- * >"$work/SHA256SUMS") && mv "$work/SHA256SUMS" "$DIST/SHA256SUMS"
ls -l "$DIST"
