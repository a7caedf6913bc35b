#!/usr/bin/env bash
# The main job on embedded defaults: a synthetic LS6-like trace, its statistics.
# (Later: training and the replay evaluation report.) TRACE=path uses a real trace.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-demo-out}"
mkdir -p "$OUT"
TRACE="${TRACE:-}"
if [ -z "$TRACE" ]; then
  TRACE="$OUT/synth-ls6.csv"
  ./bin/mirage traces synth --like ls6 --days 30 --seed 1 --out "$TRACE"
fi
./bin/mirage traces stats "$TRACE"
