// solve.cpp — guided check, LNS windows and linear descent over one or more Z3 contexts.
#include "synth/solve.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "synth/encode.h"

namespace ps {

uint64_t rlimit_per_second() { return 2'000'000; }

namespace {

using Clock = std::chrono::steady_clock;

enum class Outcome { kSat, kUnsat, kUnknown };

struct Driver {
  const OpDag& dag;
  const SolveOptions& opt;
  Clock::time_point t0 = Clock::now();
  uint64_t budget = 0;  // rlimit left
  bool broken = false;  // the context returned an invalid model: stop using it
  SolveResult res;

  Driver(const OpDag& d, const SolveOptions& o) : dag(d), opt(o) {}

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0).count(); }
  double wall_left() const { return opt.time_limit_s - elapsed(); }
  bool out_of_time() const { return wall_left() <= 0.01 || budget == 0; }

  void report(const char* phase) {
    if (!opt.progress) return;
    SolveProgress p;
    p.incumbent = res.best.makespan;
    p.bound = res.bound;
    p.elapsed_s = elapsed();
    p.phase = phase;
    opt.progress(p);
  }

  // One check on `enc` with an rlimit share; returns the outcome and charges the budget.
  Result<Outcome> check(Encoding& enc, const z3::expr_vector& assumptions, uint64_t share) {
    share = std::min(share, budget);
    const double left = wall_left();
    if (share == 0 || left <= 0.01) return Outcome::kUnknown;
    PS_RETURN_IF_ERROR(enc.set_limits(static_cast<unsigned>(std::max(1.0, left * 1000)), share));
    z3::check_result r;
    uint64_t before = 0, after = 0;
    try {
      before = rlimit_count(enc);
      r = assumptions.empty() ? enc.solver().check() : enc.solver().check(assumptions);
      after = rlimit_count(enc);
    } catch (const z3::exception& e) {
      return Status::error(ErrorCode::kRuntime, fmt::format("Z3 check failed: {}", e.msg()));
    }
    ++res.checks;
    const uint64_t used = after > before ? after - before : 0;
    res.rlimit_used += used;
    budget -= std::min(budget, used);
    if (r == z3::sat) return Outcome::kSat;
    if (r == z3::unsat) return Outcome::kUnsat;
    return Outcome::kUnknown;
  }

  static uint64_t rlimit_count(Encoding& enc) {
    z3::stats st = enc.solver().statistics();
    for (unsigned i = 0; i < st.size(); ++i)
      if (st.key(i) == "rlimit count") return st.is_uint(i) ? st.uint_value(i) : static_cast<uint64_t>(st.double_value(i));
    return 0;
  }

  // Takes the model as the new incumbent if it is better; returns whether it was.
  // Takes the model as the new incumbent if it is better; returns whether it was. A model that does
  // not decode into a valid order (Z3 misbehaving after a cancelled check) marks the context broken.
  Result<bool> take_model(Encoding& enc) {
    Result<TimedOrder> t = enc.decode_model();
    if (!t.ok()) {
      broken = true;
      res.status = fmt::format("stopped: Z3 returned a model that is not a valid order ({})", t.status().message());
      return false;
    }
    if (t->makespan >= res.best.makespan) return false;
    res.best = std::move(t).value();
    res.improved = true;
    return true;
  }

  bool proven() {
    if (res.best.makespan > res.bound) return false;
    res.optimal = true;
    res.status = "optimal";
    return true;
  }

  Status tighten(Encoding& enc) {
    try {
      enc.solver().add(enc.makespan() <= enc.ctx().int_val(res.best.makespan - 1));
    } catch (const z3::exception& e) {
      return Status::error(ErrorCode::kRuntime, fmt::format("Z3 failed: {}", e.msg()));
    }
    return Status::ok();
  }

  // One sweep of windows of opt.lns_window microbatches (step: half a window). Orientations of pairs
  // with both ops outside the window are fixed to the incumbent's. Returns whether it improved.
  Result<bool> lns_pass(Encoding& enc, uint64_t share) {
    const int M = dag.microbatches;
    const int W = opt.lns_window;
    const int step = std::max(1, W / 2);
    bool improved = false;
    for (int w0 = 0; w0 < M && !out_of_time(); w0 += step) {
      const int lo = std::min(w0, M - W), hi = lo + W;
      auto outside = [&](int a, int b) {
        const int ma = dag.ops[a].mb, mb = dag.ops[b].mb;
        return (ma < lo || ma >= hi) && (mb < lo || mb >= hi);
      };
      z3::expr_vector fixed = enc.orientation(res.best, outside);
      Result<Outcome> o = check(enc, fixed, share);
      if (!o.ok()) return o.status();
      if (*o == Outcome::kSat) {
        Result<bool> t = take_model(enc);
        if (!t.ok()) return t.status();
        if (broken) return false;
        if (*t) {
          improved = true;
          report("lns");
          if (proven()) return true;
          PS_RETURN_IF_ERROR(tighten(enc));
        }
      }
      if (hi >= M) break;
    }
    return improved;
  }

