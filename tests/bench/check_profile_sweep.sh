#!/usr/bin/env bash
# ctest `bench_profile_sweep`: bench/profile-sweep as a user runs it, small and on budgets (the same table
# on any machine). What it checks:
# - 10 drawn profiles (one shape each, seed 5: every kind of profile, fewer layers than devices among
#   them) go through `pipesmith bound`, `synth --evaluations --rlimit` (twice: byte-identical files) and
#   `verify` with no failure: exit 0, a row per case, the summary's "0 failed";
# - the refusal of fewer layers than devices is seen as one (a row `refused: layers < P`), and every other
#   row is scheduled and deterministic;
# - the sweep catches a bound above the iteration: with a CLI whose `bound --json` doubles its bound, the
#   same case fails as `bound` and `mismatch` and the sweep exits 1;
# - a --case that matches no case is refused by name (exit 2), not run as an empty sweep;
# - --devices 3,5 draws P from those counts: two of seed 5's profiles at P = 3 and P = 5 (odd P, M = 4
#   and 10) are scheduled, deterministic and fail nothing; --devices 0 and 2.5 are refused by name (exit 2);
# - --memory-fraction 0.6 runs those two cases once more capped at 0.6 x their plans' peak memory: both
#   scheduled within the limit; a CLI that drops --memory-limit-gb fails them as `verify` (the peak is
#   above the limit); --memory-fraction 1.5 is refused by name (exit 2).
# Usage: check_profile_sweep.sh BUILD_DIR
set -euo pipefail
build=$1
exe="$build/cli/pipesmith"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sweep=(bash bench/profile-sweep --seed 5 --profiles 10 --shapes 1 --evaluations 40 --rlimit 200000 --time-limit 30)

rc=0
PIPESMITH="$exe" "${sweep[@]}" >"$tmp/out" 2>"$tmp/err" || rc=$?
cat "$tmp/out"
[ "$rc" = 0 ] || { echo "the sweep failed (exit $rc):"; cat "$tmp/err"; exit 1; }
rows=$(grep -c '^| s5-' "$tmp/out")
refused=$(grep -c '^| s5-.* | refused: layers < P |$' "$tmp/out")
det=$(grep -c '^| s5-.* | ok, deterministic |$' "$tmp/out")
[ "$rows" = 10 ] || { echo "expected 10 rows, got $rows"; exit 1; }
[ "$refused" -ge 1 ] || { echo "no case of fewer layers than devices"; exit 1; }
[ $((refused + det)) = 10 ] || { echo "rows neither refused nor ok and deterministic: $((10 - refused - det))"; exit 1; }
grep -q '^10 cases, 0 failed (by kind: none), ' "$tmp/out" || { echo "summary line missing or not 0 failed"; exit 1; }

# A CLI whose global bound lies above every iteration: the sweep must say so.
cat >"$tmp/lying-pipesmith" <<'EOS'
#!/usr/bin/env bash
# pipesmith, except that `bound --json` prints twice its bound.
if [ "$1" = bound ]; then
  out=$("$REAL_PIPESMITH" "$@") || { rc=$?; printf '%s\n' "$out"; exit "$rc"; }
  printf '%s\n' "$out" |
    awk '/^  "bound_ms": / { v = $2; sub(/,$/, "", v); printf "  \"bound_ms\": %.17g,\n", v * 2; next } { print }'
  exit 0
fi
exec "$REAL_PIPESMITH" "$@"
EOS
chmod +x "$tmp/lying-pipesmith"
rc=0
REAL_PIPESMITH="$exe" PIPESMITH="$tmp/lying-pipesmith" "${sweep[@]}" --case 's5-000-llama ' --keep "$tmp/keep" \
  >"$tmp/out2" 2>"$tmp/err2" || rc=$?
cat "$tmp/out2"
[ "$rc" = 1 ] || { echo "the sweep did not fail on a bound above the iteration (exit $rc)"; cat "$tmp/err2"; exit 1; }
grep -q '^| s5-000-llama | .* | FAIL bound,mismatch |$' "$tmp/out2" || { echo "no FAIL bound,mismatch row"; exit 1; }
grep -q '^1 cases, 1 failed (by kind: bound 1, mismatch 1), ' "$tmp/out2" || { echo "summary does not count it"; exit 1; }
rc=0
PIPESMITH="$exe" "${sweep[@]}" --case 'no-such-case' >"$tmp/out3" 2>"$tmp/err3" || rc=$?
[ "$rc" = 2 ] || { echo "an unmatched --case gave exit $rc, not 2"; cat "$tmp/out3"; exit 1; }
grep -q "\-\-case 'no-such-case' matches no case" "$tmp/err3" || { echo "no message naming the --case"; cat "$tmp/err3"; exit 1; }

