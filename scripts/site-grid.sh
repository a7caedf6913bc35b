#!/usr/bin/env bash
# Run the LS6 site grid (issue 45) cell by cell, each its own process, into
# the directory the pages' tests read (walk-forward.md, pin-november.md,
# whole-run.md: eval/sitegrid_ls6_test.go): $MIRAGE_SITEGRID_DIR, else the
# user cache's mirage/sitegrid. A cell kept there from the same settings is
# skipped (mirage eval site-grid says so), so the script may be stopped and
# started again; the pages' tests then read every cell instead of running
# the missing ones themselves (hours, in one process).
#
#   scripts/site-grid.sh              # the calibration, then every cell
#   scripts/site-grid.sh age0 ls6     # some cells (names: mirage eval site-grid --list)
#
# A job array runs one cell per task the same way: `mirage eval site-grid
# ... --cell "$SLURM_ARRAY_TASK_ID"` with the arguments below.
set -euo pipefail
cd "$(dirname "$0")/.."
GOTAGS="${GOTAGS:-libsqlite3 xgboost}"
TRACE="${MIRAGE_TRACES:-../shared/traces}/tacc-ls6-a100/ls6-a100-until-2023-03-01.log.gz"
DIR="${MIRAGE_SITEGRID_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mirage/sitegrid}"
# November's arrivals scaled to the GPU-hours per day demanded from
# 1 December to 20 February (eval's novemberAtBusyDemand, computed from the
# trace's arrivals; pin-november.md prints it). Another value only makes
# the pages' tests run the cells again themselves.
SCALE="${MIRAGE_SITEGRID_SCALE:-1.8953727983551871}"
[ -f "$TRACE" ] || { echo "site-grid: no LS6 trace at $TRACE (set MIRAGE_TRACES)" >&2; exit 2; }
mkdir -p "$DIR"
bin=$(mktemp -d)/mirage
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -tags "$GOTAGS" -o "$bin" ./cmd/mirage

# The calibrated preset, fitted on the jobs before the first scored month
# (kept: delete DIR/calibrated.yaml to fit it again).
if [ ! -s "$DIR/calibrated.yaml" ]; then
  "$bin" sim calibrate --trace "$TRACE" --fit-until 2022-12-01 --score-until 2023-02-27 --out "$DIR/calibrated.yaml"
fi
if [ $# -eq 0 ]; then
  mapfile -t cells < <("$bin" eval site-grid --list --calibrated "$DIR/calibrated.yaml" | cut -f2)
else
  cells=("$@")
fi
for cell in "${cells[@]}"; do
  echo "== site-grid: $cell ($(date -u +%H:%MZ))"
  # The walk-forward: the ranking period and the scored months.
  "$bin" eval site-grid --trace "$TRACE" --out "$DIR" --calibrated "$DIR/calibrated.yaml" --cell "$cell" \
    --rank 2022-11-15 --rank-scale "$SCALE" --months 2022-12-01,2023-01-01,2023-02-01 --until 2023-02-27
  # The whole training runs (whole-run.md), 1 December to 20 February.
  "$bin" eval site-grid --runs --trace "$TRACE" --out "$DIR" --calibrated "$DIR/calibrated.yaml" --cell "$cell" \
    --months 2022-12-01,2023-01-01,2023-02-01 --until 2023-02-20 --every 48h
done
"$bin" eval site-grid --out "$DIR" --report
