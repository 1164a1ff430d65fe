#!/usr/bin/env bash
# Stop the control plane started by up.sh (by PID, reverse start order) and
# clean up: etcd data dir, PKI, pid files. Logs are kept in $PYSCHED_RUN/logs
# unless --purge is given (which removes the whole run dir).
#
# Usage: e2e/controlplane/down.sh [--keep-logs|--purge]
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RUN=$PYSCHED_RUN
mode=${1:---keep-logs}
case $mode in
  --keep-logs | --purge) ;;
  *) echo "usage: $0 [--keep-logs|--purge]" >&2; exit 2 ;;
esac

if [[ ! -d $RUN ]]; then
  echo "not running (no $RUN)"
  exit 0
fi

ETCD_DATA=""
if [[ -s $RUN/env ]]; then
  # shellcheck disable=SC1091
  source "$RUN/env"
fi

# stop <name>: SIGTERM, wait up to 10 s, then SIGKILL. Only kills the PID if
# its executable is still the component (guards against PID reuse).
alive() { kill -0 "$1" 2>/dev/null && [[ $(ps -o stat= -p "$1" 2>/dev/null) != Z* ]]; }

stop() {
  local name=$1 f=$RUN/pids/$1.pid pid exe i
  [[ -s $f ]] || return 0
  pid=$(<"$f")
  if alive "$pid"; then
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
    if [[ -n $exe && $(basename "${exe% (deleted)}") != "$name" ]]; then
      cp_log "$name: pid $pid is now '$exe', not ours; not killing it"
    else
      kill -TERM "$pid" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do
        alive "$pid" || break
        sleep 0.2
      done
      if alive "$pid"; then
        cp_log "$name: pid $pid did not exit after SIGTERM; SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
      fi
      cp_log "$name: stopped (pid $pid)"
    fi
  fi
  rm -f "$f"
}

for name in kube-scheduler kwok kube-controller-manager kube-apiserver etcd; do
  stop "$name"
done

if [[ -n $ETCD_DATA && -d $ETCD_DATA ]]; then
  case $ETCD_DATA in
    /dev/shm/pyscheduler-etcd.* | "$RUN"/etcd-data.*) rm -rf "$ETCD_DATA" ;;
    *) cp_log "not removing unexpected etcd data dir '$ETCD_DATA'" ;;
  esac
fi

# Remove only what up.sh creates (never rm -rf "$RUN" itself).
rm -rf "$RUN/pki" "$RUN/pids" "$RUN/env" "$RUN/kubeconfig" "$RUN/kube-scheduler.yaml" "$RUN"/etcd-data.*
if [[ $mode == --purge ]]; then
  rm -rf "$RUN/logs"
  rmdir "$RUN" 2>/dev/null || true
fi
echo "down"
