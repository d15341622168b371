// libFuzzer target: the PyTorch CSV reader. Properties checked on every input:
//  * a rejected input gets a message and a location in the file it was read from;
//  * an accepted input, written back as CSV and read again, gives the same programs and placement;
//  * its YAML form reads back, and writing that again is byte-identical (for schedules of up to
//    kMaxRoundTripStages stages: a 7-byte cell such as "70700F0" names 70,701 stages, whose 12 MB
//    YAML takes seconds under the sanitizers; the YAML writer and reader run the same code at any size).
#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/schedule_io.h"
#include "fuzz/require.h"

namespace {
using psfuzz::require;

constexpr int kMaxRoundTripStages = 4096;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto r = ps::parse_pytorch_csv(text, "fuzz.csv");
  if (!r.ok()) {
    require(r.status().code() == ps::ErrorCode::kBadInput);
    require(!r.status().message().empty());
    require(r.status().loc().file == "fuzz.csv");
    return 0;
  }
  const ps::Schedule& s = r->schedule;
  require(s.problem.devices == s.num_devices());
  require(s.problem.num_stages() > 0);

  std::string csv = ps::format_pytorch_csv(s);
  auto again = ps::parse_pytorch_csv(csv, "again.csv");
  require(again.ok());
  require(again->schedule.programs == s.programs);
  require(again->schedule.problem.num_stages() == s.problem.num_stages());
  for (int st = 0; st < s.problem.num_stages(); ++st) {
    require(again->schedule.problem.device_of(ps::StageId{st}) == s.problem.device_of(ps::StageId{st}));
  }
  require(ps::format_pytorch_csv(again->schedule) == csv);

  if (s.problem.num_stages() > kMaxRoundTripStages) return 0;
  std::string yaml = ps::format_schedule_yaml(s);
  auto y = ps::parse_schedule_yaml(yaml, "fuzz.yaml");
  require(y.ok());
  require(y->programs == s.programs);
  require(ps::format_schedule_yaml(*y) == yaml);
  require(ps::canonical_text(*y) == ps::canonical_text(s));
  return 0;
}
