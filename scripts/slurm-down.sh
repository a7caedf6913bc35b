#!/usr/bin/env bash
# Stop the loopback Slurm cluster started by scripts/slurm-up.sh: cancel all
# jobs, wait (bounded) for an empty queue, then stop the daemons in reverse
# start order. Idempotent.
set -euo pipefail
. "$(dirname "$0")/slurm/lib.sh"

if [ -f "$SLURM_CONF" ] && pid_alive "$STATE/run/slurmctld.pid"; then
  scancel --full -u "$(id -un)" >/dev/null 2>&1 || true
  scancel --full $(squeue -h -o %i 2>/dev/null) >/dev/null 2>&1 || true
  for i in $(seq 1 100); do
    [ -z "$(squeue -h -o %i 2>/dev/null | grep -v '^$' || true)" ] && break
    sleep 0.2
  done
fi
stop_all
log "stopped"
