#!/usr/bin/env bash
# A real node for the end-to-end tests: containerd 2 with runc and a bridge
# CNI network, and a kubelet, joined to the control plane that
# `hack/e2e/cluster.sh up` started (E2E_NODE=real makes cluster.sh start
# this instead of the process-kubelet):
#
#   hack/e2e/real-node.sh build            # build what is missing and the image archives; start nothing
#   hack/e2e/real-node.sh up               # build what is missing, start, import the images, wait until Ready
#   hack/e2e/real-node.sh restart-kubelet  # stop the kubelet and start it again, as an upgrade would
#   hack/e2e/real-node.sh down             # stop every pod and process, restore the host
#
# Unlike the process-kubelet, this node runs images and enforces security
# contexts, read-only mounts, limits and deadlines. It needs root, cgroups
# (v1 or v2), overlayfs and iptables; no image registry: the images it runs
# are imported from archives (hack/image.sh): the operator's, the Go
# toolchain image the tiny-lm-go example trains in, and pause.
#
# Built once and cached in $NODE_BIN (bin/node): containerd, its runc shim
# and ctr from the Go module proxy, and the kubelet (hack/build-k8s-
# binaries.sh, stamped v1.37.2). Debian's runc and containernetworking-
# plugins are installed when missing.
#
# Host state the node changes and `down` restores: the sysctls the kubelet
# sets (kernel.panic, kernel.panic_on_oops, vm.overcommit_memory) and
# net.ipv4.ip_forward (the bridge plugin); the iptables chains the kubelet
# adds (KUBE-*); the bridge $CNI_BRIDGE; the pods' network namespaces in
# /run/netns; the kubepods cgroups; and the directories the kubelet and CNI
# hard-code (/var/lib/kubelet, /var/log/containers, /var/lib/cni) when
# they did not exist before. The kubelet hard-codes some of these paths:
# one such node per machine.
#
# GPUs: cmd/fake-gpu-plugin, a device plugin, registers $E2E_GPUS fake
# nvidia.com/gpu devices with the kubelet, which allocates them to
# containers; each container sees its devices in NVIDIA_VISIBLE_DEVICES.
# The plugin registers again when the kubelet restarts.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
K8S_BIN=${K8S_BIN:-$root/bin/k8s/1.37.2}
E2E_DIR=${E2E_DIR:-$root/bin/e2e}
E2E_GPUS=${E2E_GPUS:-8}
NODE_BIN=${NODE_BIN:-$root/bin/node}
NODE_NAME=${NODE_NAME:-real-node}
# The kubelet refuses a loopback node IP: it listens on the host's address
# (anonymous, AlwaysAllow: a test node on a machine of its own).
NODE_IP=${NODE_IP:-$(ip -4 route get 192.0.2.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')}
KUBELET_PORT=${KUBELET_PORT:-10350}
CONTAINERD_VERSION=${CONTAINERD_VERSION:-2.4.2}
PAUSE_VERSION=${PAUSE_VERSION:-3.10.2}
CNI_BRIDGE=${CNI_BRIDGE:-cni-e2e0}
CNI_SUBNET=${CNI_SUBNET:-10.244.0.0/24}
# Images imported into the node besides pause (archives from hack/image.sh):
# make e2e-real adds torch, the nanogpt-torch example's.
NODE_IMAGES=${NODE_IMAGES:-operator go}
d=$E2E_DIR/node
sock=$d/containerd/containerd.sock
# Directories the kubelet or the CNI plugins create outside $d.
host_dirs=(/var/lib/kubelet /var/log/containers /var/lib/cni /run/netns)
sysctls=(kernel.panic kernel.panic_on_oops vm.overcommit_memory net.ipv4.ip_forward)

kubectl() { "$K8S_BIN/kubectl" --kubeconfig "$E2E_DIR/kubeconfig" "$@"; }
ctr() { "$NODE_BIN/ctr" --address "$sock" -n k8s.io "$@"; }

build() {
  if [ "$(cat "$NODE_BIN/containerd.version" 2>/dev/null)" != "$CONTAINERD_VERSION" ]; then
    echo "building containerd $CONTAINERD_VERSION (cached in $NODE_BIN)..." >&2
    mkdir -p "$NODE_BIN"
    GOBIN=$NODE_BIN go install -tags "no_btrfs no_devmapper no_zfs" \
      "github.com/containerd/containerd/v2/cmd/containerd@v$CONTAINERD_VERSION" \
      "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@v$CONTAINERD_VERSION" \
      "github.com/containerd/containerd/v2/cmd/ctr@v$CONTAINERD_VERSION"
    echo "$CONTAINERD_VERSION" >"$NODE_BIN/containerd.version"
  fi
  "$root/hack/build-k8s-binaries.sh" "$NODE_BIN" kubelet
  mkdir -p "$E2E_DIR"
  (cd "$root" && go build -o "$E2E_DIR/fake-gpu-plugin" ./cmd/fake-gpu-plugin)
  if ! command -v runc >/dev/null || [ ! -x /usr/lib/cni/bridge ]; then
    apt-get install -y -qq --no-install-recommends runc containernetworking-plugins >&2
  fi
}

wait_for() { # what seconds command...
  local what=$1 seconds=$2 name
  shift 2
  for _ in $(seq "$seconds"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    for name in containerd kubelet fake-gpu-plugin; do
      [ -f "$d/$name.pid" ] || continue
      kill -0 "$(cat "$d/$name.pid")" 2>/dev/null && continue
      echo "$name exited; see $E2E_DIR/logs/$name.log" >&2
      return 1
    done
    sleep 1
  done
  echo "timed out waiting for $what; see $E2E_DIR/logs" >&2
  return 1
}

# save_host records what `down` restores.
save_host() {
  local s dir
  mkdir -p "$d/host"
  for s in "${sysctls[@]}"; do sysctl -n "$s" >"$d/host/$s"; done
  for dir in "${host_dirs[@]}"; do [ -e "$dir" ] && touch "$d/host/existed${dir//\//_}"; done
  ip link show "$CNI_BRIDGE" >/dev/null 2>&1 && touch "$d/host/bridge-existed"
  ip netns list 2>/dev/null | awk '{print $1}' >"$d/host/netns"
  for t in iptables ip6tables; do
    command -v "$t-save" >/dev/null || continue
    "$t-save" 2>/dev/null | sed -n 's/^:\([^ ]*\) .*/\1/p' | sort -u >"$d/host/$t-chains"
  done
}

config() {
  mkdir -p "$d/containerd" "$d/cni/net.d" "$d/kubelet" "$E2E_DIR/logs"
  cat >"$d/containerd/config.toml" <<TOML
version = 3
root = '$d/containerd/root'
state = '$d/containerd/state'

[grpc]
  address = '$sock'

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = 'registry.k8s.io/pause:$PAUSE_VERSION'

[plugins.'io.containerd.cri.v1.runtime']
  # runc cannot lower a sandbox's oom_score_adj without CAP_SYS_RESOURCE,
  # which containers such as this machine lack.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['/usr/lib/cni']
    conf_dir = '$d/cni/net.d'
TOML
  # No ipMasq and no portmap: they add iptables rules; pods reach each
  # other and the host over the bridge.
  cat >"$d/cni/net.d/10-e2e.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$CNI_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$CNI_SUBNET"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$d/cni/ipam"
      }
    },
    {"type": "loopback"}
  ]
}
JSON
  cat >"$d/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine has cgroup v1 only, and no systemd.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
