// comm_insert.cpp — the comm-insertion rule of ir/comm_insert.h.
//
// Guarantees: deterministic (same schedule → same programs), O(ops log ops), and the output is a
// projection of one global order in which every SEND/RECV pair occupies one position, so it is
// deadlock-free under rendezvous (and hence grouped, buffered and posted) semantics. `blocked` lists the
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
  std::vector<const Action*> ops;  // flat id → the op
  std::vector<int> offset;         // per device (and one past the last): flat id of its op 0
  std::vector<int> dev;            // flat id → device
  std::unordered_map<long long, int> by_key;  // (type, stage, mb) → flat id (first occurrence)

  explicit ComputeIndex(const Schedule& in) {
    const int D = in.num_devices();
    offset.assign(D + 1, 0);
    for (int d = 0; d < D; ++d) {
      offset[d] = static_cast<int>(ops.size());
      for (const Action& a : in.programs[d]) {
        by_key.emplace(key(a.type, a.stage.value(), a.mb.value()), static_cast<int>(ops.size()));
        ops.push_back(&a);
        dev.push_back(d);
      }
    }
    offset[D] = static_cast<int>(ops.size());
  }

  static long long key(OpType t, int s, int m) {
    return (static_cast<long long>(s) * (1LL << 31) + m) * kNumOpTypes + static_cast<int>(t);
  }
  int size() const { return static_cast<int>(ops.size()); }
  int index_of(int id) const { return id - offset[dev[id]]; }
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

// The order graph of step 2. Node ids: 0..N-1 computes; N + k for the k-th transfer pair
// (cross-device edge).
struct OrderGraph {
  struct Pair {
    int producer = kNone;
    int consumer = kNone;
  };
  std::vector<Pair> pairs;
  std::vector<int> indeg;                    // per compute: unmet predecessors
  std::vector<std::vector<int>> pairs_from;  // producer → its pair ids (0 or 1)
  std::vector<int> next_in_program;
};

class Inserter {
 public:
  explicit Inserter(const Schedule& in)
      : in_(in), pb_(in.problem), D_(in.num_devices()), S_(pb_.num_stages()), ix_(in), N_(ix_.size()) {}

  CommInsertResult run() {
    CommInsertResult res;
    time_data_flow();
    for (int d = 0; d < D_; ++d) {
      if (ptr_[d] < static_cast<int>(in_.programs[d].size())) {
        res.blocked = wait_cycle(d);
        res.ok = false;
        return res;
      }
    }
    res.schedule = sort_by_time(order_graph());
    res.ok = true;
    return res;
  }

 private:
  // Producers of a compute op (data flow; the program predecessor is handled separately).
  // Writes at most two into `out` and returns how many.
  int producers(int id, Producer* out) const {
    int n = 0;
    const Action& a = *ix_.ops[id];
    const int d = ix_.dev[id];
    const int st = a.stage.value(), m = a.mb.value();
    auto add = [&](OpType t, int s, int boundary) {
      Producer& p = out[n++];
      p = Producer{};
      p.wanted = Action{t, StageId{s}, a.mb, {}};
      p.id = (t == OpType::I) ? ix_.bwd(s, m) : ix_.find(t, s, m);
      if (p.id == kNone) return;
      p.wanted = *ix_.ops[p.id];
      if (ix_.dev[p.id] != d && boundary >= 0) p.delay_ms = pb_.boundary_transfer_ms(StageId{boundary});
    };
    switch (a.type) {
      case OpType::F:
        if (st > 0) add(OpType::F, st - 1, st - 1);
        break;
      case OpType::I:
      case OpType::B:
        add(OpType::F, st, -1);
        if (st + 1 < S_) add(OpType::I, st + 1, st);
        break;
      case OpType::W:
        add(OpType::I, st, -1);
        break;
      case OpType::R:
        add(OpType::F, st, -1);
        break;
      default:
        break;
    }
    return n;
  }

