#!/usr/bin/env bash
# Regenerate every page of docs/results from a clean tree (issue 49): each
# page is written by the test, benchmark or script that measures it, so a
# page records the commit it was measured at. A dirty tree refuses: a page
# must name a commit that holds the code that wrote it.
#
#   make results              # all pages (hours on 2 cores)
#   PAGES="walk-forward whole-run" make results   # some of them
#
# Each page's wall time goes to docs/results/results-times.md (written last).
# The trained models the acceptance page scores go to ls6-models/ (ignored
# by git), trained on the LS6 file up to February 2023 as its page says.
set -euo pipefail
cd "$(dirname "$0")/.."
GOTAGS="${GOTAGS:-libsqlite3 xgboost}"
ALL="fidelity calibration calibration-openb wait-recorded site-grid walk-forward whole-run pin-november acceptance packing wait-prediction sweep performance nightly-retrain replay-speed daemon-scale real-slurm"
PAGES="${PAGES:-$ALL}"

if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "results: the tree has uncommitted changes; commit them (or stash them) first: a page must name the commit that wrote it" >&2
  git status --short --untracked-files=no >&2
  exit 2
fi
[ -d ../shared/traces ] || [ -n "${MIRAGE_TRACES:-}" ] || { echo "results: the shared traces are not at ../shared/traces (set MIRAGE_TRACES)" >&2; exit 2; }
commit=$(git rev-parse --short HEAD)
times=$(mktemp)
trap 'rm -f "$times"' EXIT
T0=$SECONDS

gotest() { # PKG RUN [ENV=VALUE...]: a page's test with MIRAGE_UPDATE_RESULTS=1
  local pkg="$1" run="$2"; shift 2
  env MIRAGE_UPDATE_RESULTS=1 "$@" go test -tags "$GOTAGS" -count=1 -timeout 6h -run "^${run}\$" -v "$pkg"
}

page() { # NAME: regenerate one page
  case "$1" in
    fidelity) gotest ./sim/ TestFidelityLS6 ;;
    calibration) gotest ./sim/ TestCalibrateLS6 MIRAGE_CALIBRATE=1 ;;
    calibration-openb) gotest ./sim/ TestCalibrateOpenB MIRAGE_CALIBRATE=1 ;;
    wait-recorded) gotest ./models/train/ TestWaitAgainstRecordedLS6 MIRAGE_WAIT_RECORDED=1 ;;
    # The site grid's cells (issue 45), one process each, kept where the
    # walk-forward, whole-run and pin-november pages' tests read them.
    site-grid) scripts/site-grid.sh ;;
    walk-forward) gotest ./eval/ TestWalkForwardLS6 MIRAGE_WALKFORWARD=1 ;;
    whole-run) gotest ./eval/ TestWholeRunLS6 MIRAGE_WHOLERUN=1 ;;
    pin-november) gotest ./eval/ TestPinNovemberLS6 MIRAGE_HELDOUT=1 ;;
    acceptance)
      # The models the page scores, trained on the LS6 file before February.
      local bin; bin=$(mktemp -d)/mirage
      go build -tags "$GOTAGS" -o "$bin" ./cmd/mirage
      "$bin" train --trace ../shared/traces/tacc-ls6-a100/ls6-a100-until-2023-03-01.log.gz \
        --model xgb,xgb-online,rf-xgb --out ls6-models --train-until 2023-02-01 --until 2023-02-27
      gotest ./eval/ TestAcceptanceLS6 MIRAGE_ACCEPTANCE="$PWD/ls6-models" ;;
    packing) gotest ./eval/pack/ TestPackingResults ;;
    wait-prediction) scripts/results-wait.sh ;;
    sweep) scripts/results-sweep.sh ;;
    performance) GOTAGS="$GOTAGS" scripts/bench-results.sh ;;
    nightly-retrain) OUT=docs/results/nightly-retrain.md PKGS=./models/train BENCH=NightlyRetrain COUNT=1 GOTAGS="$GOTAGS" scripts/bench-results.sh ;;
    replay-speed) GOTAGS="$GOTAGS" BENCHSTAT="${HOME}/.cache/mirage/bin/benchstat" scripts/bench-replay.sh ;;
    daemon-scale) env MIRAGE_UPDATE_RESULTS=1 go test -tags "$GOTAGS" -count=1 -run '^$' -bench '^BenchmarkDaemonScale$' -benchtime 5x ./slurm/ ;;
    real-slurm) gotest ./eval/realslurm/ TestBenchRealSlurm MIRAGE_BENCH_REAL_SLURM=1 ;; # its own loopback clusters, about three hours
    *) echo "results: unknown page $1 (pages: $ALL)" >&2; return 2 ;;
  esac
}

failed=()
for p in $PAGES; do
  echo "== results: $p"
  t=$SECONDS
  if page "$p"; then status=written; else status="**failed** (an acceptance line read no, or the run broke: see its log)"; failed+=("$p"); fi
  printf '| %s | %s | %d min %02d s |\n' "$p" "$status" $(((SECONDS - t) / 60)) $(((SECONDS - t) % 60)) >> "$times"
done
{
  echo "# \`make results\` times (commit $commit, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "Written by \`scripts/results.sh\` as it ran; do not edit. A page that failed was still written"
  echo "(its test writes the page first, then fails for every acceptance line that reads no)."
  echo
  echo "| page | outcome | wall time |"
  echo "|---|---|---|"
  cat "$times"
  printf '| **total** | | **%d min %02d s** |\n' $(((SECONDS - T0) / 60)) $(((SECONDS - T0) % 60))
} > docs/results/results-times.md
echo "results: pages in docs/results, times in docs/results/results-times.md"
if [ ${#failed[@]} -gt 0 ]; then
  echo "results: failed: ${failed[*]}" >&2
  exit 1
fi