failSwapOn: false
containerRuntimeEndpoint: unix://$sock
imageServiceEndpoint: unix://$sock
podLogsDir: $d/kubelet/pod-logs
volumePluginDir: $d/kubelet/volume-plugins
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $((KUBELET_PORT + 1))
# kubectl logs and exec through the API server, which presents no client
# certificate here.
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
# The images are imported, never pulled, and must not be collected.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
serializeImagePulls: false
YAML
}

# images prints the path of each image archive the node imports, building
# what is missing.
images() {
  local version
  version=$(git -C "$root" describe --tags --always --dirty 2>/dev/null || echo devel)
  # shellcheck disable=SC2086 # NODE_IMAGES is a list of names.
  VERSION=$version "$root/hack/image.sh" $NODE_IMAGES pause
}

# import_images builds the images and imports them; $d/images lists
# them for the tests, a line "NAME REFERENCE" each (NAME as hack/image.sh
# takes it: operator, go, torch, pause).
import_images() {
  local archive ref i=0
  local -a names
  read -r -a names <<<"$NODE_IMAGES pause"
  : >"$d/images"
  for archive in $(images); do
    ctr images import "$archive" >/dev/null
    ref=$(tar -xOf "$archive" manifest.json | sed -n 's/.*"RepoTags":\["\([^"]*\)"\].*/\1/p')
    echo "${names[i]} $ref" >>"$d/images"
    i=$((i + 1))
    echo "imported $ref" >&2
  done
}

