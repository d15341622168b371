// mem_bound.cpp — critical path and Jackson's preemptive single-device bound.
#include "synth/mem_bound.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <vector>

namespace ps {

int64_t device_relaxation_bound(const OpDag& dag, int resource) {
  // Preemptive schedule: at every moment run the released op with the longest tail.
  // The bound is max over ops of (completion + tail).
  std::vector<int> ops = dag.resource_ops[resource];
  std::sort(ops.begin(), ops.end(), [&](int a, int b) {
    return dag.head[a] != dag.head[b] ? dag.head[a] < dag.head[b] : a < b;
  });
  struct Item {
    int64_t tail;
    int op;
    bool operator<(const Item& o) const { return tail != o.tail ? tail < o.tail : op > o.op; }
  };
  std::priority_queue<Item> q;
  std::vector<int64_t> left(dag.num_ops(), 0);
  int64_t t = 0, bound = 0;
  size_t next = 0;
  while (next < ops.size() || !q.empty()) {
    if (q.empty()) t = std::max(t, dag.head[ops[next]]);
    while (next < ops.size() && dag.head[ops[next]] <= t) {
      const int op = ops[next++];
      left[op] = dag.ops[op].dur;
      q.push({dag.tail[op], op});
    }
    const Item it = q.top();
    // Run it until it ends or the next release, whichever comes first.
    const int64_t until = next < ops.size() ? dag.head[ops[next]] : t + left[it.op];
    const int64_t run = std::min(left[it.op], until - t);
    t += run;
    left[it.op] -= run;
    if (left[it.op] == 0) {
      q.pop();
      bound = std::max(bound, t + it.tail);
    }
  }
  return bound;
}

DagBound dag_lower_bound(const OpDag& dag) {
  DagBound b;
  b.units = dag.critical_path();
  b.reason = "critical path";
  for (int r = 0; r < dag.num_resources(); ++r) {
    const int64_t x = device_relaxation_bound(dag, r);
    if (x > b.units) {
      b.units = x;
      b.device = r;
      b.reason = fmt::format("{} {} (single-resource relaxation with heads and tails)",
                             r < dag.devices ? "device" : "comm stream of device", r % dag.devices);
    }
  }
  return b;
}

}  // namespace ps
