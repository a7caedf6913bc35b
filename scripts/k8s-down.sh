#!/usr/bin/env bash
# Stop the control plane started by scripts/k8s-up.sh — kwok, the scheduler,
# the controller manager, kube-apiserver, etcd — by their pid files (nothing
# else is touched). The data stays until the next k8s-up.sh.
set -uo pipefail
DIR="${MIRAGE_TEST_DIR:-/tmp/mirage-test}/k8s"

stop() { # name
  local pidf="$DIR/$1.pid"
  [ -f "$pidf" ] || return 0
  local pid
  pid=$(cat "$pidf")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "k8s-down: $1 ($pid) did not stop in 10 s; sending KILL" >&2
      kill -KILL "$pid" 2>/dev/null
    fi
    echo "k8s-down: stopped $1 ($pid)" >&2
  fi
  rm -f "$pidf"
}

stop kwok
stop kube-scheduler
stop kube-controller-manager
stop kube-apiserver
stop etcd
rm -f "$DIR/env.sh"
exit 0
