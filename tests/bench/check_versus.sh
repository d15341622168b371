#!/usr/bin/env bash
# ctest `bench_versus`: bench/versus as a user runs it, on budgets (the same table on any machine). What it
# checks:
# - the same CLI as OLD and NEW (Llama 2 7B, P = 4, M = 4): exit 0, one row of ratio 1.0000, a summary
#   with the geometric mean 1.0000 and no case shorter or longer;
# - a NEW that recomputes every stage (a stand-in passing --recompute full): its row is slower (ratio
#   above 1) and the summary counts one case longer;
# - a NEW that fails (exit 3): its row says so, the summary counts it, and the command exits 1;
# - CLIs and a cluster file named relative to the build folder, the command typed there;
# - a model that is not shipped and a missing CLI are refused by name (exit 2).
# Usage: check_versus.sh BUILD_DIR
set -euo pipefail
exe="$1/cli/pipesmith"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(--models llama2-7b --devices 4 --m-factors 1 --evaluations 30 --rlimit 200000)

bash bench/versus "$exe" "$exe" "${args[@]}" >"$tmp/out" 2>"$tmp/err" || { echo "same CLI twice failed:"; cat "$tmp/out" "$tmp/err"; exit 1; }
cat "$tmp/out"
grep -q '^| llama2-7b | 4 | 4 | [0-9.]* | [0-9.]* | 1.0000 | ' "$tmp/out" || { echo "no row of ratio 1.0000"; exit 1; }
grep -q '^1 cases, 1 compared: new / old geometric mean 1.0000; 0 shorter, 0 longer' "$tmp/out" ||
  { echo "summary missing or not 1.0000"; exit 1; }

cat >"$tmp/full" <<EOS
#!/usr/bin/env bash
exec "$(readlink -f "$exe")" "\$@" --recompute full
EOS
chmod +x "$tmp/full"
bash bench/versus "$exe" "$tmp/full" "${args[@]}" >"$tmp/out2" 2>"$tmp/err2" || { echo "the --recompute full run failed:"; cat "$tmp/out2" "$tmp/err2"; exit 1; }
cat "$tmp/out2"
ratio=$(grep '^| llama2-7b | 4 | 4 |' "$tmp/out2" | awk -F'|' '{gsub(/ /, "", $7); print $7}')
awk -v r="$ratio" 'BEGIN { exit !(r > 1.0005) }' || { echo "recomputing every stage is not slower: ratio $ratio"; exit 1; }
grep -q '; 0 shorter, 1 longer by more than 0.05 %' "$tmp/out2" || { echo "summary does not count it longer"; exit 1; }

printf '#!/usr/bin/env bash\necho "broken build" >&2\nexit 3\n' >"$tmp/broken"
chmod +x "$tmp/broken"
rc=0
bash bench/versus "$exe" "$tmp/broken" "${args[@]}" >"$tmp/out3" 2>"$tmp/err3" || rc=$?
cat "$tmp/out3"
[ "$rc" = 1 ] || { echo "a NEW that fails gave exit $rc, not 1"; exit 1; }
grep -q '^| llama2-7b | 4 | 4 | [0-9.]* | exit 3 | - |' "$tmp/out3" || { echo "no row saying exit 3"; exit 1; }
grep -q '1 cases, none compared; 1 without a schedule' "$tmp/out3" || { echo "summary does not count it"; exit 1; }
grep -q 'broken build' "$tmp/err3" || { echo "its output is not shown"; exit 1; }

root=$(pwd)
build=$(cd "$1" && pwd)
cl=$(realpath --relative-to="$build" configs/clusters/8xh100-80gb.yaml)
(cd "$build" && bash "$root/bench/versus" cli/pipesmith cli/pipesmith "${args[@]}" --cluster "$cl") >"$tmp/out9" 2>"$tmp/err9" ||
  { echo "relative paths from the build folder failed:"; cat "$tmp/out9" "$tmp/err9"; exit 1; }
grep -q '^1 cases, 1 compared: new / old geometric mean 1.0000' "$tmp/out9" || { echo "relative paths: no comparison"; exit 1; }

rc=0
bash bench/versus "$exe" "$exe" --models no-such-model >"$tmp/out4" 2>"$tmp/err4" || rc=$?
[ "$rc" = 2 ] && grep -q "no shipped model 'no-such-model'" "$tmp/err4" || { echo "an unknown model gave exit $rc"; cat "$tmp/err4"; exit 1; }
rc=0
bash bench/versus "$tmp/none" "$exe" "${args[@]}" >"$tmp/out5" 2>"$tmp/err5" || rc=$?
[ "$rc" = 2 ] && grep -q "is not an executable pipesmith CLI" "$tmp/err5" || { echo "a missing CLI gave exit $rc"; cat "$tmp/err5"; exit 1; }
echo "ok"
