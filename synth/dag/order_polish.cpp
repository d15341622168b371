// order_polish.cpp — first-improvement moves along each resource's list (order_polish.h).
#include "synth/dag/order_polish.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

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

// The critical chain of a timed order, last op first: from an op that ends last, each step goes to
// the op it waited for — the previous op of its device when that one ends exactly at its start
// (preferred: the chain's blocks on one device are what the moves below reorder), else a
// predecessor whose end plus edge delay is its start — until an op that waited for nothing.
std::vector<int> critical_chain(const OpDag& dag, const TimedOrder& t, const std::vector<int>& pos) {
  int v = -1;
  int64_t last_end = -1;
  for (int i = 0; i < dag.num_ops(); ++i) {
    const int64_t end = t.start[i] + dag.ops[i].dur;
    if (end > last_end || (end == last_end && v >= 0 && dag.ops[v].is_transfer() && !dag.ops[i].is_transfer())) {
      v = i;
      last_end = end;
    }
  }
  std::vector<int> chain;
  while (v >= 0) {
    chain.push_back(v);
    int next = -1;
    const DagOp& o = dag.ops[v];
    if (!o.is_transfer() && pos[v] > 0) {
      const int u = t.order[static_cast<size_t>(o.device)][static_cast<size_t>(pos[v] - 1)];
      if (t.start[u] + dag.ops[u].dur == t.start[v]) next = u;
    }
    if (next < 0) {
      for (const DagEdge& e : dag.pred[v]) {
        if (t.start[e.op] + dag.ops[e.op].dur + e.delay == t.start[v]) {
          next = e.op;
          break;
        }
      }
    }
    v = next;
  }
  return chain;
}

// The moves of the critical chain's blocks (maximal runs of chain ops adjacent on one device):
// the block's first op to each later place in it and its last op to each earlier place (the
// neighbourhoods that can shorten a longest path, as in job-shop local search), an inner op to
// either end, and the first (last) op up to kBlockReach places before (after) the block.
constexpr int kBlockReach = 3;

struct Move {
  int device, from, to;
  bool operator<(const Move& o) const {
    return device != o.device ? device < o.device : from != o.from ? from < o.from : to < o.to;
  }
  bool operator==(const Move& o) const { return device == o.device && from == o.from && to == o.to; }
};

std::vector<Move> block_moves(const OpDag& dag, const TimedOrder& t, const std::vector<int>& pos) {
  std::vector<int> chain = critical_chain(dag, t, pos);
  std::reverse(chain.begin(), chain.end());
  std::vector<Move> moves;
  size_t a = 0;
  while (a < chain.size()) {
    if (dag.ops[chain[a]].is_transfer()) {
      ++a;
      continue;
    }
    const int d = dag.ops[chain[a]].device;
    size_t b = a;
    while (b + 1 < chain.size() && !dag.ops[chain[b + 1]].is_transfer() && dag.ops[chain[b + 1]].device == d &&
           pos[chain[b + 1]] == pos[chain[b]] + 1)
      ++b;
    const int first = pos[chain[a]], last = pos[chain[b]];
    const int len = static_cast<int>(t.order[static_cast<size_t>(d)].size());
    for (int q = first + 1; q <= last; ++q) {
      moves.push_back({d, first, q});
      moves.push_back({d, last, q - 1});
    }
    for (int q = first + 1; q < last; ++q) {
      moves.push_back({d, q, first});
      moves.push_back({d, q, last});
    }
    for (int q = 1; q <= kBlockReach; ++q) {
      if (first - q >= 0) moves.push_back({d, first, first - q});
      if (last + q < len) moves.push_back({d, last, last + q});
    }
    a = b + 1;
  }
  std::sort(moves.begin(), moves.end());
  moves.erase(std::unique(moves.begin(), moves.end()), moves.end());
  return moves;
}

// Best-improvement descent on the critical chain's block moves: each step times every move of the
// current chain (device orders only; the comm streams serve first come, first served, which
// evaluate_order times exactly) and keeps the one with the least (makespan, sum of ends) when it
// beats the incumbent's; it ends when none does, or on the evaluations or the interrupt.
void block_descent(const OpDag& dag, int64_t max_evaluations, const std::atomic<bool>* interrupt, PolishResult& res,
                   int64_t& best_sum) {
  const size_t P = static_cast<size_t>(dag.devices);
  std::vector<int> pos(static_cast<size_t>(dag.num_ops()), -1);
  while (may_evaluate(res.evaluations, max_evaluations, interrupt)) {
    std::vector<std::vector<int>> lists(res.order.order.begin(),
                                        res.order.order.begin() + static_cast<std::ptrdiff_t>(P));
    for (const std::vector<int>& list : lists)
      for (size_t k = 0; k < list.size(); ++k) pos[static_cast<size_t>(list[k])] = static_cast<int>(k);
    std::optional<TimedOrder> step;
    int64_t step_sum = 0;
    for (const Move& m : block_moves(dag, res.order, pos)) {
      if (!may_evaluate(res.evaluations, max_evaluations, interrupt)) break;
      std::vector<int>& list = lists[static_cast<size_t>(m.device)];
      move_op(list, m.from, m.to);
      ++res.evaluations;
      Result<TimedOrder> t = evaluate_order(dag, lists, EdgeSet::kAll, true);
      move_op(list, m.to, m.from);
      if (!t.ok()) continue;
      const int64_t sum = sum_of_ends(dag, *t);
      const bool beats = t->makespan < res.order.makespan || (t->makespan == res.order.makespan && sum < best_sum);
      if (beats && (!step || t->makespan < step->makespan || (t->makespan == step->makespan && sum < step_sum))) {
        step = std::move(t).value();
        step_sum = sum;
      }
    }
    if (!step) return;
    res.order = std::move(*step);
    best_sum = step_sum;
    ++res.improved;
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
                          uint64_t seed, const std::atomic<bool>* interrupt, bool block_moves) {
  PolishResult res;
  res.order = order;
  int64_t best_sum = sum_of_ends(dag, order);
  if (block_moves) block_descent(dag, max_evaluations, interrupt, res, best_sum);
  if (reach <= 0) return res;
  std::vector<std::vector<int>> lists = res.order.order;
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
    if (block_moves) {
      block_descent(dag, max_evaluations - res.evaluations, interrupt, trial, trial_sum);
      tl = trial.order.order;
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
