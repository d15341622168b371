// Tests of the PyTorch pipelining CSV reader and writer (tests/data/pytorch).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "ir/schedule_io.h"
#include "test_util.h"

namespace {

const char* kExamples[] = {
    "ScheduleGPipe_p2_m4_v1.csv",
    "ScheduleGPipe_p2_m4_v1_spurious_recv.csv",
    "ScheduleInterleaved1F1B_p2_m4_v2.csv",
    "ScheduleInterleaved1F1B_p2_m4_v2_comms.csv",
    "ScheduleZBVZeroBubble_p2_m4_v2_I_before_F.csv",
    "ScheduleZBVZeroBubble_p2_m4_v2_comms.csv",
    "ScheduleInterleaved1F1B_p2_m4_v2_dp.csv",
    "ScheduleInterleaved1F1B_p2_m4_v2_dp_early_reduce.csv",
    "ScheduleZBVZeroBubble_p2_m4_v2_dp.csv",
};

std::string example(const std::string& name) { return pstest::data_path("pytorch/" + name); }

// The file's cells per row, with empty cells removed and CRLF handled: the action sequences.
std::vector<std::vector<std::string>> cells_of(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::string line;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n') {
      if (i == text.size() && line.empty()) break;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      std::vector<std::string> row;
      std::string cell;
      for (size_t k = 0; k <= line.size(); ++k) {
        if (k == line.size() || line[k] == ',') {
          if (!cell.empty()) row.push_back(cell);
          cell.clear();
        } else {
          cell += line[k];
        }
      }
      rows.push_back(row);
      line.clear();
    } else {
      line += text[i];
    }
  }
  return rows;
}

std::vector<std::vector<std::string>> strings_of(const ps::Schedule& s) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : s.programs) {
    rows.emplace_back();
    for (const auto& a : p) rows.back().push_back(ps::to_string(a));
  }
  return rows;
}

ps::CsvReadResult parse_ok(const std::string& text, const ps::CsvReadOptions& opt = {}) {
  auto r = ps::parse_pytorch_csv(text, "t.csv", opt);
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  return std::move(*r);
}

void expect_csv_error(const std::string& text, int line, int col, const std::string& substr,
                      const ps::CsvReadOptions& opt = {}) {
  auto r = ps::parse_pytorch_csv(text, "bad.csv", opt);
  REQUIRE_MESSAGE(!r.ok(), "expected an error containing '" << substr << "'");
  const ps::Status& st = r.status();
  CHECK(st.code() == ps::ErrorCode::kBadInput);
  CHECK_MESSAGE(st.loc().file == "bad.csv", st.str());
  CHECK_MESSAGE(st.loc().line == line, st.str());
  CHECK_MESSAGE(st.loc().col == col, st.str());
  CHECK_MESSAGE(st.message().find(substr) != std::string::npos, st.str());
}

bool has_note(const std::vector<std::string>& notes, const std::string& substr) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(substr) != std::string::npos; });
}

}  // namespace