  // Consumers of an op: devices to wake when it ends.
  void wake_consumers(int id, std::vector<int>& work, std::vector<char>& queued) const {
    const Action& a = *ix_.ops[id];
    auto wake = [&](int c) {
      if (c == kNone) return;
      int e = ix_.dev[c];
      if (!queued[e]) {
        queued[e] = 1;
        work.push_back(e);
      }
    };
    const int s = a.stage.value(), m = a.mb.value();
    if (a.type == OpType::F) {
      if (s + 1 < S_) wake(ix_.find(OpType::F, s + 1, m));
      wake(ix_.bwd(s, m));
      wake(ix_.find(OpType::R, s, m));
    } else if (a.type == OpType::I || a.type == OpType::B) {
      if (s > 0) wake(ix_.bwd(s - 1, m));
      wake(ix_.find(OpType::W, s, m));
    }
  }

  // Times the op at the head of device d's program when all its producers have ended; returns
  // whether it did.
  bool time_head(int d) {
    int id = ix_.offset[d] + ptr_[d];
    double t = ptr_[d] > 0 ? end_[id - 1] : 0.0;
    Producer prod[2];
    const int np = producers(id, prod);
    for (int k = 0; k < np; ++k) {
      const Producer& p = prod[k];
      if (p.id == kNone || !done_[p.id]) return false;
      t = std::max(t, end_[p.id] + p.delay_ms);
    }
    start_[id] = t;
    end_[id] = t + compute_ms(pb_, ix_.ops[id]->stage, ix_.ops[id]->type);
    done_[id] = 1;
    ++ptr_[d];
    return true;
  }

  // ---- Step 1: data-flow timing (worklist over per-device pointers; O(ops)). ----
  void time_data_flow() {
    start_.assign(N_, 0);
    end_.assign(N_, 0);
    done_.assign(N_, 0);
    ptr_.assign(D_, 0);
    std::vector<int> work;
    std::vector<char> queued(D_, 1);
    for (int d = D_ - 1; d >= 0; --d) work.push_back(d);
    while (!work.empty()) {
      int d = work.back();
      work.pop_back();
      queued[d] = 0;
      const int len = static_cast<int>(in_.programs[d].size());
      while (ptr_[d] < len && time_head(d)) wake_consumers(ix_.offset[d] + ptr_[d] - 1, work, queued);
    }
  }

  // A stuck device's head op and the first producer it still waits for.
  BlockedOp blocked_of(int d) const {
    BlockedOp b;
    b.device = DeviceId{d};
    b.op_index = ptr_[d];
    int id = ix_.offset[d] + ptr_[d];
    b.op = *ix_.ops[id];
    Producer prod[2];
    const int np = producers(id, prod);
    for (int k = 0; k < np; ++k) {
      const Producer& p = prod[k];
      if (p.id == kNone || !done_[p.id]) {
        b.waits_for = p.wanted;
        if (p.id != kNone) b.waits_for_device = DeviceId{ix_.dev[p.id]};
        break;
      }
    }
    return b;
  }

  // Stuck: extract the wait cycle (each stuck device waits for the device of its head's first
  // unmet producer; following those edges from the lowest stuck device must revisit a device).
  std::vector<BlockedOp> wait_cycle(int first_stuck) const {
    std::vector<int> seen_at(D_, -1);
    std::vector<BlockedOp> path;
    int d = first_stuck;
    while (d != kNone && seen_at[d] < 0) {
      seen_at[d] = static_cast<int>(path.size());
      path.push_back(blocked_of(d));
      const std::optional<DeviceId> w = path.back().waits_for_device;
      const int next = w ? w->value() : kNone;
      if (next == d) break;  // the producer sits later on the same device
      d = next;
    }
    if (d == kNone || path.back().waits_for_device == path.back().device) {
      return {path.back()};  // missing producer or a local order problem
    }
    return std::vector<BlockedOp>(path.begin() + seen_at[d], path.end());
  }

