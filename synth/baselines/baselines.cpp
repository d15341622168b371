// baselines.cpp — names, shapes and the dispatcher of the baseline generators; the generators
// themselves live in one_f_one_b.cpp (gpipe, 1f1b, interleaved-1f1b), zero_bubble.cpp (zb-h1,
// zb-h2, zbv) and dualpipev.cpp.
#include "synth/baselines/baselines.h"

#include <fmt/format.h>

#include "synth/baselines/program_builder.h"

namespace ps {

const std::vector<BaselineKind>& all_baseline_kinds() {
  static const std::vector<BaselineKind> kAll = {
      BaselineKind::kGPipe,    BaselineKind::k1F1B, BaselineKind::kInterleaved1F1B,
      BaselineKind::kZBH1,     BaselineKind::kZBH2, BaselineKind::kZBV,
      BaselineKind::kDualPipeV};
  return kAll;
}

const char* baseline_name(BaselineKind kind) {
  switch (kind) {
    case BaselineKind::kGPipe:
      return "gpipe";
    case BaselineKind::k1F1B:
      return "1f1b";
    case BaselineKind::kInterleaved1F1B:
      return "interleaved-1f1b";
    case BaselineKind::kZBH1:
      return "zb-h1";
    case BaselineKind::kZBH2:
      return "zb-h2";
    case BaselineKind::kZBV:
      return "zbv";
    case BaselineKind::kDualPipeV:
      return "dualpipev";
  }
  return "?";
}

std::optional<BaselineKind> parse_baseline_kind(const std::string& name) {
  for (BaselineKind k : all_baseline_kinds())
    if (name == baseline_name(k)) return k;
  return std::nullopt;
}

std::string baseline_names_joined(const char* sep) {
  std::string out;
  for (BaselineKind k : all_baseline_kinds()) {
    if (!out.empty()) out += sep;
    out += baseline_name(k);
  }
  return out;
}

Result<BaselineShape> baseline_shape(BaselineKind kind, int requested_v) {
  BaselineShape shape;
  switch (kind) {
    case BaselineKind::kGPipe:
    case BaselineKind::k1F1B:
    case BaselineKind::kZBH1:
    case BaselineKind::kZBH2:
      if (requested_v != 0 && requested_v != 1)
        return Status::bad_input(fmt::format(
            "{} runs one stage per device; stages_per_device {} is not supported (use "
            "interleaved-1f1b for several)",
            baseline_name(kind), requested_v));
      shape.stages_per_device = 1;
      shape.placement = PlacementKind::kSequential;
      return shape;
    case BaselineKind::kInterleaved1F1B:
      if (requested_v == 1 || requested_v < 0)
        return Status::bad_input(fmt::format(
            "interleaved-1f1b needs at least 2 stages per device, got {} (use 1f1b for 1)",
            requested_v));
      shape.stages_per_device = requested_v == 0 ? 2 : requested_v;
      shape.placement = PlacementKind::kLooped;
      return shape;
    case BaselineKind::kZBV:
    case BaselineKind::kDualPipeV:
      if (requested_v != 0 && requested_v != 2)
        return Status::bad_input(fmt::format(
            "{} runs exactly 2 stages per device (V-shape); stages_per_device {} is not "
            "supported",
            baseline_name(kind), requested_v));
      shape.stages_per_device = 2;
      shape.placement = PlacementKind::kVShape;
      return shape;
  }
  return Status::bad_input("unknown baseline");
}

std::vector<int> baseline_placement(const BaselineShape& shape, int devices) {
  switch (shape.placement) {
    case PlacementKind::kSequential:
      return placement_sequential(devices);
    case PlacementKind::kLooped:
      return placement_looped(shape.stages_per_device * devices, devices);
    case PlacementKind::kVShape:
      return placement_vshape(devices);
    case PlacementKind::kExplicit:
      break;
  }
  PS_ASSERT(false, "baseline shapes never use explicit placements");
  return {};
}

Status check_baseline_shape(const Problem& problem, BaselineKind kind) {
  const char* name = baseline_name(kind);
  int P = problem.devices, S = problem.num_stages(), M = problem.microbatches;
  if (P < 1) return Status::bad_input(fmt::format("{} needs at least 1 device, got {}", name, P));
  if (M < 1)
    return Status::bad_input(fmt::format("{} needs at least 1 microbatch, got {}", name, M));
  std::vector<int> placement(static_cast<size_t>(S));
  for (int s = 0; s < S; ++s) placement[s] = problem.device_of(StageId{s});
  switch (kind) {
    case BaselineKind::kGPipe:
    case BaselineKind::k1F1B:
    case BaselineKind::kZBH1:
    case BaselineKind::kZBH2:
      if (S != P || placement != placement_sequential(S))
        return Status::bad_input(fmt::format(
            "{} needs one stage per device with stage s on device s (S = P = {}), got {} stages",
            name, P, S));
      return Status::ok();
    case BaselineKind::kInterleaved1F1B:
      if (S % P != 0 || S / P < 2 || placement != placement_looped(S, P))
        return Status::bad_input(fmt::format(
            "interleaved-1f1b needs V >= 2 stages per device placed looped (stage s on device "
            "s mod P), i.e. S = V·{} stages; got {} stages",
            P, S));
      if (M % P != 0)
        return Status::bad_input(fmt::format(
            "interleaved-1f1b needs the number of microbatches to be a multiple of P = {} "
            "(Megatron's requirement: microbatches run in groups of P per virtual stage), got M "
            "= {}",
            P, M));
      return Status::ok();
    case BaselineKind::kZBV:
    case BaselineKind::kDualPipeV:
      if (S != 2 * P || placement != placement_vshape(P))
        return Status::bad_input(fmt::format(
            "{} needs 2 stages per device in a V (device d holds stages d and 2P-1-d), i.e. S = "
            "{} stages; got {}",
            name, 2 * P, S));
      if (kind == BaselineKind::kDualPipeV && M < 2 * P)
        return Status::bad_input(fmt::format(
            "dualpipev needs at least 2P = {} microbatches (one per stage), got M = {}", 2 * P, M));
      return Status::ok();
  }
  return Status::bad_input("unknown baseline");
}

namespace {

Result<Schedule> make_baseline_order(const Problem& problem, BaselineKind kind) {
  switch (kind) {
    case BaselineKind::kGPipe:
      return make_gpipe(problem);
    case BaselineKind::k1F1B:
      return make_1f1b(problem);
    case BaselineKind::kInterleaved1F1B:
      return make_interleaved_1f1b(problem);
    case BaselineKind::kZBH1:
      return make_zb_h1(problem);
    case BaselineKind::kZBH2:
      return make_zb_h2(problem);
    case BaselineKind::kZBV:
      return make_zbv(problem);
    case BaselineKind::kDualPipeV:
      return make_dualpipev(problem);
  }
  return Status::bad_input("unknown baseline");
}

}  // namespace

Result<Schedule> make_baseline(const Problem& problem, BaselineKind kind,
                               const BaselineOptions& /*options*/) {
  Result<Schedule> s = make_baseline_order(problem, kind);
  if (!s.ok()) return s;
  return insert_recompute_ops(std::move(*s));
}

namespace baseline_detail {

Schedule finish_baseline(const Problem& problem, BaselineKind kind,
                         std::vector<ProgramBuilder> builders) {
  Schedule s;
  s.problem = problem;
  s.generator = std::string("pipesmith baseline ") + baseline_name(kind);
  s.programs.resize(builders.size());
  for (size_t d = 0; d < builders.size(); ++d) {
    auto& out = s.programs[d];
    out.reserve(builders[d].ops.size());
    for (Action a : builders[d].ops) {
      PS_ASSERT(a.stage.value() >= 0 && a.stage.value() < problem.num_stages(), "generator emitted a bad stage");
      PS_ASSERT(problem.device_of(a.stage) == static_cast<int>(d),
                "generator put a stage on the wrong device");
      if (!at(problem.stages, a.stage).split_backward) {
        if (a.type == OpType::W) continue;  // folded into the B below
        if (a.type == OpType::I) a.type = OpType::B;
      }
      out.push_back(a);
    }
  }
  return s;
}

}  // namespace baseline_detail

}  // namespace ps
