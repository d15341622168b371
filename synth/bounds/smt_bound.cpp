// smt_bound.cpp — Z3 on one-resource relaxations (see smt_bound.h): building a relaxation (its ops,
// the time lags and open pairs the DAG leaves, the memory sums), checking it at trial makespans,
// and the search over resources and trials.
#include "synth/bounds/smt_bound.h"

#include <fmt/format.h>
#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <memory>
#include <optional>
#include <vector>

#include "synth/bounds/dag_bounds.h"
#include "synth/z3/encode.h"
#include "synth/z3/solve.h"
#include "synth/z3/z3_util.h"

namespace ps {

// Named, so that a unity build of synth/ sees no clash with the other files' helpers.
namespace smt_bound_impl {
namespace {

using Clock = std::chrono::steady_clock;
using Times = std::vector<int64_t>;

constexpr int64_t kNoPath = INT64_MIN;

// Beyond this many ops in one relaxation the k² lag table is not built (its open pairs alone would
// take far longer to load than any budget this step gets).
constexpr int kMaxRelaxationOps = 2000;

// Steps of the longest-path sweeps (one per op of the relaxation, over the DAG between its ops) a
// relaxation may take to build; about 0.1–0.3 s of one core.
constexpr int64_t kMaxLagSteps = 100'000'000;

// The ops of one or two resources and what the DAG fixes between them (local indices 0..k-1).
struct RelaxationData {
  std::vector<int> resources;  // devices (their compute ops) and comm streams (P + d)
  std::vector<int> ops;        // op ids, ascending
  Times lag;                   // k × k: L(a, b) when a path a -> b exists, else kNoPath
  std::vector<std::pair<int, int>> open;  // pairs on a common resource that no path orders (a < b)
  int lags = 0;                // pairs with a path
  int64_t size = 0;            // open pairs + lags + 4 per op: the load estimate's units
  int k() const { return static_cast<int>(ops.size()); }
  int64_t lag_of(int a, int b) const { return lag[static_cast<size_t>(a) * ops.size() + b]; }
};

// Every longest path between two of the relaxation's ops: one sweep in topological order from each
// op, over the topological range up to the last of them. False when that would take too long.
bool fill_lags(const OpDag& dag, RelaxationData& rd) {
  const int k = rd.k();
  std::vector<int> topo_pos(dag.num_ops());
  for (size_t x = 0; x < dag.topo.size(); ++x) topo_pos[dag.topo[x]] = static_cast<int>(x);
  std::vector<int> local(dag.num_ops(), -1);
  int last = 0;
  for (int i = 0; i < k; ++i) {
    local[rd.ops[i]] = i;
    last = std::max(last, topo_pos[rd.ops[i]]);
  }
  int64_t steps = 0;
  for (int a : rd.ops) steps += last - topo_pos[a] + 1;
  if (steps > kMaxLagSteps) return false;
  rd.lag.assign(static_cast<size_t>(k) * k, kNoPath);
  Times dist(dag.num_ops(), kNoPath);  // from the start of a to the start of each op
  std::vector<int> touched;
  for (int ia = 0; ia < k; ++ia) {
    const int a = rd.ops[ia];
    dist[a] = 0;
    touched.assign(1, a);
    for (int x = topo_pos[a]; x <= last; ++x) {
      const int u = dag.topo[x];
      if (dist[u] == kNoPath) continue;
      if (u != a && local[u] >= 0) rd.lag[static_cast<size_t>(ia) * k + local[u]] = dist[u];
      for (const DagEdge& e : dag.succ[u]) {
        if (dist[e.op] == kNoPath) touched.push_back(e.op);
        dist[e.op] = std::max(dist[e.op], dist[u] + dag.ops[u].dur + e.delay);
      }
    }
    for (int v : touched) dist[v] = kNoPath;
  }
  return true;
}

// The relaxation of `resources`: their ops, the lags, and the open pairs of each resource.
// nullopt when too large.
std::optional<RelaxationData> relaxation_data(const OpDag& dag, const std::vector<int>& resources) {
  RelaxationData rd;
  rd.resources = resources;
  for (int r : resources) rd.ops.insert(rd.ops.end(), dag.resource_ops[r].begin(), dag.resource_ops[r].end());
  std::sort(rd.ops.begin(), rd.ops.end());
  rd.ops.erase(std::unique(rd.ops.begin(), rd.ops.end()), rd.ops.end());
  const int k = rd.k();
  if (k < 2 || k > kMaxRelaxationOps || !fill_lags(dag, rd)) return std::nullopt;
  std::vector<char> on(static_cast<size_t>(k) * resources.size(), 0);  // op a on the j-th resource
  for (size_t j = 0; j < resources.size(); ++j) {
    for (int op : dag.resource_ops[resources[j]]) {
      const int a = static_cast<int>(std::lower_bound(rd.ops.begin(), rd.ops.end(), op) - rd.ops.begin());
      on[static_cast<size_t>(a) * resources.size() + j] = 1;
    }
  }
  for (int a = 0; a < k; ++a) {
    for (int b = a + 1; b < k; ++b) {
      bool shared = false;
      for (size_t j = 0; j < resources.size(); ++j)
        shared = shared || (on[a * resources.size() + j] && on[b * resources.size() + j]);
      if (rd.lag_of(a, b) != kNoPath || rd.lag_of(b, a) != kNoPath) {
        ++rd.lags;
      } else if (shared) {
        rd.open.emplace_back(a, b);
      }
    }
  }
  rd.size = static_cast<int64_t>(rd.open.size()) + rd.lags + 4ll * k;
  return rd;
}

// "device 3 alone", "the comm stream of device 2 alone", "devices 3 and 4 together".
std::string relaxation_name(const OpDag& dag, const std::vector<int>& rs) {
  if (rs.size() == 2) return fmt::format("devices {} and {} together", rs[0], rs[1]);
  return rs[0] < dag.devices ? fmt::format("device {} alone", rs[0])
                             : fmt::format("the comm stream of device {} alone", rs[0] - dag.devices);
}

enum class Outcome { kSat, kUnsat, kUnknown };

// One relaxation in its own Z3 context: the lags, order literals and memory sums asserted once;
// each trial's windows pushed and popped.
class RelaxationSolver {
 public:
  RelaxationSolver(const OpDag& dag, RelaxationData data) : dag_(dag), rd_(std::move(data)) {}

