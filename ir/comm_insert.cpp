// comm_insert.cpp — the comm-insertion rule of ir/comm_insert.h.
//
// Guarantees: deterministic (same schedule → same programs), O(ops log ops), and the output is a
// projection of one global order in which every SEND/RECV pair occupies one position, so it is
// deadlock-free under rendezvous (and hence grouped and buffered) semantics. `blocked` lists the
// devices of one wait cycle in cycle order (each entry waits for the next; the last for the first),
// or a single entry whose producer is missing or sits later on its own device.
//
// Step 1 (data-flow timing): each compute op starts when the previous compute of its device has
// ended and its producers have ended (plus the link time when the producer is on another device).
// Step 2 (global order): a topological sort of {computes, transfer pairs} driven by a min-heap keyed
// (time, kind, device, index) with time = start for a compute, producer end for a pair, and kind 0
// for pairs, 1 for computes. All edges go forward in time, so the sort visits nodes in time order
// (a node with an earlier time is never overtaken by one with a later time); at equal times a pair
// goes before the computes that are not its ancestors. Each device's new program is the subsequence
// of that order that touches the device. docs/verifier-rules.md ("comm insertion") has the proof.
#include "ir/comm_insert.h"

#include <algorithm>
#include <queue>
#include <tuple>
#include <unordered_map>

namespace ps {
namespace {

constexpr int kNone = -1;

// Compute ops of a compute-only schedule, addressed by a flat id (device offset + index).
struct ComputeIndex {
  int stages = 0;
  std::vector<int> offset;         // per device: flat id of its op 0
  std::vector<int> dev;            // flat id → device
  std::unordered_map<long long, int> by_key;  // (type, stage, mb) → flat id (first occurrence)

