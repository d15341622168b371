// infeasible.cpp — per-device minimum peak and the unsat-core explanation.
#include "ir/units.h"
#include "synth/z3/infeasible.h"

#include <fmt/format.h>
#include <z3++.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace ps {

std::vector<DeviceNeed> device_memory_needs(const Problem& p) {
  std::vector<DeviceNeed> out(p.devices);
  for (int d = 0; d < p.devices; ++d) out[d].device = d;
  for (int s = 0; s < p.num_stages(); ++s) {
    DeviceNeed& n = out.at(p.device_of(StageId{s}));
    n.stages.push_back(s);
    n.states_mb += p.model_state_mb(StageId{s});
  }
  for (DeviceNeed& n : out) {
    // The stage s whose R (or, without one, whose place as the device's last stage) peaks.
    double kept = 0, best = -1;
    size_t at = 0;
    for (size_t k = 0; k < n.stages.size(); ++k) {
      const StageSpec& st = p.stages[n.stages[k]];
      kept += st.fwd_alloc_mb();
      if (kept + st.recompute_alloc_mb() >= best) {
        best = kept + st.recompute_alloc_mb();
        at = k;
      }
    }
    n.act_of.assign(n.stages.size(), 0.0);
    for (size_t k = 0; k <= at && k < n.stages.size(); ++k) {
      const StageSpec& st = p.stages[n.stages[k]];
      n.act_of[k] = k == at ? st.fwd_alloc_mb() + st.recompute_alloc_mb() : st.fwd_alloc_mb();
      n.activation_mb += n.act_of[k];
    }
    n.need_mb = n.states_mb + n.activation_mb;
  }
  return out;
}

namespace {

// "stage 6", "stages 6–7", "stages 1, 4 and 6".
std::string stage_list(const std::vector<int>& stages) {
  if (stages.size() == 1) return fmt::format("stage {}", stages[0]);
  bool contiguous = true;
  for (size_t k = 1; k < stages.size(); ++k) contiguous = contiguous && stages[k] == stages[k - 1] + 1;
  if (contiguous) return fmt::format("stages {}–{}", stages.front(), stages.back());
  std::string s = "stages ";
  for (size_t k = 0; k < stages.size(); ++k) {
    if (k > 0) s += k + 1 == stages.size() ? " and " : ", ";
    s += std::to_string(stages[k]);
  }
  return s;
}

std::string layers_of(const Problem& p, const std::vector<int>& stages, const Spec* spec) {
  std::vector<std::string> parts;
  for (int s : stages) {
    const StageSpec& st = p.stages[s];
    if (st.first_layer < 0) continue;
    std::string part = st.first_layer == st.last_layer ? fmt::format("layer {}", st.first_layer)
                                                       : fmt::format("layers {}–{}", st.first_layer, st.last_layer);
    if (spec != nullptr && st.last_layer < static_cast<int>(spec->model.layers.size())) {
      std::map<std::string, int> types;
      for (int l = st.first_layer; l <= st.last_layer; ++l) {
        const Layer& layer = spec->model.layers[l];
        auto it = spec->model.types.find(layer.type);
        types[it != spec->model.types.end() && !it->second.name.empty() ? it->second.name : std::string(1, layer.type)]++;
      }
      std::string t;
      for (const auto& [name, count] : types) t += fmt::format("{}{} ×{}", t.empty() ? "" : ", ", name, count);
      const SourceLoc& loc = spec->model.layers[st.first_layer].loc;
      part += fmt::format(" ({}{})", t, loc.valid() ? fmt::format(", from {}", loc.str()) : "");
    }
    parts.push_back(fmt::format("stage {}: {}", s, part));
  }
  std::string out;
  for (const auto& s : parts) out += (out.empty() ? "" : "; ") + s;
  return out;
}

int64_t kb(double mb) { return static_cast<int64_t>(std::llround(mb * 1000)); }

// Minimal unsat core of "sum of the device's contributions <= limit", as the names of the tracked
// contributions ("states[s6]", "act[s7]"). Empty if Z3 fails (the caller words the sums itself).
std::set<std::string> core_of(const Problem& p, const DeviceNeed& n) {
  std::set<std::string> names;
  try {
    z3::context c;
    z3::solver s(c);
    z3::params prm(c);
    prm.set("core.minimize", true);
    s.set(prm);
    z3::expr total = c.int_val(0);
    for (size_t k = 0; k < n.stages.size(); ++k) {
      const int st = n.stages[k];
      z3::expr x = c.int_const(fmt::format("states_kb[s{}]", st).c_str());
      z3::expr y = c.int_const(fmt::format("act_kb[s{}]", st).c_str());
      s.add(x >= 0);
      s.add(y >= 0);
      s.add(x >= c.int_val(kb(p.model_state_mb(StageId{st}))), fmt::format("states_s{}", st).c_str());
      s.add(y >= c.int_val(kb(n.act_of[k])), fmt::format("act_s{}", st).c_str());
      total = total + x + y;
    }
    s.add(total <= c.int_val(kb(gb_to_mb(p.memory_gb))), fmt::format("limit_d{}", n.device).c_str());
    if (s.check() != z3::unsat) return names;
    z3::expr_vector core = s.unsat_core();
    for (unsigned k = 0; k < core.size(); ++k) names.insert(core[k].to_string());
  } catch (const z3::exception&) {
    names.clear();
  }
  return names;
}

}  // namespace