up() {
  if [ -f "$d/kubelet.pid" ] || [ -f "$d/containerd.pid" ]; then
    echo "the node is already up (pids in $d); run '$0 down' first" >&2
    return 1
  fi
  if pgrep -x kubelet >/dev/null; then
    echo "another kubelet runs on this machine; the kubelet's hard-coded paths allow one" >&2
    return 1
  fi
  [ -f "$E2E_DIR/kubeconfig" ] || { echo "no control plane: run hack/e2e/cluster.sh up first" >&2; return 1; }
  build
  save_host
  config

  PATH=$NODE_BIN:$PATH "$NODE_BIN/containerd" --config "$d/containerd/config.toml" >"$E2E_DIR/logs/containerd.log" 2>&1 &
  echo $! >"$d/containerd.pid"
  wait_for containerd 60 ctr version
  import_images

  : >"$E2E_DIR/logs/kubelet.log"
  start_kubelet
  # After the kubelet, whose start removes every socket in the
  # device-plugin directory.
  "$E2E_DIR/fake-gpu-plugin" --devices "$E2E_GPUS" >"$E2E_DIR/logs/fake-gpu-plugin.log" 2>&1 &
  echo $! >"$d/fake-gpu-plugin.pid"
  wait_for "$E2E_GPUS nvidia.com/gpu on $NODE_NAME" 60 \
    sh -c "[ \"\$('$K8S_BIN/kubectl' --kubeconfig '$E2E_DIR/kubeconfig' get node '$NODE_NAME' -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')\" = '$E2E_GPUS' ]"
  echo "node $NODE_NAME ready: containerd $CONTAINERD_VERSION, $("$NODE_BIN/kubelet" --version), $E2E_GPUS nvidia.com/gpu" >&2
}

# start_kubelet starts the kubelet, appending to its log, and waits until
# it is healthy and the node Ready.
start_kubelet() {
  "$NODE_BIN/kubelet" --config "$d/kubelet/config.yaml" --kubeconfig "$E2E_DIR/kubeconfig" \
    --root-dir "$d/kubelet/root" --cert-dir "$d/kubelet/pki" \
    --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" >>"$E2E_DIR/logs/kubelet.log" 2>&1 &
  echo $! >"$d/kubelet.pid"
  wait_for "the kubelet's health" 60 curl -sf "http://127.0.0.1:$((KUBELET_PORT + 1))/healthz"
  wait_for "node $NODE_NAME" 120 kubectl wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
}

# registrations counts the fake GPU plugin's registrations with a kubelet.
registrations() { grep -c "Registered with the kubelet" "$E2E_DIR/logs/fake-gpu-plugin.log" || true; }
registered_since() { [ "$(registrations)" -gt "$1" ]; }

