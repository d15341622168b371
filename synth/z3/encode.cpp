// encode.cpp — building the Z3 problem from the op DAG (see encode.h for the constraints).
#include "synth/z3/encode.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace ps {

namespace {
Status z3_error(const z3::exception& e, const char* where) {
  return Status::error(ErrorCode::kRuntime, fmt::format("Z3 failed while {}: {}", where, e.msg()));
}
}  // namespace

Result<std::unique_ptr<Encoding>> Encoding::create(const OpDag& dag, const DeviceReach& reach,
                                                   const EncodeOptions& options) {
  std::unique_ptr<Encoding> enc(new Encoding(dag, reach));
  try {
    PS_RETURN_IF_ERROR(enc->build(options));
  } catch (const z3::exception& e) {
    return z3_error(e, "building the encoding");
  }
  return enc;
}

int Encoding::pair_index(int a, int b) const {
  const uint64_t key = static_cast<uint64_t>(std::min(a, b)) * dag_.num_ops() + std::max(a, b);
  auto it = pair_of_.find(key);
  return it == pair_of_.end() ? -1 : it->second;
}

z3::expr Encoding::before(int a, int b) {
  PS_ASSERT(a != b, "before() needs two different ops");
  const int k = pair_index(a, b);
  if (k < 0) return ctx_->bool_val(reach_.reaches(a, b));
  return (*atoms_)[2 * k + (pair_a_[k] == a ? 0 : 1)];
}

Status Encoding::build(const EncodeOptions& options) {
  ctx_ = std::make_unique<z3::context>();
  z3::context& c = *ctx_;
  solver_ = std::make_unique<z3::solver>(c, z3::solver::simple());
  z3::params p(c);
  p.set("arith.solver", 1u);  // sparse difference logic: every atom is x - y <= k
  p.set("random_seed", options.seed);
  solver_->set(p);
  z3::solver& s = *solver_;
  const int n = dag_.num_ops();

  starts_.reserve(n);
  for (int i = 0; i < n; ++i) {
    const DagOp& o = dag_.ops[i];
    std::string name = options.name_vars ? fmt::format("start[{},s{},mb{}]", op_type_name(o.type), o.stage, o.mb)
                                         : fmt::format("s{}", i);
    starts_.push_back(c.int_const(name.c_str()));
  }
  c_ = c.int_const("C");
  const z3::expr& C = *c_;
  for (int i = 0; i < n; ++i) {
    const int64_t dur = dag_.ops[i].dur;
    s.add(starts_[i] >= c.int_val(dag_.head[i]));
    s.add(starts_[i] + c.int_val(dur + dag_.tail[i]) <= C);
    for (const DagEdge& e : dag_.succ[i]) s.add(starts_[i] + c.int_val(dur + e.delay) <= starts_[e.op]);
  }

  // No-overlap pairs, per resource (two transfers may share both streams: one pair).
  atoms_ = std::make_unique<z3::expr_vector>(c);
  for (int r = 0; r < dag_.num_resources(); ++r) {
    const auto& ops = dag_.resource_ops[r];
    const int nr = static_cast<int>(ops.size());
    for (int x = 0; x < nr; ++x) {
      for (int y = x + 1; y < nr; ++y) {
        const int a = ops[x], b = ops[y];
        if (reach_.reaches(a, b) || reach_.reaches(b, a)) continue;
        const uint64_t key = static_cast<uint64_t>(a) * n + b;
        if (pair_of_.count(key) > 0) continue;
        const int k = static_cast<int>(pair_a_.size());
        pair_of_.emplace(key, k);
        pair_a_.push_back(a);
        pair_b_.push_back(b);
        pair_r_.push_back(r);
        z3::expr ab = starts_[a] + c.int_val(dag_.ops[a].dur) <= starts_[b];
        z3::expr ba = starts_[b] + c.int_val(dag_.ops[b].dur) <= starts_[a];
        atoms_->push_back(ab);
        atoms_->push_back(ba);
        s.add(ab || ba);
      }
    }
  }

  // Memory caps: one pseudo-Boolean constraint per F.
  if (options.memory && dag_.mem_limited) {
    for (int d = 0; d < dag_.devices; ++d) {
      for (int f : dag_.device_ops[d]) {
        if (!OpDag::allocates(dag_.ops[f].type)) continue;
        const MemorySum m = memory_sum(
            c, f, dag_.device_ops[d], dag_.cap_mem[d], [&](int i) -> const DagOp& { return dag_.ops[i]; },
            [&](int g) {
              if (pair_index(f, g) >= 0) return PairOrder::kOpen;
              return reach_.reaches(g, f) ? PairOrder::kBeforeF : PairOrder::kAfterF;
            },
            [&](int a, int b) { return before(a, b); });
        if (m.kind == MemorySum::kTooLarge) {
          return Status::error(ErrorCode::kRuntime,
                               fmt::format("memory numbers of device {} are too large for Z3's pseudo-Boolean "
                                           "constraints",
                                           d));
        }
        if (m.kind == MemorySum::kInfeasible) s.add(c.bool_val(false));
        if (m.kind == MemorySum::kConstraint) s.add(*m.constraint);
        if (m.kind != MemorySum::kSlack) ++memory_constraints_;
      }
    }
  }
  return Status::ok();
}

