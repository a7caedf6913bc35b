#!/usr/bin/env bash
# Start a private Slurm 22.05 cluster on 127.0.0.1 (munged, MariaDB, slurmdbd,
# slurmctld, 4 slurmd nodes with 4 fake GPUs each) under
# ${MIRAGE_TEST_DIR:-/tmp/mirage-test}/slurm, and write env.sh there.
# MIRAGE_SLURM_NODES=N runs N nodes instead (1-64); MIRAGE_SLURM_SCHED_CONF=FILE
# replaces the scheduling lines (Scheduler*, Priority*) by FILE's.
# Idempotent: if everything is up it says so; if half up it restarts cleanly.
set -euo pipefail
. "$(dirname "$0")/slurm/lib.sh"

for b in munged mungekey mariadbd mariadb-install-db slurmdbd slurmctld slurmd sacctmgr sinfo envsubst; do
  command -v "$b" >/dev/null || { log "ERROR: $b not found: install the Debian packages (scripts/deps.sh: slurm-wlm slurmctld slurmd slurm-client slurmdbd munge mariadb-server gettext-base)"; exit 1; }
done

ensure_second_user
write_config
if [ "$CONFIG_CHANGED" = 1 ] && compgen -G "$STATE/run/*.pid" >/dev/null; then
  log "configuration changed: restarting the daemons"
  "$(dirname "$0")/slurm-down.sh" >/dev/null 2>&1 || true
fi
if all_up; then
  setup_accounting # idempotent: brings accounts and QOS of an older run up to date
  write_env
  log "already up (SLURM_CONF=$SLURM_CONF)"
  exit 0
fi
if compgen -G "$STATE/run/*.pid" >/dev/null || [ -f "$STATE/mysql/run/mysqld.pid" ]; then
  log "half up: restarting cleanly"
  "$(dirname "$0")/slurm-down.sh" >/dev/null 2>&1 || true
  write_config
fi
t0=$(date +%s)
start_munge
start_mariadb
start_slurmdbd
setup_accounting
start_slurmctld
start_slurmds
write_env
log "up in $(( $(date +%s) - t0 ))s: $NODE_COUNT nodes x 4 GPUs, partitions debug (default, 5 min) and long (60 min)"
log "use: . $STATE/env.sh"