std::string explain_infeasibility(const Problem& p, const Spec* spec) {
  if (p.memory_gb <= 0) return "";
  std::string out;
  for (const DeviceNeed& n : device_memory_needs(p)) {
    if (fits_memory_limit(n.need_mb, p.memory_gb)) continue;
    std::set<std::string> core = core_of(p, n);
    std::vector<int> st_states, st_act;
    double states = 0, act = 0;
    bool recomputes = false;
    for (size_t k = 0; k < n.stages.size(); ++k) {
      const int s = n.stages[k];
      const bool in_states = core.empty() || core.count(fmt::format("states_s{}", s)) > 0;
      const bool in_act = core.empty() || core.count(fmt::format("act_s{}", s)) > 0;
      if (in_states && p.model_state_mb(StageId{s}) > 0) {
        st_states.push_back(s);
        states += p.model_state_mb(StageId{s});
      }
      if (in_act && n.act_of[k] > 0) {
        st_act.push_back(s);
        act += n.act_of[k];
        recomputes = recomputes || p.stages[s].recomputes();
      }
    }
    std::string why;
    if (!st_states.empty()) why += fmt::format("model states of {} are {:.1f} GB", stage_list(st_states), mb_to_gb(states));
    if (!st_act.empty()) {
      if (!why.empty()) why += " and ";
      why += fmt::format("one microbatch of activation of {} is {:.1f} GB", stage_list(st_act), mb_to_gb(act));
    }
    if (!out.empty()) out += "\n";
    out += fmt::format("  device {} needs at least {:.1f} GB but the limit is {:.1f} GB: {}", n.device,
                       mb_to_gb(states + act), p.memory_gb, why);
    if (st_act.size() > 1 && recomputes) {
      out += fmt::format(" (what F keeps of each of them is live when R of stage {} restores its whole activation: "
                         "the I of an earlier stage of the device comes after it)",
                         st_act.back());
    } else if (st_act.size() > 1) {
      out += " (one microbatch of each stage on a device is live at once: F of the device's last stage runs "
             "before the I of its first)";
    }
    const std::string layers = layers_of(p, n.stages, spec);
    if (!layers.empty()) out += fmt::format("\n    device {} holds {}", n.device, layers);
  }
  if (!out.empty() && spec != nullptr && spec->cluster.loc.valid()) {
    out += fmt::format("\n  the limit comes from the memory_gb override or the cluster at {}", spec->cluster.loc.str());
  }
  return out;
}

Status check_memory_feasible(const Problem& p, const Spec* spec) {
  std::string why = explain_infeasibility(p, spec);
  if (why.empty()) return Status::ok();
  return Status::error(ErrorCode::kInfeasible, "no schedule fits the memory limit:\n" + why);
}

}  // namespace ps
