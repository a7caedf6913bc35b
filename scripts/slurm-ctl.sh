#!/usr/bin/env bash
# Stop or start one daemon of the loopback Slurm cluster, e.g. for the
# controller-down test:  scripts/slurm-ctl.sh stop slurmctld; scripts/slurm-ctl.sh start slurmctld
# Daemons: munged mariadb slurmdbd slurmctld slurmd (every node).
set -euo pipefail
. "$(dirname "$0")/slurm/lib.sh"
[ $# -eq 2 ] || { echo "usage: $0 stop|start munged|mariadb|slurmdbd|slurmctld|slurmd" >&2; exit 2; }
[ -f "$STATE/db.pass" ] && DB_PASS="$(cat "$STATE/db.pass")"
case "$1:$2" in
  stop:munged) stop_pid "$STATE/run/munged.pid" munged ;;
  start:munged) start_munge ;;
  stop:mariadb) stop_pid "$STATE/mysql/run/mysqld.pid" mariadbd ;;
  start:mariadb) start_mariadb ;;
  stop:slurmdbd) stop_pid "$STATE/run/slurmdbd.pid" slurmdbd ;;
  start:slurmdbd) start_slurmdbd ;;
  stop:slurmctld) stop_pid "$STATE/run/slurmctld.pid" slurmctld ;;
  start:slurmctld) start_slurmctld ;;
  stop:slurmd) for pf in $(slurmd_pidfiles); do stop_pid "$pf" "slurmd $(basename "$pf" .pid)"; done ;;
  start:slurmd) start_slurmds ;;
  *) echo "usage: $0 stop|start munged|mariadb|slurmdbd|slurmctld|slurmd" >&2; exit 2 ;;
esac
