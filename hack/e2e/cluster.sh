#!/usr/bin/env bash
# A real Kubernetes control plane and one process-kubelet node on loopback,
# without a container runtime:
#
#   hack/e2e/cluster.sh build  # build what is missing; start nothing
#   hack/e2e/cluster.sh up     # build what is missing, start, wait until ready
#   hack/e2e/cluster.sh down   # stop every process started by `up`
#
# E2E_NODE=real starts a real node (containerd and a kubelet,
# hack/e2e/real-node.sh) instead of the process-kubelet.
#
# etcd, kube-apiserver (RBAC; static tokens for the admin and the
# operator's service account), kube-controller-manager (--controllers=*),
# kube-scheduler and process-kubelet (a Node with nvidia.com/gpu, whose
# kubelet API on KUBELET_PORT serves `kubectl logs`) all listen on 127.0.0.1. State, logs (logs/) and pids (pids/) live in
# bin/e2e; the admin kubeconfig is bin/e2e/kubeconfig.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
K8S_BIN=${K8S_BIN:-$root/bin/k8s/1.37.2}
E2E_DIR=${E2E_DIR:-$root/bin/e2e}
E2E_GPUS=${E2E_GPUS:-8}
ETCD_PORT=${ETCD_PORT:-23790}
APISERVER_PORT=${APISERVER_PORT:-16443}
KCM_PORT=${KCM_PORT:-20257}
SCHEDULER_PORT=${SCHEDULER_PORT:-20259}
# The node's kubelet API (container logs), which the API server calls.
KUBELET_PORT=${KUBELET_PORT:-$((APISERVER_PORT + 1))}
E2E_NODE=${E2E_NODE:-process}
# The operator's identity; config/rbac binds its roles to this account.
OPERATOR_NS=autoresearch-system
OPERATOR_SA=autoresearch-controller-manager

kubectl() { "$K8S_BIN/kubectl" --kubeconfig "$E2E_DIR/kubeconfig" "$@"; }

start() { # name command...
  local name=$1
  shift
  "$@" >"$E2E_DIR/logs/$name.log" 2>&1 &
  echo $! >"$E2E_DIR/pids/$name"
}

wait_for() { # what seconds command...
  local what=$1 seconds=$2 pid
  shift 2
  for _ in $(seq "$seconds"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    for pid in "$E2E_DIR"/pids/*; do
      kill -0 "$(cat "$pid")" 2>/dev/null && continue
      echo "$(basename "$pid") exited; see $E2E_DIR/logs/$(basename "$pid").log" >&2
      return 1
    done
    sleep 1
  done
  echo "timed out waiting for $what; see $E2E_DIR/logs" >&2
  return 1
}

write_kubeconfig() { # file user token
  cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $E2E_DIR/pki/apiserver.crt
contexts:
- name: e2e
  context: {cluster: e2e, user: $2}
current-context: e2e
users:
- name: $2
  user: {token: $3}
KC
}

# pki makes the keys and tokens once, and writes the kubeconfigs every
# time: they name the certificate by its path, which changes when the
# checkout moves.
pki() {
  local d=$E2E_DIR/pki
  if [ ! -f "$d/tokens.csv" ]; then
    mkdir -p "$d"
    openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
    openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
    openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj /CN=127.0.0.1 \
      -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
      -keyout "$d/apiserver.key" -out "$d/apiserver.crt" 2>/dev/null
    {
      echo "$(openssl rand -hex 16),admin,admin,system:masters"
      echo "$(openssl rand -hex 16),system:serviceaccount:$OPERATOR_NS:$OPERATOR_SA,operator,system:serviceaccounts"
    } >"$d/tokens.csv"
  fi
  write_kubeconfig "$E2E_DIR/kubeconfig" admin "$(sed -n 1s/,.*//p "$d/tokens.csv")"
  write_kubeconfig "$E2E_DIR/operator.kubeconfig" operator "$(sed -n 2s/,.*//p "$d/tokens.csv")"
}

# own_module makes $E2E_DIR a Go module of its own: the cluster's state
# holds Go files (the node's images, the experiments' volumes), which this
# repository's ./... (go vet, the linters, the tests) must not take for its
# packages, while a cluster runs or after one was killed.
own_module() {
  mkdir -p "$E2E_DIR"
  [ -f "$E2E_DIR/go.mod" ] ||
    printf '%s\n' '// The state of a local cluster (hack/e2e/cluster.sh), not a module to build.' 'module e2e-state' >"$E2E_DIR/go.mod"
}

