// toy_schedules.h — hand-built problems and schedules for the runtime tests (no dependence on the
// synthesizer or the baseline generators). Comm placement helpers:
//  * with_comms_global_order: a deadlock-free placement (each SEND/RECV pair adjacent in one global
//    order of all ops), used to give hand-built compute orders their comms;
//  * with_comms_naive: SEND right after the producer, RECV right before the consumer — the order
//    that deadlocks 1F1B under rendezvous semantics (the watchdog test).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/schedule.h"

namespace pstest {

// A layer type of a toy model: F = I = W = fwd_ms.
struct ToyType {
  char symbol;
  const char* name;
  double fwd_ms;
};

// A model with these layer types and one layer per symbol of `layers` (a chain).
inline ps::Model toy_model(const std::string& name, const std::vector<ToyType>& types, const std::string& layers) {
  ps::Model m;
  m.name = name;
  for (const ToyType& x : types) {
    ps::LayerType t;
    t.symbol = x.symbol;
    t.name = x.name;
    t.forward_ms = x.fwd_ms;
    t.backward_input_ms = x.fwd_ms;
    t.backward_weight_ms = x.fwd_ms;
    m.types[x.symbol] = t;
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    ps::Layer l;
    l.id = static_cast<int>(i);
    l.type = layers[i];
    m.layers.push_back(l);
  }
  return m;
}

inline ps::Action act(ps::OpType t, int s, int m) {
  ps::Action a;
  a.type = t;
  a.stage = ps::StageId{s};
  a.mb = ps::MicrobatchId{m};
  return a;
}

// S stages placed by `placement`, M microbatches, costs F=1, I=1, W=1 (per stage scaled by `fwd`).
inline ps::Problem toy_problem(int devices, int microbatches, const std::vector<int>& placement,
                               std::vector<double> fwd = {}) {
  ps::Problem p;
  p.name = "toy";
  p.devices = devices;
  p.microbatches = microbatches;
  for (size_t s = 0; s < placement.size(); ++s) {
    ps::StageSpec st;
    st.device = placement[s];
    st.fwd_ms = fwd.empty() ? 1.0 : fwd[s];
    st.bwd_input_ms = st.fwd_ms;
    st.bwd_weight_ms = st.fwd_ms;
    st.activation_mb = 1;
    st.wgrad_stash_mb = 0.5;
    st.output_mb = 0.1;
    p.stages.push_back(st);
  }
  return p;
}

inline std::vector<int> sequential_placement(int devices) {
  std::vector<int> v(devices);
  for (int d = 0; d < devices; ++d) v[d] = d;
  return v;
}

// 1F1B (Megatron warm-up P-d-1) on P devices, stage d on device d. split: I then W instead of B;
// defer_w: all W at the end of the program (a ZB-H1-like memory/time trade).
inline ps::Schedule one_f_one_b(int P, int M, bool split = false, bool defer_w = false) {
  ps::Schedule s;
  s.problem = toy_problem(P, M, sequential_placement(P));
  s.programs.resize(P);
  for (int d = 0; d < P; ++d) {
    auto& prog = s.programs[d];
    std::vector<ps::Action> ws;
    auto backward = [&](int m) {
      if (!split) {
        prog.push_back(act(ps::OpType::B, d, m));
        return;
      }
      prog.push_back(act(ps::OpType::I, d, m));
      if (defer_w) ws.push_back(act(ps::OpType::W, d, m));
      else prog.push_back(act(ps::OpType::W, d, m));
    };
    int f = 0, b = 0;
    const int warm = std::min(P - d - 1, M);
    for (int i = 0; i < warm; ++i) prog.push_back(act(ps::OpType::F, d, f++));
    while (f < M) {
      prog.push_back(act(ps::OpType::F, d, f++));
      backward(b++);
    }
    while (b < M) backward(b++);
    for (auto& w : ws) prog.push_back(w);
  }
  return s;
}

// GPipe on an arbitrary placement: per device, all F in stage order then all B in reverse stage order.
inline ps::Schedule gpipe(int P, int M, const std::vector<int>& placement) {
  ps::Schedule s;
  s.problem = toy_problem(P, M, placement);
  s.programs.resize(P);
  const int S = static_cast<int>(placement.size());
  for (int st = 0; st < S; ++st)
    for (int m = 0; m < M; ++m) s.programs[placement[st]].push_back(act(ps::OpType::F, st, m));
  for (int st = S - 1; st >= 0; --st)
    for (int m = 0; m < M; ++m) s.programs[placement[st]].push_back(act(ps::OpType::B, st, m));
  return s;
}

namespace detail {
inline bool is_backward(ps::OpType t) { return t == ps::OpType::I || t == ps::OpType::B; }
}  // namespace detail

// Deadlock-free comm placement for a compute-only schedule (see the file comment).
inline ps::Schedule with_comms_global_order(const ps::Schedule& in) {
  const ps::Problem& p = in.problem;
  const int P = in.num_devices(), S = p.num_stages(), M = p.microbatches;
  std::vector<std::vector<char>> f_done(S, std::vector<char>(M, 0)), b_done(S, std::vector<char>(M, 0)),
      i_done(S, std::vector<char>(M, 0));
  ps::Schedule out = in;
  for (auto& prog : out.programs) prog.clear();
  std::vector<size_t> idx(P, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int d = 0; d < P; ++d) {
      while (idx[d] < in.programs[d].size()) {
        const ps::Action a = in.programs[d][idx[d]];
        const int s = a.stage.value(), m = a.mb.value();
        bool ready = true;
        int producer = -1;
        ps::OpType send = ps::OpType::SEND_F, recv = ps::OpType::RECV_F;
        int send_stage = 0;
        if (a.type == ps::OpType::F && s > 0) {
          ready = f_done[s - 1][m];
          if (p.device_of(ps::StageId{s - 1}) != d) producer = p.device_of(ps::StageId{s - 1}), send_stage = s - 1;
        } else if (detail::is_backward(a.type)) {
          ready = f_done[s][m] && (s == S - 1 || b_done[s + 1][m]);
          if (s < S - 1 && p.device_of(ps::StageId{s + 1}) != d)
            producer = p.device_of(ps::StageId{s + 1}), send = ps::OpType::SEND_B, recv = ps::OpType::RECV_B, send_stage = s + 1;
        } else if (a.type == ps::OpType::W) {
          ready = i_done[s][m];
        }
        if (!ready) break;
        if (producer >= 0) {
          out.programs[producer].push_back(act(send, send_stage, m));
          out.programs[d].push_back(act(recv, s, m));
        }
        out.programs[d].push_back(a);
        if (a.type == ps::OpType::F) f_done[s][m] = 1;
        if (detail::is_backward(a.type)) b_done[s][m] = 1;
        if (a.type == ps::OpType::I) i_done[s][m] = 1;
        ++idx[d];
        progress = true;
      }
    }
  }
  for (int d = 0; d < P; ++d)
    if (idx[d] != in.programs[d].size()) throw std::runtime_error("toy schedule has a data-flow deadlock");
  return out;
}