TEST_CASE("csv: every example in tests/data/pytorch reads with the right shape and placement") {
  struct Expect {
    const char* file;
    int stages;
    std::vector<int> placement;
    bool comms;
  };
  const Expect expects[] = {
      {"ScheduleGPipe_p2_m4_v1.csv", 2, {0, 1}, false},
      {"ScheduleGPipe_p2_m4_v1_spurious_recv.csv", 2, {0, 1}, true},
      {"ScheduleInterleaved1F1B_p2_m4_v2.csv", 4, {0, 1, 0, 1}, false},
      {"ScheduleInterleaved1F1B_p2_m4_v2_comms.csv", 4, {0, 1, 0, 1}, true},
      {"ScheduleZBVZeroBubble_p2_m4_v2_I_before_F.csv", 4, {0, 1, 1, 0}, true},
      {"ScheduleZBVZeroBubble_p2_m4_v2_comms.csv", 4, {0, 1, 1, 0}, true},
      {"ScheduleInterleaved1F1B_p2_m4_v2_dp.csv", 4, {0, 1, 0, 1}, true},
      {"ScheduleInterleaved1F1B_p2_m4_v2_dp_early_reduce.csv", 4, {0, 1, 0, 1}, true},
      {"ScheduleZBVZeroBubble_p2_m4_v2_dp.csv", 4, {0, 1, 1, 0}, true},
  };
  for (const auto& e : expects) {
    CAPTURE(e.file);
    auto r = ps::read_pytorch_csv(example(e.file));
    REQUIRE_MESSAGE(r.ok(), r.status().str());
    const ps::Schedule& s = r->schedule;
    CHECK(s.num_devices() == 2);
    CHECK(s.problem.devices == 2);
    CHECK(s.problem.microbatches == 4);
    CHECK(s.problem.unit_costs);
    CHECK(s.generator == "pytorch-csv");
    REQUIRE(s.problem.num_stages() == e.stages);
    for (int st = 0; st < e.stages; ++st) CHECK(s.problem.device_of(ps::StageId{st}) == e.placement[st]);
    CHECK(s.has_comms() == e.comms);
    CHECK(strings_of(s) == cells_of(pstest::read_file(example(e.file))));
    // Every action knows its cell: row = line, col = where the cell starts.
    CHECK(s.programs[1][0].loc.file == example(e.file));
    CHECK(s.programs[1][0].loc.line == 2);
  }
}

TEST_CASE("csv: round trips on every example in tests/data/pytorch (CSV -> YAML -> CSV keeps action sequences)") {
  for (const char* name : kExamples) {
    CAPTURE(name);
    auto r = ps::read_pytorch_csv(example(name));
    REQUIRE_MESSAGE(r.ok(), r.status().str());
    std::string yaml = ps::format_schedule_yaml(r->schedule);
    auto y = ps::parse_schedule_yaml(yaml, "mid.yaml");
    REQUIRE_MESSAGE(y.ok(), y.status().str());
    CHECK(ps::format_schedule_yaml(*y) == yaml);  // YAML write -> read -> write byte-identical
    std::string csv = ps::format_pytorch_csv(*y);
    CHECK(cells_of(csv) == cells_of(pstest::read_file(example(name))));
    auto back = ps::parse_pytorch_csv(csv, "back.csv");
    REQUIRE_MESSAGE(back.ok(), back.status().str());
    CHECK(back->schedule.programs == r->schedule.programs);
    CHECK(ps::canonical_text(back->schedule) == ps::canonical_text(r->schedule));
  }
}

TEST_CASE("csv: files with comms are written back cell for cell") {
  for (const char* name : {"ScheduleInterleaved1F1B_p2_m4_v2_comms.csv", "ScheduleZBVZeroBubble_p2_m4_v2_comms.csv",
                           "ScheduleInterleaved1F1B_p2_m4_v2_dp.csv", "ScheduleZBVZeroBubble_p2_m4_v2_dp.csv"}) {
    CAPTURE(name);
    std::string text = pstest::read_file(example(name));
    auto r = ps::parse_pytorch_csv(text, name);
    REQUIRE_MESSAGE(r.ok(), r.status().str());
    std::string lf = text;
    lf.erase(std::remove(lf.begin(), lf.end(), '\r'), lf.end());
    CHECK(ps::format_pytorch_csv(r->schedule) == lf);
  }
}

TEST_CASE("csv: idle cells are read (noted) and the action order kept") {
  auto r = ps::read_pytorch_csv(example("ScheduleInterleaved1F1B_p2_m4_v2.csv"));
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  CHECK(has_note(r->notes, "10 idle cell(s) (rank 0: cells 5, 6, 15, 17, 19, 21; rank 1: cells 1, 4, 17, 19)"));
  CHECK(ps::to_string(r->schedule.programs[1][0]) == "1F0");
  CHECK(r->schedule.programs[1][0].loc.col == 2);  // after the leading empty cell
  CHECK(ps::to_string(r->schedule.programs[0][4]) == "0F2");
  CHECK(r->schedule.programs[0][4].loc.col == 19);  // "0F0,0F1,2F0,2F1,,,0F2"
}

