#!/usr/bin/env bash
# The main job on embedded defaults (make demo): a synthetic LS6-like trace,
# the replay evaluation of the submission policies, a check that the report's numbers equal its JSON,
# and the report's path. `make demo TRACE=path` runs the same on a real trace.
#
# Environment (all optional):
#   TRACE     a trace file (any format mirage reads); default: synthesise 30 days
#   OUT       output directory (default demo-out)
#   PROTOCOL  chain-K (default chain-2: one predecessor and one successor
#             per injection, driven by the provisioner engine)
#   FROM, UNTIL  evaluation window (default: the whole trace)
#   LOAD      load scales, comma-separated (default 1.0)
#   MIRAGE    the mirage binary (default ./bin/mirage, from make build)
set -euo pipefail
cd "$(dirname "$0")/.."
MIRAGE="${MIRAGE:-./bin/mirage}"
OUT="${OUT:-demo-out}"
TRACE="${TRACE:-}"
LOAD="${LOAD:-1.0}"
mkdir -p "$OUT"
start=$(date +%s)
step() { printf '\n== [%3ds] %s\n' "$(( $(date +%s) - start ))" "$*"; }

if [ -z "$TRACE" ]; then
  TRACE="$OUT/synth-ls6.log"
  step "synthesise a 30-day LS6-like trace -> $TRACE"
  "$MIRAGE" traces synth --like ls6 --days 30 --seed 1 --out "$TRACE"
fi
step "trace summary"
"$MIRAGE" traces stats "$TRACE"

# The learned policies (rf, xgb, dqn, pg) join once `mirage train` exists;
# until then the demo evaluates the provisioner's baselines.
POLICIES="reactive,dependency,lead,start-estimate"
MODEL_ARGS=()
PROTOCOL="${PROTOCOL:-chain-2}"
WINDOW=()
[ -n "${FROM:-}" ] && WINDOW+=(--from "$FROM")
[ -n "${UNTIL:-}" ] && WINDOW+=(--until "$UNTIL")

step "replay evaluation ($PROTOCOL; policies $POLICIES; load $LOAD) -> $OUT/report"
"$MIRAGE" eval --trace "$TRACE" --policies "$POLICIES" ${MODEL_ARGS[@]+"${MODEL_ARGS[@]}"} \
  --protocol "$PROTOCOL" --load-scale "$LOAD" ${WINDOW[@]+"${WINDOW[@]}"} \
  --title "mirage demo: $(basename "$TRACE")" --out "$OUT/report"

step "check: the report's numbers equal report.json"
"$MIRAGE" eval verify "$OUT/report"

step "done"
echo "report: $(cd "$OUT/report" && pwd)/report.html"
