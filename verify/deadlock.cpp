// deadlock.cpp — see deadlock.h.
#include "verify/deadlock.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "verify/comm_rules.h"
#include "verify/diag.h"
#include "verify/rules.h"

namespace ps::verify_detail {
namespace {

class Execution {
 public:
  Execution(const OpTable& t, Semantics sem) : t_(t), sem_(sem) {
    const int D = t.devices();
    const int N = t.size();
    ptr_.assign(D, 0);
    done_.assign(N, 0);
    partner_.assign(N, kNoOp);
    for (int id = 0; id < N; ++id)
      if (is_comm(t.op(id).type)) partner_[id] = t.partner(id);
    if (sem == Semantics::kPosted) {
      recv_of_.assign(N, kNoOp);
      for (int id = 0; id < N; ++id)
        if (!is_comm(t.op(id).type)) recv_of_[id] = t.recv_for(id);
    }
    if (sem == Semantics::kGrouped) {
      group_begin_.assign(N, 0);
      group_end_.assign(N, 0);
      for (int d = 0; d < D; ++d) {
        for (int i = t.begin(d); i < t.end(d);) {
          if (!is_comm(t.op(i).type)) {
            ++i;
            continue;
          }
          int j = i;
          while (j < t.end(d) && is_comm(t.op(j).type)) ++j;
          for (int k = i; k < j; ++k) {
            group_begin_[k] = i - t.begin(d);
            group_end_[k] = j - t.begin(d);
          }
          i = j;
        }
      }
      in_group_.assign(D, 0);
      remaining_.assign(D, 0);
    }
  }

  void run() {
    const int D = t_.devices();
    queued_.assign(D, 1);
    for (int d = D - 1; d >= 0; --d) work_.push_back(d);
    while (!work_.empty()) {
      int d = work_.back();
      work_.pop_back();
      queued_[d] = 0;
      switch (sem_) {
        case Semantics::kRendezvous: step_rendezvous(d); break;
        case Semantics::kGrouped: step_grouped(d); break;
        case Semantics::kBuffered: step_buffered(d); break;
        case Semantics::kPosted: step_posted(d); break;
      }
    }
  }

  bool stuck(int d) const { return ptr_[d] < len(d); }
  // The op device d is blocked on (flat id). Precondition: stuck(d).
  int blocked_op(int d) const {
    int id = t_.id(d, ptr_[d]);
    if (sem_ == Semantics::kGrouped) {
      const int ge = t_.id(d, group_end_[id]);
      for (int k = id; k < ge; ++k)
        if (!done_[k]) return k;
    }
    return id;
  }
  int partner(int id) const { return partner_[id]; }
  // The op whose completion the blocked op `id` waits for: its partner; under posted, a compute op
  // waits for the SEND of the RECV that delivers its input.
  int awaited(int id) const { return is_comm(t_.op(id).type) ? partner_[id] : partner_[recv_of_[id]]; }
  // The comm op whose partner is awaited: `id` itself, or a blocked compute op's RECV (posted).
  int waiting_comm(int id) const { return is_comm(t_.op(id).type) ? id : recv_of_[id]; }
  // Program indices [first, last] of the group a comm op belongs to (grouped only).
  std::pair<int, int> group_of(int id) const { return {group_begin_[id], group_end_[id] - 1}; }

 private:
  int len(int d) const { return t_.end(d) - t_.begin(d); }
  void push(int d) {
    if (!queued_[d]) {
      queued_[d] = 1;
      work_.push_back(d);
    }
  }
  bool at(int id) const { return ptr_[t_.device(id)] == t_.index(id); }

  // Runs device d's compute ops up to its next comm op (a compute op never blocks); false when the
  // program ends first.
  bool reach_comm(int d) {
    while (ptr_[d] < len(d)) {
      const int id = t_.id(d, ptr_[d]);
      if (is_comm(t_.op(id).type)) return true;
      done_[id] = 1;
      ++ptr_[d];
    }
    return false;
  }

