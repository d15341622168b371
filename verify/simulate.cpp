// simulate.cpp — see simulate.h.
#include "verify/simulate.h"

#include <algorithm>

#include "verify/memory.h"

namespace ps::verify_detail {
namespace {

class TimingRun {
 public:
  TimingRun(const Schedule& s, const OpTable& t, Semantics sem, bool recompute_in_backward)
      : s_(s), t_(t), sem_(sem) {
    const int D = t.devices();
    const int N = t.size();
    start_.assign(N, 0);
    end_.assign(N, 0);
    ready_.assign(N, 0);
    release_.assign(N, 0);
    done_.assign(N, 0);
    posted_.assign(N, 0);
    partner_.assign(N, kNoOp);
    aux_.assign(N, kNoOp);
    xfer_.assign(N, 0);
    computes_.resize(D);
    comms_.resize(D);
    cptr_.assign(D, 0);
    mptr_.assign(D, 0);
    prev_compute_.assign(N, kNoOp);
    dps_.resize(D);
    dptr_.assign(D, 0);
    unshard_of_.assign(N, kNoOp);
    for (int d = 0; d < D; ++d) {
      int last_compute = kNoOp;
      std::vector<int> last_backward(s.problem.num_stages(), kNoOp);  // per stage, so far in the program
      for (int id = t.begin(d); id < t.end(d); ++id) {
        const Action& a = t.op(id);
        if (is_data_parallel(a.type)) {
          dps_[d].push_back(id);
          // REDUCE_GRAD and RESHARD wait for the stage's last backward (the dependency rule put every
          // backward of its stage before them); UNSHARD is issued after the compute op before it.
          aux_[id] = a.type == OpType::UNSHARD ? last_compute : at(last_backward, a.stage);
          continue;
        }
        const int st = a.stage.value();
        if ((a.type == OpType::B || a.type == OpType::W) && st >= 0 && st < s.problem.num_stages())
          last_backward[st] = id;
        if (is_comm(a.type)) {
          prev_compute_[id] = last_compute;
          comms_[d].push_back(id);
          partner_[id] = t.partner(id);
          aux_[id] = t.compute_of_comm(id);
          const int b = t.boundary_of_comm(id);
          xfer_[id] = b >= 0 ? s.problem.boundary_transfer_ms(StageId{b}) : 0.0;
        } else {
          last_compute = id;
          computes_[d].push_back(id);
          aux_[id] = t.recv_for(id);
          if (st >= 0 && st < s.problem.num_stages() && s.problem.stages[st].fsdp)
            unshard_of_[id] = t.find(OpType::UNSHARD, st, 0);
        }
      }
    }
    if (recompute_in_backward) wait_with_backward();
    if (sem == Semantics::kGrouped) {
      // group_last_[k] (k = position in comms_[d]): position of the last op of its group.
      group_last_.resize(D);
      group_left_.assign(D, 0);
      group_issued_.assign(D, 0);
      for (int d = 0; d < D; ++d) {
        const auto& c = comms_[d];
        group_last_[d].assign(c.size(), 0);
        for (size_t k = c.size(); k-- > 0;) {
          const bool last = k + 1 == c.size() || c[k + 1] != c[k] + 1;
          group_last_[d][k] = last ? static_cast<int>(k) : group_last_[d][k + 1];
        }
      }
    }
  }

  Simulation run() {
    const int D = t_.devices();
    queued_.assign(D, 1);
    for (int d = D - 1; d >= 0; --d) work_.push_back(d);
    while (!work_.empty()) {
      const int d = work_.back();
      work_.pop_back();
      queued_[d] = 0;
      bool progress = true;
      while (progress) {
        progress = false;
        while (step_compute(d)) progress = true;
        while (step_comm(d)) progress = true;
        while (step_data_parallel(d)) progress = true;
      }
    }
    for (int d = 0; d < D; ++d)
      PS_ASSERT(cptr_[d] == static_cast<int>(computes_[d].size()) &&
                    mptr_[d] == static_cast<int>(comms_[d].size()) &&
                    dptr_[d] == static_cast<int>(dps_[d].size()),
                "timing simulation stuck on a schedule the deadlock analysis found safe");
    return finish();
  }

 private:
  // An R whose next compute op is its own I/B waits for the RECV that I/B waits for: the two run
  // back to back once the gradient is there, so the wait adds nothing the I/B did not wait for.
  void wait_with_backward() {
    for (const auto& cs : computes_)
      for (size_t k = 0; k + 1 < cs.size(); ++k) {
        const Action& r = t_.op(cs[k]);
        const Action& b = t_.op(cs[k + 1]);
        if (r.type == OpType::R && (b.type == OpType::I || b.type == OpType::B) && b.stage == r.stage && b.mb == r.mb)
          aux_[cs[k]] = aux_[cs[k + 1]];
      }
  }