# Shapes on device counts of the user's choosing.
rc=0
PIPESMITH="$exe" "${sweep[@]}" --devices 3,5 --case 's5-000-llama ' --case 's5-002-moe ' >"$tmp/out4" 2>"$tmp/err4" || rc=$?
cat "$tmp/out4"
[ "$rc" = 0 ] || { echo "the --devices 3,5 sweep failed (exit $rc):"; cat "$tmp/err4"; exit 1; }
grep -q '^# bench/profile-sweep: seed 5, 10 profiles, 2 cases (P in {3, 5})' "$tmp/out4" || { echo "no header naming P in {3, 5}"; exit 1; }
grep -q '^| s5-000-llama | 3 | 4 | .* | ok, deterministic |$' "$tmp/out4" || { echo "no scheduled P = 3 row"; exit 1; }
grep -q '^| s5-002-moe | 5 | 10 | .* | ok, deterministic |$' "$tmp/out4" || { echo "no scheduled P = 5 row"; exit 1; }
grep -q '^2 cases, 0 failed (by kind: none), ' "$tmp/out4" || { echo "summary line missing or not 0 failed"; exit 1; }
for bad in 0 2.5; do
  rc=0
  PIPESMITH="$exe" "${sweep[@]}" --devices "4,$bad" >"$tmp/out5" 2>"$tmp/err5" || rc=$?
  [ "$rc" = 2 ] || { echo "--devices 4,$bad gave exit $rc, not 2"; cat "$tmp/out5"; exit 1; }
  grep -q "\-\-devices '4,$bad': '$bad' " "$tmp/err5" || { echo "no message naming --devices 4,$bad"; cat "$tmp/err5"; exit 1; }
done
# The same two cases capped at 0.6 x their plans' peak memory.
capped=("${sweep[@]}" --devices 3,5 --case 's5-000-llama ' --case 's5-002-moe ' --memory-fraction 0.6)
rc=0
PIPESMITH="$exe" "${capped[@]}" >"$tmp/out6" 2>"$tmp/err6" || rc=$?
cat "$tmp/out6"
[ "$rc" = 0 ] || { echo "the --memory-fraction sweep failed (exit $rc):"; cat "$tmp/err6"; exit 1; }
[ "$(grep -cE '^\| s5-.* \| ok, deterministic \| [0-9.]+ at [0-9.e+-]+ GB \|$' "$tmp/out6")" = 2 ] ||
  { echo "not two capped rows scheduled within their limits"; exit 1; }
grep -q "^capped at 0.6 x the plan's peak: 2 scheduled within the limit, 0 refused" "$tmp/out6" ||
  { echo "no capped summary line"; exit 1; }
cat >"$tmp/uncapped-pipesmith" <<'EOS'
#!/usr/bin/env bash
# pipesmith, except that --memory-limit-gb is dropped (the model file's cluster has no cap).
args=()
while [ $# -gt 0 ]; do
  if [ "$1" = --memory-limit-gb ]; then shift 2; continue; fi
  args+=("$1"); shift
done
exec "$REAL_PIPESMITH" "${args[@]}"
EOS
chmod +x "$tmp/uncapped-pipesmith"
rc=0
REAL_PIPESMITH="$exe" PIPESMITH="$tmp/uncapped-pipesmith" "${capped[@]}" --keep "$tmp/keep7" >"$tmp/out7" 2>"$tmp/err7" || rc=$?
cat "$tmp/out7"
[ "$rc" = 1 ] || { echo "the sweep did not fail on a capped schedule above its limit (exit $rc)"; cat "$tmp/err7"; exit 1; }
grep -q "^2 cases, 2 failed (by kind: verify 2), " "$tmp/out7" || { echo "summary does not count both as verify"; exit 1; }
grep -q "the capped schedule's peak .* GB is above the limit" "$tmp/err7" || { echo "no message naming the limit"; exit 1; }
[ "$(grep -c '^| s5-.* | FAIL verify | failed |$' "$tmp/out7")" = 2 ] || { echo "the capped column does not say failed"; exit 1; }
grep -q "^capped at 0.6 x the plan's peak: 0 scheduled within the limit" "$tmp/out7" ||
  { echo "the capped summary counts a failed run as scheduled"; exit 1; }
rc=0
PIPESMITH="$exe" "${sweep[@]}" --memory-fraction 1.5 >"$tmp/out8" 2>"$tmp/err8" || rc=$?
[ "$rc" = 2 ] || { echo "--memory-fraction 1.5 gave exit $rc, not 2"; exit 1; }
grep -q -- "--memory-fraction 1.5: give a fraction above 0 and below 1" "$tmp/err8" || { echo "no message naming --memory-fraction"; cat "$tmp/err8"; exit 1; }
echo "ok"
