// Property tests: random valid schedules pass under every semantics with makespan >= lower bound;
// random single mutations are caught with the right rule; the deadlock decision agrees with an
// independent brute-force execution of the semantics (docs/semantics.md).
#include <doctest/doctest.h>

#include <map>
#include <random>

#include "builders.h"
#include "report/report.h"

using namespace vt;

namespace {

// Random problem shapes: sequential, looped (s mod P) or V placement; some with transfers.
Problem random_problem(std::mt19937& rng) {
  const int P = 1 + static_cast<int>(rng() % 4);
  const int M = 1 + static_cast<int>(rng() % 5);
  const int kind = static_cast<int>(rng() % 3);
  std::vector<int> placement;
  if (kind == 0) placement = sequential(P);
  if (kind == 1)
    for (int s = 0; s < 2 * P; ++s) placement.push_back(s % P);
  if (kind == 2) {
    for (int s = 0; s < P; ++s) placement.push_back(s);
    for (int s = P - 1; s >= 0; --s) placement.push_back(s);
  }
  const double xfer = (rng() % 2) ? 0.0 : 0.25 * static_cast<double>(1 + rng() % 4);
  Problem p = uniform_problem(P, M, placement, 1.0 + rng() % 3, 1.0 + rng() % 2, 0.5 * (rng() % 3), xfer);
  for (auto& st : p.stages) st.fwd_ms += 0.1 * static_cast<double>(rng() % 5);  // heterogeneous
  return p;
}

// ---- The oracle: the logical execution of docs/semantics.md, written as naively as possible
// (scan everything until nothing changes). Returns whether every op completes.
bool oracle_safe(const Schedule& s, Semantics sem) {
  const int D = s.num_devices();
  auto partner_of = [&](const Action& a) {
    Action p = a;
    switch (a.type) {
      case OpType::SEND_F: p = {OpType::RECV_F, StageId{a.stage.value() + 1}, a.mb, {}}; break;
      case OpType::RECV_F: p = {OpType::SEND_F, StageId{a.stage.value() - 1}, a.mb, {}}; break;
      case OpType::SEND_B: p = {OpType::RECV_B, StageId{a.stage.value() - 1}, a.mb, {}}; break;
      case OpType::RECV_B: p = {OpType::SEND_B, StageId{a.stage.value() + 1}, a.mb, {}}; break;
      default: break;
    }
    return p;
  };
  std::vector<size_t> ptr(D, 0);
  std::vector<std::vector<char>> done(D);
  for (int d = 0; d < D; ++d) done[d].assign(s.programs[d].size(), 0);
  auto locate = [&](const Action& a, int& dev, size_t& idx) {
    for (int d = 0; d < D; ++d)
      for (size_t i = 0; i < s.programs[d].size(); ++i)
        if (s.programs[d][i] == a) {
          dev = d;
          idx = i;
          return true;
        }
    return false;
  };
  // [first, last] of the comm run containing i on device d.
  auto group = [&](int d, size_t i, size_t& lo, size_t& hi) {
    lo = hi = i;
    while (lo > 0 && is_comm(s.programs[d][lo - 1].type)) --lo;
    while (hi + 1 < s.programs[d].size() && is_comm(s.programs[d][hi + 1].type)) ++hi;
  };
  bool changed = true;
  while (changed) {
    changed = false;
    for (int d = 0; d < D; ++d) {
      if (ptr[d] >= s.programs[d].size()) continue;
      const Action& a = s.programs[d][ptr[d]];
      if (sem == Semantics::kPosted) {  // comm ops post at once; a compute op waits for its RECV's SEND
        bool wait = false;
        if (a.type != OpType::W && !is_comm(a.type)) {
          const Action r{a.type == OpType::F ? OpType::RECV_F : OpType::RECV_B, a.stage, a.mb, {}};
          int rd = -1, e = -1;
          size_t ri = 0, j = 0;
          if (locate(r, rd, ri) && rd == d) wait = !(locate(partner_of(r), e, j) && done[e][j]);
        }
        if (!wait) {
          done[d][ptr[d]++] = 1;
          changed = true;
        }
        continue;
      }
      if (!is_comm(a.type)) {
        done[d][ptr[d]++] = 1;
        changed = true;
        continue;
      }
      int e = -1;
      size_t j = 0;
      const bool has = locate(partner_of(a), e, j);
      if (sem == Semantics::kRendezvous) {
        if (has && e != d && ptr[e] == j) {
          done[d][ptr[d]++] = 1;
          done[e][ptr[e]++] = 1;
          changed = true;
        }
      } else if (sem == Semantics::kBuffered) {
        if (is_send(a.type) || (has && done[e][j])) {
          done[d][ptr[d]++] = 1;
          changed = true;
        }
      } else {
        size_t lo, hi;
        group(d, ptr[d], lo, hi);
        for (size_t i = lo; i <= hi; ++i) {
          if (done[d][i]) continue;
          int e2;
          size_t j2;
          if (!locate(partner_of(s.programs[d][i]), e2, j2) || e2 == d) continue;
          if (done[e2][j2]) {
            done[d][i] = 1;
            changed = true;
            continue;
          }
          if (ptr[e2] < s.programs[e2].size() && is_comm(s.programs[e2][ptr[e2]].type)) {
            size_t lo2, hi2;
            group(e2, ptr[e2], lo2, hi2);
            if (j2 >= lo2 && j2 <= hi2) {
              done[d][i] = done[e2][j2] = 1;
              changed = true;
            }
          }
        }
        bool all = true;
        for (size_t i = lo; i <= hi; ++i) all &= done[d][i] != 0;
        if (all) {
          ptr[d] = hi + 1;
          changed = true;
        }
      }
    }
  }
  for (int d = 0; d < D; ++d)
    if (ptr[d] < s.programs[d].size()) return false;
  return true;
}

constexpr Semantics kAll[] = {Semantics::kRendezvous, Semantics::kGrouped, Semantics::kBuffered,
                              Semantics::kPosted};

bool listed(const Report& r, Semantics s) {
  return std::find(r.safe_under.begin(), r.safe_under.end(), semantics_name(s)) != r.safe_under.end();
}

}  // namespace

