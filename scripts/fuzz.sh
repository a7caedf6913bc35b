#!/usr/bin/env bash
# Run every go fuzz target in the module for FUZZTIME each (default 10s).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-10s}"
GOTAGS="${GOTAGS:-libsqlite3 xgboost}"
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for t in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "fuzz $pkg $t ($FUZZTIME)"
    go test -tags "$GOTAGS" -run '^$' -fuzz "^${t}\$" -fuzztime "$FUZZTIME" "$pkg"
  done
done
