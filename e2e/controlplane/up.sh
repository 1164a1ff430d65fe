#!/usr/bin/env bash
# Start a loopback control plane: etcd -> kube-apiserver (RBAC on) ->
# kube-controller-manager + kwok. No containers, no kubelet. Binaries come from
# build.sh's cache (run e2e/controlplane/build.sh first).
#
# Usage: e2e/controlplane/up.sh        then: eval "$(e2e/controlplane/up.sh | grep ^export)"
#
# Run dir ${PYSCHED_RUN:-/tmp/pyscheduler-cp}:
#   pids/<name>.pid  logs/<name>.log  pki/ (certs, admin.kubeconfig)
#   kubeconfig (admin, O=system:masters)  env (ports, paths; sourceable)
#
# Ports (127.0.0.1 only): PYSCHED_ETCD_PORT=2379, PYSCHED_ETCD_PEER_PORT=2380,
# PYSCHED_APISERVER_PORT=6443, PYSCHED_KWOK_PORT=10247,
# PYSCHED_KUBE_CONTROLLER_MANAGER_PORT=10257. A default that is busy is
# replaced by a free port; a port set explicitly must be free.
#
# PYSCHED_WITH_KUBE_SCHEDULER=1 also starts the real kube-scheduler (default
# profile, leader election off, secure port PYSCHED_KUBE_SCHEDULER_PORT=10359)
# as a comparison peer.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

T0=$SECONDS
RUN=$PYSCHED_RUN
PKI=$RUN/pki
mkdir -p "$RUN/pids" "$RUN/logs"

pid_alive() { # <name>
  local f=$RUN/pids/$1.pid pid
  [[ -s $f ]] || return 1
  pid=$(<"$f")
  kill -0 "$pid" 2>/dev/null && [[ $(ps -o stat= -p "$pid" 2>/dev/null) != Z* ]]
}

apiserver_ready() { # <port>
  [[ -s $PKI/ca.crt ]] &&
    [[ $(curl -fsS --max-time 2 --cacert "$PKI/ca.crt" "https://127.0.0.1:$1/readyz" 2>/dev/null) == ok ]]
}

print_env() {
  echo "control plane is up (apiserver https://127.0.0.1:$APISERVER_PORT, run dir $RUN)"
  echo "export KUBECONFIG=$RUN/kubeconfig"
}

# Already up?
if [[ -s $RUN/env ]]; then
  # shellcheck disable=SC1091
  source "$RUN/env"
  if pid_alive etcd && pid_alive kube-apiserver && pid_alive kube-controller-manager && pid_alive kwok &&
    apiserver_ready "$APISERVER_PORT" &&
    curl -fsS --max-time 2 "http://127.0.0.1:$KWOK_PORT/healthz" >/dev/null 2>&1; then
    echo "already up"
    print_env
    exit 0
  fi
  cp_log "stale run dir $RUN (not all components alive): cleaning up first"
  "$CP_DIR/down.sh" >/dev/null
  mkdir -p "$RUN/pids" "$RUN/logs"
  # Re-derive ports from the environment, not from the stale env file.
  # shellcheck disable=SC1091
  source "$CP_DIR/lib.sh"
fi

for b in "$ETCD_BIN" "$KUBE_APISERVER_BIN" "$KUBE_CONTROLLER_MANAGER_BIN" "$KWOK_BIN" "$KWOK_STAGES"; do
  if [[ ! -e $b ]]; then
    cp_log "missing $b: run e2e/controlplane/build.sh first"
    exit 1
  fi
done
if [[ ${PYSCHED_WITH_KUBE_SCHEDULER:-0} == 1 && ! -x $KUBE_SCHEDULER_BIN ]]; then
  cp_log "missing $KUBE_SCHEDULER_BIN: run e2e/controlplane/build.sh kube-scheduler"
  exit 1
fi
command -v curl >/dev/null || { cp_log "curl is required"; exit 1; }

