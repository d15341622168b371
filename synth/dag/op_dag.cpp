// op_dag.cpp — building the op DAG: ids, edges, integer time/memory scales, longest paths.
#include "ir/units.h"
#include "synth/dag/op_dag.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <queue>

namespace ps {

namespace {

// Finds the smallest 10^j (j = 0..max_pow) such that every value is an integer multiple of 1/10^j,
// then divides by the gcd of the integers. `magnitude` (the largest sum the solver will see) must
// stay below max_units after scaling; if no exact power fits, the finest power that fits is used
// and the representation is marked inexact. Returns the size of one unit in the values' own unit.
struct Scale {
  double unit = 1;
  bool exact = true;
};

// The finest 10^-j (j <= max_pow) in which vmax stays below max_units: the scale of values that no
// power represents exactly (rounded, so inexact).
Scale finest_scale(double vmax, int max_pow, double max_units) {
  int j = max_pow;
  double k = std::pow(10.0, j);
  while (j > 0 && vmax * k > max_units) {
    --j;
    k /= 10;
  }
  return Scale{1 / k, false};
}

Scale choose_scale(const std::vector<double>& values, double magnitude, int max_pow, double max_units) {
  double vmax = magnitude;
  for (double v : values) vmax = std::max(vmax, std::abs(v));
  int chosen = -1;
  double k = 1;
  for (int j = 0; j <= max_pow; ++j, k *= 10) {
    if (vmax * k > max_units) break;
    bool ok = true;
    for (double v : values) {
      double x = v * k;
      if (std::abs(x - std::round(x)) > 1e-6 + 1e-12 * std::abs(x)) {
        ok = false;
        break;
      }
    }
    if (ok) {
      chosen = j;
      break;
    }
  }
  if (chosen < 0) return finest_scale(vmax, max_pow, max_units);  // not exactly representable
  Scale s;
  k = std::pow(10.0, chosen);
  int64_t g = 0;
  for (double v : values) {
    auto x = static_cast<int64_t>(std::llround(std::abs(v) * k));
    if (x != 0) g = std::gcd(g, x);
  }
  if (g == 0) g = 1;
  s.unit = static_cast<double>(g) / k;
  s.exact = true;
  return s;
}

int64_t floor_units(double v, double unit, bool exact) {
  double x = v / unit;
  if (exact) return std::llround(x);
  return static_cast<int64_t>(std::floor(x + 1e-9));
}
int64_t ceil_units(double v, double unit, bool exact) {
  double x = v / unit;
  if (exact) return std::llround(x);
  return static_cast<int64_t>(std::ceil(x - 1e-9));
}

}  // namespace

int64_t OpDag::to_units(double ms) const { return floor_units(ms, ms_per_unit, time_exact); }

int64_t OpDag::device_work(int device) const {
  int64_t w = 0;
  for (int i : device_ops[device]) w += ops[i].dur;
  return w;
}

int64_t OpDag::critical_path() const {
  int64_t cp = 0;
  for (int i = 0; i < num_ops(); ++i) cp = std::max(cp, head[i] + ops[i].dur + tail[i]);
  return cp;
}

std::string OpDag::op_name(int op) const {
  const DagOp& o = ops[op];
  return fmt::format("{}(s{},m{})", op_type_name(o.type), o.stage, o.mb);
}

int OpDag::resources_of(int op, int r[2]) const {
  const DagOp& o = ops[op];
  if (!o.is_transfer()) {
    r[0] = o.device;
    return 1;
  }
  r[0] = devices + o.device;
  r[1] = devices + o.peer;
  return 2;
}

void OpDag::add_edge(int from, int to, int64_t delay, EdgeKind kind) {
  succ_begin.clear();
  for (DagEdge& e : succ[from]) {
    if (e.op == to) {
      if (delay > e.delay) {
        e.delay = delay;
        for (DagEdge& p : pred[to])
          if (p.op == from) p.delay = delay;
      }
      return;
    }
  }
  succ[from].push_back({.op = to, .kind = kind, .delay = delay});
  pred[to].push_back({.op = from, .kind = kind, .delay = delay});
}

Status OpDag::recompute_paths() {
  const int n = num_ops();
  // The successor lists in one array first: everything below reads them through successors().
  succ_begin.resize(n + 1);
  succ_flat.clear();
  for (int i = 0; i < n; ++i) {
    succ_begin[i] = static_cast<int>(succ_flat.size());
    succ_flat.insert(succ_flat.end(), succ[i].begin(), succ[i].end());
  }
  succ_begin[n] = static_cast<int>(succ_flat.size());
  // Kahn's algorithm, always taking the ready op of lowest id: deterministic. The ready ops are bits
  // of a bitset, and the words that hold one are bits of a second, smaller one; `low` is a word of
  // the second below which none is set (the lowest id is found by scanning up from it, and an op
  // made ready below it moves it down).
  std::vector<int> indeg(n, 0);
  for (int i = 0; i < n; ++i) indeg[i] = static_cast<int>(pred[i].size());
  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  const size_t groups = (words + 63) / 64;
  std::vector<uint64_t> ready(words, 0), nonzero(groups, 0);
  size_t low = groups;
  auto make_ready = [&](int i) {
    const size_t w = static_cast<size_t>(i) / 64;
    ready[w] |= uint64_t{1} << (i % 64);
    nonzero[w / 64] |= uint64_t{1} << (w % 64);
    low = std::min(low, w / 64);
  };
  for (int i = 0; i < n; ++i)
    if (indeg[i] == 0) make_ready(i);
  topo.clear();
  topo.reserve(n);
  for (;;) {
    while (low < groups && nonzero[low] == 0) ++low;
    if (low == groups) break;
    const size_t w = low * 64 + static_cast<size_t>(std::countr_zero(nonzero[low]));
    const int u = static_cast<int>(w * 64) + std::countr_zero(ready[w]);
    ready[w] &= ready[w] - 1;
    if (ready[w] == 0) nonzero[low] &= nonzero[low] - 1;  // w is the lowest set bit of nonzero[low]
    topo.push_back(u);
    for (const DagEdge& e : successors(u))
      if (--indeg[e.op] == 0) make_ready(e.op);
  }
  if (static_cast<int>(topo.size()) != n) {
    for (int i = 0; i < n; ++i) {
      if (indeg[i] > 0) {
        return Status::error(ErrorCode::kInfeasible,
                             fmt::format("precedences form a cycle through {} on device {}",
                                         op_name(i), ops[i].device));
      }
    }
  }
  head.assign(n, 0);
  tail.assign(n, 0);
  for (int u : topo)
    for (const DagEdge& e : successors(u)) head[e.op] = std::max(head[e.op], head[u] + ops[u].dur + e.delay);
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    int u = *it;
    for (const DagEdge& e : successors(u)) tail[u] = std::max(tail[u], e.delay + ops[e.op].dur + tail[e.op]);
  }
  return Status::ok();
}

