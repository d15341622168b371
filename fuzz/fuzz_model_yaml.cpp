// libFuzzer target: the model / cluster / pipeline reader (ir/model.h parse_spec) and the lowering to
// the layer DAG. Properties checked on every input:
//  * a rejected input gets a kBadInput message located in the file it was read from (never an
//    uncaught yaml-cpp exception or a crash in the analytic cost model);
//  * an accepted input passes validate(), every per-layer number is finite and >= 0 with
//    wgrad_stash_mb <= activation_mb, and it lowers to a DAG whose topological order lists every
//    layer once; the summary's totals are finite.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/model.h"
#include "fuzz/require.h"

namespace {
using psfuzz::require;
bool finite_nonneg(double x) { return std::isfinite(x) && x >= 0; }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto r = ps::parse_spec(text, "fuzz.yaml");
  if (!r.ok()) {
    require(r.status().code() == ps::ErrorCode::kBadInput);
    require(!r.status().message().empty());
    require(r.status().loc().file == "fuzz.yaml");
    return 0;
  }
  const ps::Spec& spec = *r;
  require(ps::validate(spec).is_ok());
  for (const auto& [sym, t] : spec.model.types) {
    for (double x : {t.forward_ms, t.backward_input_ms, t.backward_weight_ms, t.activation_mb, t.wgrad_stash_mb,
                     t.output_mb, t.params_m})
      require(finite_nonneg(x));
    require(t.wgrad_stash_mb <= t.activation_mb);
  }
  auto lowered = ps::lower(spec.model);
  if (!lowered.ok()) {
    require(!lowered.status().message().empty());
    return 0;
  }
  std::vector<int> seen(spec.model.layers.size(), 0);
  for (int id : lowered->topo_order) {
    require(id >= 0 && id < static_cast<int>(seen.size()));
    ++seen[static_cast<size_t>(id)];
  }
  for (int n : seen) require(n == 1);
  const ps::ModelSummary s = ps::summarize(spec, *lowered);
  require(std::isfinite(s.total_fwd_ms) && std::isfinite(s.model_state_gb));
  return 0;
}