port_busy() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { python3 "$CP_DIR/freeport.py"; }  # below the ephemeral range (see there)
# pick_port <VAR> <env-name>: keep the value if free; replace a busy default.
pick_port() {
  local var=$1 envname=$2 port=${!1}
  if port_busy "$port"; then
    if [[ -n ${!envname:-} ]]; then
      cp_log "port $port ($envname) is in use"
      exit 1
    fi
    port=$(free_port)
    cp_log "default port ${!1} busy, using $port for $var"
    printf -v "$var" '%s' "$port"
  fi
}
pick_port ETCD_PORT PYSCHED_ETCD_PORT
pick_port ETCD_PEER_PORT PYSCHED_ETCD_PEER_PORT
pick_port APISERVER_PORT PYSCHED_APISERVER_PORT
pick_port KWOK_PORT PYSCHED_KWOK_PORT
KUBE_CONTROLLER_MANAGER_PORT=${PYSCHED_KUBE_CONTROLLER_MANAGER_PORT:-10257}
pick_port KUBE_CONTROLLER_MANAGER_PORT PYSCHED_KUBE_CONTROLLER_MANAGER_PORT
KUBE_SCHEDULER_PORT=${PYSCHED_KUBE_SCHEDULER_PORT:-10359}
[[ ${PYSCHED_WITH_KUBE_SCHEDULER:-0} == 1 ]] && pick_port KUBE_SCHEDULER_PORT PYSCHED_KUBE_SCHEDULER_PORT

# etcd data on tmpfs when possible.
if [[ -d /dev/shm && -w /dev/shm ]]; then
  ETCD_DATA=$(mktemp -d /dev/shm/pyscheduler-etcd.XXXXXX)
else
  ETCD_DATA=$(mktemp -d "$RUN/etcd-data.XXXXXX")
fi

ETCD_NAME=$(basename "$ETCD_DATA")

cat >"$RUN/env" <<EOF
# Written by e2e/controlplane/up.sh; sourced by down.sh and the pytest harness.
PYSCHED_RUN=$RUN
APISERVER_PORT=$APISERVER_PORT
ETCD_PORT=$ETCD_PORT
ETCD_PEER_PORT=$ETCD_PEER_PORT
KWOK_PORT=$KWOK_PORT
KUBE_SCHEDULER_PORT=$KUBE_SCHEDULER_PORT
KUBE_CONTROLLER_MANAGER_PORT=$KUBE_CONTROLLER_MANAGER_PORT
ETCD_DATA=$ETCD_DATA
KUBECONFIG_ADMIN=$RUN/kubeconfig
EOF

fail() {
  local name=$1
  cp_log "$name failed to become ready; last log lines ($RUN/logs/$name.log):"
  tail -n 30 "$RUN/logs/$name.log" >&2 || true
  "$CP_DIR/down.sh" --keep-logs >/dev/null || true
  exit 1
}

# start <name> <cmd...>: background, own session, PID to pids/<name>.pid
start() {
  local name=$1
  shift
  setsid "$@" >"$RUN/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/pids/$name.pid"
}

# wait_until <name> <timeout-s> <check cmd...>
wait_until() {
  local name=$1 timeout=$2 t
  shift 2
  t=$SECONDS
  until "$@"; do
    pid_alive "$name" || fail "$name"
    ((SECONDS - t < timeout)) || fail "$name"
    sleep 0.2
  done
  # A check can pass against another session's process on the same port while
  # ours died binding it (concurrent up.sh runs racing for a default port).
  pid_alive "$name" || fail "$name"
  cp_log "$name ready ($((SECONDS - t))s)"
}

PYSCHED_APISERVER_PORT=$APISERVER_PORT "$CP_DIR/pki.sh" "$PKI" >/dev/null
ln -sfn pki/admin.kubeconfig "$RUN/kubeconfig"

# --- etcd -------------------------------------------------------------------
start etcd "$ETCD_BIN" \
  --name="$ETCD_NAME" \
  --data-dir="$ETCD_DATA" \
  --listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster="$ETCD_NAME=http://127.0.0.1:$ETCD_PEER_PORT" \
  --unsafe-no-fsync=true \
  --quota-backend-bytes=8589934592 \
  --auto-compaction-retention=1 \
  --log-level=warn
