#!/usr/bin/env bash
# Builds the operator's image without Docker or a registry, as a
# docker-archive (manifest.json, a config with os and architecture, and
# uncompressed layers) that `ctr images import`, `docker load` and
# `podman load` accept. It is the image the Dockerfile describes: keep the
# two in step (same packages, user, files and entrypoint).
#
#   hack/image.sh [IMAGE...]   # IMAGE: operator (the default), go, torch, pause
#
# operator is the operator's image; go, the Go toolchain image the
# tiny-lm-go example trains and evaluates in on a real node; torch, the
# Python image the nanogpt-torch example trains in without a registry
# (Debian's python3-torch, CPU only: a GPU cluster uses a CUDA build such
# as pytorch/pytorch); pause, the sandbox image a real node's containerd
# needs (hack/e2e/real-node.sh).
#
# Prints the path of each archive it wrote. Layers:
#   1. Debian trixie minbase (debootstrap from Debian's mirror) with
#      ca-certificates, git and openssh-client; the user nonroot (65532)
#      with its HOME; `git config --system safe.directory '*'`, since pods
#      of other users share the workspace volume. Built once, as root, and
#      cached under $IMAGE_DIR (remove .rootfs-* and layers/ to rebuild).
#   2. /manager and /autoresearch: static (CGO_ENABLED=0), -trimpath,
#      stamped with $VERSION (internal/version).
# The Go image is layer 1, $(go env GOROOT) as /usr/local/go and a build
# cache (GOCACHE) that holds the standard library compiled. The torch
# image is one layer: layer 1's packages and user, built apart, with
# python3, python3-torch and python3-numpy besides; built once, as root,
# and cached as layer 1 is (remove .rootfs-*-torch* to rebuild). pause is build/pause/linux/pause.c of k8s.io/kubernetes, compiled
# static.
#
# Environment: VERSION (default: git describe --tags --always --dirty; the
# image tag), IMG_REPO, GO_IMG_REPO, TORCH_IMG_REPO, IMAGE_DIR (default
# bin/image), DEBIAN_MIRROR.
set -euo pipefail
# A failure inside $(...) fails the script too: a layer half built is never
# cached as done.
shopt -s inherit_errexit
root=$(cd "$(dirname "$0")/.." && pwd)
VERSION=${VERSION:-$(git -C "$root" describe --tags --always --dirty 2>/dev/null || echo devel)}
IMG_REPO=${IMG_REPO:-ghcr.io/autoresearch-dev/autoresearch-operator}
GO_IMG_REPO=${GO_IMG_REPO:-ghcr.io/autoresearch-dev/autoresearch-examples-go}
TORCH_IMG_REPO=${TORCH_IMG_REPO:-ghcr.io/autoresearch-dev/autoresearch-examples-torch}
IMAGE_DIR=${IMAGE_DIR:-$root/bin/image}
DEBIAN_SUITE=trixie
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PACKAGES=ca-certificates,git,openssh-client
# OpenBLAS: without recommends, apt gives torch the reference BLAS, with
# which the PyTorch example trained in 45 s in its container, against 6 s
# on a machine with OpenBLAS.
TORCH_PACKAGES="python3 python3-torch python3-numpy libopenblas0-pthread"
ARCH=amd64
K8S_VERSION=${K8S_VERSION:-1.37.2}
# The sandbox image containerd 2.4 pins.
PAUSE_VERSION=${PAUSE_VERSION:-3.10.2}
# Layers and configs take their times from the last commit, so that the
# same source makes the same layer digests.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}
export SOURCE_DATE_EPOCH

