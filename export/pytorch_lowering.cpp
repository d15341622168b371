// pytorch_lowering.cpp — the rules of export/pytorch_lowering.h.
//
// Costs: rule 1 keeps, per rank, a pointer into each local stage's list of cell positions, so the
// window before cell i is the local stages ordered by their next position (O(cells · V log V) with
// V local stages); rule 3 makes at least one rank move per sweep (O(P · cells)).
#include "export/pytorch_lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_set>

namespace ps {

const char* marker_name(MarkerKind k) {
  switch (k) {
    case MarkerKind::kUnshard: return "UNSHARD";
    case MarkerKind::kReshard: return "RESHARD";
    case MarkerKind::kReduceGrad: return "REDUCE_GRAD";
  }
  return "?";
}

std::string to_string(const PtCell& c) {
  if (c.marker) return fmt::format("{}{}", c.marker_stage, marker_name(*c.marker));
  if (c.ops.size() == 1) return to_string(c.ops.front());
  std::string inner;
  for (const Action& a : c.ops) inner += (inner.empty() ? "" : ";") + to_string(a);
  return "(" + inner + ")OVERLAP_F_B";
}

std::string format_pt_csv(const std::vector<PtProgram>& programs) {
  std::string out;
  for (const PtProgram& p : programs) {
    for (size_t i = 0; i < p.size(); ++i) {
      if (i) out += ',';
      out += to_string(p[i]);
    }
    out += '\n';
  }
  return out;
}

PtProgram cells_of(const std::vector<Action>& program) {
  PtProgram out;
  bool chained = false;  // the previous op asked the next compute op to join its cell
  for (const Action& a : program) {
    if (chained && is_compute(a.type)) {
      out.back().ops.push_back(a);
    } else {
      PtCell c;
      c.ops.push_back(a);
      out.push_back(std::move(c));
    }
    chained = is_compute(a.type) && a.overlap_next;
  }
  for (PtCell& c : out) c.ops.back().overlap_next = false;
  for (PtCell& c : out)
    for (size_t k = 0; k + 1 < c.ops.size(); ++k) c.ops[k].overlap_next = true;
  return out;
}

namespace {

PtCell marker(MarkerKind k, int stage) {
  PtCell c;
  c.marker = k;
  c.marker_stage = stage;
  return c;
}

// Rule 1 as a plan over the compute cells of one program: markers before cell i, and at the end.
struct FsdpPlan {
  std::vector<std::vector<PtCell>> before;
  std::vector<PtCell> trailing;
};

FsdpPlan plan_unshard_reshard(const std::vector<const PtCell*>& cells, int max_active) {
  const int n = static_cast<int>(cells.size());
  FsdpPlan plan;
  plan.before.resize(n);
  // Positions of each stage, in order; the same stage twice in one cell counts once.
  std::map<int, std::vector<int>> at;
  for (int i = 0; i < n; ++i)
    for (const Action& a : cells[i]->ops) {
      auto& v = at[a.stage.value()];
      if (v.empty() || v.back() != i) v.push_back(i);
    }
  std::map<int, size_t> ptr;
  std::vector<int> active;  // kept ascending
  for (int i = 0; i < n; ++i) {
    // Stages by next position (>= i), then by their order inside that cell.
    struct Next {
      int pos, sub, stage;
    };
    std::vector<Next> next;
    for (auto& [stage, pos] : at) {
      size_t& p = ptr[stage];
      while (p < pos.size() && pos[p] < i) ++p;
      if (p == pos.size()) continue;
      int sub = 0;
      const auto& ops = cells[pos[p]]->ops;
      while (ops[sub].stage.value() != stage) ++sub;
      next.push_back({pos[p], sub, stage});
    }
    std::sort(next.begin(), next.end(), [](const Next& a, const Next& b) {
      return a.pos != b.pos ? a.pos < b.pos : a.sub < b.sub;
    });
    // The window: whole cells until it holds max_active stages (a multi-op cell may overshoot).
    std::vector<int> window;
    for (size_t k = 0; k < next.size() && static_cast<int>(window.size()) < max_active;) {
      const int pos = next[k].pos;
      for (; k < next.size() && next[k].pos == pos; ++k) window.push_back(next[k].stage);
    }
    auto in_window = [&](int s) { return std::find(window.begin(), window.end(), s) != window.end(); };
    std::vector<int> keep;
    for (int s : active) {
      if (in_window(s)) {
        keep.push_back(s);
      } else {
        plan.before[i].push_back(marker(MarkerKind::kReshard, s));
      }
    }
    for (int s : window) {
      if (std::find(keep.begin(), keep.end(), s) != keep.end()) continue;
      plan.before[i].push_back(marker(MarkerKind::kUnshard, s));
      keep.push_back(s);
    }
    std::sort(keep.begin(), keep.end());
    active = std::move(keep);
  }
  for (int s : active) plan.trailing.push_back(marker(MarkerKind::kReshard, s));
  return plan;
}

// Rule 2 as a plan: the stages whose REDUCE_GRAD follows cell i.
std::vector<std::vector<int>> plan_reduce_grad(const std::vector<const PtCell*>& cells, int microbatches) {
  std::vector<std::vector<int>> after(cells.size());
  std::map<int, int> count;
  for (size_t i = 0; i < cells.size(); ++i)
    for (const Action& a : cells[i]->ops)
      if ((a.type == OpType::B || a.type == OpType::W) && ++count[a.stage.value()] == microbatches)
        after[i].push_back(a.stage.value());
  return after;
}

std::vector<const PtCell*> compute_cells(const PtProgram& p) {
  std::vector<const PtCell*> out;
  for (const PtCell& c : p)
    if (c.is_compute()) out.push_back(&c);
  return out;
}

long long key(OpType t, int stage, int mb) {
  return (static_cast<long long>(stage) * (1LL << 31) + mb) * kNumOpTypes + static_cast<int>(t);
}

}  // namespace

PtProgram add_unshard_reshard(const PtProgram& compute_only, int max_active) {
  std::vector<const PtCell*> cells = compute_cells(compute_only);
  FsdpPlan plan = plan_unshard_reshard(cells, max_active);
  PtProgram out;
  for (size_t i = 0; i < cells.size(); ++i) {
    out.insert(out.end(), plan.before[i].begin(), plan.before[i].end());
    out.push_back(*cells[i]);
  }
  out.insert(out.end(), plan.trailing.begin(), plan.trailing.end());
  return out;
}

PtProgram add_reduce_grad(const PtProgram& program, int microbatches) {
  std::vector<const PtCell*> cells = compute_cells(program);
  std::vector<std::vector<int>> after = plan_reduce_grad(cells, microbatches);
  PtProgram out;
  size_t k = 0;
  for (const PtCell& c : program) {
    out.push_back(c);
    if (!c.is_compute()) continue;
    for (int s : after[k]) out.push_back(marker(MarkerKind::kReduceGrad, s));
    ++k;
  }
  return out;
}

PtLowering add_send_recv(const std::vector<PtProgram>& programs, const std::vector<int>& stage_rank) {
  const int P = static_cast<int>(programs.size());
  const int S = static_cast<int>(stage_rank.size());
  PtLowering res;
  res.programs.assign(P, {});
  std::vector<std::unordered_set<long long>> seen(P);
  std::vector<size_t> next(P, 0);
  auto has = [&](int r, OpType t, int s, int m) { return seen[r].count(key(t, s, m)) > 0; };
  auto ready = [&](int r, const Action& a) {
    const int s = a.stage.value(), m = a.mb.value();
    if (a.type == OpType::F && s > 0)
      return has(r, OpType::RECV_F, s, m) || has(r, OpType::F, s - 1, m);
    if ((a.type == OpType::I || a.type == OpType::B) && s < S - 1)
      return has(r, OpType::RECV_B, s, m) || has(r, OpType::I, s + 1, m) ||
             has(r, OpType::B, s + 1, m);
    return true;
  };
  // The rank that receives what `a` produces, or -1 when nothing crosses ranks.
  auto receiver = [&](const Action& a) {
    const int s = a.stage.value();
    int to = -1;
    if (a.type == OpType::F && s + 1 < S) to = stage_rank[s + 1];
    if ((a.type == OpType::I || a.type == OpType::B) && s > 0) to = stage_rank[s - 1];
    return to == stage_rank[s] ? -1 : to;
  };
  size_t left = 0;
  for (const PtProgram& p : programs) left += p.size();
  while (left > 0) {
    bool progress = false;
    for (int r = 0; r < P; ++r) {
      if (next[r] == programs[r].size()) continue;
      const PtCell& c = programs[r][next[r]];
      bool ok = true;
      for (const Action& a : c.ops) ok = ok && ready(r, a);
      if (!ok) continue;
      res.programs[r].push_back(c);
      for (const Action& a : c.ops) {
        seen[r].insert(key(a.type, a.stage.value(), a.mb.value()));
        const int to = receiver(a);
        if (to < 0) continue;
        const bool fwd = a.type == OpType::F;
        Action send{fwd ? OpType::SEND_F : OpType::SEND_B, a.stage, a.mb, a.loc};
        Action recv{fwd ? OpType::RECV_F : OpType::RECV_B, StageId{fwd ? a.stage.value() + 1 : a.stage.value() - 1}, a.mb,
                    a.loc};
        res.programs[r].push_back(PtCell{{send}, std::nullopt, -1});
        res.programs[to].push_back(PtCell{{recv}, std::nullopt, -1});
        seen[r].insert(key(send.type, send.stage.value(), send.mb.value()));
        seen[to].insert(key(recv.type, recv.stage.value(), recv.mb.value()));
      }
      ++next[r];
      --left;
      progress = true;
    }
    if (!progress) {
      for (int r = 0; r < P; ++r)
        if (next[r] < programs[r].size())
          res.blocked.push_back(fmt::format("rank {} waits at '{}'", r, to_string(programs[r][next[r]])));
      return res;
    }
  }
  res.ok = true;
  return res;
}

PtLowering pytorch_lower(const Schedule& compute_only) {
  std::vector<PtProgram> programs;
  for (const auto& prog : compute_only.programs)
    programs.push_back(add_reduce_grad(add_unshard_reshard(cells_of(prog)), compute_only.problem.microbatches));
  std::vector<int> stage_rank;
  for (const StageSpec& st : compute_only.problem.stages) stage_rank.push_back(st.device);
  return add_send_recv(programs, stage_rank);
}

std::vector<std::vector<Action>> ops_of(const std::vector<PtProgram>& programs) {
  std::vector<std::vector<Action>> out(programs.size());
  for (size_t r = 0; r < programs.size(); ++r)
    for (const PtCell& c : programs[r]) out[r].insert(out[r].end(), c.ops.begin(), c.ops.end());
  return out;
}

std::vector<PtProgram> certified_pytorch_programs(const Schedule& with_comms, bool fsdp) {
  std::vector<PtProgram> out;
  for (const auto& prog : with_comms.programs) {
    const PtProgram cells = cells_of(prog);
    std::vector<const PtCell*> compute = compute_cells(cells);
    FsdpPlan fsdp_plan;
    if (fsdp) fsdp_plan = plan_unshard_reshard(compute, 3);
    std::vector<std::vector<int>> reduce = plan_reduce_grad(compute, with_comms.problem.microbatches);
    // A stage whose data-parallel ops the certified order places keeps them there (their cells); PyTorch's
    // placement then adds none of the same kind for it.
    for (const Action& a : prog) {
      if (a.type == OpType::REDUCE_GRAD)
        for (auto& after : reduce) after.erase(std::remove(after.begin(), after.end(), a.stage.value()), after.end());
      if (a.type == OpType::UNSHARD || a.type == OpType::RESHARD) {
        const MarkerKind k = a.type == OpType::UNSHARD ? MarkerKind::kUnshard : MarkerKind::kReshard;
        auto drop = [&](std::vector<PtCell>& cells) {
          cells.erase(std::remove_if(cells.begin(), cells.end(),
                                     [&](const PtCell& c) { return c.marker == k && c.marker_stage == a.stage.value(); }),
                      cells.end());
        };
        for (auto& before : fsdp_plan.before) drop(before);
        drop(fsdp_plan.trailing);
      }
    }
    PtProgram p;
    std::vector<int> pending;  // REDUCE_GRADs due once the comms after the last compute are written
    auto flush = [&] {
      for (int s : pending) p.push_back(marker(MarkerKind::kReduceGrad, s));
      pending.clear();
    };
    size_t k = 0;
    for (const PtCell& c : cells) {
      if (!c.is_compute()) {
        p.push_back(c);
        continue;
      }
      flush();
      if (fsdp) p.insert(p.end(), fsdp_plan.before[k].begin(), fsdp_plan.before[k].end());
      p.push_back(c);
      pending = reduce[k];
      ++k;
    }
    flush();
    if (fsdp) p.insert(p.end(), fsdp_plan.trailing.begin(), fsdp_plan.trailing.end());
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace ps