namespace {

Status check_problem(const Problem& p) {
  if (p.num_stages() == 0 || p.microbatches <= 0 || p.devices <= 0) {
    return Status::bad_input(fmt::format("cannot schedule an empty problem ({} stages, {} microbatches, {} devices)",
                                         p.num_stages(), p.microbatches, p.devices));
  }
  for (int s = 0; s < p.num_stages(); ++s) {
    const StageSpec& st = p.stages[s];
    if (st.device < 0 || st.device >= p.devices) {
      return Status::bad_input(fmt::format("stage {} is placed on device {}, but there are {} devices", s,
                                           st.device, p.devices));
    }
    if (!(st.fwd_ms >= 0 && st.bwd_input_ms >= 0 && st.bwd_weight_ms >= 0 && st.activation_mb >= 0 &&
          st.wgrad_stash_mb >= 0 && st.params_m >= 0)) {
      return Status::bad_input(fmt::format("stage {} has a negative (or NaN) cost or size", s));
    }
    if (st.recomputes() && !(st.recompute_ms >= 0 && st.recompute_kept_mb >= 0 &&
                             st.recompute_kept_mb <= st.activation_mb)) {
      return Status::bad_input(fmt::format(
          "stage {} recomputes ({}) with R time {} ms and {} MB kept of its {} MB activation: the time "
          "must be >= 0 and the kept part within [0, activation]",
          s, recompute_mode_name(st.recompute), st.recompute_ms, st.recompute_kept_mb, st.activation_mb));
    }
  }
  return Status::ok();
}

// The model states each device holds, MB (with FSDP, as if every stage were gathered at once).
std::vector<double> state_mb_per_device(const Problem& p) {
  std::vector<double> state_mb(p.devices, 0);
  for (int s = 0; s < p.num_stages(); ++s) state_mb[p.stages[s].device] += p.held_state_mb(StageId{s});
  return state_mb;
}

// Time: keep twice (the busiest device's work + one microbatch's round trip) — a generous
// estimate of any good makespan — under 2^30 units, so Z3's difference logic stays in machine
// integers (worse schedules only cost speed, not correctness).
Scale time_scale(const Problem& p) {
  const int S = p.num_stages();
  const int M = p.microbatches;
  std::vector<double> times;
  for (int s = 0; s < S; ++s) {
    const StageSpec& st = p.stages[s];
    if (st.split_backward) {
      times.push_back(compute_ms(p, StageId{s}, OpType::F));
      times.push_back(compute_ms(p, StageId{s}, OpType::I));
      times.push_back(compute_ms(p, StageId{s}, OpType::W));
    } else {
      times.push_back(compute_ms(p, StageId{s}, OpType::F));
      times.push_back(compute_ms(p, StageId{s}, OpType::B));
    }
    if (st.recomputes()) times.push_back(compute_ms(p, StageId{s}, OpType::R));
    if (s + 1 < S) times.push_back(p.boundary_transfer_ms(StageId{s}));
  }
  std::vector<double> work_ms(p.devices, 0);
  double chain_ms = 0;
  for (int s = 0; s < S; ++s) {
    const double r_ms = p.stages[s].recomputes() ? compute_ms(p, StageId{s}, OpType::R) : 0.0;
    work_ms[p.stages[s].device] += M * (compute_ms(p, StageId{s}, OpType::F) + compute_ms(p, StageId{s}, OpType::B) + r_ms);
    chain_ms += compute_ms(p, StageId{s}, OpType::F) + compute_ms(p, StageId{s}, OpType::B) + r_ms;
    if (s + 1 < S) chain_ms += 2 * p.boundary_transfer_ms(StageId{s});
  }
  const double horizon_ms = 2 * (*std::max_element(work_ms.begin(), work_ms.end()) + chain_ms);
  constexpr int kMaxPow = 9;
  constexpr double kMaxUnits = 1073741824.0;
  const Scale s = choose_scale(times, horizon_ms, kMaxPow, kMaxUnits);
  if (!s.exact) return s;
  // A value within 1e-6 of a unit passes for exact; what those roundings drop, over every op of an
  // iteration (each value stands for at most 2M ops), must also lie inside the certificate's
  // tolerance (1e-9 ms, and 1e-6 of the makespan; the horizon is a few makespans): where every op
  // lasts far less than a unit (ops of 1e-7 ms, a unit of 1 ms) the DAG would time them all as zero,
  // and an order it proves optimal would not be at the checker's makespan. Free links' transfers
  // (1e-30 ms) drop nothing that counts.
  double dropped_ms = 0;
  double vmax = horizon_ms;
  for (double v : times) {
    dropped_ms += std::abs(v - s.unit * static_cast<double>(std::llround(v / s.unit)));
    vmax = std::max(vmax, std::abs(v));
  }
  if (2.0 * M * dropped_ms > 1e-9 + 1e-7 * horizon_ms) return finest_scale(vmax, kMaxPow, kMaxUnits);
  return s;
}

// Memory: activations, stashes and (under a cap) the cap and the model states in one unit.
Scale memory_scale(const Problem& p, const std::vector<double>& state_mb) {
  std::vector<double> mems;
  for (const StageSpec& st : p.stages) {
    mems.push_back(st.activation_mb);
    mems.push_back(st.split_backward ? std::min(st.wgrad_stash_mb, st.activation_mb) : 0.0);
    if (st.recomputes()) {
      mems.push_back(st.fwd_alloc_mb());
      mems.push_back(st.recompute_alloc_mb());
    }
  }
  if (p.memory_gb > 0) {
    mems.push_back(gb_to_mb(p.memory_gb));
    for (double v : state_mb) mems.push_back(v);
  }
  return choose_scale(mems, 0, 3, 1e9);
}

int64_t time_units(double ms, const Scale& ts) { return floor_units(ms, ts.unit, ts.exact); }

// F, R (recomputing stages), I and W (or F and B) of every stage and microbatch, stage-major.
// Inexact memory: kSafe rounds the activation (on a recomputing stage its kept part and the rest
// apart) up and the stash down (set_memory's shrunken cap covers the stash), kRelaxed all down, so
// that what a microbatch holds after F, after R and after I is never above the exact figure.
void add_compute_ops(const Problem& p, const Scale& ts, const Scale& mscale, MemoryRounding rounding, OpDag& dag) {
  const int S = p.num_stages();
  const int M = p.microbatches;
  auto tu = [&](double ms) { return time_units(ms, ts); };
  auto mu = [&](double mb) {
    return rounding == MemoryRounding::kRelaxed ? floor_units(mb, mscale.unit, mscale.exact)
                                                : ceil_units(mb, mscale.unit, mscale.exact);
  };
  dag.f_id_.assign(S * M, -1);
  dag.b_id_.assign(S * M, -1);
  dag.w_id_.assign(S * M, -1);
  dag.r_id_.assign(S * M, -1);
  for (int s = 0; s < S; ++s) {
    const StageSpec& st = p.stages[s];
    const double stash = st.split_backward ? std::min(st.wgrad_stash_mb, st.activation_mb) : 0.0;
    const int64_t f_u = mu(st.fwd_alloc_mb());
    const int64_t r_u = st.recomputes() ? mu(st.recompute_alloc_mb()) : 0;
    const int64_t act_u = f_u + r_u;  // what I/B finds live and frees
    int64_t stash_u = floor_units(stash, mscale.unit, mscale.exact);
    stash_u = std::min(stash_u, act_u);
    for (int m = 0; m < M; ++m) {
      DagOp f{OpType::F, s, m, st.device, -1, tu(compute_ms(p, StageId{s}, OpType::F)), f_u, 0};
      dag.f_id_[s * M + m] = dag.num_ops();
      dag.ops.push_back(f);
      if (st.recomputes()) {
        dag.r_id_[s * M + m] = dag.num_ops();
        dag.ops.push_back(DagOp{OpType::R, s, m, st.device, -1, tu(compute_ms(p, StageId{s}, OpType::R)), r_u, 0});
      }
      if (st.split_backward) {
        DagOp i{OpType::I, s, m, st.device, -1, tu(compute_ms(p, StageId{s}, OpType::I)), 0, act_u - stash_u};
        dag.b_id_[s * M + m] = dag.num_ops();
        dag.ops.push_back(i);
        DagOp w{OpType::W, s, m, st.device, -1, tu(compute_ms(p, StageId{s}, OpType::W)), 0, stash_u};
        dag.w_id_[s * M + m] = dag.num_ops();
        dag.ops.push_back(w);
      } else {
        DagOp b{OpType::B, s, m, st.device, -1, tu(compute_ms(p, StageId{s}, OpType::B)), 0, act_u};
        dag.b_id_[s * M + m] = dag.num_ops();
        dag.ops.push_back(b);
      }
    }
  }
}

// Transfer ops, after all compute ops (compute ids do not depend on the option).
void add_transfer_ops(const Problem& p, const Scale& ts, bool comm_streams, OpDag& dag) {
  const int S = p.num_stages();
  const int M = p.microbatches;
  dag.comm_streams = comm_streams;
  dag.xf_id_.assign(S * M, -1);
  dag.xb_id_.assign(S * M, -1);
  if (!comm_streams) return;
  for (int s = 0; s + 1 < S; ++s) {
    const int a = p.stages[s].device, b = p.stages[s + 1].device;
    if (a == b) continue;
    const int64_t link = time_units(p.boundary_transfer_ms(StageId{s}), ts);
    for (int m = 0; m < M; ++m) {
      dag.xf_id_[s * M + m] = dag.num_ops();
      dag.ops.push_back(DagOp{OpType::SEND_F, s, m, a, b, link, 0, 0});
      dag.xb_id_[(s + 1) * M + m] = dag.num_ops();
      dag.ops.push_back(DagOp{OpType::SEND_B, s + 1, m, b, a, link, 0, 0});
    }
  }
}

// `lists` as n empty lists, keeping the capacity of those it had.
template <typename T>
void reset_lists(std::vector<std::vector<T>>& lists, size_t n) {
  if (lists.size() > n) lists.resize(n);
  for (std::vector<T>& l : lists) l.clear();
  lists.resize(n);
}

// Empty edge lists, and the ops of every device and resource.
void index_ops(int devices, OpDag& dag) {
  const int n = dag.num_ops();
  reset_lists(dag.succ, n);
  reset_lists(dag.pred, n);
  reset_lists(dag.device_ops, devices);
  reset_lists(dag.resource_ops, dag.num_resources());
  for (int i = 0; i < n; ++i) {
    if (!dag.ops[i].is_transfer()) dag.device_ops[dag.ops[i].device].push_back(i);
    int r[2] = {0, 0};
    const int k = dag.resources_of(i, r);
    for (int j = 0; j < k; ++j) dag.resource_ops[r[j]].push_back(i);
  }
}

// Data edges along each microbatch's chain (through the transfer ops, or with the link time as a
// delay), and with `symmetry` microbatches in order per (stage, kind).
void add_precedence_edges(const Problem& p, const Scale& ts, bool symmetry, OpDag& dag) {
  const int S = p.num_stages();
  const int M = p.microbatches;
  for (int s = 0; s < S; ++s) {
    const int64_t link = s + 1 < S ? time_units(p.boundary_transfer_ms(StageId{s}), ts) : 0;
    for (int m = 0; m < M; ++m) {
      const int f = dag.f_op(s, m), b = dag.bwd_op(s, m), w = dag.w_op(s, m), r = dag.r_op(s, m);
      dag.add_edge(f, b, 0, EdgeKind::kData);
      if (r >= 0) {
        dag.add_edge(f, r, 0, EdgeKind::kData);
        dag.add_edge(r, b, 0, EdgeKind::kData);
      }
      if (w >= 0) dag.add_edge(b, w, 0, EdgeKind::kData);
      if (s + 1 < S) {
        const int xf = dag.send_f_op(s, m), xb = dag.send_b_op(s + 1, m);
        if (xf >= 0) {
          dag.add_edge(f, xf, 0, EdgeKind::kData);
          dag.add_edge(xf, dag.f_op(s + 1, m), 0, EdgeKind::kData);
          dag.add_edge(dag.bwd_op(s + 1, m), xb, 0, EdgeKind::kData);
          dag.add_edge(xb, b, 0, EdgeKind::kData);
        } else {
          dag.add_edge(f, dag.f_op(s + 1, m), link, EdgeKind::kData);
          dag.add_edge(dag.bwd_op(s + 1, m), b, link, EdgeKind::kData);
        }
      }
      if (symmetry && m + 1 < M) {
        dag.add_edge(f, dag.f_op(s, m + 1), 0, EdgeKind::kSymmetry);
        dag.add_edge(b, dag.bwd_op(s, m + 1), 0, EdgeKind::kSymmetry);
        if (w >= 0) dag.add_edge(w, dag.w_op(s, m + 1), 0, EdgeKind::kSymmetry);
        if (r >= 0) dag.add_edge(r, dag.r_op(s, m + 1), 0, EdgeKind::kSymmetry);
        if (dag.send_f_op(s, m) >= 0) dag.add_edge(dag.send_f_op(s, m), dag.send_f_op(s, m + 1), 0, EdgeKind::kSymmetry);
        if (dag.send_b_op(s, m) >= 0) dag.add_edge(dag.send_b_op(s, m), dag.send_b_op(s, m + 1), 0, EdgeKind::kSymmetry);
      }
    }
  }
}

// Model states and, under a cap, what the cap leaves for activations and stashes. Inexact units:
// kSafe takes one unit less per op of the device and one more; kRelaxed the exact room (cap less
// states) rounded down to whole units, which the rounded-down activations never pass before the
// exact ones do.
void set_memory(const Problem& p, const std::vector<double>& state_mb, const Scale& mscale, MemoryRounding rounding,
                OpDag& dag) {
  const bool limited = p.memory_gb > 0;
  const bool relaxed = rounding == MemoryRounding::kRelaxed && !mscale.exact;
  dag.state_mem.assign(p.devices, 0);
  dag.cap_mem.assign(p.devices, 0);
  dag.mem_limited = limited;
  for (int d = 0; d < p.devices; ++d) {
    dag.state_mem[d] = relaxed ? floor_units(state_mb[d], mscale.unit, false) : ceil_units(state_mb[d], mscale.unit, mscale.exact);
    if (!limited) continue;
    if (relaxed) {
      dag.cap_mem[d] = floor_units(gb_to_mb(p.memory_gb) - state_mb[d], mscale.unit, false);
      continue;
    }
    int64_t cap = floor_units(gb_to_mb(p.memory_gb), mscale.unit, mscale.exact);
    if (!mscale.exact) cap -= static_cast<int64_t>(dag.device_ops[d].size()) + 1;
    dag.cap_mem[d] = cap - dag.state_mem[d];
  }
}

}  // namespace