  // Whether the device's memory cap was encoded.
  bool has_memory() const { return memory_sums_ > 0; }

  void build(unsigned seed, bool memory) {
    ctx_ = std::make_unique<z3::context>();
    z3::context& c = *ctx_;
    solver_ = std::make_unique<z3::solver>(c, z3::solver::simple());
    z3::params p(c);
    p.set("arith.solver", 1u);
    p.set("random_seed", seed);
    solver_->set(p);
    const int k = rd_.k();
    for (int i = 0; i < k; ++i) {
      const DagOp& o = dag_.ops[rd_.ops[i]];
      starts_.push_back(c.int_const(fmt::format("start[{},s{},mb{}]", op_type_name(o.type), o.stage, o.mb).c_str()));
    }
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b)
        if (a != b && rd_.lag_of(a, b) != kNoPath) solver_->add(starts_[b] - starts_[a] >= c.int_val(rd_.lag_of(a, b)));
    open_index_.assign(static_cast<size_t>(k) * k, -1);
    for (const auto& [a, b] : rd_.open) {
      open_index_[static_cast<size_t>(a) * k + b] = static_cast<int>(lits_.size());
      z3::expr o = c.bool_const(fmt::format("o[{},{}]", dag_.op_name(rd_.ops[a]), dag_.op_name(rd_.ops[b])).c_str());
      lits_.push_back(o);
      solver_->add(z3::implies(o, starts_[a] + c.int_val(dur(a)) <= starts_[b]));
      solver_->add(z3::implies(!o, starts_[b] + c.int_val(dur(b)) <= starts_[a]));
    }
    if (memory && dag_.mem_limited) {
      for (int r : rd_.resources)
        if (r < dag_.devices) add_memory_sums(r);
    }
  }

