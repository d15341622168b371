// File-based checks: configs/invalid-schedules (one minimal file per rule, library path), the
// PyTorch examples in tests/data/pytorch with their expected verdicts, and CSV + model.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "builders.h"
#include "ir/schedule_io.h"
#include "test_util.h"
#include "report/report.h"
#include "verify/load.h"

using namespace vt;

namespace {

struct FileCase {
  const char* file;
  const char* rule;
  int device;
  int op_index;
  const char* action;
  int line;
  int col;
};

// Same table as configs/invalid-schedules/README.md.
const FileCase kInvalid[] = {
    {"problem-layers.yaml", "problem.layers", -1, -1, "", 17, 32},
    {"structure-index.yaml", "structure.index", 0, 1, "0F1", 19, 16},
    {"structure-stage-placement.csv", "structure.stage-placement", 1, 4, "0B1", 2, 17},
    {"structure-duplicate.csv", "structure.duplicate", 0, 1, "0F0", 1, 5},
    {"structure-missing.csv", "structure.missing", 1, -1, "", 2, 0},
    {"structure-backward-mix.csv", "structure.backward-mix", 0, 1, "0I0", 1, 5},
    {"structure-recompute.yaml", "structure.recompute", 0, 1, "0R0", 20, 16},
    {"structure-data-parallel.yaml", "structure.data-parallel", 0, 4, "0REDUCE_GRAD", 21, 31},
    {"dependency.csv", "dependency", 0, 1, "0W0", 1, 5},
    {"comm-same-device.csv", "comm.same-device", 0, 1, "0SEND_F0", 1, 5},
    {"comm-unmatched-send.csv", "comm.unmatched-send", 0, 1, "0SEND_F0", 1, 5},
    {"comm-unmatched-recv.csv", "comm.unmatched-recv", 1, 2, "1RECV_B0", 2, 14},
    {"comm-missing.csv", "comm.missing", 1, 0, "1F0", 2, 1},
    {"comm-order.csv", "comm.order", 0, 2, "0SEND_F1", 1, 9},
    {"deadlock.csv", "deadlock", 0, 3, "0SEND_F1", 1, 18},
    {"memory-limit.yaml", "memory.limit", 0, 1, "0F1", 20, 16},
    {"certificate-mismatch.yaml", "certificate.mismatch", -1, -1, "", 26, 16},
    {"certificate-claim.yaml", "certificate.claim", -1, -1, "", 33, 19},
};

Report check_file(const std::string& path, Semantics sem = Semantics::kRendezvous) {
  CheckInput in;
  in.file = path;
  auto loaded = load_schedule_for_check(in);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().str());
  VerifyOptions o;
  o.semantics = sem;
  return verify(loaded->schedule, o);
}

// The one violation of a PyTorch CSV: device 0's op `op_index` (`action`, at column `col` of line 1)
// runs before `later` (an op it depends on, at column `later_col`), which the note names.
void check_one_dependency(const std::string& path, int op_index, const std::string& action, int col,
                          const std::string& later, int later_col) {
  Report r = check_file(path);
  INFO(format_report(r));
  CHECK_FALSE(r.valid);
  REQUIRE(r.violations.size() == 1);
  const Violation& v = r.violations[0];
  CHECK(v.rule == "dependency");
  CHECK(v.device == ps::DeviceId{0});
  CHECK(v.op_index == op_index);
  CHECK(v.action == action);
  CHECK(v.loc.str() == path + ":1:" + std::to_string(col));
  CHECK(v.notes.at(0).find(later + " (" + path + ":1:" + std::to_string(later_col) + ")") != std::string::npos);
}

}  // namespace

TEST_CASE("configs/invalid-schedules: one file per rule, each rejected with its rule and location") {
  std::set<std::string> covered;
  for (const FileCase& c : kInvalid) {
    const std::string path = pstest::source_path(std::string("configs/invalid-schedules/") + c.file);
    Report r = check_file(path);
    INFO(c.file, "\n", format_report(r));
    REQUIRE_FALSE(r.valid);
    const Violation* v = find_rule(r, c.rule);
    REQUIRE(v != nullptr);
    CHECK(device_number(*v) == c.device);
    CHECK(v->op_index == c.op_index);
    CHECK(v->action == c.action);
    CHECK(v->loc.file == path);
    CHECK(v->loc.line == c.line);
    CHECK(v->loc.col == c.col);
    covered.insert(c.rule);
  }
  // Every rule has its file, and every file in the folder is in the table.
  for (const auto& rule : rules::kAll) CHECK_MESSAGE(covered.count(std::string(rule.id)) == 1, rule.id);
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(pstest::source_path("configs/invalid-schedules")))
    files += e.path().extension() != ".md";
  CHECK(files == std::size(kInvalid));
}

TEST_CASE("the deadlock file is safe under grouped and buffered") {
  const std::string path = pstest::source_path("configs/invalid-schedules/deadlock.csv");
  CHECK(check_file(path, Semantics::kGrouped).valid);
  CHECK(check_file(path, Semantics::kBuffered).valid);
}