Result<OpDag> build_op_dag(const Problem& p, const DagOptions& options) {
  OpDag dag;
  PS_RETURN_IF_ERROR(rebuild_op_dag(dag, p, options));
  return dag;
}

Status rebuild_op_dag(OpDag& dag, const Problem& p, const DagOptions& options) {
  PS_RETURN_IF_ERROR(check_problem(p));
  // Every field below is set again; the lists only keep their capacity.
  dag.ops.clear();
  dag.topo.clear();
  dag.succ_begin.clear();
  dag.devices = p.devices;
  dag.stages = p.num_stages();
  dag.microbatches = p.microbatches;
  const std::vector<double> state_mb = state_mb_per_device(p);
  const Scale ts = time_scale(p);
  dag.ms_per_unit = ts.unit;
  dag.time_exact = ts.exact;
  const Scale mscale = memory_scale(p, state_mb);
  dag.mb_per_mem_unit = mscale.unit;
  dag.mem_exact = mscale.exact;
  dag.memory_rounding = options.memory_rounding;

  add_compute_ops(p, ts, mscale, options.memory_rounding, dag);
  add_transfer_ops(p, ts, options.comm_streams, dag);
  index_ops(p.devices, dag);
  add_precedence_edges(p, ts, options.symmetry, dag);
  set_memory(p, state_mb, mscale, options.memory_rounding, dag);
  dag.reduce_dur.assign(p.num_stages(), 0);
  for (int s = 0; s < p.num_stages(); ++s)
    if (p.stages[s].reduces_grad) dag.reduce_dur[s] = time_units(p.stages[s].reduce_grad_ms, ts);
  PS_RETURN_IF_ERROR(dag.recompute_paths());
  if (options.symmetry && options.memory_edges && dag.mem_limited) PS_RETURN_IF_ERROR(add_memory_edges(dag));
  return Status::ok();
}

