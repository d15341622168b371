// pytorch_rules.h — the tests' own reading of PyTorch torch.distributed.pipelining's documented
// rules for schedule CSVs, written from its behaviour (docs/pytorch.md), independent of pipesmith's
// readers: how `_load_csv` reads cells, what `_validate_schedule` demands, whether a program with
// SEND/RECV completes under a unit-step dry run as `_simulate_comms_compute` does it, and how
// point-to-point messages pair up.
#pragma once

#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace pstest::pt {

struct Act {
  int stage = -1;
  std::string type;  // "F", "B", "SEND_F", "REDUCE_GRAD", "OVERLAP_F_B", ...
  int mb = -1;       // -1: none
  std::vector<Act> subs;
  bool operator<(const Act& o) const { return std::tie(stage, type, mb) < std::tie(o.stage, o.type, o.mb); }
};
using Row = std::vector<std::optional<Act>>;  // nullopt: an empty (idle) cell

inline bool is_compute(const std::string& t) { return t == "F" || t == "I" || t == "W" || t == "B" || t == "OVERLAP_F_B"; }

// One cell as `_Action.from_str` reads it; false if it does not parse.
inline bool parse_cell(const std::string& raw, std::optional<Act>& out) {
  std::string s = raw;
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  if (s.empty()) {
    out.reset();
    return true;
  }
  if (s.front() == '(') {
    size_t close = s.find(')');
    if (close == std::string::npos || s.substr(close + 1) != "OVERLAP_F_B") return false;
    Act a;
    a.type = "OVERLAP_F_B";
    std::stringstream in(s.substr(1, close - 1));
    std::string part;
    while (std::getline(in, part, ';')) {
      std::optional<Act> sub;
      if (!parse_cell(part, sub) || !sub) return false;
      a.subs.push_back(*sub);
    }
    out = a;
    return !a.subs.empty();
  }
  static const std::regex re("^(\\d+)(F|I|B|W|UNSHARD|RESHARD|REDUCE_GRAD|SEND_F|RECV_F|SEND_B|RECV_B)(\\d*)$");
  std::smatch m;
  if (!std::regex_match(s, m, re)) return false;
  Act a;
  a.stage = std::stoi(m[1]);
  a.type = m[2];
  a.mb = m[3].length() ? std::stoi(m[3]) : -1;
  out = a;
  return true;
}

// Rows = lines; cells split at ','. Empty string on success, else what failed.
inline std::string parse_csv(const std::string& text, std::vector<Row>& rows) {
  rows.clear();
  std::stringstream in(text);
  std::string line;
  int ln = 0;
  while (std::getline(in, line)) {
    ++ln;
    Row row;
    if (!line.empty()) {
      std::stringstream cells(line + ",");
      std::string cell;
      while (std::getline(cells, cell, ',')) {
        std::optional<Act> a;
        if (!parse_cell(cell, a)) return "line " + std::to_string(ln) + ": bad cell '" + cell + "'";
        row.push_back(a);
      }
    }
    rows.push_back(row);
  }
  return "";
}

// The leaf actions of a cell (an OVERLAP_F_B's sub-actions), in order.
inline std::vector<Act> leaves(const Act& a) { return a.subs.empty() ? std::vector<Act>{a} : a.subs; }

// `_validate_schedule(actions, P, S, M)`: P rows; every stage on one rank; per stage, forwards of M
// distinct microbatches, B/I only after that microbatch's F, W only after its I, as many I as W, and
// B + I = M. Fills stage_rank. Empty string when valid.
inline std::string validate(const std::vector<Row>& rows, int P, int S, int M, std::vector<int>& stage_rank) {
  if (static_cast<int>(rows.size()) != P) return "expected " + std::to_string(P) + " ranks, got " + std::to_string(rows.size());
  std::map<int, std::map<std::string, std::set<int>>> seen;
  stage_rank.assign(S, -1);
  for (int r = 0; r < P; ++r)
    for (const auto& cell : rows[r]) {
      if (!cell) continue;
      for (const Act& a : leaves(*cell)) {
        if (a.stage < 0 || a.stage >= S) return "stage " + std::to_string(a.stage) + " out of range";
        auto& st = seen[a.stage];
        const std::string where = "rank " + std::to_string(r) + " stage " + std::to_string(a.stage) + " mb " + std::to_string(a.mb);
        if ((a.type == "B" || a.type == "I") && !st["F"].count(a.mb)) return where + ": backward before forward";
        if (a.type == "W" && !st["I"].count(a.mb)) return where + ": W before I";
        if (is_compute(a.type)) st[a.type].insert(a.mb);
        if (stage_rank[a.stage] < 0) stage_rank[a.stage] = r;
        if (stage_rank[a.stage] != r) return where + ": stage on two ranks";
      }
    }
  for (int s = 0; s < S; ++s) {
    auto& st = seen[s];
    const std::string what = "stage " + std::to_string(s);
    if (static_cast<int>(st["F"].size()) != M) return what + ": " + std::to_string(st["F"].size()) + " forwards";
    if (st["I"].size() != st["W"].size()) return what + ": I and W counts differ";
    if (static_cast<int>(st["B"].size() + st["I"].size()) != M) return what + ": backward count";
  }
  return "";
}

