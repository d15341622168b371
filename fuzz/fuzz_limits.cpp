// libFuzzer target: the numbers the command line's flags feed into the libraries — --devices,
// --microbatches, --memory-limit-gb (SpecOverrides through load_spec), a stage count from
// --stages-per-device (make_problem) — and the excerpt of an offending cell quoted in messages. The
// input is read as: int32 devices, int32 microbatches, double memory_gb, int32 stages, then the bytes
// of a cell. Properties checked on every input:
//  * an override is accepted only within ir/limits.h, and then the smallest plan (3·P·M ops) is within
//    kMaxPlanOps; a refused one is kBadInput with a message naming the flag or the counts;
//  * make_problem accepts a stage count only within the ops limit, and its problem passes
//    check_limits (every sum over an iteration finite);
//  * limits::check_plan_ops never overflows (any int64 pair gives an answer, refusals have a message);
//  * excerpt() of any bytes is at most 80 characters (4 bytes each) plus its "... (N bytes)" tail and
//    holds no control byte.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <unistd.h>

#include "ir/limits.h"
#include "ir/model.h"
#include "ir/problem.h"
#include "fuzz/require.h"

namespace {

using psfuzz::require;

template <class T>
T take(const uint8_t*& data, size_t& size) {
  T v{};
  const size_t n = size < sizeof(T) ? size : sizeof(T);
  std::memcpy(&v, data, n);
  data += n;
  size -= n;
  return v;
}

// A 64-layer model (written once): enough layers for many stage counts.
const std::string& model_path() {
  static const std::string path = [] {
    std::string p = "/tmp/pipesmith-fuzz-limits-" + std::to_string(::getpid()) + ".yaml";
    if (FILE* f = std::fopen(p.c_str(), "w")) {
      std::fputs("schema: 1\nmodel:\n  name: fuzz\n  layer_types:\n"
                 "    T: {name: t, forward_ms: 1, backward_input_ms: 1, backward_weight_ms: 1, activation_mb: 10, "
                 "wgrad_stash_mb: 4, output_mb: 1, params_m: 1}\n"
                 "  layers: \"TTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTT\"\n"
                 "cluster: {devices: 2, memory_gb: 0}\npipeline: {microbatches: 4}\n",
                 f);
      std::fclose(f);
    }
    return p;
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int32_t devices = take<int32_t>(data, size);
  const int32_t microbatches = take<int32_t>(data, size);
  const double memory_gb = take<double>(data, size);
  const int32_t stages = take<int32_t>(data, size);
  const std::string_view cell(reinterpret_cast<const char*>(data), size);

  ps::SpecOverrides o;
  o.devices = devices;
  o.microbatches = microbatches;
  o.memory_gb = memory_gb;
  auto spec = ps::load_spec(model_path(), "", o);
  if (!spec.ok()) {
    require(spec.status().code() == ps::ErrorCode::kBadInput);
    require(!spec.status().message().empty());
  } else {
    const int64_t P = spec->cluster.devices, M = spec->pipeline.microbatches;
    require(P == devices && M == microbatches);
    require(P >= 1 && P <= ps::limits::kMaxDevices && M >= 1 && M <= ps::limits::kMaxMicrobatches);
    require(3 * P * M <= ps::limits::kMaxPlanOps);
    require(std::isfinite(spec->cluster.memory_gb) && spec->cluster.memory_gb >= 0);
    // An even partition into `stages` stages (as --stages-per-device · P would ask), on device s mod P.
    const int L = static_cast<int>(spec->model.layers.size());
    if (stages >= 1 && stages <= L) {
      ps::Partition part;
      std::vector<int> place;
      for (int s = 0; s < stages; ++s) {
        part.push_back({static_cast<int>(int64_t{s} * L / stages), static_cast<int>(int64_t{s + 1} * L / stages) - 1});
        place.push_back(static_cast<int>(s % P));
      }
      auto problem = ps::make_problem(*spec, part, place);
      if (problem.ok()) {
        require(3 * int64_t{stages} * M <= ps::limits::kMaxPlanOps);
        require(ps::check_limits(*problem).is_ok());
      } else {
        require(problem.status().code() == ps::ErrorCode::kBadInput);
      }
    }
  }
  const int64_t a = static_cast<int64_t>(devices) * 65537 + stages, b = static_cast<int64_t>(microbatches) << 8;
  ps::Status st = ps::limits::check_plan_ops(a, b, "fuzz");
  const int64_t cap = ps::limits::kMaxPlanOps;
  require(st.is_ok() == (a >= 0 && b >= 0 && a <= cap && b <= cap && 3.0L * a * b <= cap));
  require(st.is_ok() || !st.message().empty());

  const std::string ex = ps::excerpt(cell);
  require(ex.size() <= 80 * 4 + 32);
  for (char c : ex) require(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
  return 0;
}
