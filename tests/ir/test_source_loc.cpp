// SourceLoc's file name is held once per file: every action read from a schedule points at one
// string, however long the path.
#include <doctest/doctest.h>

#include <fstream>

#include "ir/schedule_io.h"
#include "test_util.h"

namespace source_loc_test {

TEST_CASE("SourceLoc: the locations of one file share its name") {
  const std::string dir = pstest::fresh_dir("loc-" + std::string(200, 'd'));
  const std::string path = dir + "/" + std::string(200, 'f') + ".yaml";
  std::ofstream(path) << "format: pipesmith-schedule/1\ngenerator: test\nproblem:\n  name: t\n  devices: 2\n"
                         "  microbatches: 2\n  memory_gb: 0\n  bytes_per_param: 2\n"
                         "  link: {bandwidth_gb_per_s: 1, latency_us: 0}\nstages:\n"
                         "  - {id: 0, device: 0, fwd_ms: 1, bwd_input_ms: 1, bwd_weight_ms: 1}\n"
                         "  - {id: 1, device: 1, fwd_ms: 1, bwd_input_ms: 1, bwd_weight_ms: 1}\n"
                         "programs:\n  - device: 0\n    ops: [0F0, 0F1, 0B0, 0B1]\n"
                         "  - device: 1\n    ops: [1F0, 1B0, 1F1, 1B1]\n";
  auto s = ps::read_schedule_yaml(path);
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  const std::string* first = &s->programs[0][0].loc.file.str();
  CHECK(*first == path);
  for (const auto& prog : s->programs)
    for (const ps::Action& a : prog) CHECK(&a.loc.file.str() == first);
  // Copies share it; equal names compare equal whatever they share.
  const ps::SourceLoc copy = s->programs[1][3].loc;
  CHECK(&copy.file.str() == first);
  CHECK(copy.file == ps::SharedPath(std::string(path)));
  CHECK(ps::SharedPath().empty());
  CHECK(ps::SourceLoc{}.str().empty());
  CHECK(ps::SourceLoc{path, 3, 7}.str() == path + ":3:7");
}

}  // namespace source_loc_test