TEST_CASE("csv: compute-only schedules with predicted times get idle cells (distinct start times = columns)") {
  auto parsed = parse_ok("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n");
  ps::Schedule s = parsed.schedule;
  // GPipe-like timing: rank 1 starts one step later and waits between its forwards and backwards.
  s.predicted = {{{0, 1}, {1, 2}, {4, 6}, {6, 8}}, {{1, 2}, {2, 3}, {3, 5}, {5, 7}}};
  std::string csv = ps::format_pytorch_csv(s);
  // Distinct starts: 0 1 2 3 4 5 6 -> columns 0..6.
  CHECK(csv == "0F0,0F1,,,0B0,,0B1\n,1F0,1F1,1B0,,1B1\n");
  auto back = parse_ok(csv);
  CHECK(back.schedule.programs == s.programs);
  CHECK(has_note(back.notes, "5 idle cell(s)"));

  // Two ops of one device starting in the same microsecond (a zero-length op) take successive columns.
  s.predicted = {{{0, 1}, {1, 1}, {1, 3}, {3, 5}}, {{1, 2}, {2, 3}, {3, 5}, {5, 7}}};
  CHECK(ps::format_pytorch_csv(s) == "0F0,0F1,0B0,,0B1\n,1F0,,1F1,1B0,1B1\n");

  // Without predicted times, no idle cells.
  s.predicted.clear();
  CHECK(ps::format_pytorch_csv(s) == "0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n");
}

TEST_CASE("csv: full-match parsing rejects malformed cells at their line:col") {
  expect_csv_error("0F0,2BW0\n", 1, 5, "bad action '2BW0'");
  expect_csv_error("0F0,0F1\n1F0,F1\n", 2, 5, "bad action 'F1'");
  expect_csv_error("0F0,0F1\n1F0,  3F\n", 2, 7, "bad action '3F'");
  expect_csv_error("3X1\n", 1, 1, "bad action '3X1'");
  expect_csv_error("0F0,-1F0\n", 1, 5, "bad action '-1F0'");
  expect_csv_error("0F0,99999999999F0\n", 1, 5, "too large stage number");
  expect_csv_error("0F0,0F99999999999\n", 1, 5, "too large microbatch number");
  expect_csv_error("0F0,0F1x\n", 1, 5, "unexpected text 'x'");
  expect_csv_error("0F0,\"0F1\"\n", 1, 5, "bad action");
  expect_csv_error("0UNSHARD0\n", 1, 1, "bad action '0UNSHARD0'");
  expect_csv_error("0F0,\xC3\xA9\n", 1, 5, "bad action '\xC3\xA9'");
}

TEST_CASE("csv: columns stay right on a row of 40,000 cells (a rank's program at M in the thousands)") {
  // A padded first cell and an UNSHARD, then 39,998 actions: each cell's column is counted
  // on from the one before it (counting from the row's start made such files quadratic to read).
  std::string row = " 0F0 ,0UNSHARD";
  for (int m = 1; m < 20000; ++m) row += fmt::format(",0F{},0B{}", m, m - 1);
  const int col_before = static_cast<int>(row.size()) + 2;  // 1-based, after the comma
  expect_csv_error(row + ",0X1\n", 1, col_before, "bad action '0X1'");
  expect_csv_error(row + ",(0F1; 1BW0)OVERLAP_F_B\n", 1, col_before + 6, "bad action '1BW0'");
  auto r = parse_ok(row + ",0B19999\n");
  REQUIRE(r.schedule.programs[0].size() == 40001u);
  CHECK(r.schedule.programs[0][0].loc.col == 2);
  CHECK(r.schedule.programs[0].back().loc.col == col_before);
}

TEST_CASE("csv: whitespace, CRLF, trailing commas and a byte-order mark are tolerated") {
  auto r = parse_ok("\xEF\xBB\xBF 0F0 ,\t0F1,0B0,0B1,,\r\n1F0,1F1,1B0,1B1\r\n");
  CHECK(strings_of(r.schedule) == std::vector<std::vector<std::string>>{{"0F0", "0F1", "0B0", "0B1"},
                                                                      {"1F0", "1F1", "1B0", "1B1"}});
  CHECK(r.schedule.programs[0][0].loc.col == 2);
  CHECK(r.schedule.programs[0][1].loc.col == 8);  // the tab is column 7
  CHECK(r.notes.empty());
  // No final newline.
  CHECK(parse_ok("0F0,0B0").schedule.programs.size() == 1);
}

