#!/usr/bin/env bash
# ctest `bench_quality_shape`: bench/quality as a user runs it on one small model at P = 2, M = 2 and 4,
# and its table per shape class (P, M/P): one row per class, each with its case count and pipesmith's
# iteration over the global and the plan bound (geometric mean and max), every ratio >= 1 (no schedule
# beats a lower bound) and the max never below the geometric mean. Usage: check_quality_shape.sh BUILD_DIR
set -euo pipefail
build=$1
out=$(PIPESMITH_BUILD_DIR="$build" bash bench/quality --models llama2-7b --devices 2 --m-factors 1,2 --time-limit 2 \
        --threads 1 2>/dev/null)
echo "$out" | grep -A4 '^| P | M/P | cases |'
rows=$(echo "$out" | grep -E '^\| 2 \| [12] \| 1 \| ' || true)
[ "$(echo "$rows" | grep -c .)" = 2 ] || { echo "expected the classes (2, 1) and (2, 2), one case each"; exit 1; }
echo "$rows" | awk -F'|' '{
  for (i = 5; i <= 8; ++i) if ($i !~ /^ [0-9]+\.[0-9][0-9][0-9] $/ || $i + 0 < 1) { print "not a ratio >= 1: " $0; exit 1 }
  if ($6 + 0 < $5 + 0 || $8 + 0 < $7 + 0) { print "max below the geometric mean: " $0; exit 1 }
}'
