#!/usr/bin/env bash
# Run the Slurm integration tests and the chain end-to-end tests (crash
# points included) against a newer Slurm release: bring its cluster up
# (scripts/slurm-newer/up.sh), source its env file, run the outage tests
# alone, then the others. The cluster stays up (scripts/slurm-newer/down.sh).
#
#   scripts/slurm-newer/test.sh 24.11|25.05
#
# `make test` runs it for 24.11 (and for 25.05 when its build is cached);
# `make test-slurm25` runs it for 25.05, building Slurm first if needed.
set -euo pipefail
REL="${1:?usage: test.sh 24.11|25.05}"
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../.."
export MIRAGE_TEST_DIR="${MIRAGE_TEST_DIR:-/tmp/mirage-test}"
GOTAGS="${GOTAGS-libsqlite3 xgboost}" # as given, even empty (scripts/test.sh)
t0=$(date +%s)
echo "== slurm $REL: bring-up"
"$HERE/up.sh" "$REL"
t1=$(date +%s)
# shellcheck disable=SC1090
. "$MIRAGE_TEST_DIR/slurm-$REL/env.sh"
echo "== slurm $REL ($(sinfo --version)): outage tests"
MIRAGE_TEST_SLURM_OUTAGES=1 go test -tags "$GOTAGS" -count=1 -run 'TestIntegration(ControllerDown|AccountingDown|MungeDown)' ./slurm/
echo "== slurm $REL: integration and chain e2e tests"
go test -tags "$GOTAGS" -count=1 -timeout 30m -run 'TestIntegration|TestE2E|OnSlurm|LiveSlurm' ./slurm/ ./cmd/mirage/
echo "== slurm $REL: passed (bring-up $((t1-t0))s, tests $(( $(date +%s) - t1 ))s)"