# stale says whether $E2E_DIR holds the pids of a cluster none of whose
# processes runs: one left by a run that was killed before its `down`.
stale() {
  local pid
  for pid in "$E2E_DIR"/pids/*; do
    kill -0 "$(cat "$pid")" 2>/dev/null && return 1
  done
  return 0
}

up() {
  own_module
  "$root/hack/e2e/build-binaries.sh"
  if [ -n "$(ls "$E2E_DIR/pids" 2>/dev/null)" ]; then
    if ! stale; then
      echo "already running (pids in $E2E_DIR/pids); run '$0 down' first" >&2
      return 1
    fi
    echo "a cluster left by a run that was stopped (no process of it runs): tearing it down first" >&2
    down
  fi
  mkdir -p "$E2E_DIR/logs" "$E2E_DIR/pids" "$E2E_DIR/state"
  pki
  local kc=$E2E_DIR/kubeconfig pki=$E2E_DIR/pki

  start etcd "$K8S_BIN/etcd" --data-dir "$E2E_DIR/state/etcd" --name e2e \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" \
    --initial-cluster "e2e=http://127.0.0.1:$((ETCD_PORT + 10))" --unsafe-no-fsync
  wait_for etcd 60 curl -sf "http://127.0.0.1:$ETCD_PORT/health"

  start kube-apiserver "$K8S_BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --token-auth-file "$pki/tokens.csv" --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range 10.96.0.0/16 --allow-privileged=true --endpoint-reconciler-type none \
    --kubelet-preferred-address-types InternalIP,Hostname \
    --kubelet-client-certificate "$pki/apiserver.crt" --kubelet-client-key "$pki/apiserver.key" \
    --enable-admission-plugins NamespaceLifecycle,ServiceAccount,DefaultStorageClass,PersistentVolumeClaimResize
  wait_for kube-apiserver 120 kubectl get --raw /readyz

  start kube-controller-manager "$K8S_BIN/kube-controller-manager" --kubeconfig "$kc" \
    --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" --leader-elect=false --controllers '*' \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/apiserver.crt" \
    --cluster-name e2e --use-service-account-credentials=false
  start kube-scheduler "$K8S_BIN/kube-scheduler" --kubeconfig "$kc" \
    --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --leader-elect=false

  if [ "$E2E_NODE" = real ]; then
    # No provisioner: a test binds its claims to volumes it makes.
    kubectl apply -f - >/dev/null <<SC
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: real-local
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: Immediate
reclaimPolicy: Retain
SC
    K8S_BIN=$K8S_BIN E2E_DIR=$E2E_DIR E2E_GPUS=$E2E_GPUS "$root/hack/e2e/real-node.sh" up
  else
    kubectl apply -f - >/dev/null <<SC
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: process-local
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: autoresearch.dev/process-kubelet
volumeBindingMode: Immediate
reclaimPolicy: Retain
SC
    # Containers get the host's Go caches, as a Go image's ENV would name
    # its own: without them every step that runs `go run` under the HOME
    # the operator gives it builds the example from nothing.
    start process-kubelet env KUBECONFIG="$kc" GOCACHE="$(go env GOCACHE)" GOMODCACHE="$(go env GOMODCACHE)" "$E2E_DIR/process-kubelet" \
      --node-name process-node --gpus "$E2E_GPUS" --state-dir "$E2E_DIR/state/node" \
      --container-init "$E2E_DIR/process-kubelet-init" --image-file "/autoresearch=$E2E_DIR/autoresearch" \
      --listen-address "127.0.0.1:$KUBELET_PORT" --tls-cert-file "$pki/apiserver.crt" \
      --tls-private-key-file "$pki/apiserver.key" --client-ca-file "$pki/apiserver.crt"
    wait_for "node process-node" 120 kubectl wait --for=condition=Ready node/process-node --timeout=1s
  fi
  wait_for "service account default" 60 kubectl get serviceaccount default
  echo "cluster ready: export KUBECONFIG=$E2E_DIR/kubeconfig  (kubectl: $K8S_BIN/kubectl)"
}

down() {
  # Reverse start order: the node stops its containers first.
  local name pid
  if [ -d "$E2E_DIR/node" ]; then
    K8S_BIN=$K8S_BIN E2E_DIR=$E2E_DIR "$root/hack/e2e/real-node.sh" down
  fi
  for name in process-kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do
    [ -f "$E2E_DIR/pids/$name" ] || continue
    pid=$(cat "$E2E_DIR/pids/$name")
    if kill "$pid" 2>/dev/null; then
      for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$E2E_DIR/pids/$name"
  done
  # The next `up` starts from an empty cluster.
  rm -rf "$E2E_DIR/state"
}

# build makes what `up` would start, the real node's images included, so
# that it can run ahead, beside other work (make test).
build() {
  own_module
  if [ "$E2E_NODE" = real ]; then
    K8S_BIN=$K8S_BIN E2E_DIR=$E2E_DIR "$root/hack/e2e/real-node.sh" build
  fi
  "$root/hack/e2e/build-binaries.sh"
}

case "${1:-}" in
  build) build ;;
  up) up ;;
  down) down ;;
  *) echo "usage: $0 build|up|down" >&2; exit 2 ;;
esac