mkdir -p "$IMAGE_DIR/layers"
IMAGE_DIR=$(cd "$IMAGE_DIR" && pwd)
work=$(mktemp -d "$IMAGE_DIR/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

# tarball DIR OUT [tar options...]: a reproducible tar of DIR's contents,
# named as in an image (etc/passwd, not ./etc/passwd).
tarball() {
  local dir=$1 out=$2
  shift 2
  (cd "$dir" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | LC_ALL=C sort |
    tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --numeric-owner --format=posix \
      --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime "$@" -cf "$out" -T -)
}

# store FILE: moves a layer into layers/ by its digest and prints the digest.
store() {
  local digest
  digest=$(sha256sum "$1" | cut -d' ' -f1)
  mv "$1" "$IMAGE_DIR/layers/$digest.tar"
  echo "$digest"
}

# debootstrap_rootfs DIR [PACKAGE...]: the Debian root file system of
# layer 1, with the packages apt installs besides.
debootstrap_rootfs() {
  local rootfs=$1
  shift
  if [ "$(id -u)" != 0 ]; then
    echo "hack/image.sh: building the Debian layer needs root (debootstrap, chroot); it is cached in $IMAGE_DIR afterwards" >&2
    return 1
  fi
  if ! command -v debootstrap >/dev/null; then
    apt-get install -y -qq --no-install-recommends debootstrap >&2
  fi
  echo "hack/image.sh: debootstrap $DEBIAN_SUITE into $rootfs (once)..." >&2
  rm -rf "$rootfs"
  debootstrap --variant=minbase --include="$PACKAGES" "$DEBIAN_SUITE" "$rootfs" "$DEBIAN_MIRROR" >&2
  if [ $# -gt 0 ]; then
    cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
    chroot "$rootfs" /bin/sh -ec "
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $*" >&2
    : >"$rootfs/etc/resolv.conf"
  fi
  chroot "$rootfs" /bin/sh -ec "
    groupadd --gid 65532 nonroot
    useradd --uid 65532 --gid 65532 --create-home --home-dir /home/nonroot nonroot
    git config --system safe.directory '*'
    apt-get clean"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/log/* "$rootfs"/tmp/*
  touch "$rootfs.done"
}

# cached DIGEST_FILE prints the digest DIGEST_FILE holds, if there is one
# and its layer is in layers/; it fails otherwise.
cached() {
  [ -f "$1" ] && [ -f "$IMAGE_DIR/layers/$(cat "$1").tar" ] && cat "$1"
}

# base_layer prints the digest of the Debian layer, building it once.
base_layer() {
  # A dot keeps the go tool (./...) out of its Go files.
  local rootfs=$IMAGE_DIR/.rootfs-$DEBIAN_SUITE digest
  cached "$rootfs.digest" && return
  [ -f "$rootfs.done" ] || debootstrap_rootfs "$rootfs"
  # An image's /dev, /proc and /sys are the runtime's: their mount points
  # stay, empty.
  tarball "$rootfs" "$work/base.tar" --exclude='dev/*' --exclude='proc/*' --exclude='sys/*' \
    --exclude='usr/share/man/*' --exclude='usr/share/info/*'
  digest=$(store "$work/base.tar")
  echo "$digest" >"$rootfs.digest"
  echo "$digest"
}

# torch_layer prints the digest of the torch image's one layer, building it
# once.
torch_layer() {
  # The cached root file system is the package list's.
  local rootfs=$IMAGE_DIR/.rootfs-$DEBIAN_SUITE-torch-$(printf '%s' "$TORCH_PACKAGES" | sha256sum | cut -c1-12) digest
  cached "$rootfs.digest" && return
  if [ ! -f "$rootfs.done" ]; then
    # Those of other package lists go: each is over a gigabyte.
    rm -rf "$IMAGE_DIR/.rootfs-$DEBIAN_SUITE-torch" "$IMAGE_DIR/.rootfs-$DEBIAN_SUITE-torch".* "$IMAGE_DIR/.rootfs-$DEBIAN_SUITE-torch-"*
    # shellcheck disable=SC2086 # TORCH_PACKAGES is a list.
    debootstrap_rootfs "$rootfs" $TORCH_PACKAGES
  fi
  tarball "$rootfs" "$work/torch.tar" --exclude='dev/*' --exclude='proc/*' --exclude='sys/*' \
    --exclude='usr/share/man/*' --exclude='usr/share/info/*' --exclude='usr/share/doc/*'
  digest=$(store "$work/torch.tar")
  echo "$digest" >"$rootfs.digest"
  echo "$digest"
}

# binaries_layer prints the digest of a layer holding /manager and /autoresearch.
binaries_layer() {
  local dir=$work/binaries
  mkdir -p "$dir"
  (cd "$root" && for cmd in manager autoresearch; do
    CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH go build -trimpath \
      -ldflags "-s -w -X github.com/autoresearch-dev/autoresearch-operator/internal/version.version=$VERSION" \
      -o "$dir/$cmd" "./cmd/$cmd"
  done)
  tarball "$dir" "$work/binaries.tar" --owner=0 --group=0
  store "$work/binaries.tar"
}

# go_layer prints the digest of a layer holding this machine's Go
# toolchain as /usr/local/go, less its tests and documentation.
go_layer() {
  local goroot goversion
  goroot=$(go env GOROOT)
  goversion=$(go env GOVERSION)
  cached "$IMAGE_DIR/$goversion.digest" && return
  mkdir -p "$work/go/usr/local"
  cp -a "$goroot" "$work/go/usr/local/go"
  rm -rf "$work/go/usr/local/go/"{test,doc,api,misc,.git}
  find "$work/go/usr/local/go" -name testdata -type d -prune -exec rm -rf {} +
  find "$work/go/usr/local/go" -name '*_test.go' -delete
  tarball "$work/go" "$work/go.tar" --owner=0 --group=0
  store "$work/go.tar" | tee "$IMAGE_DIR/$goversion.digest"
}

# go_cache_layer prints the digest of a layer holding the Go image's build
# cache, /var/cache/go-build, owned by nonroot: the standard library
# compiled as the image compiles (CGO_ENABLED=0), so that a step's `go run`
# compiles only the step's own packages. Built once per Go version; the
# cache's entries hold the time they were made, so a rebuild differs.
go_cache_layer() {
  local goversion dir=$work/gocache
  goversion=$(go env GOVERSION)
  cached "$IMAGE_DIR/$goversion-cache.digest" && return
  mkdir -p "$dir"
  (cd "$root" && GOCACHE="$dir/go-build" GOFLAGS= GOTOOLCHAIN=local CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH go build std)
  # When the cache was last trimmed: a container's first go command trims
  # it, in its own copy.
  rm -f "$dir/go-build/trim.txt"
  # Only go-build and what it holds: /var and /var/cache stay layer 1's.
  tarball "$dir" "$work/gocache.tar" --owner=65532 --group=65532 --transform='s,^,var/cache/,'
  store "$work/gocache.tar" | tee "$IMAGE_DIR/$goversion-cache.digest"
}

# archive OUT REF CONFIG LAYER...: writes the docker-archive OUT of the
# image REF with the config JSON CONFIG (without rootfs) and the layers.
archive() {
  local out=$1 ref=$2 config=$3 stage=$work/stage digest diff_ids="" layers=""
  shift 3
  rm -rf "$stage" && mkdir -p "$stage"
  for digest in "$@"; do
    mkdir -p "$stage/$digest"
    ln "$IMAGE_DIR/layers/$digest.tar" "$stage/$digest/layer.tar"
    diff_ids+="${diff_ids:+,}\"sha256:$digest\""
    layers+="${layers:+,}\"$digest/layer.tar\""
  done
  config="${config%\}},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[$diff_ids]}}"
  digest=$(printf '%s' "$config" | sha256sum | cut -d' ' -f1)
  printf '%s' "$config" >"$stage/$digest.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":[%s]}]\n' "$digest" "$ref" "$layers" >"$stage/manifest.json"
  tarball "$stage" "$out.tmp" --owner=0 --group=0
  mv "$out.tmp" "$out"
  echo "$out"
}