# restart_kubelet stops the kubelet and starts it again, as an upgrade
# would; pods keep running. It waits until the GPU plugin has registered
# with the new kubelet.
restart_kubelet() {
  local before
  [ -f "$d/kubelet.pid" ] || { echo "the node is not up: run '$0 up' first" >&2; return 1; }
  before=$(registrations)
  stop kubelet
  start_kubelet
  wait_for "the GPU plugin to register again" 60 registered_since "$before"
}

# stop NAME: stops the process whose pid is in $d/NAME.pid.
stop() {
  local pid
  [ -f "$d/$1.pid" ] || return 0
  pid=$(cat "$d/$1.pid")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$d/$1.pid"
}

# remove_chains TOOL: deletes the chains the node added, and the rules
# that jump to them.
remove_chains() {
  local t=$1 table chain rule
  [ -f "$d/host/$t-chains" ] || return 0
  for table in filter nat mangle; do
    for chain in $("$t" -t "$table" -S 2>/dev/null | sed -n 's/^-N \(KUBE-[^ ]*\)$/\1/p'); do
      grep -qx "$chain" "$d/host/$t-chains" && continue
      "$t" -t "$table" -S 2>/dev/null | { grep -- "-j $chain\( \|$\)" || true; } | while read -r rule; do
        eval "$t" -t "$table" "${rule/#-A/-D}" || true
      done
      "$t" -t "$table" -F "$chain" 2>/dev/null || true
      "$t" -t "$table" -X "$chain" 2>/dev/null || true
    done
  done
}

down() {
  local s dir ns
  if [ -f "$d/kubelet.pid" ] && kill -0 "$(cat "$d/kubelet.pid")" 2>/dev/null; then
    # The kubelet stops the pods, and so tears down their networks.
    kubectl delete pods --all-namespaces --field-selector "spec.nodeName=$NODE_NAME" --grace-period=1 --wait=false >/dev/null 2>&1 || true
    for _ in $(seq 60); do
      [ -z "$(ctr tasks ls -q 2>/dev/null)" ] && break
      sleep 1
    done
  fi
  stop fake-gpu-plugin
  stop kubelet
  if [ -f "$d/containerd.pid" ]; then
    for s in $(ctr tasks ls -q 2>/dev/null); do ctr tasks kill -s SIGKILL "$s" >/dev/null 2>&1 || true; done
  fi
  stop containerd
  # Shims outlive containerd by design: stop those of this containerd.
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/exe" 2>/dev/null)" = "$NODE_BIN/containerd-shim-runc-v2" ] || continue
    tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q -- "-address $sock " && kill -9 "${p#/proc/}" 2>/dev/null
  done
  # What the runtime and the kubelet mounted under $d, innermost first.
  findmnt -rn -o TARGET | { grep "^$d/" || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  if [ -d "$d/host" ]; then
    for ns in $(ip netns list 2>/dev/null | awk '/^cni-/ {print $1}'); do
      grep -qx "$ns" "$d/host/netns" || ip netns delete "$ns" 2>/dev/null || true
    done
    [ -f "$d/host/bridge-existed" ] || ip link delete "$CNI_BRIDGE" 2>/dev/null || true
    remove_chains iptables
    remove_chains ip6tables
    for s in "${sysctls[@]}"; do
      [ -f "$d/host/$s" ] && sysctl -qw "$s=$(cat "$d/host/$s")"
    done
    for dir in "${host_dirs[@]}"; do
      [ -e "$d/host/existed${dir//\//_}" ] || rm -rf "$dir"
    done
    # The cgroups the kubelet made for pods and QoS classes, deepest first.
    find /sys/fs/cgroup -depth -type d -path '*/kubepods*' -exec rmdir {} + 2>/dev/null || true
  fi
  rm -rf "$d"
}

case "${1:-}" in
  build) build && images >/dev/null ;;
  up) up ;;
  restart-kubelet) restart_kubelet ;;
  down) down ;;
  *) echo "usage: $0 build|up|restart-kubelet|down" >&2; exit 2 ;;
esac
