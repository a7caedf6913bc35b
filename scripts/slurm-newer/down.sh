#!/usr/bin/env bash
# Stop the Slurm 24.11 or 25.05 cluster of scripts/slurm-newer/up.sh (the
# daemons only: the unpacked chroot and the state stay for a fast restart).
#   scripts/slurm-newer/down.sh 24.11|25.05
set -euo pipefail
REL="${1:?usage: down.sh 24.11|25.05}"
STATE="${MIRAGE_TEST_DIR:-/tmp/mirage-test}/slurm-$REL"
[ -f "$STATE/cluster.env" ] || { echo "slurm-$REL: not set up ($STATE)" >&2; exit 0; }
MIRAGE_SLURM_STATE="$STATE" "$(dirname "$0")/../slurm-down.sh"