# prune NAME VERSION removes the archives of image NAME built for any other
# version: each holds its layers whole (the PyTorch image's are about a
# gigabyte), and a checkout builds one per commit it runs.
prune() {
  local f
  for f in "$IMAGE_DIR/$1"-*.tar; do
    if [ -e "$f" ] && [ "$f" != "$IMAGE_DIR/$1-$2.tar" ]; then
      rm -f "$f"
    fi
  done
}

# pause_layer prints the digest of a layer holding /pause, the sandbox
# container a real node's runtime starts for every pod, compiled from the
# kubernetes module's source.
pause_layer() {
  local src
  src=$(cd "$work" && go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  mkdir -p "$work/pause"
  gcc -Os -static -Wall -Werror -DVERSION="v$PAUSE_VERSION" -o "$work/pause/pause" "$src/build/pause/linux/pause.c"
  strip "$work/pause/pause"
  tarball "$work/pause" "$work/pause.tar" --owner=0 --group=0
  store "$work/pause.tar"
}

created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

for image in "${@:-operator}"; do
  case "$image" in
    operator)
      archive "$IMAGE_DIR/autoresearch-operator-$VERSION.tar" "$IMG_REPO:$VERSION" \
        "{\"architecture\":\"$ARCH\",\"os\":\"linux\",\"created\":\"$created\",\"config\":{\"User\":\"65532:65532\",\"Env\":[\"PATH=$path\",\"HOME=/home/nonroot\"],\"Entrypoint\":[\"/manager\"],\"WorkingDir\":\"/\",\"Labels\":{\"org.opencontainers.image.version\":\"$VERSION\",\"org.opencontainers.image.source\":\"https://github.com/autoresearch-dev/autoresearch-operator\"}}}" \
        "$(base_layer)" "$(binaries_layer)"
      prune autoresearch-operator "$VERSION"
      ;;
    go)
      # GOTOOLCHAIN=local: the image cannot download another toolchain.
      archive "$IMAGE_DIR/autoresearch-examples-go-$VERSION.tar" "$GO_IMG_REPO:$VERSION" \
        "{\"architecture\":\"$ARCH\",\"os\":\"linux\",\"created\":\"$created\",\"config\":{\"User\":\"65532:65532\",\"Env\":[\"PATH=/usr/local/go/bin:$path\",\"HOME=/home/nonroot\",\"GOTOOLCHAIN=local\",\"CGO_ENABLED=0\",\"GOCACHE=/var/cache/go-build\"],\"Cmd\":[\"/bin/sh\"],\"WorkingDir\":\"/\"}}" \
        "$(base_layer)" "$(go_layer)" "$(go_cache_layer)"
      prune autoresearch-examples-go "$VERSION"
      ;;
    torch)
      archive "$IMAGE_DIR/autoresearch-examples-torch-$VERSION.tar" "$TORCH_IMG_REPO:$VERSION" \
        "{\"architecture\":\"$ARCH\",\"os\":\"linux\",\"created\":\"$created\",\"config\":{\"User\":\"65532:65532\",\"Env\":[\"PATH=$path\",\"HOME=/home/nonroot\",\"PYTHONDONTWRITEBYTECODE=1\"],\"Cmd\":[\"/usr/bin/python3\"],\"WorkingDir\":\"/\"}}" \
        "$(torch_layer)"
      prune autoresearch-examples-torch "$VERSION"
      ;;
    pause)
      archive "$IMAGE_DIR/pause-$PAUSE_VERSION.tar" "registry.k8s.io/pause:$PAUSE_VERSION" \
        "{\"architecture\":\"$ARCH\",\"os\":\"linux\",\"created\":\"$created\",\"config\":{\"User\":\"65535:65535\",\"Entrypoint\":[\"/pause\"],\"WorkingDir\":\"/\"}}" \
        "$(pause_layer)"
      prune pause "$PAUSE_VERSION"
      ;;
    *)
      echo "hack/image.sh: unknown image $image (operator, go, torch, pause)" >&2
      exit 2
      ;;
  esac
done