# Healthy, and ours: the member name is unique to this run, so an etcd of another
# session that won a race for the same port is never mistaken for this one.
etcd_ready() {
  curl -fsS --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"' &&
    curl -fsS --max-time 2 -X POST -d '{}' "http://127.0.0.1:$ETCD_PORT/v3/cluster/member/list" 2>/dev/null |
    grep -qF "\"name\":\"$ETCD_NAME\""
}
wait_until etcd 30 etcd_ready

# --- kube-apiserver -----------------------------------------------------------
# Default admission plugins (ServiceAccount, TaintNodesByCondition, Priority,
# DefaultTolerationSeconds, StorageObjectInUseProtection, ...), as in a real
# cluster: kube-controller-manager creates the "default" ServiceAccounts and
# lifts the node.kubernetes.io/not-ready taint once kwok reports a node Ready.
# Workload-aware scheduling (kube-scheduler v1.36.3's alpha): scheduling.k8s.io/v1alpha2
# (PodGroup, Workload) served and the pod's spec.schedulingGroup kept, its gates on. A scheduler
# only uses them with the same gates on its side; with them off nothing changes for it.
WORKLOAD_GATES=GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true
WORKLOAD_GATES+=,WorkloadAwarePreemption=true
# PYSCHED_APISERVER_EXTRA_ARGS: extra whitespace-separated flags (benchmark knobs).
read -r -a APISERVER_EXTRA <<<"${PYSCHED_APISERVER_EXTRA_ARGS:-}"
start kube-apiserver "$KUBE_APISERVER_BIN" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --client-ca-file="$PKI/ca.crt" \
  --service-account-issuer="https://127.0.0.1:$APISERVER_PORT" \
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
  --authorization-mode=RBAC \
  --service-cluster-ip-range=10.0.0.0/24 \
  --allow-privileged=true \
  --endpoint-reconciler-type=none \
  --profiling=false \
  --runtime-config=scheduling.k8s.io/v1alpha2=true \
  --feature-gates="$WORKLOAD_GATES" \
  "${APISERVER_EXTRA[@]}"
wait_until kube-apiserver 90 apiserver_ready "$APISERVER_PORT"

# --- kube-controller-manager + kwok (started together, then awaited) -----------
# Controllers: the workload ones (ReplicaSet, Deployment, StatefulSet,
# disruption for PDB status, garbage collector), namespace deletion, the
# ServiceAccount ones ("default" SA per namespace, legacy token secrets, the
# kube-root-ca.crt ConfigMap), PV/PVC binding plus the PV/PVC protection
# controllers (StorageObjectInUseProtection adds their finalizers, so without
# them claims and namespaces never finish deleting), and node lifecycle (lifts
# the not-ready taint, taints unschedulable/not-ready nodes), PodGroup protection. No
# taint-eviction-controller: NoExecute taints never evict, nothing to
# attach/detach without a kubelet, no pod GC, no job/cronjob/daemonset.
# Each controller uses its own ServiceAccount, as kubeadm sets it up.
KCM_CONTROLLERS=serviceaccount-token-controller,serviceaccount-controller
KCM_CONTROLLERS+=,root-ca-certificate-publisher-controller,namespace-controller
KCM_CONTROLLERS+=,garbage-collector-controller,replicaset-controller,deployment-controller
KCM_CONTROLLERS+=,statefulset-controller,disruption-controller
KCM_CONTROLLERS+=,persistentvolume-binder-controller,persistentvolumeclaim-protection-controller
KCM_CONTROLLERS+=,persistentvolume-protection-controller,node-lifecycle-controller
KCM_CONTROLLERS+=,resourceclaim-controller
# PodGroups carry the podgroup-protection finalizer; without its controller they never go away.
KCM_CONTROLLERS+=,podgroup-protection-controller
# PYSCHED_KCM_CONTROLLERS replaces the list (kube-controller-manager --controllers syntax).
# qps 1000: the node lifecycle controller lifts the not-ready taint of new nodes at a rate its
# client's qps sets (about 40 nodes/s at qps 100, two minutes for a 5,000-node bench cluster).
# PYSCHED_NODE_MONITOR_GRACE_PERIOD (default 50s, kube-controller-manager's): how long a node
# lease may go unrenewed before its node turns NotReady and is tainted; `make bench-live`
# pauses kwok for whole runs and raises it.
KCM_CONTROLLERS=${PYSCHED_KCM_CONTROLLERS:-$KCM_CONTROLLERS}
start kube-controller-manager "$KUBE_CONTROLLER_MANAGER_BIN" \
  --kubeconfig="$PKI/kube-controller-manager.kubeconfig" \
  --authentication-kubeconfig="$PKI/kube-controller-manager.kubeconfig" \
  --authorization-kubeconfig="$PKI/kube-controller-manager.kubeconfig" \
  --authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics \
  --client-ca-file="$PKI/ca.crt" --authentication-skip-lookup=true \
  --bind-address=127.0.0.1 --secure-port="$KUBE_CONTROLLER_MANAGER_PORT" \
  --leader-elect=false \
  --controllers="$KCM_CONTROLLERS" \
  --feature-gates="$WORKLOAD_GATES" \
  --use-service-account-credentials=true \
  --service-account-private-key-file="$PKI/sa.key" \
  --root-ca-file="$PKI/ca.crt" \
  --kube-api-qps=1000 --kube-api-burst=2000 \
  --node-monitor-grace-period="${PYSCHED_NODE_MONITOR_GRACE_PERIOD:-50s}" \
  --profiling=false