Status add_memory_edges(OpDag& dag) {
  const int M = dag.microbatches;
  bool added = false;
  for (int d = 0; d < dag.devices; ++d) {
    if (!dag.mem_limited) return Status::ok();
    const int64_t capx = dag.cap_mem[d];
    if (capx < 0) {
      return Status::error(ErrorCode::kInfeasible,
                           fmt::format("device {} cannot hold the model states of its stages", d));
    }
    // Stages of this device in chain order.
    std::vector<int> stages;
    for (int s = 0; s < dag.stages; ++s)
      if (dag.ops[dag.f_op(s, 0)].device == d) stages.push_back(s);
    int64_t upstream_act = 0;  // A: activation of the device's stages up to and including s
    for (int s : stages) {
      const int64_t act = dag.ops[dag.f_op(s, 0)].alloc_mem;
      upstream_act += act;
      // A microbatch of stage s holds at least `act` from its F to its I (F's allocation: the kept
      // part on a recomputing stage) and at least min(act, stash) from its F to its W.
      const int w0 = dag.w_op(s, 0);
      const int64_t stash = w0 >= 0 ? std::min(dag.ops[w0].free_mem, act) : 0;
      for (int m = 0; m < M; ++m) {
        const int f = dag.f_op(s, m);
        if (upstream_act > 0) {
          // (m+1)·A − nI·A ≤ capx  ⇒  nI ≥ ceil(((m+1)·A − capx) / A)
          const int64_t need = (m + 1) * upstream_act - capx;
          if (need > 0) {
            const int64_t r = (need + upstream_act - 1) / upstream_act;
            if (r > m) {
              return Status::error(ErrorCode::kInfeasible,
                                   fmt::format("device {} cannot hold the memory of {}", d, dag.op_name(f)));
            }
            dag.add_edge(dag.bwd_op(s, static_cast<int>(r - 1)), f, 0, EdgeKind::kMemory);
            added = true;
          }
        }
        if (stash > 0 && m > 0) {
          // At most m I's precede F(s,m): (m+1)·A − m·(A − stash) − nW·stash ≤ capx.
          const int64_t need = upstream_act + m * stash - capx;
          if (need > 0) {
            const int64_t wcount = (need + stash - 1) / stash;
            if (wcount > m) {
              return Status::error(ErrorCode::kInfeasible,
                                   fmt::format("device {} cannot hold the memory of {}", d, dag.op_name(f)));
            }
            dag.add_edge(dag.w_op(s, static_cast<int>(wcount - 1)), f, 0, EdgeKind::kMemory);
            added = true;
          }
        }
      }
    }
  }
  if (added) return dag.recompute_paths();
  return Status::ok();
}

