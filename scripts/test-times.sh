#!/usr/bin/env bash
# Render the step times scripts/test.sh records (test-times.tsv) as a
# Markdown table: what docs/results/test-times-{warm,fresh}.md hold.
#
#   scripts/test-times.sh /tmp/mirage-test/test-times.tsv
set -euo pipefail
TSV="${1:?usage: test-times.sh TIMES.tsv}"
awk -F'\t' '
  function mmss(s) { return sprintf("%d min %02d s", s / 60, s % 60) }
  NR == 1 && /^#/ {
    sub(/^#\t/, ""); gsub(/\t/, ", ")
    print "# `make test` step times (" $0 ")"
    print ""
    print "Written by `scripts/test.sh` as it ran (`MIRAGE_TEST_TIMES=FILE make test`); do not edit."
    print "\"Fresh\" means the mirage and Go build caches were empty when the run began."
    print ""
    print "| step | wall time |"
    print "|---|---|"
    next
  }
  $1 == "total" { print "| **total** | **" mmss($2) "** |"; total = 1; next }
  { print "| " $1 " | " mmss($2) " |"; sum += $2 }
  END { if (!total) print "| **the run stopped here: the next step failed** (steps above: " mmss(sum) ") | — |" }
' "$TSV"