MemorySum memory_sum(z3::context& c, int f, const std::vector<int>& device_ops, int64_t cap,
                     const std::function<const DagOp&(int)>& op, const std::function<PairOrder(int)>& order,
                     const std::function<z3::expr(int, int)>& before) {
  // Live memory at f's allocation (f an F or R): every F/R before f adds its allocation, every I/W/B
  // before f takes back what it frees. An F/R's term is alloc·[g before f]; an I/W/B's,
  // -free·[g before f], is written -free + free·[f before g] so that every coefficient is positive.
  int64_t bound = cap - op(f).alloc_mem;
  z3::expr_vector lits(c);
  std::vector<int64_t> coef;
  int64_t coef_sum = 0;
  for (int g : device_ops) {
    if (g == f) continue;
    const DagOp& o = op(g);
    const bool frees = !OpDag::allocates(o.type);
    const int64_t amount = frees ? o.free_mem : o.alloc_mem;
    const PairOrder rel = order(g);
    if (amount == 0 || rel == PairOrder::kAfterF) continue;
    if (rel == PairOrder::kBeforeF) {
      bound += frees ? amount : -amount;
      continue;
    }
    if (frees) bound += amount;
    lits.push_back(frees ? before(f, g) : before(g, f));
    coef.push_back(amount);
    coef_sum += amount;
  }
  MemorySum m;
  if (bound >= coef_sum) return m;  // cannot bind
  if (bound < 0) {
    m.kind = MemorySum::kInfeasible;
    return m;
  }
  if (bound > INT_MAX || std::any_of(coef.begin(), coef.end(), [](int64_t v) { return v > INT_MAX; })) {
    m.kind = MemorySum::kTooLarge;
    return m;
  }
  std::vector<int> ci(coef.begin(), coef.end());
  m.kind = MemorySum::kConstraint;
  m.constraint = z3::pble(lits, ci.data(), static_cast<int>(bound));
  return m;
}

z3::expr_vector Encoding::orientation(const TimedOrder& t, const std::function<bool(int, int)>& keep) {
  // Position of every op in each of its resources' lists.
  std::vector<std::vector<int>> pos(t.order.size(), std::vector<int>());
  for (size_t r = 0; r < t.order.size(); ++r) {
    pos[r].assign(dag_.num_ops(), -1);
    for (size_t k = 0; k < t.order[r].size(); ++k) pos[r][t.order[r][k]] = static_cast<int>(k);
  }
  z3::expr_vector out(*ctx_);
  for (size_t k = 0; k < pair_a_.size(); ++k) {
    const int a = pair_a_[k], b = pair_b_[k], r = pair_r_[k];
    if (!keep(a, b) || r >= static_cast<int>(pos.size())) continue;
    out.push_back((*atoms_)[2 * k + (pos[r][a] < pos[r][b] ? 0 : 1)]);
  }
  return out;
}