# Stages: node-initialize + node-heartbeat-with-lease + pod-ready + pod-delete.
# kwok renews a Lease per node in kube-node-lease (40 s, renewed every 10 s),
# which keeps the node lifecycle controller from marking nodes NotReady.
start kwok "$KWOK_BIN" \
  --kubeconfig="$PKI/admin.kubeconfig" \
  --config="$KWOK_STAGES" \
  --manage-all-nodes=true \
  --cidr=10.128.0.0/9 \
  --node-lease-duration-seconds=40 \
  --server-address="127.0.0.1:$KWOK_PORT"
kwok_ready() { curl -fsS --max-time 2 "http://127.0.0.1:$KWOK_PORT/healthz" >/dev/null 2>&1; }
wait_until kwok 30 kwok_ready

# Ready: /healthz answers ok and pods can be created, i.e. the ServiceAccount
# controller has made default/default (ServiceAccount admission rejects pods until then).
kcm_ready() {
  [[ $(curl -ksS --max-time 2 "https://127.0.0.1:$KUBE_CONTROLLER_MANAGER_PORT/healthz" 2>/dev/null) == ok ]] &&
    curl -fsS --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
      "https://127.0.0.1:$APISERVER_PORT/api/v1/namespaces/default/serviceaccounts/default" >/dev/null 2>&1
}
wait_until kube-controller-manager 60 kcm_ready

# --- optional: the real kube-scheduler ------------------------------------------
if [[ ${PYSCHED_WITH_KUBE_SCHEDULER:-0} == 1 ]]; then
  cat >"$RUN/kube-scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $PKI/kube-scheduler.kubeconfig
  qps: ${PYSCHED_KUBE_SCHEDULER_QPS:-50}
  burst: ${PYSCHED_KUBE_SCHEDULER_BURST:-100}
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
EOF
  start kube-scheduler "$KUBE_SCHEDULER_BIN" \
    --config="$RUN/kube-scheduler.yaml" \
    --bind-address=127.0.0.1 --secure-port="$KUBE_SCHEDULER_PORT" \
    --authentication-kubeconfig="$PKI/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig="$PKI/kube-scheduler.kubeconfig" \
    --authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics
  ks_ready() { [[ $(curl -ksS --max-time 2 "https://127.0.0.1:$KUBE_SCHEDULER_PORT/readyz" 2>/dev/null) == ok ]]; }
  wait_until kube-scheduler 60 ks_ready
fi

cp_log "up in $((SECONDS - T0))s"
print_env