TEST_CASE("random valid schedules pass under every semantics; makespan >= lower bound") {
  std::mt19937 rng(20240611);
  for (int iter = 0; iter < 150; ++iter) {
    Problem p = random_problem(rng);
    Schedule s = random_valid(p, rng);
    for (Semantics sem : kAll) {
      VerifyOptions o;
      o.semantics = sem;
      Report r = verify(s, o);
      INFO("iteration ", iter, " semantics ", semantics_name(sem), "\n", format_report(r));
      REQUIRE(r.valid);
      REQUIRE(r.sim.has_value());
      CHECK(r.safe_under.size() == 4);  // comm insertion is rendezvous-safe
      CHECK(r.sim->makespan_ms >= r.lower_bound_ms - 1e-9);
      for (int d = 0; d < s.num_devices(); ++d) CHECK(r.sim->busy_ms[d] <= r.sim->makespan_ms + 1e-9);
    }
    // The program with comms inserted, checked as a file that carries comms: same verdict and timing.
    Report a = verify(s);
    Report b = verify(a.checked);
    INFO(format_report(b));
    REQUIRE(b.valid);
    CHECK(b.comms_inserted == !a.checked.has_comms());
    CHECK(b.sim->makespan_ms == a.sim->makespan_ms);
  }
}

TEST_CASE("random single mutations are caught with the right rule") {
  std::mt19937 rng(77);
  int caught[4] = {0, 0, 0, 0};
  int swaps_valid = 0, swaps_deadlock = 0;
  for (int iter = 0; iter < 300; ++iter) {
    Problem p = random_problem(rng);
    if (p.devices < 2) continue;
    Schedule base = verify(random_valid(p, rng)).checked;  // with comms
    REQUIRE(verify(base).valid);
    Schedule s = base;
    const int d = static_cast<int>(rng() % s.num_devices());
    auto& prog = s.programs[d];
    if (prog.size() < 2) continue;
    const int kind = static_cast<int>(rng() % 3);
    const size_t i = rng() % prog.size();
    INFO("iteration ", iter, " kind ", kind, " device ", d, " op ", i, " '", to_string(prog[i]), "'");
    if (kind == 0) {  // drop an op
      const Action gone = prog[i];
      prog.erase(prog.begin() + static_cast<long>(i));
      Report r = verify(s);
      INFO(format_report(r));
      REQUIRE_FALSE(r.valid);
      if (gone.type == OpType::F || gone.type == OpType::B) {
        CHECK(find_rule(r, "structure.missing") != nullptr);
      } else if (gone.type == OpType::I || gone.type == OpType::W) {
        CHECK(find_rule(r, "structure.backward-mix") != nullptr);  // the other half is left alone
      } else {
        const char* want = is_send(gone.type) ? "comm.unmatched-recv" : "comm.unmatched-send";
        const Violation* v = find_rule(r, want);
        REQUIRE(v != nullptr);
        // Reported at the partner that stayed behind.
        const bool up = gone.type == OpType::SEND_F || gone.type == OpType::RECV_B;
        CHECK(v->action.find(std::to_string(up ? gone.stage.value() + 1 : gone.stage.value() - 1)) == 0);
        CHECK(v->action.back() - '0' == gone.mb.value() % 10);
      }
      ++caught[0];
    } else if (kind == 1) {  // duplicate an op
      prog.insert(prog.begin() + static_cast<long>(i) + 1, prog[i]);
      Report r = verify(s);
      const Violation* v = find_rule(r, "structure.duplicate");
      REQUIRE(v != nullptr);
      CHECK(device_number(*v) == d);
      CHECK(v->op_index == static_cast<int>(i) + 1);
      ++caught[1];
    } else {  // swap two adjacent comm ops
      size_t k = prog.size();
      for (size_t t = 0; t + 1 < prog.size(); ++t) {
        const size_t c = (i + t) % (prog.size() - 1);
        if (is_comm(prog[c].type) && is_comm(prog[c + 1].type)) {
          k = c;
          break;
        }
      }
      if (k == prog.size()) continue;
      std::swap(prog[k], prog[k + 1]);
      // Same channel (both SENDs to one peer, or both RECVs from one peer): NCCL order breaks.
      auto peer = [&](const Action& a) {
        int st = a.type == OpType::SEND_F || a.type == OpType::RECV_B ? a.stage.value() + 1 : a.stage.value() - 1;
        return s.problem.device_of(StageId{st});
      };
      const bool same_channel = is_send(prog[k].type) == is_send(prog[k + 1].type) && peer(prog[k]) == peer(prog[k + 1]);
      Report r = verify(s);
      INFO(format_report(r));
      if (same_channel) {
        const Violation* v = find_rule(r, "comm.order");
        REQUIRE(v != nullptr);
        ++caught[2];
      } else {
        // Otherwise only the deadlock verdict can change: it must agree with the oracle.
        for (Semantics sem : kAll) CHECK(listed(r, sem) == oracle_safe(s, sem));
        const bool safe = oracle_safe(s, Semantics::kRendezvous);
        CHECK(r.valid == safe);
        if (!safe) {
          CHECK(find_rule(r, "deadlock") != nullptr);
          ++swaps_deadlock;
        } else {
          ++swaps_valid;
        }
        ++caught[3];
      }
    }
  }
  MESSAGE("drops ", caught[0], ", duplicates ", caught[1], ", same-channel swaps ", caught[2],
          ", other swaps ", caught[3], " (", swaps_deadlock, " deadlock, ", swaps_valid, " still valid)");
  CHECK(caught[0] > 20);
  CHECK(caught[1] > 20);
  CHECK(caught[2] > 5);
  CHECK(swaps_deadlock > 5);
}

