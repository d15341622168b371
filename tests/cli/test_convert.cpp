// Tests of `pipesmith convert` through the built binary (run_cli), as a user runs it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "ir/schedule_io.h"
#include "test_util.h"

using pstest::contains;

namespace {

std::string example(const std::string& name) { return pstest::data_path("pytorch/" + name); }

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string without_cr(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '\r'), s.end());
  return s;
}

}  // namespace

TEST_CASE("pipesmith convert: CSV -> YAML -> CSV on the examples in tests/data/pytorch") {
  for (const char* name : {"ScheduleZBVZeroBubble_p2_m4_v2_comms.csv", "ScheduleGPipe_p2_m4_v1.csv",
                           "ScheduleInterleaved1F1B_p2_m4_v2.csv"}) {
    CAPTURE(name);
    std::string yaml = pstest::temp_path("conv.yaml");
    std::string csv = pstest::temp_path("conv.csv");
    auto a = pstest::run_cli("convert " + example(name) + " " + yaml);
    CHECK_MESSAGE(a.exit_code == 0, a.output);
    CHECK_MESSAGE(contains(a.output, "wrote " + yaml + ": 2 devices"), a.output);
    CHECK_MESSAGE(contains(a.output, "note: the CSV has no costs"), a.output);
    auto y = ps::read_schedule_yaml(yaml);
    REQUIRE_MESSAGE(y.ok(), y.status().str());
    CHECK(y->problem.microbatches == 4);
    CHECK(y->generator == "pytorch-csv");

    auto b = pstest::run_cli("convert " + yaml + " " + csv);
    CHECK_MESSAGE(b.exit_code == 0, b.output);
    CHECK_MESSAGE(contains(b.output, "note: a CSV holds only each rank's action order"), b.output);
    auto orig = ps::read_pytorch_csv(example(name));
    auto back = ps::read_pytorch_csv(csv);
    REQUIRE(orig.ok());
    REQUIRE_MESSAGE(back.ok(), back.status().str());
    CHECK(back->schedule.programs == orig->schedule.programs);
    if (orig->schedule.has_comms()) CHECK(pstest::read_file(csv) == without_cr(pstest::read_file(example(name))));
    std::remove(yaml.c_str());
    std::remove(csv.c_str());
  }
}

TEST_CASE("pipesmith convert: notes about kept and expanded actions go to stderr") {
  std::string in = pstest::temp_path("fsdp.csv");
  std::string out = pstest::temp_path("fsdp.yml");
  write(in, "0UNSHARD,0F0,(0F1;1B0)OVERLAP_F_B,0B1\n1F0,1F1,1B1\n");
  auto r = pstest::run_cli("convert " + in + " " + out);
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK_MESSAGE(contains(r.output,
                         "note: " + in + ": 1 UNSHARD/RESHARD/REDUCE_GRAD action(s): kept where the file places them"),
                r.output);
  CHECK_MESSAGE(contains(r.output, "1 OVERLAP_F_B action(s): kept as pairs"), r.output);
  auto y = ps::read_schedule_yaml(out);
  REQUIRE_MESSAGE(y.ok(), y.status().str());
  REQUIRE(y->programs[0].size() == 5);
  CHECK(ps::to_string(y->programs[0][0]) == "0UNSHARD");
  CHECK(ps::to_string(y->programs[0][2]) == "0F1");
  CHECK(ps::to_string(y->programs[0][3]) == "1B0");
  CHECK(y->problem.stages[0].fsdp);  // the YAML keeps what the op says of its stage (0 ms, 0 MB)
  // ... and the pair comes back as one OVERLAP_F_B cell, the UNSHARD where it was.
  std::string back = pstest::temp_path("fsdp-back.csv");
  r = pstest::run_cli("convert " + out + " " + back);
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK(pstest::read_file(back) == "0UNSHARD,0F0,(0F1;1B0)OVERLAP_F_B,0B1\n1F0,1F1,1B1\n");
  std::remove(back.c_str());
  std::remove(in.c_str());
  std::remove(out.c_str());
}

TEST_CASE("pipesmith convert: bad input exits 1 with the located message") {
  std::string in = pstest::temp_path("bad.csv");
  std::string out = pstest::temp_path("bad.yaml");
  write(in, "0F0,0F1\n1F0,2BW0\n");
  auto r = pstest::run_cli("convert " + in + " " + out);
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(contains(r.output, "pipesmith: error: " + in + ":2:5: bad action '2BW0'"), r.output);
  std::ifstream probe(out);
  CHECK_FALSE(probe.good());  // nothing written

  std::string bad_yaml = pstest::temp_path("bad-in.yaml");
  write(bad_yaml, "format: pipesmith-schedule/1\nproblem: {devices: 1, microbatches: 1}\nstagez: []\n");
  auto y = pstest::run_cli("convert " + bad_yaml + " " + pstest::temp_path("x.csv"));
  CHECK(y.exit_code == 1);
  CHECK_MESSAGE(contains(y.output, bad_yaml + ":3:1: top level: unknown key 'stagez' (did you mean 'stages'?)"), y.output);

  auto missing = pstest::run_cli("convert /nonexistent/in.csv " + out);
  CHECK(missing.exit_code == 1);
  CHECK_MESSAGE(contains(missing.output, "cannot open '/nonexistent/in.csv'"), missing.output);

  auto ext = pstest::run_cli("convert " + example("ScheduleGPipe_p2_m4_v1.csv") + " " + pstest::temp_path("out.txt"));
  CHECK(ext.exit_code == 1);
  CHECK_MESSAGE(contains(ext.output, "OUT must end in .csv"), ext.output);

  auto mb = pstest::run_cli("convert " + example("ScheduleGPipe_p2_m4_v1.csv") + " " + out + " --microbatches 8");
  CHECK(mb.exit_code == 1);
  CHECK_MESSAGE(contains(mb.output, "the microbatch count given is 8, but the highest microbatch in the file is 3"), mb.output);

  auto usage = pstest::run_cli("convert onlyone.csv");
  CHECK(usage.exit_code == 1);
  std::remove(in.c_str());
  std::remove(bad_yaml.c_str());
}

TEST_CASE("pipesmith convert: --stages and --microbatches that match are accepted") {
  std::string out = pstest::temp_path("ok.yaml");
  auto r = pstest::run_cli("convert " + example("ScheduleInterleaved1F1B_p2_m4_v2.csv") + " " + out +
                           " --stages 4 --microbatches 4");
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK_MESSAGE(contains(r.output, "10 idle cell(s)"), r.output);
  auto help = pstest::run_cli("convert --help");
  CHECK(help.exit_code == 0);
  CHECK(contains(help.output, "--microbatches"));
  std::remove(out.c_str());
}
