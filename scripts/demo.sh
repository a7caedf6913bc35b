#!/usr/bin/env bash
# The main job on embedded defaults (make demo): a synthetic LS6-like trace,
# quick training of the default learned policy (xgb-online), xgb and the wait predictor,
# the replay evaluation of the policies with the published pair protocol, a
# check that the report's numbers
# equal its JSON, and the report's path. `make demo TRACE=path` runs the same
# on a real trace.
#
# Environment (all optional):
#   TRACE        a trace file (any format mirage reads); default: synthesise 30 days
#   OUT          output directory (default demo-out)
#   TRAIN_UNTIL  end of training = start of validation
#   FROM         start of the evaluation (= end of validation)
#   UNTIL        end of the evaluation
#                (defaults: fixed dates for the synthetic trace; for TRACE, 60%,
#                70% and 100% of its submit span)
#   PROTOCOL     pair (default) or chain-K
#   LOAD         load scales, comma-separated (default 1.0)
#   MODELS       models to train (default xgb-online,xgb,wait: the default learned policy,
#                xgb and the wait predictor; add rf,dqn,pg for every learned policy, ~1.5 min more)
#   POLICIES     policies to evaluate (default: the baselines with pin, xgb-online-pin (the default on
#                Slurm once trained), xgb-online, xgb and the oracle;
#                add rf,dqn,pg when MODELS has them)
#   MIRAGE       the mirage binary (default ./bin/mirage, from make build)
set -euo pipefail
cd "$(dirname "$0")/.."
MIRAGE="${MIRAGE:-./bin/mirage}"
OUT="${OUT:-demo-out}"
TRACE="${TRACE:-}"
LOAD="${LOAD:-1.0}"
PROTOCOL="${PROTOCOL:-pair}"
MODELS="${MODELS:-xgb-online,xgb,wait}"
POLICIES="${POLICIES:-reactive,dependency,lead,start-estimate,pin,average,quantile,xgb-online-pin,xgb-online,xgb,oracle}"
mkdir -p "$OUT"
start=$(date +%s)
step() { printf '\n== [%3ds] %s\n' "$(( $(date +%s) - start ))" "$*"; }

if [ -z "$TRACE" ]; then
  TRACE="$OUT/synth-ls6.log"
  step "synthesise a 30-day LS6-like trace -> $TRACE"
  "$MIRAGE" traces synth --like ls6 --days 30 --seed 1 --out "$TRACE"
  # Submissions run 2022-11-01 .. 11-30 (jobs may end in December):
  # train on the first 18 days, validate on 3, evaluate the last 9.
  TRAIN_UNTIL="${TRAIN_UNTIL:-2022-11-19}"
  FROM="${FROM:-2022-11-22}"
  UNTIL="${UNTIL:-2022-12-01}"
fi
step "trace summary"
stats=$("$MIRAGE" traces stats "$TRACE")
echo "$stats"
if [ -z "${TRAIN_UNTIL:-}" ] || [ -z "${FROM:-}" ] || [ -z "${UNTIL:-}" ]; then
  # "submits: FIRST .. LAST (N days)" -> 60% / 70% / 100% of the span.
  span=$(printf '%s\n' "$stats" | sed -n 's/^submits: \([^ ]*\) \.\. \([^ ]*\) .*/\1 \2/p')
  first=$(date -u -d "${span% *}" +%s)
  last=$(date -u -d "${span#* }" +%s)
  at() { date -u -d "@$(( first + (last - first) * $1 / 100 ))" +%Y-%m-%dT%H:%M:%SZ; }
  TRAIN_UNTIL="${TRAIN_UNTIL:-$(at 60)}"
  FROM="${FROM:-$(at 70)}"
  UNTIL="${UNTIL:-$(at 100)}"
fi

step "quick training of $MODELS (train until $TRAIN_UNTIL, validate until $FROM) -> $OUT/models"
"$MIRAGE" train --trace "$TRACE" --model "$MODELS" --train-until "$TRAIN_UNTIL" --until "$FROM" \
  --dqn-steps 20000 --pg-iterations 100 --wait-replicas 1 --out "$OUT/models"

step "wait prediction: a 1-node, 24 h job submitted at $FROM in the replayed cluster"
"$MIRAGE" predict-wait -N 1 -t 24:00:00 --models "$OUT/models" --trace "$TRACE" --at "$FROM"

step "replay evaluation ($PROTOCOL; $FROM .. $UNTIL; load $LOAD) -> $OUT/report"
"$MIRAGE" eval --trace "$TRACE" --policies "$POLICIES" --models "$OUT/models" \
  --protocol "$PROTOCOL" --load-scale "$LOAD" --from "$FROM" --until "$UNTIL" \
  --title "mirage demo: $(basename "$TRACE")" --out "$OUT/report"

step "check: the report's numbers equal report.json"
"$MIRAGE" eval verify "$OUT/report"

step "verdict (from the report)"
# The report's opening section: every "## Verdict, ..." heading and what
# follows it, up to the next other heading.
awk '/^## /{v = ($0 ~ /^## Verdict, /)} v' "$OUT/report/report.md"

step "done"
echo "report: $(cd "$OUT/report" && pwd)/report.html"