  static long long key(OpType t, int s, int m) {
    return (static_cast<long long>(s) * (1LL << 31) + m) * 8 + static_cast<int>(t);
  }
  int find(OpType t, int s, int m) const {
    auto it = by_key.find(key(t, s, m));
    return it == by_key.end() ? kNone : it->second;
  }
  // The backward of (s, m) that produces the input gradient: I if present, else B.
  int bwd(int s, int m) const {
    int i = find(OpType::I, s, m);
    return i != kNone ? i : find(OpType::B, s, m);
  }
};

struct Producer {
  int id = kNone;       // flat id of the producer, kNone if it does not exist
  Action wanted;        // what is needed (for messages when it is missing)
  double delay_ms = 0;  // link time when the producer sits on another device
};

}  // namespace

CommInsertResult insert_comms(const Schedule& in) {
  CommInsertResult res;
  const Problem& pb = in.problem;
  const int D = in.num_devices();
  const int S = pb.num_stages();

  ComputeIndex ix;
  ix.stages = S;
  ix.offset.assign(D + 1, 0);
  std::vector<const Action*> ops;
  for (int d = 0; d < D; ++d) {
    ix.offset[d] = static_cast<int>(ops.size());
    for (const Action& a : in.programs[d]) {
      ix.by_key.emplace(ComputeIndex::key(a.type, a.stage, a.mb), static_cast<int>(ops.size()));
      ops.push_back(&a);
      ix.dev.push_back(d);
    }
  }
  ix.offset[D] = static_cast<int>(ops.size());
  const int N = static_cast<int>(ops.size());
  auto index_of = [&](int id) { return id - ix.offset[ix.dev[id]]; };

  // Producers of a compute op (data flow; the program predecessor is handled separately).
  // Writes at most two into `out` and returns how many.
  auto producers = [&](int id, Producer* out) {
    int n = 0;
    const Action& a = *ops[id];
    const int d = ix.dev[id];
    auto add = [&](OpType t, int s, int boundary) {
      Producer& p = out[n++];
      p = Producer{};
      p.wanted = Action{t, s, a.mb, {}};
      p.id = (t == OpType::I) ? ix.bwd(s, a.mb) : ix.find(t, s, a.mb);
      if (p.id == kNone) return;
      p.wanted = *ops[p.id];
      if (ix.dev[p.id] != d && boundary >= 0) p.delay_ms = pb.boundary_transfer_ms(boundary);
    };
    switch (a.type) {
      case OpType::F:
        if (a.stage > 0) add(OpType::F, a.stage - 1, a.stage - 1);
        break;
      case OpType::I:
      case OpType::B:
        add(OpType::F, a.stage, -1);
        if (a.stage + 1 < S) add(OpType::I, a.stage + 1, a.stage);
        break;
      case OpType::W:
        add(OpType::I, a.stage, -1);
        break;
      default:
        break;
    }
    return n;
  };

  // ---- Step 1: data-flow timing (worklist over per-device pointers; O(ops)). ----
  std::vector<double> start(N, 0), end(N, 0);
  std::vector<char> done(N, 0);
  std::vector<int> ptr(D, 0);
  std::vector<int> work;
  std::vector<char> queued(D, 1);
  for (int d = D - 1; d >= 0; --d) work.push_back(d);
  // Consumers of an op: devices to wake when it ends.
  auto wake_consumers = [&](int id) {
    const Action& a = *ops[id];
    auto wake = [&](int c) {
      if (c == kNone) return;
      int e = ix.dev[c];
      if (!queued[e]) {
        queued[e] = 1;
        work.push_back(e);
      }
    };
    if (a.type == OpType::F) {
      if (a.stage + 1 < S) wake(ix.find(OpType::F, a.stage + 1, a.mb));
      wake(ix.bwd(a.stage, a.mb));
    } else if (a.type == OpType::I || a.type == OpType::B) {
      if (a.stage > 0) wake(ix.bwd(a.stage - 1, a.mb));
      wake(ix.find(OpType::W, a.stage, a.mb));
    }
  };
  while (!work.empty()) {
    int d = work.back();
    work.pop_back();
    queued[d] = 0;
    const int len = static_cast<int>(in.programs[d].size());
    while (ptr[d] < len) {
      int id = ix.offset[d] + ptr[d];
      double t = ptr[d] > 0 ? end[id - 1] : 0.0;
      bool ready = true;
      Producer prod[2];
      const int np = producers(id, prod);
      for (int k = 0; k < np; ++k) {
        const Producer& p = prod[k];
        if (p.id == kNone || !done[p.id]) {
          ready = false;
          break;
        }
        t = std::max(t, end[p.id] + p.delay_ms);
      }
      if (!ready) break;
      start[id] = t;
      end[id] = t + compute_ms(pb.stages.at(ops[id]->stage), ops[id]->type);
      done[id] = 1;
      ++ptr[d];
      wake_consumers(id);
    }
  }

  // Stuck: extract the wait cycle (each stuck device waits for the device of its head's first
  // unmet producer; following those edges from the lowest stuck device must revisit a device).
  std::vector<int> stuck;
  for (int d = 0; d < D; ++d)
    if (ptr[d] < static_cast<int>(in.programs[d].size())) stuck.push_back(d);
  if (!stuck.empty()) {
    auto blocked_of = [&](int d) {
      BlockedOp b;
      b.device = d;
      b.op_index = ptr[d];
      int id = ix.offset[d] + ptr[d];
      b.op = *ops[id];
      Producer prod[2];
      const int np = producers(id, prod);
      for (int k = 0; k < np; ++k) {
        const Producer& p = prod[k];
        if (p.id == kNone || !done[p.id]) {
          b.waits_for = p.wanted;
          b.waits_for_device = p.id == kNone ? kNone : ix.dev[p.id];
          break;
        }
      }
      return b;
    };
    std::vector<int> seen_at(D, -1);
    std::vector<BlockedOp> path;
    int d = stuck.front();
    while (d != kNone && seen_at[d] < 0) {
      seen_at[d] = static_cast<int>(path.size());
      path.push_back(blocked_of(d));
      int next = path.back().waits_for_device;
      if (next == d) break;  // the producer sits later on the same device
      d = next;
    }
    if (d == kNone || path.back().waits_for_device == path.back().device) {
      res.blocked.push_back(path.back());  // missing producer or a local order problem
    } else {
      res.blocked.assign(path.begin() + seen_at[d], path.end());
    }
    res.ok = false;
    return res;
  }

  // ---- Step 2: global order by a time-keyed topological sort. ----
  // Node ids: 0..N-1 computes; N + k for the k-th transfer pair (cross-device edge).
  struct Pair {
    int producer = kNone;
    int consumer = kNone;
  };
  std::vector<Pair> pairs;
  std::vector<int> indeg(N, 0);
  std::vector<std::vector<int>> pairs_from(N);  // producer → its pair ids (0 or 1)
  std::vector<int> next_in_program(N, kNone);
  for (int d = 0; d < D; ++d)
    for (int id = ix.offset[d]; id + 1 < ix.offset[d + 1]; ++id) {
      next_in_program[id] = id + 1;
      ++indeg[id + 1];
    }
  for (int id = 0; id < N; ++id) {
    const Action& a = *ops[id];
    int consumer = kNone;
    if (a.type == OpType::F && a.stage + 1 < S) consumer = ix.find(OpType::F, a.stage + 1, a.mb);
    if ((a.type == OpType::I || a.type == OpType::B) && a.stage > 0) consumer = ix.bwd(a.stage - 1, a.mb);
    if (consumer == kNone || ix.dev[consumer] == ix.dev[id]) continue;
    pairs_from[id].push_back(static_cast<int>(pairs.size()));
    pairs.push_back({id, consumer});
    ++indeg[consumer];
  }
  // Min-heap on (time, kind, device, index): pairs (kind 0) before computes (kind 1) at equal time.
  using Key = std::tuple<double, int, int, int, int>;  // ..., node
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> heap;
  auto push_compute = [&](int id) { heap.emplace(start[id], 1, ix.dev[id], index_of(id), id); };
  for (int d = 0; d < D; ++d)
    if (ix.offset[d] < ix.offset[d + 1] && indeg[ix.offset[d]] == 0) push_compute(ix.offset[d]);

  Schedule out = in;
  out.predicted.clear();
  for (auto& p : out.programs) p.clear();
  auto release = [&](int id) {
    if (--indeg[id] == 0) push_compute(id);
  };
  while (!heap.empty()) {
    auto [t, kind, dev, idx, node] = heap.top();
    heap.pop();
    (void)t;
    (void)dev;
    (void)idx;
    if (kind == 1) {
      const int id = node;
      out.programs[ix.dev[id]].push_back(*ops[id]);
      for (int k : pairs_from[id]) heap.emplace(end[id], 0, ix.dev[id], index_of(id), N + k);
      if (next_in_program[id] != kNone) release(next_in_program[id]);
    } else {
      const Pair& p = pairs[node - N];
      const Action& prod = *ops[p.producer];
      const Action& cons = *ops[p.consumer];
      const bool fwd = prod.type == OpType::F;
      Action send{fwd ? OpType::SEND_F : OpType::SEND_B, prod.stage, prod.mb, prod.loc};
      Action recv{fwd ? OpType::RECV_F : OpType::RECV_B, cons.stage, cons.mb, cons.loc};
      out.programs[ix.dev[p.producer]].push_back(send);
      out.programs[ix.dev[p.consumer]].push_back(recv);
      release(p.consumer);
    }
  }
  PS_ASSERT(out.num_ops() == static_cast<size_t>(N) + 2 * pairs.size(),
            "comm insertion lost ops: the data-flow run finished, so the order graph is acyclic");
  res.schedule = std::move(out);
  res.ok = true;
  return res;
}

}  // namespace ps