  // Does some order fit the windows [est, lct]? `share` rlimit units, at most `wall_s` seconds.
  Outcome check(const Times& est, const Times& lct, uint64_t share, double wall_s,
                const std::atomic<bool>* interrupt, uint64_t& used) {
    z3::context& c = *ctx_;
    z3::solver& s = *solver_;
    s.push();
    for (int i = 0; i < rd_.k(); ++i) {
      const int op = rd_.ops[i];
      s.add(starts_[i] >= c.int_val(est[op]));
      s.add(starts_[i] <= c.int_val(lct[op] - dur(i)));
    }
    z3::params p(c);
    p.set("timeout", static_cast<unsigned>(std::clamp(wall_s * 1000, 1.0, static_cast<double>(UINT_MAX))));
    p.set("rlimit", static_cast<unsigned>(std::min<uint64_t>(share, UINT_MAX)));
    s.set(p);
    const uint64_t before = rlimit_count(s);
    z3::check_result r = z3::unknown;
    {
      const InterruptWatcher watch(interrupt, [&c] { c.interrupt(); });
      r = s.check();
    }
    const uint64_t after = rlimit_count(s);
    used = after > before ? after - before : 0;
    s.pop();
    return r == z3::unsat ? Outcome::kUnsat : r == z3::sat ? Outcome::kSat : Outcome::kUnknown;
  }

 private:
  int64_t dur(int i) const { return dag_.ops[rd_.ops[i]].dur; }

  // "a runs before b": the order literal, or true/false where a path fixes it.
  z3::expr before(int a, int b) {
    const int k = rd_.k();
    const int idx = open_index_[static_cast<size_t>(std::min(a, b)) * k + std::max(a, b)];
    if (idx < 0) return ctx_->bool_val(rd_.lag_of(a, b) != kNoPath);
    return a < b ? lits_[idx] : !lits_[idx];
  }

  // encode.h's pseudo-Boolean sum for every F of the device, over the order literals. A sum whose
  // numbers exceed Z3's int is left out: a weaker relaxation, still a sound bound.
  void add_memory_sums(int device) {
    std::vector<int> mine;  // local indices of the device's compute ops
    for (int i = 0; i < rd_.k(); ++i)
      if (!dag_.ops[rd_.ops[i]].is_transfer() && dag_.ops[rd_.ops[i]].device == device) mine.push_back(i);
    for (int f : mine) {
      if (!OpDag::allocates(dag_.ops[rd_.ops[f]].type)) continue;
      const MemorySum m = memory_sum(
          *ctx_, f, mine, dag_.cap_mem[device], [&](int i) -> const DagOp& { return dag_.ops[rd_.ops[i]]; },
          [&](int g) {
            if (rd_.lag_of(g, f) != kNoPath) return PairOrder::kBeforeF;
            return rd_.lag_of(f, g) != kNoPath ? PairOrder::kAfterF : PairOrder::kOpen;
          },
          [&](int a, int b) { return before(a, b); });
      if (m.kind == MemorySum::kSlack) continue;
      ++memory_sums_;
      if (m.kind == MemorySum::kInfeasible) solver_->add(ctx_->bool_val(false));
      if (m.kind == MemorySum::kConstraint) solver_->add(*m.constraint);
    }
  }

  const OpDag& dag_;
  RelaxationData rd_;
  std::unique_ptr<z3::context> ctx_;
  std::unique_ptr<z3::solver> solver_;
  std::vector<z3::expr> starts_;
  std::vector<z3::expr> lits_;
  std::vector<int> open_index_;  // k × k (a < b): index into lits_, -1 where a path orders the pair
  int memory_sums_ = 0;
};

// The trials: propagated windows (cached for the last makespan), the budget, the search.
class Search {
 public:
  Search(const OpDag& dag, int64_t lower, int64_t upper, const SmtBoundOptions& opt)
      : dag_(dag), opt_(opt), upper_(upper) {
    budget_ = rlimit_budget(opt.rlimit, opt.time_limit_s);
    out_.units = std::min(lower, upper);
    lo_ = out_.units;
    start_lower_ = lo_;
  }

