// solve.cpp — guided check, LNS windows and linear descent over a portfolio of Z3 contexts.
//
// The portfolio runs in rounds: every live context runs one check (its own thread, its own Z3
// context, seed = options.seed + k) with the same rlimit share; the round's results are combined in
// context order (any UNSAT is a proof; the best SAT model wins, ties to the lower index), then every
// context gets the new bound. Nothing depends on which thread finished first, so a fixed seed and
// budget give the same answer as long as the wall-clock cap is not what stopped a check.
#include "synth/z3/solve.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <limits>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "ir/output_file.h"
#include "synth/z3/encode.h"
#include "synth/z3/z3_util.h"

namespace ps {

uint64_t rlimit_per_second() { return 2'000'000; }

bool warm_start_available() {
#ifdef PIPESMITH_Z3_INITIAL_VALUES
  return true;
#else
  return false;
#endif
}

uint64_t rlimit_budget(uint64_t rlimit, double seconds, int contexts) {
  if (rlimit) return rlimit;
  return static_cast<uint64_t>(std::max(0.0, seconds) * static_cast<double>(rlimit_per_second()) * std::max(1, contexts));
}

namespace {
// Seconds in a skip message, two significant digits and never an exponent: "0.0038", "9.5", "25".
std::string seconds_text(double s) {
  if (s >= 10) return fmt::format("{:.0f}", s);
  if (s >= 1) return fmt::format("{:.1f}", s);
  if (s >= 0.001) return fmt::format("{:.2g}", s);
  return "0.000";
}

// Upper bound on the pairs an encoding leaves open (ops on one resource that no path orders; a pair
// of transfers sharing both streams counts twice here, once in the encoding), plus 4 per op.
int64_t encoding_size(const OpDag& dag, const DeviceReach& reach) {
  int64_t n = 0;
  for (int r = 0; r < dag.num_resources(); ++r) {
    const auto& ops = dag.resource_ops[r];
    for (size_t x = 0; x < ops.size(); ++x)
      for (size_t y = x + 1; y < ops.size(); ++y) n += !reach.reaches(ops[x], ops[y]) && !reach.reaches(ops[y], ops[x]);
  }
  return n + 4ll * dag.num_ops();
}

// Seconds of one context that loading an encoding of `size` units takes (kLoadRlimitPerUnit each).
double load_seconds(int64_t size) {
  return static_cast<double>(kLoadRlimitPerUnit) * static_cast<double>(size) / static_cast<double>(rlimit_per_second());
}

using Clock = std::chrono::steady_clock;

// Frees encodings on threads of its own. Z3 frees a large encoding's terms for seconds and cannot be
// interrupted there; after an interrupt or at the time limit the caller has a schedule to check and
// write first (the CLI gives that under a second past a signal). The threads are joined as later
// ones are added, and at exit, before Z3's own statics go (this one is built later, on first use).
class Reaper {
 public:
  static Reaper& instance() {
    static Reaper r;
    return r;
  }
  void take(std::vector<std::unique_ptr<Encoding>> encs) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    jobs_.push_back({std::thread([e = std::move(encs), done]() mutable {
                       e.clear();
                       done->store(true);
                     }),
                     done});
  }
  ~Reaper() {
    for (Job& j : jobs_) j.thread.join();
  }