  // ---- Step 2: global order by a time-keyed topological sort. ----
  // The graph: program order on each device, and every cross-device edge as a transfer pair
  // between its producer and its consumer.
  OrderGraph order_graph() const {
    OrderGraph g;
    g.indeg.assign(N_, 0);
    g.pairs_from.assign(N_, {});
    g.next_in_program.assign(N_, kNone);
    for (int d = 0; d < D_; ++d)
      for (int id = ix_.offset[d]; id + 1 < ix_.offset[d + 1]; ++id) {
        g.next_in_program[id] = id + 1;
        ++g.indeg[id + 1];
      }
    for (int id = 0; id < N_; ++id) {
      const Action& a = *ix_.ops[id];
      int consumer = kNone;
      const int s = a.stage.value(), m = a.mb.value();
      if (a.type == OpType::F && s + 1 < S_) consumer = ix_.find(OpType::F, s + 1, m);
      if ((a.type == OpType::I || a.type == OpType::B) && s > 0) consumer = ix_.bwd(s - 1, m);
      if (consumer == kNone || ix_.dev[consumer] == ix_.dev[id]) continue;
      g.pairs_from[id].push_back(static_cast<int>(g.pairs.size()));
      g.pairs.push_back({id, consumer});
      ++g.indeg[consumer];
    }
    return g;
  }

  // The sort, writing each node into the programs it touches: a compute into its device's, a pair
  // as a SEND into the producer's and a RECV into the consumer's.
  Schedule sort_by_time(OrderGraph g) const {
    // Min-heap on (time, kind, device, index): pairs (kind 0) before computes (kind 1) at equal time.
    using Key = std::tuple<double, int, int, int, int>;  // ..., node
    std::priority_queue<Key, std::vector<Key>, std::greater<Key>> heap;
    auto push_compute = [&](int id) { heap.emplace(start_[id], 1, ix_.dev[id], ix_.index_of(id), id); };
    for (int d = 0; d < D_; ++d)
      if (ix_.offset[d] < ix_.offset[d + 1] && g.indeg[ix_.offset[d]] == 0) push_compute(ix_.offset[d]);

    Schedule out = in_;
    out.predicted.clear();
    for (auto& p : out.programs) p.clear();
    auto release = [&](int id) {
      if (--g.indeg[id] == 0) push_compute(id);
    };
    while (!heap.empty()) {
      auto [t, kind, dev, idx, node] = heap.top();
      heap.pop();
      (void)t;
      (void)dev;
      (void)idx;
      if (kind == 1) {
        const int id = node;
        out.programs[ix_.dev[id]].push_back(*ix_.ops[id]);
        for (int k : g.pairs_from[id]) heap.emplace(end_[id], 0, ix_.dev[id], ix_.index_of(id), N_ + k);
        if (g.next_in_program[id] != kNone) release(g.next_in_program[id]);
      } else {
        const OrderGraph::Pair& p = g.pairs[node - N_];
        const Action& prod = *ix_.ops[p.producer];
        const Action& cons = *ix_.ops[p.consumer];
        const bool fwd = prod.type == OpType::F;
        Action send{fwd ? OpType::SEND_F : OpType::SEND_B, prod.stage, prod.mb, prod.loc};
        Action recv{fwd ? OpType::RECV_F : OpType::RECV_B, cons.stage, cons.mb, cons.loc};
        out.programs[ix_.dev[p.producer]].push_back(send);
        out.programs[ix_.dev[p.consumer]].push_back(recv);
        release(p.consumer);
      }
    }
    PS_ASSERT(out.num_ops() == static_cast<size_t>(N_) + 2 * g.pairs.size(),
              "comm insertion lost ops: the data-flow run finished, so the order graph is acyclic");
    return out;
  }

  const Schedule& in_;
  const Problem& pb_;
  const int D_, S_;
  const ComputeIndex ix_;
  const int N_;
  // Step 1's timing, per flat id, and how far each device's program is timed.
  std::vector<double> start_, end_;
  std::vector<char> done_;
  std::vector<int> ptr_;
};

}  // namespace

CommInsertResult insert_comms(const Schedule& in) { return Inserter(in).run(); }

}  // namespace ps