  double duration_ms(const Action& a) const { return compute_ms(s_.problem, a.stage, a.type); }
  void push(int d) {
    if (!queued_[d]) {
      queued_[d] = 1;
      work_.push_back(d);
    }
  }
  // Time the comm stream of d is free for its comm op at position k.
  double comm_free(int d, int k) const { return k > 0 ? release_[comms_[d][k - 1]] : 0.0; }

  // The data-parallel stream of d: its next op once the previous one and what it waits for ended.
  bool step_data_parallel(int d) {
    if (dptr_[d] >= static_cast<int>(dps_[d].size())) return false;
    const int id = dps_[d][dptr_[d]];
    const int after = aux_[id];
    if (after != kNoOp && !done_[after]) return false;
    double t = dptr_[d] > 0 ? end_[dps_[d][dptr_[d] - 1]] : 0.0;
    if (after != kNoOp) t = std::max(t, end_[after]);
    start_[id] = t;
    end_[id] = t + data_parallel_ms(s_.problem, t_.op(id).stage, t_.op(id).type);
    done_[id] = 1;
    ++dptr_[d];
    return true;
  }

  bool step_compute(int d) {
    if (cptr_[d] >= static_cast<int>(computes_[d].size())) return false;
    const int id = computes_[d][cptr_[d]];
    const int r = aux_[id];
    if (r != kNoOp && !done_[r]) return false;
    const int u = unshard_of_[id];  // an FSDP stage's compute waits for its gathered weights
    if (u != kNoOp && !done_[u]) return false;
    double t = cptr_[d] > 0 ? end_[computes_[d][cptr_[d] - 1]] : 0.0;
    if (r != kNoOp) t = std::max(t, end_[r]);
    if (u != kNoOp) t = std::max(t, end_[u]);
    start_[id] = t;
    end_[id] = t + duration_ms(t_.op(id));
    done_[id] = 1;
    ++cptr_[d];
    return true;
  }

  // Ready time of a comm op given the stream is free at `free`; false if its producer has not run.
  bool ready_time(int id, double free, double& out) const {
    out = free;
    if (is_send(t_.op(id).type)) {
      const int p = aux_[id];
      if (!done_[p]) return false;
      out = std::max(out, end_[p]);
    }
    return true;
  }

  void complete_pair(int a, int b) {
    const double st = std::max(ready_[a], ready_[b]);
    start_[a] = start_[b] = st;
    end_[a] = end_[b] = st + xfer_[a];
    release_[a] = release_[b] = end_[a];
    done_[a] = done_[b] = 1;
  }

  bool step_comm(int d) {
    const int k = mptr_[d];
    if (k >= static_cast<int>(comms_[d].size())) return false;
    switch (sem_) {
      case Semantics::kRendezvous: return step_rendezvous(d, k);
      case Semantics::kGrouped: return step_grouped(d, k);
      case Semantics::kBuffered: return step_buffered(d, k);
      case Semantics::kPosted: return step_posted(d, k);
    }
    return false;
  }

  bool step_rendezvous(int d, int k) {
    const int id = comms_[d][k];
    if (!posted_[id]) {
      if (!ready_time(id, comm_free(d, k), ready_[id])) return false;
      posted_[id] = 1;
    }
    const int q = partner_[id];
    if (!posted_[q]) return false;  // the partner's side will complete the pair
    complete_pair(id, q);
    ++mptr_[d];
    const int e = t_.device(q);
    ++mptr_[e];
    push(e);
    return true;
  }

  bool step_buffered(int d, int k) {
    const int id = comms_[d][k];
    const int q = partner_[id];
    if (is_send(t_.op(id).type)) {
      if (!ready_time(id, comm_free(d, k), ready_[id])) return false;
      posted_[id] = 1;
      start_[id] = ready_[id];
      end_[id] = ready_[id] + xfer_[id];
      release_[id] = ready_[id];
      done_[id] = 1;
      ++mptr_[d];
      push(t_.device(q));
      return true;
    }
    if (!posted_[q]) return false;
    const double issue = comm_free(d, k);
    start_[id] = std::max(issue, ready_[q]);
    end_[id] = std::max(issue, ready_[q] + xfer_[q]);
    release_[id] = end_[id];
    done_[id] = 1;
    ++mptr_[d];
    return true;
  }

  // posted: a SEND is issued when its tensor is ready, a RECV at once; neither holds the stream. A
  // RECV completes when the data of its SEND has arrived (and it was issued).
  // PyTorch's runtime runs a rank's actions one after another and posts a comm op when it reaches
  // it: the op is issued once the compute op before it in the program has ended.
  bool step_posted(int d, int k) {
    const int id = comms_[d][k];
    const int q = partner_[id];
    const int before = prev_compute_[id];
    if (before != kNoOp && !done_[before]) return false;
    const double issue = std::max(comm_free(d, k), before != kNoOp ? end_[before] : 0.0);
    if (is_send(t_.op(id).type)) {
      if (!ready_time(id, issue, ready_[id])) return false;
      start_[id] = ready_[id];
      end_[id] = ready_[id] + xfer_[id];
      release_[id] = ready_[id];
      done_[id] = 1;
    } else {
      ready_[id] = release_[id] = issue;
    }
    posted_[id] = 1;
    ++mptr_[d];
    if (posted_[q]) {
      const int r = is_send(t_.op(id).type) ? q : id;
      const int snd = partner_[r];
      start_[r] = std::max(ready_[r], ready_[snd]);
      end_[r] = std::max(ready_[r], ready_[snd] + xfer_[snd]);
      done_[r] = 1;
      push(t_.device(r));
    }
    return true;
  }