TEST_CASE("csv: UNSHARD/RESHARD/REDUCE_GRAD are read as the stages' data-parallel ops, where the file puts them") {
  auto r = parse_ok("0UNSHARD,0F0,1F0,1B0,1REDUCE_GRAD,0B0,0REDUCE_GRAD,0RESHARD\n");
  CHECK(strings_of(r.schedule) ==
        std::vector<std::vector<std::string>>{
            {"0UNSHARD", "0F0", "1F0", "1B0", "1REDUCE_GRAD", "0B0", "0REDUCE_GRAD", "0RESHARD"}});
  CHECK(r.notes == std::vector<std::string>{"4 UNSHARD/RESHARD/REDUCE_GRAD action(s): kept where the file "
                                            "places them; a CSV has no costs, so each takes 0 ms and 0 MB "
                                            "(unless a model's mesh costs the stage's)"});
  const ps::Action& reduce = r.schedule.programs[0][4];
  CHECK(reduce.type == ps::OpType::REDUCE_GRAD);
  CHECK(reduce.stage == ps::StageId{1});
  CHECK(reduce.loc.col == 22);
  // The unit problem gives each stage what its ops say, at 0 ms and 0 MB: stage 0 is sharded by FSDP and
  // reduces, stage 1 only reduces.
  const ps::StageSpec& s0 = r.schedule.problem.stages[0];
  const ps::StageSpec& s1 = r.schedule.problem.stages[1];
  CHECK(s0.reduces_grad);
  CHECK(s0.fsdp);
  CHECK(s1.reduces_grad);
  CHECK_FALSE(s1.fsdp);
  CHECK(s0.reduce_grad_ms == 0);
  CHECK(s0.unshard_ms == 0);
  CHECK(s0.unsharded_mb == 0);
  // No microbatch on them; they alone are no pipeline; their stage counts, their microbatch does not.
  expect_csv_error("0F0,0B0,0REDUCE_GRAD1\n", 1, 9, "REDUCE_GRAD takes no microbatch");
  expect_csv_error("0UNSHARD,0REDUCE_GRAD\n", 0, 0, "no pipeline actions in the file");
  auto extra = parse_ok("0F0,0B0\n1REDUCE_GRAD\n");
  CHECK(extra.schedule.problem.num_stages() == 2);
  CHECK(extra.schedule.problem.microbatches == 1);
  // Written back cell for cell, and read back to the same program and problem.
  const std::string csv = ps::format_pytorch_csv(r.schedule);
  CHECK(csv == "0UNSHARD,0F0,1F0,1B0,1REDUCE_GRAD,0B0,0REDUCE_GRAD,0RESHARD\n");
  auto back = parse_ok(csv);
  CHECK(back.schedule.programs == r.schedule.programs);
  CHECK(ps::canonical_text(back.schedule) == ps::canonical_text(r.schedule));
}

TEST_CASE("csv: a stage unsharded twice (PyTorch's FSDP lowering, over 3 stages a rank) loses its gathers") {
  auto r = parse_ok(
      "0UNSHARD,1UNSHARD,0F0,0RESHARD,1F0,0UNSHARD,0B0,0REDUCE_GRAD,0RESHARD,1B0,1REDUCE_GRAD,1RESHARD\n");
  CHECK(strings_of(r.schedule) ==
        std::vector<std::vector<std::string>>{
            {"1UNSHARD", "0F0", "1F0", "0B0", "0REDUCE_GRAD", "1B0", "1REDUCE_GRAD", "1RESHARD"}});
  CHECK_FALSE(r.schedule.problem.stages[0].fsdp);
  CHECK(r.schedule.problem.stages[0].reduces_grad);
  CHECK(r.schedule.problem.stages[1].fsdp);
  CHECK(has_note(r.notes, "stage(s) 0 (again at t.csv:1:36) are unsharded more than once"));
  CHECK(has_note(r.notes, "so their 4 UNSHARD/RESHARD action(s) are not kept"));
  CHECK(has_note(r.notes, "4 UNSHARD/RESHARD/REDUCE_GRAD action(s): kept"));
}