 private:
  struct Job {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::mutex mu_;
  std::list<Job> jobs_;
};

enum class Outcome { kSat, kUnsat, kUnknown };

// What one context's check produced (filled by its thread, read after the join).
struct CheckResult {
  Outcome outcome = Outcome::kUnknown;
  uint64_t used = 0;                  // rlimit units
  std::optional<TimedOrder> model;    // decoded order when SAT and valid
  bool invalid_model = false;         // SAT, but the model did not decode into a valid order
  std::string error;                  // a Z3 exception
};

// One check; touches only `enc` (safe to run concurrently on different contexts).
CheckResult run_check(Encoding& enc, const z3::expr_vector& assumptions, uint64_t share, double wall_left_s) {
  CheckResult out;
  if (share == 0 || wall_left_s <= 0.01) return out;
  Status st = enc.set_limits(static_cast<unsigned>(std::max(1.0, wall_left_s * 1000)), share);
  if (!st.is_ok()) {
    out.error = st.message();
    return out;
  }
  try {
    const uint64_t before = rlimit_count(enc.solver());
    const z3::check_result r = assumptions.empty() ? enc.solver().check() : enc.solver().check(assumptions);
    const uint64_t after = rlimit_count(enc.solver());
    out.used = after > before ? after - before : 0;
    if (r == z3::unsat) out.outcome = Outcome::kUnsat;
    if (r == z3::sat) {
      out.outcome = Outcome::kSat;
      Result<TimedOrder> t = enc.decode_model();
      if (t.ok()) {
        out.model = std::move(t).value();
      } else {
        out.invalid_model = true;
      }
    }
  } catch (const z3::exception& e) {
    out.error = e.msg();
  }
  return out;
}

struct Driver {
  const OpDag& dag;
  const SolveOptions& opt;
  Clock::time_point t0 = Clock::now();
  uint64_t budget = 0;  // rlimit left, all contexts together
  SolveResult res;
  std::vector<std::unique_ptr<Encoding>> encs;
  std::vector<bool> live;  // false once a context returned an invalid model or failed to load

  Driver(const OpDag& d, const SolveOptions& o) : dag(d), opt(o) {}

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0).count(); }
  // The time limit less what destroying the encodings will take (kTeardownPerLoad; 0 before they exist).
  double teardown_s = 0;
  double wall_left() const { return opt.time_limit_s - teardown_s - elapsed(); }
  bool interrupted() const { return opt.interrupt && opt.interrupt->load(); }
  bool out_of_time() const { return wall_left() <= 0.01 || budget == 0 || interrupted(); }
  int live_count() const { return static_cast<int>(std::count(live.begin(), live.end(), true)); }

  // Without proofs (solve.h) res.bound steers the search; the bound reported is the input one.
  bool proofs() const { return opt.proofs && dag.bounds_are_proofs(); }
  int64_t input_bound = 0;

  void report(const char* phase) {
    if (!opt.progress) return;
    SolveProgress p;
    p.incumbent = res.best.makespan;
    p.bound = proofs() ? res.bound : std::min(input_bound, res.bound);
    p.elapsed_s = elapsed();
    p.phase = phase;
    opt.progress(p);
  }

  // One round: each live context k checks assumptions(k) with `share`. Charges the budget and
  // counts checks in context order. Returns the results (index = context).
  Result<std::vector<CheckResult>> round(const std::function<z3::expr_vector(Encoding&, int)>& assumptions,
                                         uint64_t share) {
    const int K = static_cast<int>(encs.size());
    std::vector<CheckResult> out(K);
    std::vector<z3::expr_vector> asms;
    asms.reserve(K);
    try {
      for (int k = 0; k < K; ++k) asms.push_back(live[k] ? assumptions(*encs[k], k) : z3::expr_vector(encs[k]->ctx()));
    } catch (const z3::exception& e) {
      return Status::error(ErrorCode::kRuntime, fmt::format("Z3 failed: {}", e.msg()));
    }
    const double left = interrupted() ? 0 : wall_left();  // run_check starts nothing without time
    if (live_count() == 1) {
      for (int k = 0; k < K; ++k)
        if (live[k]) out[k] = run_check(*encs[k], asms[k], share, left);
    } else {
      std::vector<std::thread> threads;
      for (int k = 0; k < K; ++k)
        if (live[k]) threads.emplace_back([&, k] { out[k] = run_check(*encs[k], asms[k], share, left); });
      for (auto& t : threads) t.join();
    }
    for (int k = 0; k < K; ++k) {
      if (!live[k]) continue;
      if (!out[k].error.empty()) return Status::error(ErrorCode::kRuntime, fmt::format("Z3 check failed: {}", out[k].error));
      ++res.checks;
      res.rlimit_used += out[k].used;
      budget -= std::min(budget, out[k].used);
      if (out[k].invalid_model) {
        live[k] = false;  // Z3 misbehaved (seen after cancelled checks): do not trust it again
        res.status = "a context returned a model that is not a valid order; it was dropped";
      }
    }
    return out;
  }

