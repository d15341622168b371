// structure.cpp — see structure.h.
#include "verify/structure.h"

#include <fmt/format.h>

#include <set>
#include <utility>

#include "verify/diag.h"
#include "verify/rules.h"

namespace ps::verify_detail {
namespace {

// Where a device's row starts in the file (for ops that are missing), if known.
SourceLoc row_loc(const Schedule& s, int device) {
  SourceLoc loc;
  loc.file = s.source;
  if (device >= 0 && device < s.num_devices() && !s.programs[device].empty()) {
    loc = s.programs[device].front().loc;
    loc.col = 0;
  }
  return loc;
}

// The problem itself: something to check against. False: nothing else can be checked.
bool check_problem(const Schedule& s, std::vector<Violation>& out) {
  const Problem& pb = s.problem;
  const int S = pb.num_stages();
  const int M = pb.microbatches;
  const int D = s.num_devices();
  if (S <= 0 || M <= 0) {
    out.push_back(general_violation(
        rules::kIndex, -1,
        fmt::format("the problem has {} stages and {} microbatches; both must be at least 1", S, M)));
    return false;
  }
  if (static_cast<long long>(S) * M > kMaxStageMicrobatchPairs) {
    out.push_back(general_violation(
        rules::kIndex, -1,
        fmt::format("the problem has {} stages x {} microbatches = {} pairs; the checker handles at "
                    "most {}",
                    S, M, static_cast<long long>(S) * M, kMaxStageMicrobatchPairs)));
    return false;
  }
  for (int st = 0; st < S; ++st) {
    const int dev = pb.stages[st].device;
    if (dev < 0 || dev >= D) {
      out.push_back(general_violation(
          rules::kStagePlacement, -1,
          fmt::format("stage {} is placed on device {}, but the schedule has {} device programs "
                      "(0..{})",
                      st, dev, D, D - 1)));
    }
  }
  return true;
}

// Per op: index range, placement, duplicates.
void check_ops(const Schedule& s, const OpTable& t, std::vector<Violation>& out) {
  const Problem& pb = s.problem;
  const int S = pb.num_stages();
  const int M = pb.microbatches;
  const int D = s.num_devices();
  std::set<std::pair<int, int>> misplaced;  // (stage, device) already reported
  for (int d = 0; d < D; ++d) {
    for (int i = 0; i < static_cast<int>(s.programs[d].size()); ++i) {
      const Action& a = s.programs[d][i];
      const int id = t.id(d, i);
      if (!t.in_range(a)) {
        std::string what =
            (a.stage.value() < 0 || a.stage.value() >= S)
                ? fmt::format("stage {} is out of range: the problem has {} stages (0..{})", a.stage,
                              S, S - 1)
                : fmt::format("microbatch {} is out of range: the problem has {} microbatches (0..{})",
                              a.mb, M, M - 1);
        out.push_back(op_violation(rules::kIndex, d, i, a, fmt::format("'{}': {}", to_string(a), what)));
        continue;
      }
      const int home = at(pb.stages, a.stage).device;
      if (home != d && misplaced.insert({a.stage.value(), d}).second) {
        int count = 0;
        for (const Action& b : s.programs[d])
          if (b.stage == a.stage) ++count;
        std::vector<std::string> notes;
        notes.push_back(fmt::format("{} op(s) of stage {} are on device {}", count, a.stage, d));
        if (home >= 0 && home < D) {
          for (int j = 0; j < static_cast<int>(s.programs[home].size()); ++j) {
            if (s.programs[home][j].stage == a.stage) {
              notes.push_back(fmt::format("stage {} is also run by {}", a.stage,
                                          describe_op_on(home, j, s.programs[home][j])));
              break;
            }
          }
        }
        out.push_back(op_violation(
            rules::kStagePlacement, d, i, a,
            fmt::format("'{}' runs on device {}, but stage {} is placed on device {}: a stage's ops "
                        "must all run on one device",
                        to_string(a), d, a.stage, home),
            std::move(notes)));
      }
      const int first = t.find(a.type, a.stage, a.mb);
      if (first != id) {
        out.push_back(op_violation(
            rules::kDuplicate, d, i, a, fmt::format("'{}' appears more than once", to_string(a)),
            {fmt::format("first occurrence: {}", describe_op_on(t.device(first), t.index(first),
                                                                t.op(first)))}));
      }
    }
  }
}

// Completeness and backward shape, per (stage, microbatch).
void check_complete(const Schedule& s, const OpTable& t, std::vector<Violation>& out) {
  const Problem& pb = s.problem;
  const int S = pb.num_stages();
  const int M = pb.microbatches;
  for (int st = 0; st < S; ++st) {
    const StageSpec& spec = pb.stages[st];
    const int home = spec.device;
    for (int m = 0; m < M; ++m) {
      const int f = t.find(OpType::F, st, m);
      const int b = t.find(OpType::B, st, m);
      const int in = t.find(OpType::I, st, m);
      const int w = t.find(OpType::W, st, m);
      if (f == kNoOp) {
        out.push_back(general_violation(
            rules::kMissing, home, fmt::format("'{}F{}' is missing (forward of stage {}, microbatch {})",
                                               st, m, st, m),
            {fmt::format("stage {} is placed on device {}", st, home)}, row_loc(s, home)));
      }
      const int r = t.find(OpType::R, st, m);
      if (r != kNoOp && !spec.recomputes()) {
        out.push_back(op_violation(
            rules::kRecompute, t.device(r), t.index(r), t.op(r),
            fmt::format("'{}' recomputes stage {}, but stage {} does not recompute (its recompute mode is "
                        "none): remove the R ops or set the stage's 'recompute: full|selective'",
                        to_string(t.op(r)), st, st),
            {fmt::format("stage {} is placed on device {}", st, home)}));
      }
      if (r == kNoOp && spec.recomputes() && f != kNoOp) {
        const int after = f;
        out.push_back(general_violation(
            rules::kMissing, home,
            fmt::format("'{}R{}' is missing: stage {} recomputes ({}), so every microbatch needs its R "
                        "between F and the backward",
                        st, m, st, recompute_mode_name(spec.recompute)),
            {fmt::format("its forward is {}", describe_op_on(t.device(after), t.index(after), t.op(after)))},
            row_loc(s, home)));
      }
      if (b == kNoOp && in == kNoOp && w == kNoOp) {
        out.push_back(general_violation(
            rules::kMissing, home,
            fmt::format("the backward of stage {}, microbatch {} is missing: expected '{}B{}' or "
                        "'{}I{}' and '{}W{}'",
                        st, m, st, m, st, m, st, m),
            {fmt::format("stage {} is placed on device {}", st, home)}, row_loc(s, home)));
        continue;
      }
      auto at = [&](int id) { return std::pair<int, int>{t.device(id), t.index(id)}; };
      if (b != kNoOp && (in != kNoOp || w != kNoOp)) {
        const int other = in != kNoOp ? in : w;
        auto [d, i] = at(other);
        out.push_back(op_violation(
            rules::kBackwardMix, d, i, t.op(other),
            fmt::format("'{}' and '{}' are both present: a (stage, microbatch) uses either B or I+W",
                        to_string(t.op(other)), to_string(t.op(b))),
            {fmt::format("the fused backward is {}", describe_op_on(t.device(b), t.index(b), t.op(b)))}));
        continue;
      }
      if (b == kNoOp && (in == kNoOp) != (w == kNoOp)) {
        const int have = in != kNoOp ? in : w;
        auto [d, i] = at(have);
        out.push_back(op_violation(
            rules::kBackwardMix, d, i, t.op(have),
            fmt::format("'{}' without '{}{}{}': a split backward needs both I and W", to_string(t.op(have)),
                        st, in == kNoOp ? "I" : "W", m)));
        continue;
      }
      if (!spec.split_backward && in != kNoOp) {
        auto [d, i] = at(in);
        out.push_back(op_violation(
            rules::kBackwardMix, d, i, t.op(in),
            fmt::format("'{}': stage {} cannot split its backward into I and W; use '{}B{}'",
                        to_string(t.op(in)), st, st, m)));
      }
    }
  }
}

// The data-parallel ops: REDUCE_GRAD only on stages with a data-parallel step, UNSHARD/RESHARD only on
// stages FSDP shards; a schedule that places any places every one the stages need (one that places
// none gets them by the rule of ir/dp_ops.h).
void check_data_parallel(const Schedule& s, const OpTable& t, std::vector<Violation>& out) {
  const Problem& pb = s.problem;
  bool any = false;
  for (int d = 0; d < s.num_devices(); ++d)
    for (int i = 0; i < static_cast<int>(s.programs[d].size()); ++i) {
      const Action& a = s.programs[d][i];
      if (!is_data_parallel(a.type)) continue;
      any = true;
      if (!t.in_range(a)) continue;
      const StageSpec& sp = at(pb.stages, a.stage);
      if (a.type == OpType::REDUCE_GRAD && !sp.reduces_grad)
        out.push_back(op_violation(rules::kDataParallel, d, i, a,
                                   fmt::format("'{}': stage {} has no data-parallel step (its entry has no "
                                               "reduce_grad_ms): remove the op, or give the stage its step",
                                               to_string(a), a.stage)));
      if (a.type != OpType::REDUCE_GRAD && !sp.fsdp)
        out.push_back(op_violation(rules::kDataParallel, d, i, a,
                                   fmt::format("'{}': FSDP does not shard stage {} (its entry has no unshard_ms "
                                               "and unsharded_mb): remove the op, or give the stage both",
                                               to_string(a), a.stage)));
    }
  if (!any) return;
  for (int st = 0; st < pb.num_stages(); ++st) {
    const StageSpec& sp = pb.stages[st];
    for (OpType ty : {OpType::UNSHARD, OpType::REDUCE_GRAD, OpType::RESHARD}) {
      const bool needed = ty == OpType::REDUCE_GRAD ? sp.reduces_grad : sp.fsdp;
      if (!needed || t.find(ty, st, 0) != kNoOp) continue;
      const int home = sp.device;
      out.push_back(general_violation(
          rules::kDataParallel, home,
          fmt::format("'{}{}' is missing: stage {} {} and the schedule places data-parallel ops (a schedule places "
                      "all of them or none; with none, pipesmith places them)",
                      st, op_type_name(ty), st,
                      ty == OpType::REDUCE_GRAD ? "has a data-parallel step" : "is sharded by FSDP"),
          {fmt::format("stage {} is placed on device {}", st, home)}, row_loc(s, home)));
    }
  }
}

}  // namespace

void check_structure(const Schedule& s, const OpTable& t, std::vector<Violation>& out) {
  if (!check_problem(s, out)) return;
  check_ops(s, t, out);
  check_complete(s, t, out);
  check_data_parallel(s, t, out);
}

}  // namespace ps::verify_detail
