// `pipesmith synth` on ZB-V's shape where Zero Bubble's own heuristic had the shortest known order
// (docs/synth.md, "ZB-V's shape": P = 4, M = 8, F/I/W = 4/4/6 ms, 1 ms links, ZB-V's memory limit;
// Zero Bubble's ZB-V heuristic, its order timed on the op DAG: 248 ms): as fast or faster, the same
// file twice under a fixed Z3 budget, and the file verifies.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "ir/schedule_io.h"
#include "test_util.h"

using pstest::contains;
using pstest::read_file;
using pstest::run_cli;
using pstest::temp_path;

namespace {

// 8 layers on 4 devices, one layer per stage, the stages placed as a V; a transfer is the 1 ms
// latency (no output bytes); 8 GB per device: 2P chunk activations of 1000 MB, half of each kept
// from I to W.
std::string zbv_model_path() {
  std::string path = temp_path("synth-zbv-model.yaml");
  std::ofstream(path) << R"(schema: 1
model:
  name: zbv-w-heavy
  layer_types:
    T: {name: block, forward_ms: 4, backward_input_ms: 4, backward_weight_ms: 6, activation_mb: 1000,
        wgrad_stash_mb: 500, output_mb: 0, params_m: 0}
  layers: "TTTTTTTT"
cluster: {name: test, devices: 4, memory_gb: 8, link: {bandwidth_gb_per_s: 100, latency_us: 1000}}
pipeline: {microbatches: 8, bytes_per_param: 1}
)";
  return path;
}

constexpr double kZeroBubbleHeuristicMs = 248;

}  // namespace

TEST_CASE("cli synth on ZB-V's shape, W-heavy, P = 4, M = 8: as fast as Zero Bubble's heuristic, the same file twice") {
  const std::string model = zbv_model_path();
  const std::string a = temp_path("synth-zbv-a.yaml"), b = temp_path("synth-zbv-b.yaml");
  // The rlimit decides (2 s of budget at the nominal rate); the time limit only caps the wall clock.
  const std::string args = "synth " + model +
                           " --partition even --stages-per-device 2 --placement v --rlimit 8000000 --time-limit 120 "
                           "--quiet -o ";
  auto ra = run_cli(args + a);
  INFO(ra.output);
  REQUIRE(ra.exit_code == 0);
  auto rb = run_cli(args + b);
  INFO(rb.output);
  REQUIRE(rb.exit_code == 0);
  CHECK(read_file(a) == read_file(b));
  auto s = ps::read_schedule_yaml(a);
  REQUIRE(s.ok());
  REQUIRE(s->certificate);
  CHECK(s->certificate->makespan_ms <= kZeroBubbleHeuristicMs + 1e-9);
  const auto& extra = s->certificate->extra;
  REQUIRE(extra.count("seeded_by"));
  CHECK(contains(extra.at("seeded_by"), " + polished"));  // the local search found it
  auto v = run_cli("verify " + a);
  INFO(v.output);
  CHECK(v.exit_code == 0);
  CHECK(contains(v.output, "VALID"));
}