  void step_rendezvous(int d) {
    while (reach_comm(d)) {
      const int id = t_.id(d, ptr_[d]);
      const int q = partner_[id];
      if (q == kNoOp || !at(q)) return;
      done_[id] = done_[q] = 1;
      ++ptr_[d];
      ++ptr_[t_.device(q)];
      push(t_.device(q));
    }
  }

  void step_buffered(int d) {
    while (ptr_[d] < len(d)) {
      const int id = t_.id(d, ptr_[d]);
      const OpType ty = t_.op(id).type;
      if (is_recv(ty)) {
        const int q = partner_[id];
        if (q == kNoOp || !done_[q]) return;
      }
      done_[id] = 1;
      ++ptr_[d];
      if (is_send(ty) && partner_[id] != kNoOp) push(t_.device(partner_[id]));
    }
  }

  // posted: SEND and RECV complete when reached (they are posted); a compute op whose input comes
  // through a RECV waits there until that RECV's SEND has been posted.
  void step_posted(int d) {
    while (ptr_[d] < len(d)) {
      const int id = t_.id(d, ptr_[d]);
      const OpType ty = t_.op(id).type;
      if (!is_comm(ty) && recv_of_[id] != kNoOp) {
        const int q = partner_[recv_of_[id]];
        if (q == kNoOp || !done_[q]) return;
      }
      done_[id] = 1;
      ++ptr_[d];
      if (is_send(ty) && partner_[id] != kNoOp) push(t_.device(partner_[id]));
    }
  }

  void step_grouped(int d) {
    while (reach_comm(d)) {
      const int id = t_.id(d, ptr_[d]);
      const int ge = t_.id(d, group_end_[id]);
      if (!in_group_[d]) {
        in_group_[d] = 1;
        remaining_[d] = ge - id;
        for (int k = id; k < ge; ++k) {
          const int q = partner_[k];
          if (q == kNoOp || done_[k]) continue;
          const int e = t_.device(q);
          // e is at q's group when it sits in a group that starts at its pointer and holds q.
          if (e == d || !in_group_[e] || t_.index(q) < ptr_[e] ||
              t_.index(q) >= group_end_[t_.id(e, ptr_[e])])
            continue;
          done_[k] = done_[q] = 1;
          --remaining_[d];
          if (--remaining_[e] == 0) push(e);
        }
      }
      if (remaining_[d] > 0) return;
      in_group_[d] = 0;
      ptr_[d] = group_end_[id];
    }
  }