  // Best valid model of a round that beats the incumbent (ties: lower context index).
  bool take_best(std::vector<CheckResult>& rs) {
    int pick = -1;
    for (int k = 0; k < static_cast<int>(rs.size()); ++k) {
      if (!rs[k].model || rs[k].model->makespan >= res.best.makespan) continue;
      if (pick < 0 || rs[k].model->makespan < rs[pick].model->makespan) pick = k;
    }
    if (pick < 0) return false;
    res.best = std::move(*rs[pick].model);
    res.improved = true;
    if (opt.on_incumbent) opt.on_incumbent(res.best);
    return true;
  }

  bool proven() {
    if (res.best.makespan > res.bound) return false;
    res.optimal = true;
    res.status = "optimal";
    return true;
  }

  // Every context: C <= best - 1 from now on.
  Status tighten() {
    try {
      for (auto& e : encs) e->solver().add(e->makespan() <= e->ctx().int_val(res.best.makespan - 1));
    } catch (const z3::exception& e) {
      return Status::error(ErrorCode::kRuntime, fmt::format("Z3 failed: {}", e.msg()));
    }
    return Status::ok();
  }

  // One sweep of windows of opt.lns_window microbatches (step: half a window), K windows per round.
  // Orientations of pairs with both ops outside the window are fixed to the incumbent's.
  Result<bool> lns_pass(uint64_t share) {
    const int M = dag.microbatches;
    const int W = opt.lns_window;
    const int step = std::max(1, W / 2);
    std::vector<int> starts;
    for (int w0 = 0;; w0 += step) {
      starts.push_back(std::min(w0, M - W));
      if (std::min(w0, M - W) + W >= M) break;
    }
    bool improved = false;
    const int K = static_cast<int>(encs.size());
    for (size_t first = 0; first < starts.size() && !out_of_time() && live_count() > 0; first += K) {
      const TimedOrder incumbent = res.best;
      auto window_asms = [&](Encoding& enc, int k) {
        const size_t w = std::min(starts.size() - 1, first + static_cast<size_t>(k));
        const int lo = starts[w], hi = lo + W;
        return enc.orientation(incumbent, [&](int a, int b) {
          const int ma = dag.ops[a].mb, mb = dag.ops[b].mb;
          return (ma < lo || ma >= hi) && (mb < lo || mb >= hi);
        });
      };
      Result<std::vector<CheckResult>> rs = round(window_asms, std::min(share, budget / std::max(1, live_count())));
      if (!rs.ok()) return rs.status();
      if (take_best(*rs)) {
        improved = true;
        report("lns");
        if (proven()) return true;
        PS_RETURN_IF_ERROR(tighten());
      }
    }
    return improved;
  }

  // Budget of one whole-encoding check per context (the guided check, the hint): a tenth of the
  // total, but at least enough to load an encoding of this size, and never more than what is left.
  uint64_t single_check_share(uint64_t total, int K) const {
    const uint64_t size = static_cast<uint64_t>(res.free_pairs) + 4ull * dag.num_ops();
    return std::min(budget / K, std::max(total / 10 / K, kLoadRlimitPerUnit * size));
  }

  // The incumbent and the bound; when they meet, the solve is done before Z3 (the encoding is still
  // built for an SMT-LIB2 dump). Returns whether Z3 is needed.
  bool start(const TimedOrder& incumbent, int64_t lower_bound) {
    input_bound = lower_bound;
    res.best = incumbent;
    res.bound = std::min(lower_bound, incumbent.makespan);
    if (res.bound < res.best.makespan) return true;
    res.optimal = true;
    res.status = "heuristic meets bound";
    report("bound");
    return false;
  }

  // Ends the solve without Z3: the incumbent stands.
  Status skip(std::string why) {
    res.status = std::move(why);
    report("skipped");
    return Status::ok();
  }

  // Why no encoding is built when the reachability table would not be affordable.
  std::string too_many_ops_for_reach() const {
    return fmt::format("skipped: {} ops are too many for the pair encoding (its reachability table alone "
                       "would take {:.1f} GB)",
                       dag.num_ops(), static_cast<double>(DeviceReach::bytes_for(dag.num_ops())) / 1e9);
  }