  bool step_grouped(int d, int k) {
    const int last = group_last_[d][k];
    if (!group_issued_[d]) {
      double issue = comm_free(d, k);
      for (int j = k; j <= last; ++j) {
        double r;
        if (!ready_time(comms_[d][j], comm_free(d, k), r)) return false;
        issue = std::max(issue, r);
      }
      group_issued_[d] = 1;
      group_left_[d] = last - k + 1;
      for (int j = k; j <= last; ++j) {
        const int id = comms_[d][j];
        ready_[id] = issue;
        posted_[id] = 1;
      }
      for (int j = k; j <= last; ++j) {
        const int id = comms_[d][j];
        const int q = partner_[id];
        if (done_[id] || !posted_[q]) continue;
        complete_pair(id, q);
        --group_left_[d];
        const int e = t_.device(q);
        if (--group_left_[e] == 0) {
          finish_group(e);
          push(e);
        }
      }
    }
    if (group_left_[d] > 0) return false;
    if (group_issued_[d]) finish_group(d);
    return true;
  }

  // All ops of d's current group completed: the stream is released at the latest of their ends.
  void finish_group(int d) {
    const int k = mptr_[d];
    const int last = group_last_[d][k];
    double done_at = 0;
    for (int j = k; j <= last; ++j) done_at = std::max(done_at, end_[comms_[d][j]]);
    for (int j = k; j <= last; ++j) release_[comms_[d][j]] = done_at;
    mptr_[d] = last + 1;
    group_issued_[d] = 0;
  }

  Simulation finish() const {
    const int D = t_.devices();
    Simulation sim;
    double pipeline_end = 0;  // the last end of a compute or SEND/RECV
    sim.times.resize(D);
    sim.busy_ms.assign(D, 0);
    for (int d = 0; d < D; ++d) {
      for (int id = t_.begin(d); id < t_.end(d); ++id) {
        sim.times[d].push_back({start_[id], end_[id]});
        sim.makespan_ms = std::max(sim.makespan_ms, end_[id]);
        if (is_compute(t_.op(id).type)) sim.busy_ms[d] += end_[id] - start_[id];
        if (!is_data_parallel(t_.op(id).type)) pipeline_end = std::max(pipeline_end, end_[id]);
      }
    }
    sim.exposed_data_parallel_ms = sim.makespan_ms - pipeline_end;
    double idle = 0;
    for (int d = 0; d < D; ++d) {
      sim.idle_ms.push_back(sim.makespan_ms - sim.busy_ms[d]);
      idle += sim.idle_ms.back();
    }
    sim.bubble_ratio = sim.makespan_ms > 0 && D > 0 ? idle / (D * sim.makespan_ms) : 0.0;
    const auto mem = memory_by_program(s_);
    sim.memory.resize(D);
    for (int d = 0; d < D; ++d) {
      sim.peak_memory_mb.push_back(mem[d].peak_mb);
      sim.peak_op_index.push_back(mem[d].peak_op_index);
      auto& curve = sim.memory[d];
      curve.push_back({0.0, mem[d].model_state_mb});
      for (const MemoryStep& st : mem[d].steps) {
        const OpInterval& iv = sim.times[d][st.op_index];
        curve.push_back({st.at_start ? iv.start_ms : iv.end_ms, st.after_mb});
      }
    }
    return sim;
  }

  const Schedule& s_;
  const OpTable& t_;
  Semantics sem_;
  std::vector<double> start_, end_, ready_, release_, xfer_;
  std::vector<char> done_, posted_;
  std::vector<int> partner_, aux_;  // aux: compute → its RECV; comm → its compute
  std::vector<int> prev_compute_;   // comm → the compute op before it in its program (kNoOp: none)
  std::vector<std::vector<int>> computes_, comms_, dps_;  // dps_: data-parallel ops (aux_: the last backward)
  std::vector<int> cptr_, mptr_, dptr_;
  std::vector<int> unshard_of_;     // compute of an FSDP stage → its UNSHARD (kNoOp: none)
  std::vector<std::vector<int>> group_last_;
  std::vector<int> group_left_;
  std::vector<char> group_issued_;
  std::vector<int> work_;
  std::vector<char> queued_;
};

}  // namespace

Simulation simulate_timing(const Schedule& s, const OpTable& t, Semantics sem, bool recompute_in_backward) {
  return TimingRun(s, t, sem, recompute_in_backward).run();
}

}  // namespace ps::verify_detail
