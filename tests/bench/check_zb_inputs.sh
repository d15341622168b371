#!/usr/bin/env bash
# ctest `bench_synth_zb_inputs`: bench/synth --zb-inputs as a user runs it, on Zero Bubble's first
# profiled setting (P = 8, M = 24) at ZB-1p's and ZB-2p's memory limits. What it checks:
# - the model matches Zero Bubble's own count: ZB-H1's makespan through the checker is the ZB-1p span
#   published for it (both 1310.4 ms), so the costs, transfers and memory are read as ZB reads them;
# - at ZB-1p's limit ZB-H1 fits (it sits exactly at the limit) and the synthesized schedule is never
#   slower than it;
# - at ZB-2p's limit the synthesized schedule is never slower than ZB-H2 and meets its bound;
# - the summary counts no case slower than a ZB schedule.
# Usage: check_zb_inputs.sh BUILD_DIR
set -euo pipefail
build=$1
out=$(PIPESMITH_BUILD_DIR="$build" bash bench/synth --zb-inputs --case iclr-1.5B,24,1p --case iclr-1.5B,24,2p --time-limit 3 2>/dev/null)
echo "$out"
row1=$(echo "$out" | grep -m1 '^| iclr-1.5B | 8 | 24 | 18.522/18.086/9.337/0.601 | 1p |') || { echo "no 1p row"; exit 1; }
row2=$(echo "$out" | grep -m1 '^| iclr-1.5B | 8 | 24 | 18.522/18.086/9.337/0.601 | 2p |') || { echo "no 2p row"; exit 1; }
# Columns: 7 ZB-H1, 8 ZB-H2, 9 ZB-V, 10 ZB published, 11 synth, 12 span, 13 span/ZB, 14 bound, 17 slower.
echo "$row1" | awk -F'|' '{
  if ($7 + 0 != 1310.4 || $10 + 0 != 1310.4) { print "ZB-H1 or the published ZB-1p span is not 1310.4: " $0; exit 1 }
  if ($11 + 0 > $7 + 0) { print "synth slower than ZB-H1: " $0; exit 1 }
  if ($17 !~ / none /) { print "slower than a ZB schedule: " $0; exit 1 }
}'
echo "$row2" | awk -F'|' '{
  if ($8 !~ /[0-9]/ || $11 + 0 > $8 + 0) { print "synth slower than ZB-H2: " $0; exit 1 }
  if ($11 + 0 != $14 + 0) { print "synth does not meet its bound: " $0; exit 1 }
  if ($17 !~ / none /) { print "slower than a ZB schedule: " $0; exit 1 }
}'
echo "$out" | grep -q '^2 cases (0 errors); synth slower than a ZB schedule through the checker (ZB-H1, ZB-H2, ZB-V): 0;' \
  || { echo "summary line missing or not 0 slower"; exit 1; }
echo "ok"