  // Why no encoding is built when even 4 units per op exceed the budget, or "" when they do not.
  std::string too_large_by_ops(int K) const {
    const uint64_t floor = kLoadRlimitPerUnit * 4ull * static_cast<uint64_t>(dag.num_ops());
    if (budget / static_cast<uint64_t>(K) >= floor) return "";
    return fmt::format("skipped: an encoding of {} ops needs at least {} s to load, more than the "
                       "{} s budget",
                       dag.num_ops(), seconds_text(static_cast<double>(floor) / rlimit_per_second()),
                       seconds_text(static_cast<double>(budget) / K / rlimit_per_second()));
  }

  // Why no encoding is built when its open pairs take longer to load than the budget, or "" when not.
  std::string too_large_by_pairs(int64_t size, int K) const {
    const uint64_t need = kLoadRlimitPerUnit * static_cast<uint64_t>(size);
    if (budget / static_cast<uint64_t>(K) >= need) return "";
    return fmt::format("skipped: an encoding of {} open pairs needs about {} s to load, more than the "
                       "{} s budget",
                       size - 4ll * dag.num_ops(), seconds_text(static_cast<double>(need) / rlimit_per_second()),
                       seconds_text(static_cast<double>(budget) / K / rlimit_per_second()));
  }

  // One encoding per context (seeds seed + k), each with C <= incumbent; the SMT-LIB2 dump of the first.
  Status build_encodings(const DeviceReach& reach, int K) {
    for (int k = 0; k < K; ++k) {
      EncodeOptions eo;
      eo.memory = opt.memory;
      eo.seed = opt.seed + static_cast<unsigned>(k);
      Result<std::unique_ptr<Encoding>> er = Encoding::create(dag, reach, eo);
      if (!er.ok()) return er.status();
      encs.push_back(std::move(er).value());
      live.push_back(true);
    }
    if (opt.warm_start)
      for (auto& e : encs) PS_RETURN_IF_ERROR(e->warm_start(res.best));
    res.free_pairs = encs[0]->num_free_pairs();
    res.memory_constraints = encs[0]->num_memory_constraints();
    try {
      for (auto& e : encs) e->solver().add(e->makespan() <= e->ctx().int_val(res.best.makespan));
    } catch (const z3::exception& e) {
      return Status::error(ErrorCode::kRuntime, fmt::format("Z3 failed: {}", e.msg()));
    }
    if (!opt.dump_smt2.empty()) {
      PS_RETURN_IF_ERROR(write_output_file(opt.dump_smt2, encs[0]->to_smt2()));
      res.smt2_written = true;
    }
    return Status::ok();
  }

  // 2. Solution-guided check. It also internalizes the whole encoding, which costs in proportion
  // to its size; a context cancelled in the middle of that is not trusted any further. Returns
  // whether the solve is over (proven, or no context left).
  Result<bool> guided_check(uint64_t total, int K) {
    const uint64_t share = single_check_share(total, K);
    const TimedOrder start = res.best;
    Result<std::vector<CheckResult>> rs =
        round([&](Encoding& enc, int) { return enc.orientation(start, [](int, int) { return true; }); }, share);
    if (!rs.ok()) return rs.status();
    for (int k = 0; k < K; ++k)
      if ((*rs)[k].outcome != Outcome::kSat) live[k] = false;
    if (live_count() == 0) {
      res.status = interrupted() ? "stopped: interrupted"
                   : out_of_time() || (*rs)[0].outcome == Outcome::kUnknown
                       ? "stopped: the budget ran out while Z3 loaded the encoding"
                       : "stopped: the guided check failed";
      return true;
    }
    take_best(*rs);
    report("guided");
    return proven();
  }

  // 2b. The device hint: its compute orders fixed, the comm streams free, C <= best - 1. Returns
  // whether the solve is over (proven).
  Result<bool> hint_check(uint64_t total, int K) {
    if (!opt.device_hint || live_count() == 0) return false;
    const uint64_t share = single_check_share(total, K);
    const TimedOrder& hint = *opt.device_hint;
    Result<std::vector<CheckResult>> rs = round(
        [&](Encoding& enc, int) {
          return enc.orientation(hint, [&](int a, int b) { return !dag.ops[a].is_transfer() && !dag.ops[b].is_transfer(); });
        },
        share);
    if (!rs.ok()) return rs.status();
    if (!take_best(*rs)) return false;
    report("hint");
    if (proven()) return true;
    PS_RETURN_IF_ERROR(tighten());
    return false;
  }

