// bench/verify — how fast the checker is on big schedules (the scale target: a 64-device ×
// 256-microbatch × 2-stages-per-device schedule with comms, ~200k ops, verified with all rules,
// deadlock analysis under three semantics and the timing simulation in under 2 s on one core).
//
// Each row builds a compute-only schedule in this file — V placement (device d holds stages d and
// 2P-1-d), order from a greedy list scheduler (backward first, then the later stage's forward, then
// the earlier one's, then W; lowest microbatch first) with per-stage costs that vary by ±30% — then
// inserts comms (ps::insert_comms) and verifies the schedule with comms, as a file carrying comms
// would be. Times are the median of 3 runs, single-threaded.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <queue>
#include <vector>

#include "ir/comm_insert.h"
#include "ir/schedule.h"
#include "verify/verify.h"

namespace {

using namespace ps;
using Clock = std::chrono::steady_clock;

Problem v_problem(int P, int M, bool split) {
  Problem p;
  p.name = "bench";
  p.devices = P;
  p.microbatches = M;
  p.link = LinkModel{200, 5};
  const int S = 2 * P;
  for (int s = 0; s < S; ++s) {
    StageSpec st;
    st.device = s < P ? s : S - 1 - s;
    const double k = 0.7 + 0.6 * ((s * 37) % 11) / 10.0;  // deterministic ±30%
    st.fwd_ms = 1.0 * k;
    st.bwd_input_ms = 1.1 * k;
    st.bwd_weight_ms = 0.9 * k;
    st.activation_mb = 500;
    st.wgrad_stash_mb = 100;
    st.output_mb = 32;
    st.params_m = 100;
    st.split_backward = split;
    p.stages.push_back(st);
  }
  return p;
}

// Greedy list scheduling of the compute ops (data-flow timing, transfers included).
Schedule greedy_order(const Problem& p) {
  const int S = p.num_stages(), M = p.microbatches, D = p.devices;
  const bool split = p.stages[0].split_backward;
  // Op ids: (kind, s, m) with kind 0 = F, 1 = I/B, 2 = W.
  auto id = [&](int kind, int s, int m) { return (kind * S + s) * M + m; };
  const int N = 3 * S * M;
  std::vector<int> deps(N, 0);
  std::vector<double> ready(N, 0.0);
  for (int s = 0; s < S; ++s)
    for (int m = 0; m < M; ++m) {
      deps[id(0, s, m)] = s > 0 ? 1 : 0;
      deps[id(1, s, m)] = 1 + (s + 1 < S ? 1 : 0);
      deps[id(2, s, m)] = split ? 1 : -1;  // -1: does not exist
    }
  // Candidate sets per device, ordered by priority: (class, -stage for F, mb).
  using Key = std::tuple<int, int, int, int>;  // class, tiebreak, mb, op id
  std::vector<std::vector<Key>> cand(D);       // kept as heaps (min)
  auto key_of = [&](int op) {
    const int kind = op / (S * M), s = (op / M) % S, m = op % M;
    if (kind == 1) return Key{0, -s, m, op};
    if (kind == 0) return Key{1, -s, m, op};
    return Key{2, s, m, op};
  };
  auto push = [&](int op) {
    const int s = (op / M) % S;
    auto& h = cand[p.stages[s].device];
    h.push_back(key_of(op));
    std::push_heap(h.begin(), h.end(), std::greater<Key>());
  };
  for (int m = 0; m < M; ++m) push(id(0, 0, m));
  Schedule out;
  out.problem = p;
  out.programs.assign(D, {});
  std::vector<double> free_at(D, 0.0);
  // Devices in order of when they are free; a device with no ready candidate waits for the
  // earliest ready time among its candidates (candidates are only pushed once their deps finished).
  using DevKey = std::pair<double, int>;
  std::priority_queue<DevKey, std::vector<DevKey>, std::greater<DevKey>> devq;
  for (int d = 0; d < D; ++d) devq.push({0.0, d});
  std::vector<char> idle(D, 0);
  auto duration = [&](int op) {
    const int kind = op / (S * M), s = (op / M) % S;
    static constexpr OpType kSplit[] = {OpType::F, OpType::I, OpType::W};
    return compute_ms(p, StageId{s}, kind == 1 && !split ? OpType::B : kSplit[kind]);
  };
  auto finish = [&](int op, double end) {
    const int kind = op / (S * M), s = (op / M) % S, m = op % M;
    auto release = [&](int succ, double t) {
      ready[succ] = std::max(ready[succ], t);
      if (--deps[succ] == 0) {
        push(succ);
        const int d = p.stages[(succ / M) % S].device;
        if (idle[d]) {
          idle[d] = 0;
          devq.push({std::max(free_at[d], t), d});
        }
      }
    };
    auto xfer = [&](int a, int b) { return p.stages[a].device == p.stages[b].device ? 0.0 : p.boundary_transfer_ms(StageId{std::min(a, b)}); };
    if (kind == 0) {
      if (s + 1 < S) release(id(0, s + 1, m), end + xfer(s, s + 1));
      release(id(1, s, m), end);
    } else if (kind == 1) {
      if (s > 0) release(id(1, s - 1, m), end + xfer(s, s - 1));
      if (split) release(id(2, s, m), end);
    }
  };
  size_t placed = 0;
  const size_t total = static_cast<size_t>(S) * M * (split ? 3 : 2);
  while (!devq.empty()) {
    auto [t, d] = devq.top();
    devq.pop();
    auto& h = cand[d];
    if (h.empty()) {
      idle[d] = 1;
      continue;
    }
    // Best candidate that is ready by t; else wait for the earliest ready one.
    int best = -1;
    double earliest = 1e300;
    for (const Key& k : h) {
      const int op = std::get<3>(k);
      earliest = std::min(earliest, ready[op]);
      if (ready[op] <= t && (best < 0 || k < key_of(best))) best = op;
    }
    if (best < 0) {
      devq.push({earliest, d});
      continue;
    }
    h.erase(std::find(h.begin(), h.end(), key_of(best)));
    std::make_heap(h.begin(), h.end(), std::greater<Key>());
    const int kind = best / (S * M), s = (best / M) % S, m = best % M;
    const OpType type = kind == 0 ? OpType::F : kind == 2 ? OpType::W : split ? OpType::I : OpType::B;
    out.programs[d].push_back(Action{type, StageId{s}, MicrobatchId{m}, {}});
    const double end = std::max(t, ready[best]) + duration(best);
    free_at[d] = end;
    ++placed;
    finish(best, end);
    devq.push({end, d});
  }
  if (placed != total) fmt::print(stderr, "bench: generator placed {} of {} ops\n", placed, total);
  return out;
}

template <class F>
double median_seconds(F&& f, int reps = 3) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  struct Row {
    int P, M;
    bool split;
  };
  const Row rows[] = {{8, 32, false}, {16, 64, false}, {32, 128, false}, {64, 256, false}, {64, 256, true}};
  fmt::print("pipesmith bench/verify — checker throughput (V placement, 2 stages per device, greedy order;\n"
             "verify = all rules + deadlock under 3 semantics + timing simulation, on the schedule with comms;\n"
             "median of 3 runs, one thread)\n\n");
  fmt::print("{:>7} {:>6} {:>6} {:>5} {:>9} {:>11} {:>10} {:>11} {:>12} {:>10} {:>7} {:>6}\n", "devices",
             "mbs", "stages", "bwd", "ops", "insert_s", "verify_s", "ops/s", "compute-only", "makespan",
             "bubble", "valid");
  bool all_ok = true;
  for (const Row& r : rows) {
    Problem p = v_problem(r.P, r.M, r.split);
    Schedule compute_only = greedy_order(p);
    CommInsertResult ins;
    const double t_insert = median_seconds([&] { ins = insert_comms(compute_only); });
    if (!ins.ok) {
      fmt::print("insertion failed for P={} M={}\n", r.P, r.M);
      return 1;
    }
    const Schedule& with_comms = ins.schedule;
    Report rep;
    const double t_verify = median_seconds([&] { rep = verify(with_comms); });
    Report rep2;
    const double t_full = median_seconds([&] { rep2 = verify(compute_only); });
    const size_t ops = with_comms.num_ops();
    const bool ok = rep.valid && rep.sim && rep.safe_under.size() == 4 && rep2.valid;
    all_ok &= ok;
    fmt::print("{:>7} {:>6} {:>6} {:>5} {:>9} {:>11.3f} {:>10.3f} {:>11.0f} {:>11.3f}s {:>10.1f} {:>7.3f} {:>6}\n",
               r.P, r.M, p.num_stages(), r.split ? "I+W" : "B", ops, t_insert, t_verify, ops / t_verify, t_full,
               rep.sim ? rep.sim->makespan_ms : 0.0, rep.sim ? rep.sim->bubble_ratio : 0.0, ok ? "yes" : "NO");
  }
  fmt::print("\ncompute-only = verify() on the compute-only schedule (comm insertion included).\n");
  return all_ok ? 0 : 1;
}