TEST_CASE("deadlock decision agrees with the brute-force oracle on randomly reordered comms") {
  // Shuffle the comm ops of random devices among themselves (keeping each comm op after its
  // producer and before its consumer, so only cross-device order changes), then compare.
  std::mt19937 rng(4242);
  int unsafe[4] = {0, 0, 0, 0}, total = 0;
  for (int iter = 0; iter < 200; ++iter) {
    Problem p = random_problem(rng);
    if (p.devices < 2) continue;
    Schedule s = verify(random_valid(p, rng, false)).checked;
    for (auto& prog : s.programs) {
      // Move each RECV earlier by a random number of positions (not past the device start, a SEND
      // of the same tensor chain is irrelevant: RECVs have no local producer).
      for (size_t i = 0; i < prog.size(); ++i) {
        if (!is_recv(prog[i].type) || rng() % 4) continue;
        size_t j = i;
        size_t steps = 1 + rng() % 2;
        while (j > 0 && steps-- > 0) {
          std::swap(prog[j - 1], prog[j]);
          --j;
        }
      }
      // Move each SEND later by a random number of positions (its producer stays before it).
      for (size_t i = prog.size(); i-- > 0;) {
        if (!is_send(prog[i].type) || rng() % 4) continue;
        size_t j = i;
        size_t steps = 1 + rng() % 2;
        while (j + 1 < prog.size() && steps-- > 0) {
          std::swap(prog[j], prog[j + 1]);
          ++j;
        }
      }
    }
    Report r = verify(s);
    if (find_rule(r, "comm.order") != nullptr) continue;  // pairing undefined: not analysed
    REQUIRE_MESSAGE(find_rule(r, "dependency") == nullptr, format_report(r));
    ++total;
    for (int k = 0; k < 4; ++k) {
      const bool safe = oracle_safe(s, kAll[k]);
      CHECK_MESSAGE(listed(r, kAll[k]) == safe, semantics_name(kAll[k]), "\n", format_report(r));
      unsafe[k] += !safe;
      if (!safe && kAll[k] == Semantics::kRendezvous) CHECK(find_rule(r, "deadlock") != nullptr);
    }
    // Wherever it is safe, the two-stream simulation of that semantics completes (its waits are a
    // subset of the logical execution's) and respects the lower bound.
    for (Semantics sem : kAll) {
      if (!listed(r, sem)) continue;
      VerifyOptions o;
      o.semantics = sem;
      Report rs = verify(s, o);
      CHECK_MESSAGE(rs.valid, format_report(rs));
      REQUIRE(rs.sim.has_value());
      CHECK(rs.sim->makespan_ms >= rs.lower_bound_ms - 1e-9);
    }
    // rendezvous-safe implies safe under the others.
    if (listed(r, Semantics::kRendezvous)) {
      CHECK(listed(r, Semantics::kGrouped));
      CHECK(listed(r, Semantics::kBuffered));
    }
    // posted waits only where buffered does or later.
    if (listed(r, Semantics::kBuffered)) CHECK(listed(r, Semantics::kPosted));
  }
  MESSAGE(total, " reordered schedules; unsafe under rendezvous ", unsafe[0], ", grouped ", unsafe[1],
          ", buffered ", unsafe[2], ", posted ", unsafe[3]);
  CHECK(unsafe[0] > 10);
}