  // 3/4. Descent in probes: ask for C <= best - step (an assumption), step = 1/8 of the gap in
  // units (so fine time units do not crawl), 1 near the end. UNSAT with step > 1 raises the proven
  // bound to best - step + 1 and shrinks the step; UNSAT with step 1 proves optimality. With two
  // or more contexts and a gap of 2 % or more, the odd ones ask C <= bound + gap/4 instead: UNSAT
  // raises the bound from below, SAT is a (much) better incumbent. When a probe runs out, one LNS pass over windows of
  // microbatches; a pass that finds nothing doubles the probe, until the probe is everything left.
  Status descend(uint64_t total, int K) {
    const int M = dag.microbatches;
    const int W = opt.lns_window;
    const bool lns_possible = W > 0 && M > W;
    uint64_t probe = std::max<uint64_t>(lns_possible ? total / 32 / K : total, 1);
    int64_t step = std::max<int64_t>(1, (res.best.makespan - res.bound) / 8);
    while (!out_of_time() && live_count() > 0) {
      step = std::min(step, std::max<int64_t>(1, (res.best.makespan - res.bound) / 8));
      const int64_t target = res.best.makespan - step;
      // While the gap is 2 % or more (a loose bound is the likelier culprit), odd contexts raise the
      // bound from below instead: C <= bound + a quarter of the gap.
      const int64_t gap = res.best.makespan - res.bound;
      const int64_t raise = gap * 50 >= res.best.makespan ? std::min(target - 1, res.bound + gap / 4) : -1;
      auto target_of = [&](int k) { return k % 2 == 1 && raise >= res.bound ? raise : target; };
      const uint64_t share = std::min(probe, budget / std::max(1, live_count()));
      Result<std::vector<CheckResult>> rs = round(
          [&](Encoding& enc, int k) {
            z3::expr_vector goal(enc.ctx());
            if (target_of(k) < res.best.makespan - 1) goal.push_back(enc.makespan() <= enc.ctx().int_val(target_of(k)));
            return goal;
          },
          share);
      if (!rs.ok()) return rs.status();
      bool unsat = false, sat = false, unsat_top = false;
      for (int k = 0; k < static_cast<int>(rs->size()); ++k) {
        const CheckResult& c = (*rs)[k];
        if (c.outcome == Outcome::kUnsat) {
          unsat = true;
          unsat_top = unsat_top || target_of(k) == target;
          res.bound = std::max(res.bound, target_of(k) + 1);  // nothing at or below the target
        }
        sat = sat || c.model.has_value();
      }
      if (sat && take_best(*rs)) {
        report("descent");
        if (proven()) return Status::ok();
        PS_RETURN_IF_ERROR(tighten());
        continue;
      }
      if (unsat) {
        report("descent");
        if (proven()) return Status::ok();
        if (unsat_top) step = std::max<int64_t>(1, step / 4);
        continue;
      }
      if (sat) {
        // The encoding times the pipeline without its data-parallel stream (REDUCE_GRAD, UNSHARD): an
        // order it finds shorter can end no sooner once that stream is counted. Its UNSAT answers still
        // bound the iteration from below (the stream only adds), so the descent stops here.
        if (data_parallel_end(dag, res.best.start) > 0) {
          res.status = "stopped: the orders the encoding finds shorter end no sooner with the data-parallel step";
          break;
        }
        return Status::error(ErrorCode::kRuntime, "Z3 returned a model that is not better than C <= best - 1");
      }
      if (share * live_count() >= budget || budget == 0) break;  // the last probe had everything left
      if (lns_possible) {
        Result<bool> imp = lns_pass(std::max<uint64_t>(total / 128 / K, 1));
        if (!imp.ok()) return imp.status();
        if (res.optimal) return Status::ok();
        if (*imp) continue;
      }
      probe *= 2;
    }
    if (interrupted()) res.status = "stopped: interrupted";
    if (res.status.empty()) res.status = wall_left() <= 0.01 ? "time limit" : "budget exhausted";
    return Status::ok();
  }

