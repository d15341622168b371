#!/usr/bin/env bash
# bench/build_dir.sh's bench_build, with a stand-in `cmake` first on PATH that logs its arguments: a
# folder not configured is configured (benchmarks on) and then built; one configured with the
# benchmarks off gets them turned on before a bench_* target, not before the CLI; one configured with
# them on is only built; a failing build ends the launcher with its status.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
cat > "$work/bin/cmake" <<'STUB'
#!/usr/bin/env bash
echo "cmake $*" >> "$CMAKE_LOG"
if [ "${1:-}" = "--build" ] && [ -n "${CMAKE_FAIL:-}" ]; then exit 3; fi
exit 0
STUB
chmod +x "$work/bin/cmake"
export PATH="$work/bin:$PATH" CMAKE_LOG="$work/log"
fail() { echo "check_build_dir: $*" >&2; echo "--- cmake calls:" >&2; cat "$CMAKE_LOG" >&2; exit 1; }
# One launcher call in a subshell, as a launcher sources the file; the cmake calls it made.
calls() { : > "$CMAKE_LOG"; (source "$root/bench/build_dir.sh"; bench_build "$1" "$2") 2>/dev/null; cat "$CMAKE_LOG"; }

# Not configured: configured with the benchmarks on, then the target built.
got=$(calls "$work/b1" bench_quality)
[ "$(echo "$got" | wc -l)" -eq 2 ] || fail "fresh folder: want a configure and a build"
echo "$got" | head -1 | grep -q -- "-S $root -B $work/b1 .*-DPIPESMITH_BENCH=ON" || fail "fresh folder: configure line"
echo "$got" | tail -1 | grep -qx "cmake --build $work/b1 --target bench_quality -j [0-9]*" || fail "fresh folder: build line"

# Configured by `make run` (benchmarks off): turned on before a bench_* target, not before the CLI.
mkdir -p "$work/b2"; printf 'CMAKE_BUILD_TYPE:STRING=RelWithDebInfo\nPIPESMITH_BENCH:BOOL=OFF\n' > "$work/b2/CMakeCache.txt"
got=$(calls "$work/b2" bench_synth)
[ "$(echo "$got" | wc -l)" -eq 2 ] || fail "benchmarks off: want a reconfigure and a build"
echo "$got" | head -1 | grep -q -- "-B $work/b2 -DPIPESMITH_BENCH=ON" || fail "benchmarks off: reconfigure line"
got=$(calls "$work/b2" pipesmith)
[ "$got" = "cmake --build $work/b2 --target pipesmith -j $(nproc)" ] || fail "benchmarks off, the CLI: want the build alone"

# Configured with the benchmarks on: only built.
mkdir -p "$work/b3"; printf 'PIPESMITH_BENCH:BOOL=ON\n' > "$work/b3/CMakeCache.txt"
got=$(calls "$work/b3" bench_tuner)
[ "$got" = "cmake --build $work/b3 --target bench_tuner -j $(nproc)" ] || fail "benchmarks on: want the build alone"

# A failing build ends the launcher (set -e, as every launcher runs) with CMake's status.
set +e
(set -e; export CMAKE_FAIL=1; source "$root/bench/build_dir.sh"; bench_build "$work/b3" bench_tuner; echo "not reached") \
  > "$work/out" 2>/dev/null
status=$?
set -e
[ "$status" -eq 3 ] || fail "failing build: want exit 3, got $status"
! grep -q "not reached" "$work/out" || fail "failing build: the launcher went on"
echo "check_build_dir: ok"
