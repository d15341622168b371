#!/usr/bin/env bash
# ctest `install`: installs the build's devel component into a temporary prefix, builds the consumer
# project against it with find_package(pipesmith) and runs it. Usage: check.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" --component devel >/dev/null
test -f "$tmp/prefix/lib/cmake/pipesmith/pipesmithConfig.cmake"
test -f "$tmp/prefix/include/pipesmith/synth/synthesize_model.h"
test -x "$tmp/prefix/bin/pipesmith"
cmake -S "$src/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/consumer" -j 2 >/dev/null
out=$("$tmp/consumer/consumer")
echo "$out"
# 1F1B, 2 stages of 1 ms F and 2 ms B, 4 microbatches: (M + P - 1) * (F + B) = 15 ms, plus the link's
# latency on the critical path (microseconds).
[[ $out =~ ^VALID\ 15\.0[0-9]+$ ]]
