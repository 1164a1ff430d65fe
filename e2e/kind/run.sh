#!/usr/bin/env bash
# In-cluster e2e for users with Docker: kind cluster + pyscheduler Deployment.
#
#   e2e/kind/run.sh [pytest args...]
#
# 1. kind (sigs.k8s.io/kind@v0.32.0, go-installed into the cache if not on PATH)
#    creates cluster $KIND_CLUSTER (default pyscheduler-e2e) from kind.yaml
#    ($KIND_NODE_IMAGE overrides the node image);
# 2. docker build -t pyscheduler:e2e-<gitsha> . and kind load docker-image;
# 3. kubectl apply -k of a temporary overlay of manifests/ with that image;
# 4. waits for the Deployment, then runs pytest e2e/ with KUBECONFIG pointing
#    at kind and PYSCHED_E2E_IN_CLUSTER=1 (tests start no scheduler).
# The cluster is deleted at the end unless KEEP_CLUSTER=1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER=${KIND_CLUSTER:-pyscheduler-e2e}
KIND_VERSION=v0.32.0
CACHE=${PYSCHED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler}
PYTHON=${PYTHON:-python3}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

for tool in docker kubectl "$PYTHON"; do
  command -v "$tool" >/dev/null || { log "$tool is required"; exit 1; }
done

KIND=$(command -v kind || true)
if [[ -z $KIND ]]; then
  KIND=$CACHE/bin/kind-$KIND_VERSION/kind
  if [[ ! -x $KIND ]]; then
    log "installing kind $KIND_VERSION into $(dirname "$KIND")"
    GOBIN=$(dirname "$KIND") go install "sigs.k8s.io/kind@$KIND_VERSION"
  fi
fi

SHA=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo nogit)
if [[ -n $(git -C "$ROOT" status --porcelain 2>/dev/null) ]]; then
  SHA=$SHA-dirty
fi
TAG=e2e-$SHA
IMAGE=pyscheduler:$TAG

WORK=$(mktemp -d)
cleanup() {
  rm -rf "$WORK"
  if [[ ${KEEP_CLUSTER:-0} != 1 ]]; then
    log "deleting kind cluster $CLUSTER (KEEP_CLUSTER=1 keeps it)"
    "$KIND" delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

if "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  log "reusing kind cluster $CLUSTER"
else
  log "creating kind cluster $CLUSTER"
  "$KIND" create cluster --name "$CLUSTER" --config "$ROOT/e2e/kind/kind.yaml" \
    ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"} --wait 120s
fi
export KUBECONFIG=$WORK/kubeconfig
"$KIND" get kubeconfig --name "$CLUSTER" >"$KUBECONFIG"

log "building $IMAGE"
docker build -t "$IMAGE" "$ROOT"
"$KIND" load docker-image "$IMAGE" --name "$CLUSTER"

# Overlay of manifests/ with the image overridden (kustomize refuses absolute
# paths, so the base is copied next to the overlay).
mkdir -p "$WORK/overlay"
cp -r "$ROOT/manifests" "$WORK/base"
cat >"$WORK/overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../base
images:
- name: pyscheduler
  newName: pyscheduler
  newTag: $TAG
YAML
kubectl apply -k "$WORK/overlay"
if ! kubectl -n pyscheduler rollout status deployment/pyscheduler --timeout=180s; then
  kubectl -n pyscheduler get pods -o wide || true
  kubectl -n pyscheduler logs deployment/pyscheduler --all-containers --tail=50 || true
  exit 1
fi

log "running e2e tests against $CLUSTER"
cd "$ROOT"
PYSCHED_E2E_IN_CLUSTER=1 "$PYTHON" -m pytest e2e "$@"