TEST_CASE("grouped and buffered are incomparable (docs/semantics.md)") {
  // Device 0: group [RECV_B0, SEND_F1]; device 1: group [RECV_F1, SEND_B0].
  Problem p = uniform_problem(2, 2, {0, 1});
  Schedule s = from_strings(p, {"0F0 0SEND_F0 0F1 0RECV_B0 0SEND_F1 0B0 0RECV_B1 0B1",
                                "1RECV_F0 1F0 1B0 1RECV_F1 1SEND_B0 1F1 1B1 1SEND_B1"});
  Report r = verify(s);
  CHECK(r.safe_under == std::vector<std::string>{"grouped", "posted"});
  for (Semantics sem : kAll) CHECK(listed(r, sem) == oracle_safe(s, sem));
  VerifyOptions b;
  b.semantics = Semantics::kBuffered;
  Report rb = verify(s, b);
  const Violation* v = find_rule(rb, "deadlock");
  REQUIRE(v != nullptr);
  CHECK(v->message.find("deadlock under buffered") != std::string::npos);
  CHECK(v->notes.at(0).find("before issuing it") != std::string::npos);
}

TEST_CASE("posted: a RECV never blocks, the compute op that consumes it waits for its SEND") {
  // Device 0 posts RECV_B0 before sending F0: rendezvous and buffered block there; PyTorch's runtime
  // (posted) goes on to SEND_F0 and waits only at B0.
  Problem p = uniform_problem(2, 1, {0, 1});
  Schedule ok = from_strings(p, {"0F0 0RECV_B0 0SEND_F0 0B0", "1RECV_F0 1F0 1B0 1SEND_B0"});
  Report r = verify(ok);
  CHECK(r.safe_under == std::vector<std::string>{"grouped", "posted"});  // grouped: [RECV_B0, SEND_F0] as one group
  for (Semantics sem : kAll) CHECK(listed(r, sem) == oracle_safe(ok, sem));
  VerifyOptions o;
  o.semantics = Semantics::kPosted;
  Report rp = verify(ok, o);
  CHECK_MESSAGE(rp.valid, format_report(rp));
  REQUIRE(rp.sim.has_value());
  CHECK(rp.sim->makespan_ms == doctest::Approx(6));  // F, F, B, B in a chain (unit F, B = 2, no link time)

  // Device 0 waits in B0 for SEND_B0, which device 1 posts only after F0, which waits for SEND_F0.
  Schedule bad = from_strings(p, {"0F0 0RECV_B0 0B0 0SEND_F0", "1RECV_F0 1F0 1B0 1SEND_B0"});
  Report rb = verify(bad, o);
  for (Semantics sem : kAll) CHECK(listed(rb, sem) == oracle_safe(bad, sem));
  CHECK(rb.safe_under.empty());
  const Violation* v = find_rule(rb, "deadlock");
  REQUIRE(v != nullptr);
  CHECK(v->message == "deadlock under posted: devices 0 -> 1 -> 0 wait for each other in a cycle (-> = waits for)");
  CHECK(v->op_index == 2);
  REQUIRE(v->notes.size() >= 2);
  CHECK(v->notes[0].find("'0B0'") != std::string::npos);
  CHECK(v->notes[0].find("its input comes through") != std::string::npos);
  CHECK(v->notes[0].find("before issuing it") != std::string::npos);

  // A consumed RECV whose SEND is missing: a dead end named by the missing op.
  Schedule lost = from_strings(p, {"0F0 0SEND_F0 0RECV_B0 0B0", "1RECV_F0 1F0 1B0"});
  Report rl = verify(lost, o);
  const Violation* w = find_rule(rl, "deadlock");
  REQUIRE(w != nullptr);
  CHECK(w->message == "deadlock under posted: device 0 waits for '1SEND_B0', which is not in the schedule");
  CHECK(w->op_index == 3);  // the blocked compute op, not the RECV
}

