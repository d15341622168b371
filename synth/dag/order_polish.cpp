// order_polish.cpp — first-improvement moves along each resource's list (order_polish.h).
#include "synth/dag/order_polish.h"

#include <algorithm>
#include <utility>

namespace ps {

namespace order_polish_detail {

constexpr int kKickMoves = 3;  // random moves per kick

int64_t sum_of_ends(const OpDag& dag, const TimedOrder& t) {
  int64_t s = 0;
  for (int i = 0; i < dag.num_ops(); ++i) s += t.start[i] + dag.ops[i].dur;
  return s;
}

// Moves list[from] to position `to`, the ops between shifting by one; move_op(list, to, from) undoes it.
void move_op(std::vector<int>& list, int from, int to) {
  if (to < from) {
    std::rotate(list.begin() + to, list.begin() + from, list.begin() + from + 1);
  } else {
    std::rotate(list.begin() + from, list.begin() + from + 1, list.begin() + to + 1);
  }
}

// The evaluations left: none once `max_evaluations` are used or the run is interrupted.
bool may_evaluate(int64_t used, int64_t max_evaluations, const std::atomic<bool>* interrupt) {
  return used < max_evaluations && !(interrupt && interrupt->load(std::memory_order_relaxed));
}

// First-improvement descent from `res.order` (its lists in `lists`), until a pass finds nothing or
// the evaluations reach `max_evaluations` (or the run is interrupted).
void descend(const OpDag& dag, std::vector<std::vector<int>>& lists, int reach, int64_t max_evaluations,
             const std::atomic<bool>* interrupt, PolishResult& res, int64_t& best_sum) {
  auto more = [&] { return may_evaluate(res.evaluations, max_evaluations, interrupt); };
  bool improved = true;
  while (improved && more()) {
    improved = false;
    for (size_t r = 0; r < lists.size() && more(); ++r) {
      std::vector<int>& list = lists[r];
      const int len = static_cast<int>(list.size());
      for (int i = 0; i < len && more(); ++i) {
        for (int delta = -reach; delta <= reach && more(); ++delta) {
          const int j = i + delta;
          if (delta == 0 || j < 0 || j >= len) continue;
          move_op(list, i, j);
          ++res.evaluations;
          Result<TimedOrder> t = evaluate_order(dag, lists, EdgeSet::kAll, true);
          bool keep = false;
          int64_t sum = 0;
          if (t.ok()) {
            sum = sum_of_ends(dag, *t);
            keep = t->makespan < res.order.makespan || (t->makespan == res.order.makespan && sum < best_sum);
          }
          if (keep) {
            res.order = std::move(t).value();
            best_sum = sum;
            ++res.improved;
            improved = true;
            break;  // list[i] changed: go on with the op now at i
          }
          move_op(list, j, i);  // undo
        }
      }
    }
  }
}

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace order_polish_detail

using namespace order_polish_detail;

PolishResult polish_order(const OpDag& dag, const TimedOrder& order, int reach, int64_t max_evaluations,
                          uint64_t seed, const std::atomic<bool>* interrupt) {
  PolishResult res;
  res.order = order;
  int64_t best_sum = sum_of_ends(dag, order);
  std::vector<std::vector<int>> lists = order.order;
  descend(dag, lists, reach, max_evaluations, interrupt, res, best_sum);
  // Kicks: a few random valid moves from the best order, then a descent; kept when better.
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&](uint64_t bound) {
    state += 0x9E3779B97F4A7C15ull;
    return mix(state) % bound;
  };
  std::vector<int> movable;
  for (size_t r = 0; r < lists.size(); ++r)
    if (lists[r].size() > 1) movable.push_back(static_cast<int>(r));
  while (may_evaluate(res.evaluations, max_evaluations, interrupt) && !movable.empty()) {
    PolishResult trial;
    trial.order = res.order;
    std::vector<std::vector<int>> tl = res.order.order;
    int64_t trial_sum = best_sum;
    for (int k = 0; k < kKickMoves && res.evaluations < max_evaluations; ++k) {
      std::vector<int>& list = tl[static_cast<size_t>(movable[next(movable.size())])];
      const int len = static_cast<int>(list.size());
      const int i = static_cast<int>(next(static_cast<uint64_t>(len)));
      const int j = std::clamp(i + static_cast<int>(next(2 * static_cast<uint64_t>(reach) + 1)) - reach, 0, len - 1);
      if (i == j) continue;
      move_op(list, i, j);
      ++res.evaluations;
      Result<TimedOrder> t = evaluate_order(dag, tl, EdgeSet::kAll, true);
      if (!t.ok()) {
        move_op(list, j, i);
        continue;
      }
      trial_sum = sum_of_ends(dag, *t);
      trial.order = std::move(t).value();
    }
    descend(dag, tl, reach, max_evaluations - res.evaluations, interrupt, trial, trial_sum);
    res.evaluations += trial.evaluations;
    if (trial.order.makespan < res.order.makespan ||
        (trial.order.makespan == res.order.makespan && trial_sum < best_sum)) {
      res.order = std::move(trial.order);
      best_sum = trial_sum;
      res.improved += trial.improved + 1;
    }
  }
  return res;
}

}  // namespace ps
