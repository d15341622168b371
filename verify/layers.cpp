// layers.cpp — see layers.h.
#include "verify/layers.h"

#include <fmt/format.h>

#include "verify/diag.h"
#include "verify/rules.h"

namespace ps::verify_detail {

namespace {

bool known(const StageSpec& st) { return st.first_layer >= 0; }

std::string range(const StageSpec& st) { return fmt::format("{}-{}", st.first_layer, st.last_layer); }

}  // namespace

void check_layers(const Schedule& s, std::vector<Violation>& out) {
  const std::vector<StageSpec>& stages = s.problem.stages;
  auto loc = [&](int stage) { return stage < static_cast<int>(s.stage_loc.size()) ? s.stage_loc[stage] : SourceLoc{}; };
  auto where = [&](int stage) {
    const SourceLoc l = loc(stage);
    return l.valid() ? fmt::format(" ({})", l.str()) : std::string();
  };
  auto fail = [&](int stage, std::string msg, std::vector<std::string> notes) {
    out.push_back(general_violation(rules::kLayers, -1, std::move(msg), std::move(notes), loc(stage)));
  };
  int first_known = -1;
  for (int k = 0; k < static_cast<int>(stages.size()) && first_known < 0; ++k)
    if (known(stages[k])) first_known = k;
  if (first_known < 0) return;  // no stage records its layers

  for (int k = 0; k < static_cast<int>(stages.size()); ++k) {
    const StageSpec& st = stages[k];
    if (!known(st)) {
      fail(k,
           fmt::format("stage {} does not record its layers ([-1, -1]), but stage {} does: either every stage "
                       "names its layer range or none does",
                       k, first_known),
           {fmt::format("stage {} holds layers {}{}", first_known, range(stages[first_known]), where(first_known))});
      continue;
    }
    if (k == 0) {
      if (st.first_layer != 0)
        fail(0,
             fmt::format("stage 0 holds layers {}, but the stages must cover the model from layer 0: layers 0-{} "
                         "belong to no stage",
                         range(st), st.first_layer - 1),
             {});
      continue;
    }
    const StageSpec& prev = stages[k - 1];
    if (!known(prev)) continue;  // reported at that stage
    const int expect = prev.last_layer + 1;
    const std::string other = fmt::format("stage {} holds layers {}{}", k - 1, range(prev), where(k - 1));
    if (st.first_layer < expect) {
      fail(k,
           fmt::format("stage {} holds layers {}, which overlap stage {}'s layers {}: stage {} must start at layer "
                       "{}, right after stage {} ends",
                       k, range(st), k - 1, range(prev), k, expect, k - 1),
           {other});
    } else if (st.first_layer > expect) {
      fail(k,
           fmt::format("stage {} holds layers {}, but stage {} ends at layer {}: layers {}-{} belong to no stage "
                       "(stage {} must start at layer {})",
                       k, range(st), k - 1, prev.last_layer, expect, st.first_layer - 1, k, expect),
           {other});
    }
  }
}

}  // namespace ps::verify_detail
