// justify.cpp — see justify.h.
#include "synth/dag/justify.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace ps {

namespace {

// Busy intervals [start, end) of one resource, sorted and disjoint.
using Busy = std::vector<std::pair<int64_t, int64_t>>;

void occupy(Busy& b, int64_t s, int64_t e) {
  if (e <= s) return;  // zero-length ops hold nothing
  b.insert(std::lower_bound(b.begin(), b.end(), std::make_pair(s, e)), {s, e});
}

// The earliest start >= `start` such that [start, start + dur) is free on every resource.
int64_t earliest_start(const std::vector<Busy>& busy, const int* r, int n, int64_t dur, int64_t start) {
  for (bool moved = true; moved;) {
    moved = false;
    for (int j = 0; j < n; ++j) {
      const Busy& b = busy[r[j]];
      // The first interval ending after `start`.
      auto it = std::upper_bound(b.begin(), b.end(), start,
                                 [](int64_t t, const std::pair<int64_t, int64_t>& x) { return t < x.second; });
      if (it == b.end()) continue;
      if (it->first < start + dur || (dur == 0 && it->first < start)) {
        start = it->second;
        moved = true;
      }
    }
  }
  return start;
}

// One right pass and one left pass; returns the left pass's per-resource order. pos[op] is the op's
// place in a topological order, at_pos its inverse.
std::vector<std::vector<int>> justify_once(const OpDag& dag, const TimedOrder& in, const std::vector<int>& pos,
                                           const std::vector<int>& at_pos) {
  const int n = dag.num_ops();
  // Ops sorted by (key, pos), ascending or both descending. pos is unique, so the order is total:
  // any sort gives the same. Where the keys' range leaves room, each op is one 64-bit word, its key
  // above its position, sorted as integers; else (key, pos, op) records are (either is several times
  // faster than sorting ids with a comparator that looks both up).
  struct Key {
    int64_t key;
    int pos;
    int op;
    bool operator<(const Key& o) const { return key != o.key ? key < o.key : pos < o.pos; }
  };
  std::vector<Key> keys;
  std::vector<uint64_t> words(n);
  std::vector<int> ops(n);
  const int pos_bits = std::bit_width(static_cast<unsigned>(n));
  const uint64_t pos_mask = (uint64_t{1} << pos_bits) - 1;
  auto sort_ops = [&](auto key_of, bool descending) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (int i = 0; i < n; ++i) {
      const int64_t k = descending ? -key_of(i) : key_of(i);
      lo = std::min(lo, k);
      hi = std::max(hi, k);
    }
    if (n > 0 && static_cast<int>(at_pos.size()) == n &&
        static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) < (uint64_t{1} << (62 - pos_bits))) {
      for (int i = 0; i < n; ++i) {
        const int64_t k = descending ? -key_of(i) : key_of(i);
        const int p = descending ? n - 1 - pos[i] : pos[i];
        words[i] = ((static_cast<uint64_t>(k) - static_cast<uint64_t>(lo)) << pos_bits) | static_cast<uint64_t>(p);
      }
      std::sort(words.begin(), words.end());
      for (int i = 0; i < n; ++i) {
        const int p = static_cast<int>(words[i] & pos_mask);
        ops[i] = at_pos[descending ? n - 1 - p : p];
      }
      return;
    }
    keys.resize(n);
    for (int i = 0; i < n; ++i) keys[i] = descending ? Key{-key_of(i), -pos[i], i} : Key{key_of(i), pos[i], i};
    std::sort(keys.begin(), keys.end());
    for (int i = 0; i < n; ++i) ops[i] = keys[i].op;
  };
  // Right pass, latest finish first. It works on mirrored time (t -> -t): an op placed as late as
  // possible before `end` is an op placed as early as possible after -end, and the busy lists,
  // filled from the end of the schedule backwards, then grow at their back.
  sort_ops([&](int i) { return in.start[i] + dag.ops[i].dur; }, true);
  std::vector<int64_t> right(n, 0);
  std::vector<Busy> busy(dag.num_resources());
  int r[2] = {0, 0};
  for (int i : ops) {
    int64_t end = in.makespan;
    for (const DagEdge& e : dag.successors(i)) end = std::min(end, right[e.op] - e.delay);
    const int k = dag.resources_of(i, r);
    const int64_t mirrored_start = earliest_start(busy, r, k, dag.ops[i].dur, -end);
    end = -mirrored_start;
    right[i] = end - dag.ops[i].dur;
    for (int j = 0; j < k; ++j) occupy(busy[r[j]], -end, -right[i]);
  }
  sort_ops([&](int i) { return right[i]; }, false);
  std::vector<int64_t> left(n, 0);
  for (Busy& b : busy) b.clear();
  for (int i : ops) {
    int64_t start = 0;
    for (const DagEdge& e : dag.pred[i]) start = std::max(start, left[e.op] + dag.ops[e.op].dur + e.delay);
    const int k = dag.resources_of(i, r);
    left[i] = earliest_start(busy, r, k, dag.ops[i].dur, start);
    for (int j = 0; j < k; ++j) occupy(busy[r[j]], left[i], left[i] + dag.ops[i].dur);
  }
  sort_ops([&](int i) { return left[i]; }, false);
  std::vector<std::vector<int>> order(dag.num_resources());
  for (int i : ops) {
    const int k = dag.resources_of(i, r);
    for (int j = 0; j < k; ++j) order[r[j]].push_back(i);
  }
  return order;
}

}  // namespace

TimedOrder justify(const OpDag& dag, const TimedOrder& order, int rounds) {
  TimedOrder best = order;
  if (dag.num_ops() == 0 || static_cast<int>(order.start.size()) != dag.num_ops()) return best;
  std::vector<int> pos(dag.num_ops(), 0);
  for (int i = 0; i < static_cast<int>(dag.topo.size()); ++i) pos[dag.topo[i]] = i;
  for (int round = 0; round < rounds; ++round) {
    // Memory is not part of the passes (it depends on the order of allocations and frees on a
    // device): the re-timing checks it and a round that breaks a cap is dropped.
    Result<TimedOrder> t = evaluate_order(dag, justify_once(dag, best, pos, dag.topo), EdgeSet::kAll, true);
    if (!t.ok() || t->makespan >= best.makespan) break;
    best = std::move(t).value();
  }
  return best;
}

bool justify_in_place(const OpDag& dag, TimedOrder& order, int rounds) {
  TimedOrder j = justify(dag, order, rounds);
  if (j.makespan >= order.makespan) return false;
  order = std::move(j);
  return true;
}

}  // namespace ps