TEST_CASE("csv: a schedule with data-parallel ops (a mesh's, costed) reads back from its CSV to the same programs") {
  // YAML with reduce_grad_ms and unshard_ms/unsharded_mb (the problem a mesh gives) -> CSV -> the same
  // programs; the CSV's unit problem marks the same stages.
  auto y = ps::parse_schedule_yaml(
      "format: pipesmith-schedule/1\n"
      "problem:\n"
      "  name: dp\n"
      "  devices: 2\n"
      "  microbatches: 2\n"
      "  memory_gb: 80\n"
      "  bytes_per_param: 18\n"
      "  link: {bandwidth_gb_per_s: 100, latency_us: 0}\n"
      "stages:\n"
      "  - {id: 0, device: 0, fwd_ms: 1, bwd_input_ms: 1, bwd_weight_ms: 1, activation_mb: 10, wgrad_stash_mb: 0, "
      "output_mb: 1, params_m: 1, reduce_grad_ms: 5, unshard_ms: 2, unsharded_mb: 30}\n"
      "  - {id: 1, device: 1, fwd_ms: 1, bwd_input_ms: 1, bwd_weight_ms: 1, activation_mb: 10, wgrad_stash_mb: 0, "
      "output_mb: 1, params_m: 1, reduce_grad_ms: 5}\n"
      "programs:\n"
      "  - device: 0\n"
      "    ops: [0UNSHARD, 0F0, 0SEND_F0, 0F1, 0SEND_F1, 0RECV_B0, 0B0, 0RECV_B1, 0B1, 0REDUCE_GRAD, 0RESHARD]\n"
      "  - device: 1\n"
      "    ops: [1RECV_F0, 1F0, 1B0, 1SEND_B0, 1RECV_F1, 1F1, 1B1, 1SEND_B1, 1REDUCE_GRAD]\n",
      "dp.yaml");
  REQUIRE_MESSAGE(y.ok(), y.status().str());
  const std::string csv = ps::format_pytorch_csv(*y);
  CHECK(csv ==
        "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n"
        "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1REDUCE_GRAD\n");
  auto back = parse_ok(csv);
  CHECK(back.schedule.programs == y->programs);
  for (int st = 0; st < 2; ++st) {
    CHECK(back.schedule.problem.stages[st].reduces_grad == y->problem.stages[st].reduces_grad);
    CHECK(back.schedule.problem.stages[st].fsdp == y->problem.stages[st].fsdp);
  }
}

TEST_CASE("csv: OVERLAP_F_B is read as its sub-actions, in order, kept as a pair") {
  auto r = parse_ok("0F0,0F1,(0F2;1B0)OVERLAP_F_B,( 0F3 ; 1B1 )OVERLAP_F_B,1B2,1B3\n"
                    "1F0,1F1,1F2,1F3\n");
  CHECK(strings_of(r.schedule)[0] == std::vector<std::string>{"0F0", "0F1", "0F2", "1B0", "0F3", "1B1", "1B2", "1B3"});
  CHECK(has_note(r.notes, "2 OVERLAP_F_B action(s): kept as pairs, run as their sub-actions in order"));
  CHECK(r.schedule.programs[0][2].overlap_next);
  CHECK(!r.schedule.programs[0][3].overlap_next);
  CHECK(!r.schedule.programs[0][1].overlap_next);
  CHECK(r.schedule.programs[0][2].loc.col == 10);  // "0F2" inside "(0F2;1B0)"
  CHECK(r.schedule.programs[0][3].loc.col == 14);  // "1B0"
  CHECK(r.schedule.programs[0][5].loc.col == 38);  // "1B1" after the blanks
  expect_csv_error("0F0,(0F1;1BW0)OVERLAP_F_B\n", 1, 10, "in '(0F1;1BW0)OVERLAP_F_B': bad action '1BW0'");
  expect_csv_error("(0F1)OVERLAP_F_B\n", 1, 1, "at least two sub-actions");
  expect_csv_error("(0F1;)OVERLAP_F_B\n", 1, 6, "empty sub-action");
  expect_csv_error("0F1;1B0)OVERLAP_F_B\n", 1, 1, "'(A;B)OVERLAP_F_B'");
  expect_csv_error("(0F1;1B0)OVERLAP_F\n", 1, 1, "'(A;B)OVERLAP_F_B'");
  expect_csv_error("(0F1;0UNSHARD)OVERLAP_F_B\n", 1, 6, "sub-action '0UNSHARD' is a UNSHARD");
  expect_csv_error("(0F1;0SEND_F1)OVERLAP_F_B\n", 1, 6, "OVERLAP_F_B overlaps compute actions");
}