  const OpTable& t_;
  Semantics sem_;
  std::vector<int> ptr_;
  std::vector<char> done_;
  std::vector<int> partner_;
  std::vector<int> recv_of_;  // compute op → the RECV delivering its input (posted only)
  std::vector<int> group_begin_;  // comm op → program index of its group's first op (grouped only)
  std::vector<int> group_end_;  // comm op → program index one past its group (grouped only)
  std::vector<char> in_group_;
  std::vector<int> remaining_;
  std::vector<int> work_;
  std::vector<char> queued_;
};

}  // namespace

DeadlockResult analyze_deadlock(const Schedule& s, const OpTable& t, Semantics sem) {
  (void)s;
  DeadlockResult res;
  Execution ex(t, sem);
  ex.run();
  const int D = t.devices();
  std::vector<int> stuck;
  for (int d = 0; d < D; ++d)
    if (ex.stuck(d)) stuck.push_back(d);
  if (stuck.empty()) return res;
  res.safe = false;

  // Wait-for graph: d → device of the partner of its blocked op (-1: that partner does not exist).
  std::vector<int> blocked(D, kNoOp), waits(D, -1), next(D, -1);
  for (int d : stuck) {
    blocked[d] = ex.blocked_op(d);
    waits[d] = ex.awaited(blocked[d]);
    next[d] = waits[d] == kNoOp ? -1 : t.device(waits[d]);
  }
  // The name of the op a blocked op waits for when it is not in the schedule.
  auto missing = [&](int b) { return to_string(partner_action(t.op(ex.waiting_comm(b)))); };
  const char* sem_name = semantics_name(sem);

  auto describe_device = [&](int d) {
    const int b = blocked[d];
    std::string s1 = fmt::format("device {} is blocked on {}", d, describe_op(t.index(b), t.op(b)));
    if (sem == Semantics::kGrouped) {
      auto [first, last] = ex.group_of(b);
      s1 += fmt::format(" (in its group of comm ops {}..{})", first, last);
    }
    const int c = ex.waiting_comm(b);
    if (c != b) s1 += fmt::format(" (its input comes through {})", describe_op(t.index(c), t.op(c)));
    if (waits[d] == kNoOp) {
      return s1 + fmt::format("; the partner '{}' is not in the schedule, so it can never come", missing(b));
    }
    const int q = waits[d];
    const int e = t.device(q);
    const int eb = blocked[e];
    std::string reach = sem == Semantics::kGrouped                                   ? "before reaching that op's group"
                        : sem == Semantics::kBuffered || sem == Semantics::kPosted ? "before issuing it"
                                                                                     : "before reaching it";
    return s1 + fmt::format("; it waits for {}, but device {} is blocked on {} {}",
                            describe_op_on(e, t.index(q), t.op(q)), e,
                            describe_op(t.index(eb), t.op(eb)), reach);
  };

  // Find every cycle and dead end of the functional graph; root[d] = index of the one d leads to.
  std::vector<int> state(D, 0), root(D, -1);  // 0 new, 1 on path, 2 finished
  struct Knot {
    std::vector<int> devices;  // cycle in wait order, or a single dead-end device
    bool cycle = false;
  };
  std::vector<Knot> knots;
  for (int d0 : stuck) {
    if (state[d0] == 2) continue;
    std::vector<int> path;
    int d = d0;
    while (d != -1 && state[d] == 0) {
      state[d] = 1;
      path.push_back(d);
      d = next[d];
    }
    int r;
    if (d != -1 && state[d] == 1) {  // new cycle starting at d
      Knot k;
      k.cycle = true;
      auto it = std::find(path.begin(), path.end(), d);
      k.devices.assign(it, path.end());
      auto mn = std::min_element(k.devices.begin(), k.devices.end());
      std::rotate(k.devices.begin(), mn, k.devices.end());
      r = static_cast<int>(knots.size());
      knots.push_back(std::move(k));
    } else if (d == -1) {  // dead end: the last device on the path waits for nothing that exists
      Knot k;
      k.devices.push_back(path.back());
      r = static_cast<int>(knots.size());
      knots.push_back(std::move(k));
    } else {
      r = root[d];
    }
    for (int p : path) {
      state[p] = 2;
      root[p] = r;
    }
  }

  for (size_t ki = 0; ki < knots.size(); ++ki) {
    const Knot& k = knots[ki];
    const int d0 = k.devices.front();
    const int b = blocked[d0];
    std::string msg;
    if (k.cycle) {
      std::string chain;
      for (int d : k.devices) chain += fmt::format("{} -> ", d);
      chain += fmt::format("{}", d0);
      msg = k.devices.size() == 1
                ? fmt::format("deadlock under {}: device {} waits for itself", sem_name, d0)
                : fmt::format("deadlock under {}: devices {} wait for each other in a cycle "
                              "(-> = waits for)",
                              sem_name, chain);
    } else {
      msg = fmt::format("deadlock under {}: device {} waits for '{}', which is not in the schedule",
                        sem_name, d0, missing(b));
    }
    std::vector<std::string> notes;
    for (int d : k.devices) notes.push_back(describe_device(d));
    for (int d : stuck) {
      if (root[d] != static_cast<int>(ki)) continue;
      if (std::find(k.devices.begin(), k.devices.end(), d) != k.devices.end()) continue;
      notes.push_back("also blocked behind it: " + describe_device(d));
    }
    res.witnesses.push_back(op_violation(rules::kDeadlock, d0, t.index(b), t.op(b), msg, std::move(notes)));
  }
  return res;
}

}  // namespace ps::verify_detail