int64_t default_dag_ops(const Problem& problem) {
  int64_t per_mb = 0;
  for (int s = 0; s < problem.num_stages(); ++s) {
    per_mb += (problem.stages[s].split_backward ? 3 : 2) + (problem.stages[s].recomputes() ? 1 : 0);
    if (s + 1 < problem.num_stages() && problem.stages[s + 1].device != problem.stages[s].device) per_mb += 2;
  }
  return per_mb * problem.microbatches;
}

DeviceReach::DeviceReach(const OpDag& dag) {
  const int n = dag.num_ops();
  words_ = (static_cast<size_t>(n) + 63) / 64;
  bits_.assign(static_cast<size_t>(n) * words_, 0);
  for (auto it = dag.topo.rbegin(); it != dag.topo.rend(); ++it) {
    const int u = *it;
    uint64_t* row = &bits_[static_cast<size_t>(u) * words_];
    for (const DagEdge& e : dag.succ[u]) {
      const uint64_t* r2 = &bits_[static_cast<size_t>(e.op) * words_];
      for (size_t k = 0; k < words_; ++k) row[k] |= r2[k];
      row[e.op / 64] |= uint64_t{1} << (e.op % 64);
    }
  }
}

}  // namespace ps

namespace ps {

namespace {

// Each op once in each of its resources' lists (streams only when given).
Status check_membership(const OpDag& dag, const std::vector<std::vector<int>>& order) {
  const int n = dag.num_ops();
  const int given = static_cast<int>(order.size());
  const bool explicit_streams = given == dag.num_resources();
  std::vector<int> count(n, 0);
  for (int r = 0; r < given; ++r) {
    for (int op : order[r]) {
      if (op < 0 || op >= n) {
        return Status::error(ErrorCode::kInvalidSchedule, fmt::format("resource {}: op id {} out of range", r, op));
      }
      int rs[2] = {0, 0};
      const int k = dag.resources_of(op, rs);
      if (rs[0] != r && (k < 2 || rs[1] != r)) {
        return Status::error(ErrorCode::kInvalidSchedule,
                             fmt::format("{} is listed on {} {}, which it does not run on", dag.op_name(op),
                                         r < dag.devices ? "device" : "comm stream", r % dag.devices));
      }
      ++count[op];
    }
  }
  for (int i = 0; i < n; ++i) {
    const int need = dag.ops[i].is_transfer() ? (explicit_streams ? 2 : 0) : 1;
    if (count[i] != need) {
      return Status::error(ErrorCode::kInvalidSchedule,
                           fmt::format("device {}: {} is {}", dag.ops[i].device, dag.op_name(i),
                                       count[i] < need ? "missing" : "listed twice"));
    }
  }
  return Status::ok();
}

// Each device's peak of activations and stashes along its order; over the cap is an error when
// `check_memory`.
Status set_peak_memory(const OpDag& dag, const std::vector<std::vector<int>>& order, bool check_memory,
                       TimedOrder& t) {
  t.peak_mem.assign(dag.devices, 0);
  for (int d = 0; d < dag.devices; ++d) {
    int64_t mem = 0, peak = 0;
    for (int op : order[d]) {
      mem += dag.ops[op].alloc_mem;
      peak = std::max(peak, mem);
      mem -= dag.ops[op].free_mem;
    }
    t.peak_mem[d] = peak;
    if (check_memory && dag.mem_limited && peak > dag.cap_mem[d]) {
      return Status::error(ErrorCode::kInfeasible,
                           fmt::format("device {}: activations and stashes peak at {:.1f} MB, over the {:.1f} MB left "
                                       "after model states",
                                       d, dag.mem_to_mb(peak), dag.mem_to_mb(dag.cap_mem[d])));
    }
  }
  return Status::ok();
}

}  // namespace

Result<TimedOrder> evaluate_order(const OpDag& dag, std::vector<std::vector<int>> order, EdgeSet edges,
                                  bool check_memory) {
  const int n = dag.num_ops();
  const int R = dag.num_resources();
  const int given = static_cast<int>(order.size());
  if (given != R && given != dag.devices) {
    return Status::error(ErrorCode::kInvalidSchedule,
                         fmt::format("order has {} lists, expected {} (devices) or {} (devices and comm streams)",
                                     given, dag.devices, R));
  }
  const bool explicit_streams = given == R;
  PS_RETURN_IF_ERROR(check_membership(dag, order));
  // Event loop: always time the op that can start earliest (ties: lower op id). Timing an op only
  // enables ops that start at or after its end, so this is the earliest-start timing, and streams
  // without a given order serve their transfers first come, first served.
  // The candidates — ops whose predecessors are all timed and that head each of their given lists
  // — sit in a min-heap keyed by (start, op). A candidate's start is final, except for a transfer on
  // streams without a given order, whose streams may get busier while it waits: its key is a lower
  // bound, re-checked when it comes to the top.
  TimedOrder t;
  t.start.assign(n, -1);
  std::vector<size_t> cursor(R, 0);
  std::vector<int64_t> free_at(R, 0);
  std::vector<int> missing(n, 0);
  std::vector<int64_t> ready(n, 0);
  for (int i = 0; i < n; ++i)
    for (const DagEdge& e : dag.pred[i])
      if (edges == EdgeSet::kAll || e.kind == EdgeKind::kData) ++missing[i];
  std::vector<std::vector<int>> stream_order(R);
  using Entry = std::pair<int64_t, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto start_of = [&](int op) {
    int rs[2] = {0, 0};
    const int k = dag.resources_of(op, rs);
    int64_t st = ready[op];
    for (int j = 0; j < k; ++j) st = std::max(st, free_at[rs[j]]);
    return st;
  };
  auto heads = [&](int r, int op) { return r < given && cursor[r] < order[r].size() && order[r][cursor[r]] == op; };
  // Pushes `op` if it is a candidate now.
  auto offer = [&](int op) {
    if (missing[op] > 0) return;
    int rs[2] = {0, 0};
    const int k = dag.resources_of(op, rs);
    if (k == 1 || explicit_streams)
      for (int j = 0; j < k; ++j)
        if (!heads(rs[j], op)) return;
    heap.push({start_of(op), op});
  };
  for (int r = 0; r < given; ++r)
    if (!order[r].empty()) offer(order[r][0]);
  int done = 0;
  while (done < n) {
    if (heap.empty()) {
      for (int r = 0; r < given; ++r) {
        if (cursor[r] < order[r].size()) {
          return Status::error(ErrorCode::kInvalidSchedule,
                               fmt::format("the order waits forever: {} {} is blocked on {} (op {} of its list)",
                                           r < dag.devices ? "device" : "comm stream", r % dag.devices,
                                           dag.op_name(order[r][cursor[r]]), cursor[r]));
        }
      }
      return Status::error(ErrorCode::kInvalidSchedule, "the order waits forever on a transfer");
    }
    const auto [key, best] = heap.top();
    heap.pop();
    if (t.start[best] >= 0) continue;  // offered twice (by its last predecessor and by its list)
    const int64_t best_start = start_of(best);
    if (best_start != key) {  // a transfer whose streams got busier: back with its new start
      heap.push({best_start, best});
      continue;
    }
    t.start[best] = best_start;
    const int64_t end = best_start + dag.ops[best].dur;
    t.makespan = std::max(t.makespan, end);
    int rs[2] = {0, 0};
    const int k = dag.resources_of(best, rs);
    for (int j = 0; j < k; ++j) {
      free_at[rs[j]] = end;
      if (rs[j] < given) {
        ++cursor[rs[j]];
      } else {
        stream_order[rs[j]].push_back(best);
      }
    }
    ++done;
    for (const DagEdge& e : dag.successors(best)) {
      if (edges == EdgeSet::kDataOnly && e.kind != EdgeKind::kData) continue;
      ready[e.op] = std::max(ready[e.op], end + e.delay);
      if (--missing[e.op] == 0) offer(e.op);
    }
    for (int j = 0; j < k; ++j)
      if (rs[j] < given && cursor[rs[j]] < order[rs[j]].size()) offer(order[rs[j]][cursor[rs[j]]]);
  }
  if (!explicit_streams) {
    for (int r = dag.devices; r < R; ++r) order.push_back(std::move(stream_order[r]));
  }
  PS_RETURN_IF_ERROR(set_peak_memory(dag, order, check_memory, t));
  t.order = std::move(order);
  t.makespan = std::max(t.makespan, data_parallel_end(dag, t.start));
  return t;
}

int64_t data_parallel_end(const OpDag& dag, const std::vector<int64_t>& start) {
  if (std::none_of(dag.reduce_dur.begin(), dag.reduce_dur.end(), [](int64_t d) { return d > 0; })) return 0;
  // (end of the stage's last backward, stage) per device.
  std::vector<std::vector<std::pair<int64_t, int>>> last(dag.devices);
  std::vector<int64_t> stage_end(dag.stages, -1);
  std::vector<int> stage_dev(dag.stages, -1);
  for (int id = 0; id < static_cast<int>(dag.ops.size()); ++id) {
    const DagOp& o = dag.ops[id];
    if (o.is_transfer() || (o.type != OpType::B && o.type != OpType::W && o.type != OpType::I)) continue;
    if (id >= static_cast<int>(start.size()) || start[id] < 0) continue;
    stage_end[o.stage] = std::max(stage_end[o.stage], start[id] + o.dur);
    stage_dev[o.stage] = o.device;
  }
  for (int s = 0; s < dag.stages; ++s)
    if (stage_dev[s] >= 0 && dag.reduce_dur[s] > 0) last[stage_dev[s]].push_back({stage_end[s], s});
  int64_t end = 0;
  for (auto& l : last) {
    std::sort(l.begin(), l.end());
    int64_t free = 0;
    for (const auto& [ready, s] : l) free = std::max(free, ready) + dag.reduce_dur[s];
    end = std::max(end, free);
  }
  return end;
}

}  // namespace ps
