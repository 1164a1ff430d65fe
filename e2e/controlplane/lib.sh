# shellcheck shell=bash disable=SC2034
# Shared settings for build.sh / up.sh / down.sh. Source it; do not execute it.
#
# Environment knobs (all optional):
#   PYSCHED_CACHE   cache root (binaries, GOMODCACHE, GOCACHE)
#                   default ${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler
#   PYSCHED_RUN     run dir (pids, logs, pki, kubeconfigs, etcd data if no /dev/shm)
#                   default /tmp/pyscheduler-cp
#   PYSCHED_ETCD_PORT (default 2379), PYSCHED_ETCD_PEER_PORT (default 2380),
#   PYSCHED_APISERVER_PORT (default 6443), PYSCHED_KWOK_PORT (default 10247)
#   PYSCHED_KUBE_MODULE (default k8s; k8s-prev: the previous minor's binaries)

CP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export CP_DIR

PYSCHED_CACHE=${PYSCHED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler}
PYSCHED_RUN=${PYSCHED_RUN:-/tmp/pyscheduler-cp}
BIN_ROOT="$PYSCHED_CACHE/bin"

ETCD_PORT=${PYSCHED_ETCD_PORT:-2379}
ETCD_PEER_PORT=${PYSCHED_ETCD_PEER_PORT:-2380}
APISERVER_PORT=${PYSCHED_APISERVER_PORT:-6443}
KWOK_PORT=${PYSCHED_KWOK_PORT:-10247}

# Version of module $2 as required in wrapper module dir $1 (read from go.mod,
# so no Go toolchain is needed to locate binaries).
cp_mod_version() {
  awk -v m="$2" '($1 == m || ($1 == "require" && $2 == m)) {
      for (i = 1; i <= NF; i++) if ($i ~ /^v[0-9]/) { print $i; exit }
    }' "$CP_DIR/$1/go.mod"
}

# The Kubernetes wrapper module: k8s (the release pyscheduler follows) or k8s-prev (the previous
# minor, for the version-skew e2e run: PYSCHED_KUBE_MODULE=k8s-prev build.sh / up.sh).
KUBE_MODULE=${PYSCHED_KUBE_MODULE:-k8s}
[[ -f "$CP_DIR/$KUBE_MODULE/go.mod" ]] || { printf 'no wrapper module %s/go.mod\n' "$CP_DIR/$KUBE_MODULE" >&2; return 1; }
KUBE_VERSION=$(cp_mod_version "$KUBE_MODULE" k8s.io/kubernetes)
ETCD_VERSION=$(cp_mod_version etcd go.etcd.io/etcd/server/v3)
KWOK_VERSION=$(cp_mod_version kwok sigs.k8s.io/kwok)
HELM_VERSION=$(cp_mod_version helm helm.sh/helm/v4)

KUBE_APISERVER_BIN="$BIN_ROOT/kube-apiserver-$KUBE_VERSION/kube-apiserver"
KUBE_SCHEDULER_BIN="$BIN_ROOT/kube-scheduler-$KUBE_VERSION/kube-scheduler"
KUBE_CONTROLLER_MANAGER_BIN="$BIN_ROOT/kube-controller-manager-$KUBE_VERSION/kube-controller-manager"
ETCD_BIN="$BIN_ROOT/etcd-$ETCD_VERSION/etcd"
KWOK_BIN="$BIN_ROOT/kwok-$KWOK_VERSION/kwok"
# Stage definitions copied out of the kwok module by build.sh (the name
# changes with the set of stages, so an older cached set is never reused).
KWOK_STAGES="$BIN_ROOT/kwok-$KWOK_VERSION/stages-lease.yaml"
# Not part of the plane: renders and lints charts/pyscheduler (make lint, e2e/test_helm.py).
HELM_BIN="$BIN_ROOT/helm-$HELM_VERSION/helm"

cp_log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
