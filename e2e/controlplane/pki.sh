#!/usr/bin/env bash
# Throw-away PKI for the loopback control plane, made with the openssl CLI.
#
# Usage: e2e/controlplane/pki.sh [PKI_DIR]      (default $PYSCHED_RUN/pki)
#
# Writes (only what is missing, so it is safe to re-run):
#   ca.{key,crt}              self-signed CA (signs everything below)
#   apiserver.{key,crt}       serving cert: 127.0.0.1, localhost, kubernetes*, 10.0.0.1
#   admin.{key,crt}           client cert CN=admin, O=system:masters
#   kube-scheduler.{key,crt}  client cert CN=system:kube-scheduler (for the real
#                             kube-scheduler as a comparison peer)
#   kube-controller-manager.{key,crt}  client cert CN=system:kube-controller-manager
#   sa.key, sa.pub            service-account token signing key pair
#   admin.kubeconfig, kube-scheduler.kubeconfig, kube-controller-manager.kubeconfig
#                             (certs embedded, server
#                             https://127.0.0.1:$PYSCHED_APISERVER_PORT)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PKI=${1:-$PYSCHED_RUN/pki}
mkdir -p "$PKI"
chmod 700 "$PKI"
cd "$PKI"
umask 077

DAYS=${PYSCHED_PKI_DAYS:-30}
command -v openssl >/dev/null || { cp_log "openssl not found"; exit 1; }

if [[ ! -s ca.crt || ! -s ca.key ]]; then
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout ca.key -out ca.crt -days "$DAYS" -subj "/CN=pyscheduler-e2e-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
  # A new CA invalidates everything signed by the old one.
  rm -f apiserver.crt admin.crt kube-scheduler.crt kube-controller-manager.crt ./*.kubeconfig
fi

# sign <name> <subject> <extensions...>
sign() {
  local name=$1 subj=$2
  shift 2
  [[ -s $name.crt && -s $name.key ]] && return 0
  local ext
  ext=$(mktemp)
  printf '%s\n' "$@" >"$ext"
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout "$name.key" -out "$name.csr" -subj "$subj" 2>/dev/null
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
    -days "$DAYS" -sha256 -out "$name.crt" -extfile "$ext" 2>/dev/null
  rm -f "$name.csr" "$ext"
}

sign apiserver "/CN=kube-apiserver" \
  "basicConstraints=critical,CA:FALSE" \
  "keyUsage=critical,digitalSignature,keyEncipherment" \
  "extendedKeyUsage=serverAuth" \
  "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.0.0.1"
sign admin "/O=system:masters/CN=admin" \
  "basicConstraints=critical,CA:FALSE" \
  "keyUsage=critical,digitalSignature,keyEncipherment" \
  "extendedKeyUsage=clientAuth"
sign kube-scheduler "/CN=system:kube-scheduler" \
  "basicConstraints=critical,CA:FALSE" \
  "keyUsage=critical,digitalSignature,keyEncipherment" \
  "extendedKeyUsage=clientAuth"
# Bound by the bootstrap RBAC policy to system:kube-controller-manager, which may
# mint tokens for the per-controller ServiceAccounts (--use-service-account-credentials).
sign kube-controller-manager "/CN=system:kube-controller-manager" \
  "basicConstraints=critical,CA:FALSE" \
  "keyUsage=critical,digitalSignature,keyEncipherment" \
  "extendedKeyUsage=clientAuth"

if [[ ! -s sa.key || ! -s sa.pub ]]; then
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
fi

b64() { base64 -w0 <"$1"; }

# kubeconfig <user> (writes <user>.kubeconfig with embedded certs)
kubeconfig() {
  local user=$1 server="https://127.0.0.1:$APISERVER_PORT"
  # Rewrite when missing or when the server port changed.
  if [[ -s $user.kubeconfig ]] && grep -q "server: $server\$" "$user.kubeconfig"; then
    return 0
  fi
  cat >"$user.kubeconfig.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: pyscheduler-e2e
  cluster:
    server: $server
    certificate-authority-data: $(b64 ca.crt)
users:
- name: $user
  user:
    client-certificate-data: $(b64 "$user.crt")
    client-key-data: $(b64 "$user.key")
contexts:
- name: $user@pyscheduler-e2e
  context:
    cluster: pyscheduler-e2e
    user: $user
current-context: $user@pyscheduler-e2e
preferences: {}
EOF
  mv -f "$user.kubeconfig.tmp" "$user.kubeconfig"
}
kubeconfig admin
kubeconfig kube-scheduler
kubeconfig kube-controller-manager

chmod 644 ca.crt
echo "$PKI"