Status Encoding::warm_start([[maybe_unused]] const TimedOrder& t) {
#ifdef PIPESMITH_Z3_INITIAL_VALUES
  try {
    z3::solver& s = *solver_;
    // Z3's difference-logic solver (arith.solver=1) answers "unknown (incomplete (theory
    // difference-logic))" once initial values are set: a warm start takes the general arithmetic
    // solver (arith.solver=6).
    z3::params p(*ctx_);
    p.set("arith.solver", 6u);
    s.set(p);
    const int n = dag_.num_ops();
    if (static_cast<int>(t.start.size()) == n) {
      for (int i = 0; i < n; ++i) s.set_initial_value(starts_[i], ctx_->int_val(t.start[i]));
      s.set_initial_value(*c_, ctx_->int_val(t.makespan));
    }
    std::vector<std::vector<int>> pos(t.order.size());
    for (size_t r = 0; r < t.order.size(); ++r) {
      pos[r].assign(n, -1);
      for (size_t k = 0; k < t.order[r].size(); ++k) pos[r][t.order[r][k]] = static_cast<int>(k);
    }
    for (size_t k = 0; k < pair_a_.size(); ++k) {
      const int a = pair_a_[k], b = pair_b_[k], r = pair_r_[k];
      if (r >= static_cast<int>(pos.size()) || pos[r][a] < 0 || pos[r][b] < 0) continue;
      const bool ab = pos[r][a] < pos[r][b];
      s.set_initial_value((*atoms_)[2 * k], ab);
      s.set_initial_value((*atoms_)[2 * k + 1], !ab);
    }
  } catch (const z3::exception& e) {
    return z3_error(e, "setting initial values");
  }
#endif
  return Status::ok();
}

Status Encoding::set_limits(unsigned timeout_ms, uint64_t rlimit) {
  try {
    z3::params p(*ctx_);
    p.set("timeout", timeout_ms == 0 ? UINT_MAX : timeout_ms);
    p.set("rlimit", static_cast<unsigned>(std::min<uint64_t>(rlimit, UINT_MAX)));
    solver_->set(p);
  } catch (const z3::exception& e) {
    return z3_error(e, "setting limits");
  }
  return Status::ok();
}

std::string Encoding::to_smt2() {
  try {
    return solver_->to_smt2();
  } catch (const z3::exception& e) {
    return fmt::format("; Z3 failed to print the problem: {}\n", e.msg());
  }
}

Result<std::vector<int64_t>> Encoding::model_starts() {
  std::vector<int64_t> t(dag_.num_ops(), 0);
  try {
    z3::model m = solver_->get_model();
    for (int i = 0; i < dag_.num_ops(); ++i) {
      z3::expr v = m.eval(starts_[i], true);
      int64_t x = 0;
      if (!v.is_numeral_i64(x)) {
        return Status::error(ErrorCode::kRuntime, fmt::format("Z3 model has no value for {}", dag_.op_name(i)));
      }
      t[i] = x;
    }
  } catch (const z3::exception& e) {
    return z3_error(e, "reading the model");
  }
  return t;
}

std::vector<std::vector<int>> order_by_starts(const OpDag& dag, const std::vector<int64_t>& t) {
  // Ties (zero-length ops) go by topological position, so the order never contradicts an edge.
  std::vector<int> topo_pos(dag.num_ops(), 0);
  for (size_t k = 0; k < dag.topo.size(); ++k) topo_pos[dag.topo[k]] = static_cast<int>(k);
  std::vector<std::vector<int>> order(dag.num_resources());
  for (int r = 0; r < dag.num_resources(); ++r) {
    order[r] = dag.resource_ops[r];
    std::sort(order[r].begin(), order[r].end(),
              [&](int a, int b) { return t[a] != t[b] ? t[a] < t[b] : topo_pos[a] < topo_pos[b]; });
  }
  return order;
}

Result<TimedOrder> Encoding::decode_model() {
  Result<std::vector<int64_t>> starts = model_starts();
  if (!starts.ok()) return starts.status();
  return evaluate_order(dag_, order_by_starts(dag_, *starts));
}

}  // namespace ps