TEST_CASE("the PyTorch examples get their expected verdicts") {
  auto ex = [](const char* name) { return pstest::data_path(std::string("pytorch/") + name); };
  for (const char* ok : {"ScheduleGPipe_p2_m4_v1.csv", "ScheduleInterleaved1F1B_p2_m4_v2.csv",
                         "ScheduleInterleaved1F1B_p2_m4_v2_comms.csv", "ScheduleZBVZeroBubble_p2_m4_v2_comms.csv"}) {
    Report r = check_file(ex(ok));
    INFO(ok, "\n", format_report(r));
    CHECK(r.valid);
    REQUIRE(r.sim.has_value());
    CHECK(r.safe_under.size() == 4);
    CHECK(r.sim->makespan_ms >= r.lower_bound_ms);
  }
  // Compute-only files get comms inserted; files with comms are checked as written.
  CHECK(check_file(ex("ScheduleGPipe_p2_m4_v1.csv")).comms_inserted);
  CHECK_FALSE(check_file(ex("ScheduleZBVZeroBubble_p2_m4_v2_comms.csv")).comms_inserted);
  // Unit costs: GPipe p2 m4 is (M+P-1)(F+B) = 15.
  CHECK(check_file(ex("ScheduleGPipe_p2_m4_v1.csv")).sim->makespan_ms == doctest::Approx(15));

  check_one_dependency(ex("ScheduleZBVZeroBubble_p2_m4_v2_I_before_F.csv"), 12, "3I1", 79, "device 0's op 13 '3F1'",
                       83);
  {
    // PyTorch's own data-parallel actions, where its lowering puts them: certified as placed (each 0 ms
    // without costs, so the time is the file's without them); REDUCE_GRAD moved before its stage's last
    // backward: refused at its cell.
    for (const char* name : {"ScheduleInterleaved1F1B_p2_m4_v2_dp.csv", "ScheduleZBVZeroBubble_p2_m4_v2_dp.csv"}) {
      Report r = check_file(ex(name));
      INFO(name, "\n", format_report(r));
      CHECK(r.valid);
      CHECK_FALSE(r.comms_inserted);
      REQUIRE(r.sim.has_value());
      CHECK(r.safe_under.size() == 4);
    }
    // 4 stages per rank: PyTorch unshards most stages twice; those gathers are not kept (the reader's
    // note, tests/ir/test_csv.cpp), the rest is certified.
    const Report v4 = check_file(ex("ScheduleInterleaved1F1B_p2_m4_v4_dp.csv"));
    INFO(format_report(v4));
    CHECK(v4.valid);
    CHECK(check_file(ex("ScheduleInterleaved1F1B_p2_m4_v2_dp.csv")).sim->makespan_ms ==
          check_file(ex("ScheduleInterleaved1F1B_p2_m4_v2_comms.csv")).sim->makespan_ms);
    check_one_dependency(ex("ScheduleInterleaved1F1B_p2_m4_v2_dp_early_reduce.csv"), 42, "0REDUCE_GRAD", 308,
                         "device 0's op 44 '0B3'", 330);
  }
  {
    const std::string path = ex("ScheduleGPipe_p2_m4_v1_spurious_recv.csv");
    Report r = check_file(path);
    INFO(format_report(r));
    CHECK_FALSE(r.valid);
    const Violation* v = find_rule(r, "comm.unmatched-recv");
    REQUIRE(v != nullptr);
    CHECK(v->device == ps::DeviceId{1});
    CHECK(v->op_index == 8);
    CHECK(v->action == "1RECV_B0");
    CHECK(v->loc.str() == path + ":2:53");
    CHECK(v->message.find("stage 1 is the last stage") != std::string::npos);
    const Violation* d = find_rule(r, "deadlock");
    REQUIRE(d != nullptr);
    CHECK(d->device == ps::DeviceId{1});
    CHECK(d->op_index == 8);
  }
}

TEST_CASE("a CSV with a model: stages get the model's balanced partition and real costs") {
  CheckInput in;
  in.file = pstest::data_path("pytorch/ScheduleInterleaved1F1B_p2_m4_v2.csv");
  in.model = pstest::source_path("configs/models/llama2-7b.yaml");
  in.cluster = pstest::source_path("configs/clusters/8xh200.yaml");  // 141 GB: it fits
  auto loaded = load_schedule_for_check(in);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().str());
  const Schedule& s = loaded->schedule;
  CHECK_FALSE(s.problem.unit_costs);
  REQUIRE(s.problem.num_stages() == 4);
  CHECK(s.problem.stages[0].first_layer == 0);
  CHECK(s.problem.stages[3].last_layer == 33);  // E + 32 decoder layers + L
  CHECK(s.problem.device_of(StageId{2}) == 0);           // placement from the CSV (looped)
  CHECK(s.problem.microbatches == 4);
  bool said = false;
  for (const auto& n : loaded->notes) said |= n.find("balanced partition") != std::string::npos;
  CHECK(said);
  Report r = verify(s);
  INFO(format_report(r));
  CHECK(r.valid);
  CHECK(r.sim->makespan_ms > 0);
  CHECK(r.sim->peak_memory_mb[0] > 1000);  // real model states
  CHECK(r.memory_limit_gb == 141);
  // On 80 GB devices, device 0 (stages 0 and 2) does not fit: 82.2 GB at its fourth forward.
  in.cluster = pstest::source_path("configs/clusters/8xh100-80gb.yaml");
  auto tight = load_schedule_for_check(in);
  REQUIRE(tight.ok());
  Report rt = verify(tight->schedule);
  REQUIRE(rt.violations.size() == 1);
  CHECK(rt.violations[0].rule == "memory.limit");
  CHECK(rt.violations[0].device == ps::DeviceId{0});
  CHECK(rt.violations[0].action == "0F3");

  // A YAML schedule embeds its problem: --model is refused for it.
  in.file = pstest::source_path("configs/invalid-schedules/memory-limit.yaml");
  auto bad = load_schedule_for_check(in);
  CHECK_FALSE(bad.ok());
  CHECK(bad.status().message().find("applies only to PyTorch CSV") != std::string::npos);
}
