#!/usr/bin/env bash
# Regenerate the wrapper module k8s/go.mod + go.sum for another Kubernetes
# release (maintainer tool; needs the Go module proxy). Commit the result.
#
# Usage: e2e/controlplane/gen-k8s-mod.sh 1.36.3            (k8s/: the release under test)
#        e2e/controlplane/gen-k8s-mod.sh 1.35.4 k8s-prev   (k8s-prev/: the previous minor's
#                                                           kube-apiserver, see build.sh)
#
# Every staging module of that release (the "=> ./staging/src/..." replace
# lines of k8s.io/kubernetes' own go.mod) is replaced with v0.<minor>.<patch>.
# etcd and kwok have plain wrappers; bump them with e.g.
#   (cd e2e/controlplane/etcd && go get -tool go.etcd.io/etcd/server/v3@v3.6.16 && go mod tidy)
#   (cd e2e/controlplane/kwok && go get -tool sigs.k8s.io/kwok/cmd/kwok@v0.8.0 && go mod tidy)
set -euo pipefail

KV=${1:?usage: $0 <kubernetes version, e.g. 1.36.3>}
KV=${KV#v}
SV=0.${KV#*.}
MODDIR=${2:-k8s}
DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$MODDIR
mkdir -p "$DIR"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
go mod init "pyscheduler.local/e2e/controlplane/$MODDIR" >/dev/null 2>&1
gomod=$(go mod download -json "k8s.io/kubernetes@v$KV" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
go_line=$(awk '$1 == "go" {print $2; exit}' "$gomod")
go mod edit -go="$go_line"
mapfile -t staging < <(sed -n 's|^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/src/.*|\1|p' "$gomod")
[[ ${#staging[@]} -gt 0 ]] || { echo "no staging replaces found in $gomod" >&2; exit 1; }

{
  cat <<EOF
// Wrapper module: builds kube-apiserver, kube-controller-manager and
// kube-scheduler v$KV from the Go
// module proxy (no Kubernetes source in this repo). k8s.io/kubernetes requires
// every staging module at v0.0.0 and maps them to ./staging/src/... with
// replace directives, which are ignored for a dependency, so this main module
// replaces every staging module with its published v$SV. The list is the
// replace block of k8s.io/kubernetes@v$KV's go.mod. Regenerate with
// e2e/controlplane/gen-k8s-mod.sh when bumping. Built by e2e/controlplane/build.sh.
module pyscheduler.local/e2e/controlplane/$MODDIR

go $go_line

replace (
EOF
  for m in "${staging[@]}"; do printf '\t%s => %s v%s\n' "$m" "$m" "$SV"; done
  echo ")"
} >go.mod

go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@v$KV" "k8s.io/kubernetes/cmd/kube-controller-manager@v$KV" \
  "k8s.io/kubernetes/cmd/kube-scheduler@v$KV"
go mod tidy
cp go.mod go.sum "$DIR/"
echo "wrote $DIR/go.mod ($(grep -c ' => ' go.mod) staging replaces) and go.sum"