TEST_CASE("posted: a comm op is posted when the program reaches it, after the compute op before it") {
  // PyTorch's runtime runs a rank's actions in order: SEND_F0 listed after F1 is posted when F1 ends.
  // The two-stream model of the other semantics issues it when F0 ends, either way.
  Problem p = uniform_problem(2, 2, {0, 1});  // F = 1, B = I + W = 2, no link time
  const std::string dev1 = "1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1";
  Schedule early = from_strings(p, {"0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1", dev1});
  Schedule late = from_strings(p, {"0F0 0F1 0SEND_F0 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1", dev1});
  VerifyOptions posted;
  posted.semantics = Semantics::kPosted;
  auto makespan = [](const Schedule& s, const VerifyOptions& o) {
    Report r = verify(s, o);
    REQUIRE_MESSAGE(r.valid, format_report(r));
    REQUIRE(r.sim.has_value());
    return r.sim->makespan_ms;
  };
  CHECK(makespan(early, posted) == doctest::Approx(9));
  CHECK(makespan(late, posted) == doctest::Approx(10));  // device 1 starts F0 at 2, not 1
  VerifyOptions buffered;  // the two-stream model (rendezvous deadlocks here: device 1 sends B0 first)
  buffered.semantics = Semantics::kBuffered;
  CHECK(makespan(late, buffered) == doctest::Approx(makespan(early, buffered)));
}