TEST_CASE("csv and yaml: OVERLAP_F_B survives CSV -> YAML -> CSV, cell for cell") {
  const std::string text = "0F0,0F1,(0F2;1B0)OVERLAP_F_B,(0F3;1B1)OVERLAP_F_B,1B2,1B3\n1F0,1F1,1F2,1F3\n";
  auto r = parse_ok(text);
  CHECK(ps::format_pytorch_csv(r.schedule) == text);
  const std::string yaml = ps::format_schedule_yaml(r.schedule);
  CHECK(pstest::contains(yaml, "(0F2;1B0)OVERLAP_F_B, (0F3;1B1)OVERLAP_F_B"));
  auto back = ps::parse_schedule_yaml(yaml, "t.yaml");
  REQUIRE(back.ok());
  CHECK(back->programs == r.schedule.programs);
  CHECK(back->programs[0][2].overlap_next);
  CHECK(ps::format_pytorch_csv(*back) == text);
  CHECK(ps::format_schedule_yaml(*back) == yaml);
  // In YAML the same errors, located at the list item.
  std::string broken = yaml;
  broken.replace(broken.find("(0F2;1B0)"), 9, "(0F2;1BW0)");
  auto bad = ps::parse_schedule_yaml(broken, "t.yaml");
  REQUIRE(!bad.ok());
  CHECK(pstest::contains(bad.status().message(), "bad action '1BW0'"));
}

TEST_CASE("csv: placement comes from the first row a stage appears in") {
  auto r = parse_ok("0F0,1F0,1B0,0B0\n1F1,1B1\n0F1,0B1\n");
  CHECK(r.schedule.problem.device_of(ps::StageId{0}) == 0);
  CHECK(r.schedule.problem.device_of(ps::StageId{1}) == 0);
  CHECK(r.schedule.num_devices() == 3);
  CHECK(has_note(r.notes, "stage 0 appears on rank 0 and also on rank(s) 2; placed on rank 0"));
  CHECK(has_note(r.notes, "stage 1 appears on rank 0 and also on rank(s) 1; placed on rank 0"));
  // The ops stay where they are.
  CHECK(ps::to_string(r.schedule.programs[2][0]) == "0F1");
  // A stage that appears nowhere is placed next to the one before it, with a note.
  auto gap = parse_ok("0F0,0B0\n2F0,2B0\n");
  CHECK(gap.schedule.problem.num_stages() == 3);
  CHECK(gap.schedule.problem.device_of(ps::StageId{1}) == 0);
  CHECK(has_note(gap.notes, "1 stage(s) appear in no row (1)"));
  // An empty row is a rank with no actions.
  auto empty_row = parse_ok("0F0,0B0\n\n1F0,1B0\n");
  CHECK(empty_row.schedule.num_devices() == 3);
  CHECK(empty_row.schedule.programs[1].empty());
  CHECK(empty_row.schedule.problem.device_of(ps::StageId{1}) == 2);
  CHECK(has_note(empty_row.notes, "rank 1 (line 2) has no actions"));
}

