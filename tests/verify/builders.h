// builders.h — schedules built in code for the checker's tests: from action strings, GPipe and
// 1F1B orders, random valid orders (random linear extensions of the op DAG), and mutations.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ir/comm_insert.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "verify/rules.h"
#include "verify/verify.h"

namespace vt {

using namespace ps;

// A problem with uniform costs. placement[s] = device of stage s.
inline Problem uniform_problem(int devices, int microbatches, const std::vector<int>& placement,
                               double f = 1, double i = 1, double w = 1, double xfer_mb = 0) {
  Problem p;
  p.name = "test";
  p.devices = devices;
  p.microbatches = microbatches;
  p.link = LinkModel{1, 0};  // 1 GB/s, no latency: transfer_ms = output_mb
  for (int d : placement) {
    StageSpec st;
    st.device = d;
    st.fwd_ms = f;
    st.bwd_input_ms = i;
    st.bwd_weight_ms = w;
    st.activation_mb = 100;
    st.wgrad_stash_mb = 20;
    st.output_mb = xfer_mb;
    st.params_m = 1;
    p.stages.push_back(st);
  }
  p.bytes_per_param = 2;
  return p;
}

inline std::vector<int> sequential(int stages) {
  std::vector<int> v(stages);
  for (int s = 0; s < stages; ++s) v[s] = s;
  return v;
}

// Programs from whitespace-separated action strings, one string per device; each action gets a
// location "test:<device+1>:<index+1>" so tests can check locations.
inline Schedule from_strings(const Problem& p, const std::vector<std::string>& rows) {
  Schedule s;
  s.problem = p;
  s.source = "test";
  for (size_t d = 0; d < rows.size(); ++d) {
    std::istringstream in(rows[d]);
    std::string tok;
    std::vector<Action> prog;
    while (in >> tok) {
      SourceLoc loc{"test", static_cast<int>(d) + 1, static_cast<int>(prog.size()) + 1};
      auto a = parse_action(tok, loc);
      REQUIRE_MESSAGE(a.ok(), a.status().str());
      prog.push_back(*a);
    }
    s.programs.push_back(prog);
  }
  return s;
}

// GPipe on a sequential placement: all F, then all B (fused).
inline Schedule gpipe(const Problem& p) {
  Schedule s;
  s.problem = p;
  s.programs.assign(p.devices, {});
  for (int st = 0; st < p.num_stages(); ++st) {
    auto& prog = s.programs[p.device_of(StageId{st})];
    for (int m = 0; m < p.microbatches; ++m) prog.push_back({OpType::F, StageId{st}, MicrobatchId{m}, {}});
    for (int m = 0; m < p.microbatches; ++m) prog.push_back({OpType::B, StageId{st}, MicrobatchId{m}, {}});
  }
  return s;
}

// 1F1B (Megatron: warm-up P-r-1 forwards) on a sequential placement, fused B. Requires M >= P.
inline Schedule one_f_one_b(const Problem& p) {
  Schedule s;
  s.problem = p;
  const int P = p.num_stages(), M = p.microbatches;
  s.programs.assign(p.devices, {});
  for (int r = 0; r < P; ++r) {
    auto& prog = s.programs[p.device_of(StageId{r})];
    const int warm = std::min(M, P - r - 1);
    int f = 0, b = 0;
    for (; f < warm; ++f) prog.push_back({OpType::F, StageId{r}, MicrobatchId{f}, {}});
    while (f < M) {
      prog.push_back({OpType::F, StageId{r}, MicrobatchId{f++}, {}});
      prog.push_back({OpType::B, StageId{r}, MicrobatchId{b++}, {}});
    }
    while (b < M) prog.push_back({OpType::B, StageId{r}, MicrobatchId{b++}, {}});
  }
  return s;
}

// A random compute-only schedule that is valid by construction: a random linear extension of the op
// DAG (F chain, backward chain, W after I, per-device any order), projected on the devices. `split`
// chooses I+W (true) or B per (stage, mb) at random when `mix` is set, else always I+W.
inline Schedule random_valid(const Problem& p, std::mt19937& rng, bool mix = true) {
  const int S = p.num_stages(), M = p.microbatches;
  struct Node {
    Action a;
    std::vector<int> succ;
    int indeg = 0;
  };
  std::vector<Node> nodes;
  std::vector<int> f(S * M), bw(S * M), w(S * M, -1);
  auto add = [&](OpType t, int s, int m) {
    nodes.push_back({Action{t, StageId{s}, MicrobatchId{m}, {}}, {}, 0});
    return static_cast<int>(nodes.size()) - 1;
  };
  auto edge = [&](int a, int b) {
    nodes[a].succ.push_back(b);
    ++nodes[b].indeg;
  };
  for (int s = 0; s < S; ++s)
    for (int m = 0; m < M; ++m) {
      const bool fused = mix && (rng() % 3 == 0);
      f[s * M + m] = add(OpType::F, s, m);
      bw[s * M + m] = add(fused ? OpType::B : OpType::I, s, m);
      if (!fused) w[s * M + m] = add(OpType::W, s, m);
    }
  for (int s = 0; s < S; ++s)
    for (int m = 0; m < M; ++m) {
      if (s > 0) edge(f[(s - 1) * M + m], f[s * M + m]);
      edge(f[s * M + m], bw[s * M + m]);
      if (s + 1 < S) edge(bw[(s + 1) * M + m], bw[s * M + m]);
      if (w[s * M + m] >= 0) edge(bw[s * M + m], w[s * M + m]);
    }
  std::vector<int> ready;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i)
    if (nodes[i].indeg == 0) ready.push_back(i);
  Schedule sch;
  sch.problem = p;
  sch.programs.assign(p.devices, {});
  while (!ready.empty()) {
    const size_t k = rng() % ready.size();
    const int n = ready[k];
    ready.erase(ready.begin() + static_cast<long>(k));
    sch.programs[p.device_of(nodes[n].a.stage)].push_back(nodes[n].a);
    for (int s2 : nodes[n].succ)
      if (--nodes[s2].indeg == 0) ready.push_back(s2);
  }
  return sch;
}

// Rules reported, in order, for messages.
inline std::string rules_of(const Report& r) {
  std::string s;
  for (const Violation& v : r.violations) s += v.rule + " ";
  return s;
}

inline const Violation* find_rule(const Report& r, const std::string& rule) {
  for (const Violation& v : r.violations)
    if (v.rule == rule) return &v;
  return nullptr;
}

// The violation's device as a number, -1 when it is about no one device (Violation::device is a
// std::optional<DeviceId>), for comparing with a table of expected cases.
inline int device_number(const Violation& v) { return v.device ? v.device->value() : -1; }

}  // namespace vt