  Result<SmtBound> run() {
    for (const std::vector<int>& rs : relaxations_by_bottleneck()) {
      if (lo_ >= upper_ || out_of_budget()) break;
      Status st = try_relaxation(rs);
      if (!st.is_ok()) return st;
    }
    out_.units = lo_;
    out_.raised = lo_ > start_lower_;
    return out_;
  }

 private:
  enum class Trial { kRefutedByPropagation, kRefutedByZ3, kOpen };

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  uint64_t left() const { return budget_ - std::min(budget_, out_.rlimit_used); }
  bool interrupted() const { return opt_.interrupt && opt_.interrupt->load(); }
  bool out_of_budget() const { return left() == 0 || elapsed() >= opt_.time_limit_s || interrupted(); }

  // Devices and comm streams with two or more ops alone, by Jackson's bound descending (ties: lower
  // id); then every two devices that hold adjacent stages together, by the larger of their bounds.
  std::vector<std::vector<int>> relaxations_by_bottleneck() const {
    std::vector<int64_t> jackson(dag_.num_resources(), 0);
    std::vector<std::pair<int64_t, std::vector<int>>> singles, pairs;
    for (int r = 0; r < dag_.num_resources(); ++r) {
      if (dag_.resource_ops[r].size() < 2) continue;
      jackson[r] = device_relaxation_bound(dag_, r);
      singles.push_back({-jackson[r], {r}});
    }
    for (int s = 0; s + 1 < dag_.stages; ++s) {
      const int a = dag_.ops[dag_.f_op(s, 0)].device, b = dag_.ops[dag_.f_op(s + 1, 0)].device;
      if (a == b) continue;
      std::vector<int> rs = {std::min(a, b), std::max(a, b)};
      const std::pair<int64_t, std::vector<int>> c = {-std::max(jackson[a], jackson[b]), rs};
      if (std::find(pairs.begin(), pairs.end(), c) == pairs.end()) pairs.push_back(c);
    }
    std::sort(singles.begin(), singles.end());
    std::sort(pairs.begin(), pairs.end());
    std::vector<std::vector<int>> out;
    for (const auto& c : singles) out.push_back(c.second);
    if (opt_.pairs)
      for (const auto& c : pairs) out.push_back(c.second);
    return out;
  }

  // The windows at makespan t; false when propagation alone refutes it.
  bool windows(int64_t t) {
    if (cached_ == t) return !cached_refuted_;
    cached_ = t;
    ++out_.trials;
    cached_refuted_ = false;
    if (!opt_.windows) {
      est_ = dag_.head;
      lct_.resize(dag_.num_ops());
      for (int i = 0; i < dag_.num_ops(); ++i) lct_[i] = t - dag_.tail[i];
      return true;
    }
    uint64_t work = 0;
    propagate_windows(dag_, t, est_, lct_, &cached_refuted_, opt_.propagation_work, &work);
    out_.rlimit_used += work / std::max<uint64_t>(1, bound_steps_per_second() / rlimit_per_second());
    return !cached_refuted_;
  }

  Result<Trial> trial(RelaxationSolver& rs, int64_t t, uint64_t share) {
    if (!windows(t)) return Trial::kRefutedByPropagation;
    uint64_t used = 0;
    Outcome o = Outcome::kUnknown;
    try {
      o = rs.check(est_, lct_, std::min(share, left()), opt_.time_limit_s - elapsed(), opt_.interrupt, used);
    } catch (const z3::exception& e) {
      if (interrupted()) return Trial::kOpen;  // a cancelled context may throw "canceled"
      return Status::error(ErrorCode::kRuntime, fmt::format("Z3 failed on a relaxation: {}", e.msg()));
    }
    ++out_.checks;
    out_.rlimit_used += used;
    return o == Outcome::kUnsat ? Trial::kRefutedByZ3 : Trial::kOpen;
  }