  Status run(const TimedOrder& incumbent, int64_t lower_bound) {
    const bool needed = start(incumbent, lower_bound);
    if (!needed && opt.dump_smt2.empty()) return Status::ok();
    if (interrupted() && needed) {
      res.status = "stopped: interrupted";
      return Status::ok();
    }
    const int K = needed ? std::max(1, opt.contexts) : 1;
    budget = rlimit_budget(opt.rlimit, opt.time_limit_s, K);
    // Loading an encoding costs in proportion to its size, and Z3 neither stops for the rlimit nor
    // for its timeout while it internalizes: one too large for the budget would overrun the caller's
    // time limit many times over (48 stages x 32 microbatches on 8 devices: minutes for a 10 s
    // budget). Such an encoding is not built; the incumbent stands. Deterministic: sizes and rlimit.
    // Sizing it needs the reachability table (n² bits); where even the 4 units per op exceed the
    // budget, or the table would not be affordable, the encoding is skipped without it.
    // (Where only the SMT-LIB2 dump needed it, it is not written.)
    if (!DeviceReach::affordable(dag)) return needed ? skip(too_many_ops_for_reach()) : Status::ok();
    if (needed) {
      if (const std::string why = too_large_by_ops(K); !why.empty()) return skip(why);
    }
    DeviceReach reach(dag);
    const int64_t size = encoding_size(dag, reach);
    if (needed) {
      if (const std::string why = too_large_by_pairs(size, K); !why.empty()) return skip(why);
    }
    teardown_s = kTeardownPerLoad * K * load_seconds(size);
    PS_RETURN_IF_ERROR(build_encodings(reach, K));
    if (!needed) return Status::ok();
    const uint64_t total = budget;
    const InterruptWatcher watcher(opt.interrupt, [this] {
      for (const auto& e : encs) e->ctx().interrupt();
    });
    Result<bool> over = guided_check(total, K);
    if (!over.ok() || *over) return over.status();
    if (interrupted()) {  // nothing more to ask: not even the new bound (asserting it takes a while)
      res.status = "stopped: interrupted";
      return Status::ok();
    }
    PS_RETURN_IF_ERROR(tighten());
    over = hint_check(total, K);
    if (!over.ok() || *over) return over.status();
    return descend(total, K);
  }
};

}  // namespace

Result<SolveResult> solve(const OpDag& dag, const TimedOrder& incumbent, int64_t lower_bound,
                          const SolveOptions& options) {
  Driver drv(dag, options);
  Status st = drv.run(incumbent, lower_bound);
  drv.res.seconds = drv.elapsed();
  // Interrupted (a signal, the caller's time limit) or out of time: the encodings are freed beside
  // what the caller does next rather than before it (on a loaded machine freeing them can take
  // longer than the margin the time limit keeps for it).
  if ((drv.interrupted() || drv.wall_left() <= 0.01) && !drv.encs.empty())
    Reaper::instance().take(std::move(drv.encs));
  if (!drv.proofs() && drv.res.bound > lower_bound) {
    // UNSATs under caps stricter than the exact ones: the search is over, nothing is proven.
    drv.res.bound = std::min(lower_bound, drv.res.best.makespan);
    drv.res.optimal = drv.res.best.makespan <= drv.res.bound;
    if (!drv.res.optimal && drv.res.status == "optimal") {
      drv.res.status = "no better order under the rounded memory caps (not a proof: memory is not in whole units)";
    }
  }
  if (!st.is_ok() && drv.interrupted()) {
    // An interrupted context throws "canceled" from whatever call it was in (a constraint being
    // added, assumptions being built): the incumbent, only ever replaced by a checked order, stands.
    drv.res.status = "stopped: interrupted";
    return std::move(drv.res);
  }
  if (!st.is_ok()) return st;
  return std::move(drv.res);
}

double encoding_load_seconds(const OpDag& dag) {
  if (!DeviceReach::affordable(dag)) return std::numeric_limits<double>::infinity();
  const DeviceReach reach(dag);
  return load_seconds(encoding_size(dag, reach));
}

}  // namespace ps
