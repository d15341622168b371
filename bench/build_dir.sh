# bench/build_dir.sh — sourced by the bench launchers (bash): bench_build BUILD_DIR TARGET brings
# TARGET up to date in BUILD_DIR, whatever state the folder is in:
#   * not configured yet (a checkout where only `make test` ran, whose build is build-ci/): configured
#     as the default preset is (release with debug info), the benchmarks on;
#   * configured without the benchmarks (`make run` installs the package from build/ with them off):
#     the benchmarks turned on in that configuration, the rest of it kept;
#   * then TARGET built (nothing to do when it is up to date), its output on stderr, so that stdout
#     keeps only the bench's tables.
# Exits the launcher with CMake's status when a step fails.
bench_build() {
  local build="$1" target="$2"
  local src
  src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if [ ! -f "$build/CMakeCache.txt" ]; then
    echo "bench: configuring $build (release with debug info, benchmarks on)" >&2
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPESMITH_BENCH=ON >&2
  elif [[ "$target" == bench_* ]] && grep -q '^PIPESMITH_BENCH:BOOL=OFF$' "$build/CMakeCache.txt"; then
    echo "bench: $build was configured without the benchmarks; turning them on there" >&2
    cmake -S "$src" -B "$build" -DPIPESMITH_BENCH=ON >&2
  fi
  cmake --build "$build" --target "$target" -j "$(nproc)" >&2
}