TEST_CASE("csv: stage and microbatch counts are inferred or checked against the options") {
  ps::CsvReadOptions opt;
  auto r = parse_ok("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n");
  CHECK(r.schedule.problem.num_stages() == 2);
  CHECK(r.schedule.problem.microbatches == 2);
  opt.stages = 2;
  opt.microbatches = 2;
  CHECK(parse_ok("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n", opt).schedule.problem.microbatches == 2);
  opt.microbatches = 4;
  expect_csv_error("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n", 0, 0, "the microbatch count given is 4, but the highest microbatch in the file is 1", opt);
  opt.microbatches = 1;
  {
    // Beyond the declared count: read, noted, and left for the checker to report (structure.index).
    auto beyond = parse_ok("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n", opt);
    CHECK(beyond.schedule.problem.microbatches == 1);
    CHECK(beyond.schedule.programs[0].size() == 4);
    REQUIRE_FALSE(beyond.notes.empty());
    CHECK(beyond.notes[0] == "action '0F1' (t.csv:1:5) uses microbatch 1, beyond the 1 microbatches given");
  }
  opt.microbatches = -1;
  opt.stages = 3;
  expect_csv_error("0F0,0B0\n1F0,1B0\n", 0, 0, "the stage count given is 3, but the highest stage in the file is 1", opt);
  opt.stages = 1;
  auto beyond = parse_ok("0F0,0B0\n1F0,1B0\n", opt);
  CHECK(beyond.schedule.problem.num_stages() == 1);
  REQUIRE_FALSE(beyond.notes.empty());
  CHECK(beyond.notes[0] == "action '1F0' (t.csv:2:1) uses stage 1, beyond the 1 stages given");
}

TEST_CASE("csv: files without actions, and idle cells among comms, are rejected") {
  expect_csv_error("", 0, 0, "empty CSV file");
  expect_csv_error("\n\n", 0, 0, "no pipeline actions");
  expect_csv_error(",,,\n,\n", 0, 0, "no pipeline actions");
  expect_csv_error("0UNSHARD,0RESHARD\n", 0, 0, "no pipeline actions");
  expect_csv_error("0F0,0SEND_F0,,0B0\n1RECV_F0,1F0,1B0\n", 1, 14, "empty cell (idle slot) in a file with SEND/RECV");
  expect_csv_error("0F0,0B0\n100000F0\n", 2, 1, "action '100000F0' uses stage 100000; pipesmith supports at most 100000 stages");
}

TEST_CASE("csv: read_schedule_any picks the format by extension, else by content") {
  std::string text = pstest::read_file(example("ScheduleGPipe_p2_m4_v1.csv"));
  std::string noext = pstest::temp_path("schedule-noext");
  {
    std::ofstream(noext, std::ios::binary) << text;
  }
  std::vector<std::string> notes;
  auto a = ps::read_schedule_any(noext, {}, &notes);
  REQUIRE_MESSAGE(a.ok(), a.status().str());
  CHECK(a->generator == "pytorch-csv");
  CHECK(a->problem.num_stages() == 2);

  auto yaml_text = ps::format_schedule_yaml(*a);
  {
    std::ofstream(noext, std::ios::binary) << yaml_text;
  }
  auto b = ps::read_schedule_any(noext);
  REQUIRE_MESSAGE(b.ok(), b.status().str());
  CHECK(b->programs == a->programs);

  // A .csv file is read as CSV even when it holds YAML: the error is then a CSV error.
  std::string csvpath = pstest::temp_path("really-yaml.csv");
  {
    std::ofstream(csvpath, std::ios::binary) << yaml_text;
  }
  auto c = ps::read_schedule_any(csvpath);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().loc().line == 1);
  CHECK(c.status().message().find("bad action 'format: pipesmith-schedule/1'") != std::string::npos);

  // read_schedule_any passes the CSV notes on.
  std::string notepath = pstest::temp_path("notes.csv");
  {
    std::ofstream(notepath, std::ios::binary) << "0UNSHARD,0F0,0B0\n";
  }
  std::vector<std::string> n2;
  REQUIRE(ps::read_schedule_any(notepath, {}, &n2).ok());
  CHECK(has_note(n2, "1 UNSHARD/RESHARD/REDUCE_GRAD action(s): kept"));
  std::remove(noext.c_str());
  std::remove(csvpath.c_str());
  std::remove(notepath.c_str());
}
