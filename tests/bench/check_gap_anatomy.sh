#!/usr/bin/env bash
# ctest `bench_gap_anatomy`: bench/gap-anatomy as a user runs it, small (P = M = 4, 8 blocks) and on a
# budget of candidates. What it checks:
# - two cases picked by number: exit 0, their two rows; blocks of equal F, I and W meet the global
#   bound (ratio 1.0000, the plan's bound too), and sublayers with 4 head shards are never below it;
# - a CLI that fails (exit 3): its row says so and the command exits 1;
# - --shards: the head cut into 2 shards, its row named so;
# - a case number out of range, and --shards 0, are refused (exit 2).
# Usage: check_gap_anatomy.sh BUILD_DIR
set -euo pipefail
exe="$(cd "$1" && pwd)/cli/pipesmith"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(--devices 4 --blocks 8 --evaluations 200 --time-limit 5)

PIPESMITH="$exe" bash bench/gap-anatomy "${args[@]}" --cases 1,6 >"$tmp/out" 2>"$tmp/err" ||
  { echo "bench/gap-anatomy failed:"; cat "$tmp/out" "$tmp/err"; exit 1; }
cat "$tmp/out"
[ "$(grep -c '^| [0-9] |' "$tmp/out")" = 2 ] || { echo "not two rows"; exit 1; }
grep -qE '^\| 1 \| equal F, I, W \| 8 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [a-z_]+ \| 1\.0000 \| 1\.0000 \|$' "$tmp/out" ||
  { echo "equal F, I, W does not meet the global bound"; exit 1; }
ratio=$(grep '^| 6 | sublayers + 4 head shards | 20 |' "$tmp/out" | awk -F'|' '{gsub(/ /, "", $9); print $9}')
awk -v r="$ratio" 'BEGIN { exit !(r >= 1) }' || { echo "case 6: ours / global bound '$ratio'"; exit 1; }

# --shards: the head cut into 2 shards (8 blocks of two sublayers and 2 shards: 18 layers).
PIPESMITH="$exe" bash bench/gap-anatomy "${args[@]}" --cases 6 --shards 2 >"$tmp/out1" 2>"$tmp/err1" ||
  { echo "--shards 2 failed:"; cat "$tmp/out1" "$tmp/err1"; exit 1; }
grep -q '^| 6 | sublayers + 2 head shards | 18 | ' "$tmp/out1" || { echo "no 2-shard row"; cat "$tmp/out1"; exit 1; }

printf '#!/usr/bin/env bash\necho "broken build" >&2\nexit 3\n' >"$tmp/broken"
chmod +x "$tmp/broken"
rc=0
PIPESMITH="$tmp/broken" bash bench/gap-anatomy "${args[@]}" --cases 1 >"$tmp/out2" 2>"$tmp/err2" || rc=$?
[ "$rc" = 1 ] || { echo "a failing CLI gave exit $rc, not 1"; cat "$tmp/out2"; exit 1; }
grep -q '^| 1 | equal F, I, W | 8 | failed (synth exit 3, bound exit 3)' "$tmp/out2" || { echo "no row saying it failed"; exit 1; }

rc=0
PIPESMITH="$exe" bash bench/gap-anatomy --cases 9 >"$tmp/out3" 2>"$tmp/err3" || rc=$?
[ "$rc" = 2 ] && grep -q -- '--cases: numbers run from 1 to 6' "$tmp/err3" || { echo "--cases 9 gave exit $rc"; cat "$tmp/err3"; exit 1; }
rc=0
PIPESMITH="$exe" bash bench/gap-anatomy --shards 0 >"$tmp/out4" 2>"$tmp/err4" || rc=$?
[ "$rc" = 2 ] && grep -q -- '--shards at least 1' "$tmp/err4" || { echo "--shards 0 gave exit $rc"; cat "$tmp/err4"; exit 1; }
echo "ok"