// Every cell of a compute-only file is F/I/W/B or OVERLAP_F_B (or idle).
inline std::string compute_only(const std::vector<Row>& rows) {
  for (size_t r = 0; r < rows.size(); ++r)
    for (const auto& c : rows[r])
      if (c && !is_compute(c->type)) return "rank " + std::to_string(r) + " has a '" + c->type + "' cell";
  return "";
}

// Unit-step dry run of a program with SEND/RECV (REDUCE_GRAD, UNSHARD and RESHARD are always
// ready; an OVERLAP_F_B runs its sub-actions): F needs its RECV_F or the previous stage's F on its
// rank; I/B the RECV_B or the next stage's I/B; SEND needs its compute; RECV needs the peer's SEND.
// Empty string when every rank finishes.
inline std::string dry_run(const std::vector<Row>& rows, const std::vector<int>& stage_rank) {
  const int P = static_cast<int>(rows.size()), S = static_cast<int>(stage_rank.size());
  std::vector<std::vector<Act>> prog(P);
  for (int r = 0; r < P; ++r)
    for (const auto& c : rows[r])
      if (c) prog[r].push_back(*c);
  std::vector<std::set<Act>> done(P);
  std::vector<size_t> pc(P, 0);
  auto has = [&](int r, int stage, const std::string& t, int mb) { return done[r].count(Act{stage, t, mb, {}}) > 0; };
  auto ready = [&](int r, const Act& a) {
    if (a.type == "F") return a.stage == 0 || has(r, a.stage, "RECV_F", a.mb) || has(r, a.stage - 1, "F", a.mb);
    if (a.type == "I" || a.type == "B")
      return a.stage == S - 1 || has(r, a.stage, "RECV_B", a.mb) || has(r, a.stage + 1, "I", a.mb) ||
             has(r, a.stage + 1, "B", a.mb);
    if (a.type == "SEND_F") return has(r, a.stage, "F", a.mb);
    if (a.type == "SEND_B") return has(r, a.stage, "I", a.mb) || has(r, a.stage, "B", a.mb);
    if (a.type == "RECV_F") return has(stage_rank[a.stage - 1], a.stage - 1, "SEND_F", a.mb);
    if (a.type == "RECV_B") return has(stage_rank[a.stage + 1], a.stage + 1, "SEND_B", a.mb);
    return true;
  };
  while (true) {
    bool progress = false, left = false;
    for (int r = 0; r < P; ++r) {
      if (pc[r] == prog[r].size()) continue;
      left = true;
      const Act& c = prog[r][pc[r]];
      bool ok = true;
      for (const Act& a : leaves(c)) ok = ok && ready(r, a);
      if (!ok) continue;
      for (const Act& a : leaves(c)) done[r].insert(Act{a.stage, a.type, a.mb, {}});
      ++pc[r];
      progress = true;
    }
    if (!left) return "";
    if (!progress) return "no rank can move (rank 0 at cell " + std::to_string(pc[0]) + ")";
  }
}

// The k-th SEND from rank a to rank b is the k-th RECV on b from a (same tensor).
inline std::string pairwise_order(const std::vector<Row>& rows, const std::vector<int>& stage_rank) {
  std::map<std::pair<int, int>, std::vector<std::tuple<int, int, bool>>> sends, recvs;
  for (int r = 0; r < static_cast<int>(rows.size()); ++r)
    for (const auto& c : rows[r]) {
      if (!c) continue;
      const Act& a = *c;
      if (a.type == "SEND_F") sends[{r, stage_rank[a.stage + 1]}].emplace_back(a.stage, a.mb, true);
      if (a.type == "SEND_B") sends[{r, stage_rank[a.stage - 1]}].emplace_back(a.stage, a.mb, false);
      if (a.type == "RECV_F") recvs[{stage_rank[a.stage - 1], r}].emplace_back(a.stage - 1, a.mb, true);
      if (a.type == "RECV_B") recvs[{stage_rank[a.stage + 1], r}].emplace_back(a.stage + 1, a.mb, false);
    }
  if (sends != recvs) return "sends and receives do not pair up in order";
  return "";
}

// Exactly one REDUCE_GRAD per stage, on its rank, after that stage's last B or W there.
inline std::string reduce_grad_once(const std::vector<Row>& rows, const std::vector<int>& stage_rank) {
  const int S = static_cast<int>(stage_rank.size());
  for (int s = 0; s < S; ++s) {
    const Row& row = rows[stage_rank[s]];
    int last_bw = -1, count = 0, at = -1;
    for (int i = 0; i < static_cast<int>(row.size()); ++i) {
      if (!row[i]) continue;
      for (const Act& a : leaves(*row[i]))
        if (a.stage == s && (a.type == "B" || a.type == "W")) last_bw = i;
      if (row[i]->type == "REDUCE_GRAD" && row[i]->stage == s) ++count, at = i;
    }
    for (int r = 0; r < static_cast<int>(rows.size()); ++r)
      if (r != stage_rank[s])
        for (const auto& c : rows[r])
          if (c && c->type == "REDUCE_GRAD" && c->stage == s) return "REDUCE_GRAD of stage " + std::to_string(s) + " off its rank";
    if (count != 1) return "stage " + std::to_string(s) + " has " + std::to_string(count) + " REDUCE_GRAD";
    if (at < last_bw) return "stage " + std::to_string(s) + ": REDUCE_GRAD before its last backward";
  }
  return "";
}

}  // namespace pstest::pt