  void refuted(int64_t t, Trial how, const std::vector<int>& rs, bool memory) {
    lo_ = std::max(lo_, t + 1);
    out_.by_z3 = how == Trial::kRefutedByZ3;
    out_.device = how == Trial::kRefutedByZ3 ? rs[0] : -1;
    out_.reason = how == Trial::kRefutedByZ3
                      ? fmt::format("z3 relaxation: {} (windows, time lags{}) refutes a makespan of {:.4f} ms",
                                    relaxation_name(dag_, rs), memory ? ", memory cap" : "", dag_.to_ms(t))
                      : fmt::format("destructive: a makespan of {:.4f} ms is refuted by propagation", dag_.to_ms(t));
  }

  // The relaxation of `rs`: asked at the lowest open makespan; when it refutes that, galloping up
  // and bisecting until a trial stays open.
  Status try_relaxation(const std::vector<int>& rs_ids) {
    const uint64_t per_check = std::max<uint64_t>(budget_ / 16, 1);
    // Loading a relaxation of `size` and one check on it.
    auto first_share = [&](int64_t size) { return kLoadRlimitPerUnit * static_cast<uint64_t>(size) + per_check; };
    // Every pair of ops on one resource is a lag or an open pair: a floor on the size, known before
    // the lags (the costly part on a large DAG) are computed.
    int64_t min_size = 0;
    for (int r : rs_ids) {
      const auto n = static_cast<int64_t>(dag_.resource_ops[r].size());
      min_size = std::max(min_size, n * (n - 1) / 2 + 4 * n);
    }
    std::optional<RelaxationData> rd;
    if (first_share(min_size) <= left()) rd = relaxation_data(dag_, rs_ids);
    if (!rd || first_share(rd->size) > left()) {
      ++out_.skipped;
      return Status::ok();
    }
    const uint64_t first_check = first_share(rd->size);
    RelaxationSolver rs(dag_, std::move(*rd));
    try {
      rs.build(opt_.seed, opt_.memory);
    } catch (const z3::exception& e) {
      return Status::error(ErrorCode::kRuntime, fmt::format("Z3 failed while building a relaxation: {}", e.msg()));
    }
    ++out_.relaxations;
    Result<Trial> first = trial(rs, lo_, first_check);
    if (!first.ok()) return first.status();
    if (*first == Trial::kOpen) return Status::ok();
    refuted(lo_, *first, rs_ids, rs.has_memory());
    int64_t open = upper_;  // the smallest makespan this relaxation left open (or upper)
    int64_t step = std::max<int64_t>(1, (upper_ - lo_) / 64);
    bool galloping = true;
    while (lo_ < open && !out_of_budget()) {
      const int64_t t = galloping ? std::min(open - 1, lo_ + step - 1) : lo_ + (open - lo_) / 2;
      Result<Trial> tr = trial(rs, t, per_check);
      if (!tr.ok()) return tr.status();
      if (*tr == Trial::kOpen) {
        open = t;
        galloping = false;
        continue;
      }
      refuted(t, *tr, rs_ids, rs.has_memory());
      step *= 2;
    }
    return Status::ok();
  }

  const OpDag& dag_;
  const SmtBoundOptions& opt_;
  const int64_t upper_;
  const Clock::time_point t0_ = Clock::now();
  uint64_t budget_ = 0;
  SmtBound out_;
  int64_t lo_ = 0;  // the lowest makespan not refuted
  int64_t start_lower_ = 0;  // the bound given
  int64_t cached_ = -1;      // the makespan est_/lct_ belong to (-1: none)
  bool cached_refuted_ = false;
  Times est_, lct_;
};

}  // namespace
}  // namespace smt_bound_impl

Result<SmtBound> smt_lower_bound(const OpDag& dag, int64_t lower, int64_t upper, const SmtBoundOptions& options) {
  smt_bound_impl::Search search(dag, lower, upper, options);
  return search.run();
}

}  // namespace ps