// Naive placement: SEND right after the producing compute, RECV right before the consuming compute.
inline ps::Schedule with_comms_naive(const ps::Schedule& in) {
  const ps::Problem& p = in.problem;
  const int S = p.num_stages();
  ps::Schedule out = in;
  for (int d = 0; d < in.num_devices(); ++d) {
    auto& prog = out.programs[d];
    prog.clear();
    for (const ps::Action& a : in.programs[d]) {
      const int s = a.stage.value(), m = a.mb.value();
      if (a.type == ps::OpType::F && s > 0 && p.device_of(ps::StageId{s - 1}) != d) prog.push_back(act(ps::OpType::RECV_F, s, m));
      if (detail::is_backward(a.type) && s < S - 1 && p.device_of(ps::StageId{s + 1}) != d)
        prog.push_back(act(ps::OpType::RECV_B, s, m));
      prog.push_back(a);
      if (a.type == ps::OpType::F && s < S - 1 && p.device_of(ps::StageId{s + 1}) != d) prog.push_back(act(ps::OpType::SEND_F, s, m));
      if (detail::is_backward(a.type) && s > 0 && p.device_of(ps::StageId{s - 1}) != d) prog.push_back(act(ps::OpType::SEND_B, s, m));
    }
  }
  return out;
}

}  // namespace pstest