  Status run(const TimedOrder& incumbent, int64_t lower_bound) {
    res.best = incumbent;
    res.bound = std::min(lower_bound, incumbent.makespan);
    const bool meets = res.bound >= res.best.makespan;
    if (meets) {
      res.optimal = true;
      res.status = "heuristic meets bound";
      report("bound");
      if (opt.dump_smt2.empty()) return Status::ok();
    }
    budget = opt.rlimit ? opt.rlimit
                        : static_cast<uint64_t>(std::max(0.0, opt.time_limit_s) * rlimit_per_second());
    DeviceReach reach(dag);
    EncodeOptions eo;
    eo.memory = opt.memory;
    eo.seed = opt.seed;
    Result<std::unique_ptr<Encoding>> er = Encoding::create(dag, reach, eo);
    if (!er.ok()) return er.status();
    Encoding& enc = **er;
    res.free_pairs = enc.num_free_pairs();
    res.memory_constraints = enc.num_memory_constraints();
    try {
      enc.solver().add(enc.makespan() <= enc.ctx().int_val(res.best.makespan));
    } catch (const z3::exception& e) {
      return Status::error(ErrorCode::kRuntime, fmt::format("Z3 failed: {}", e.msg()));
    }
    if (!opt.dump_smt2.empty()) {
      std::ofstream out(opt.dump_smt2, std::ios::binary);
      out << enc.to_smt2();
      if (!out) return Status::bad_input(fmt::format("cannot write '{}'", opt.dump_smt2));
    }
    if (meets) return Status::ok();
    const uint64_t total = budget;
    // 2. Solution-guided check. It also internalizes the whole encoding, which costs in proportion
    // to its size; a context cancelled in the middle of that is not trusted any further.
    {
      z3::expr_vector asm_all = enc.orientation(res.best, [](int, int) { return true; });
      const uint64_t size = static_cast<uint64_t>(enc.num_free_pairs()) + 4ull * dag.num_ops();
      const uint64_t share = std::min(budget, std::max(total / 10, 150 * size));
      Result<Outcome> o = check(enc, asm_all, share);
      if (!o.ok()) return o.status();
      if (*o != Outcome::kSat) {
        res.status = out_of_time() || *o == Outcome::kUnknown ? "stopped: the budget ran out while Z3 loaded the encoding"
                                                               : "stopped: the guided check failed";
        return Status::ok();
      }
      Result<bool> t = take_model(enc);
      if (!t.ok()) return t.status();
      report("guided");
      if (broken || proven()) return Status::ok();
    }
    PS_RETURN_IF_ERROR(tighten(enc));
    // 3/4. Descent in probes: ask for C <= best - step (an assumption), step = 1/8 of the gap in
    // units (so fine time units do not crawl), 1 near the end. UNSAT with step > 1 raises the proven
    // bound to best - step + 1 and shrinks the step; UNSAT with step 1 proves optimality. When a
    // probe runs out, one LNS pass over windows of microbatches; a pass that finds nothing doubles
    // the probe, until the probe is the whole remaining budget.
    const int M = dag.microbatches;
    const int W = opt.lns_window;
    const bool lns_possible = W > 0 && M > W;
    uint64_t probe = std::max<uint64_t>(lns_possible ? total / 32 : total, 1);
    int64_t step = std::max<int64_t>(1, (res.best.makespan - res.bound) / 8);
    while (!out_of_time()) {
      step = std::min(step, std::max<int64_t>(1, (res.best.makespan - res.bound) / 8));
      const int64_t target = res.best.makespan - step;
      z3::expr_vector goal(enc.ctx());
      if (step > 1) goal.push_back(enc.makespan() <= enc.ctx().int_val(target));
      Result<Outcome> o = check(enc, goal, probe);
      if (!o.ok()) return o.status();
      if (*o == Outcome::kUnsat) {
        res.bound = std::max(res.bound, target + 1);
        report("descent");
        if (proven()) return Status::ok();
        step = std::max<int64_t>(1, step / 4);
        continue;
      }
      if (*o == Outcome::kSat) {
        Result<bool> t = take_model(enc);
        if (!t.ok()) return t.status();
        if (broken) return Status::ok();
        if (!*t) return Status::error(ErrorCode::kRuntime, "Z3 returned a model that is not better than C <= best - 1");
        report("descent");
        if (proven()) return Status::ok();
        PS_RETURN_IF_ERROR(tighten(enc));
        continue;
      }
      if (probe >= budget) break;
      if (lns_possible) {
        Result<bool> imp = lns_pass(enc, std::max<uint64_t>(total / 128, 1));
        if (!imp.ok()) return imp.status();
        if (res.optimal || broken) return Status::ok();
        if (*imp) continue;
      }
      probe *= 2;
    }
    res.status = wall_left() <= 0.01 ? "time limit" : "budget exhausted";
    return Status::ok();
  }
};

}  // namespace

Result<SolveResult> solve(const OpDag& dag, const TimedOrder& incumbent, int64_t lower_bound,
                          const SolveOptions& options) {
  Driver drv(dag, options);
  Status st = drv.run(incumbent, lower_bound);
  drv.res.seconds = drv.elapsed();
  if (!st.is_ok()) return st;
  return std::move(drv.res);
}

}  // namespace ps
