// libFuzzer target: the pipesmith-schedule/1 reader. Properties checked on every input:
//  * a rejected input gets a message and a location in the file it was read from (never an uncaught
//    yaml-cpp exception: libFuzzer reports those as crashes);
//  * an accepted input written back reads again, and writing that is byte-identical (the first write
//    normalises formatting; after that the text is a fixed point);
//  * the CSV writer and canonical text accept whatever the reader accepted, and a CSV that reads back
//    holds the same programs.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/schedule_io.h"
#include "fuzz/require.h"

using psfuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto r = ps::parse_schedule_yaml(text, "fuzz.yaml");
  if (!r.ok()) {
    require(r.status().code() == ps::ErrorCode::kBadInput);
    require(!r.status().message().empty());
    require(r.status().loc().file == "fuzz.yaml");
    return 0;
  }
  const ps::Schedule& s = *r;
  require(s.num_devices() == s.problem.devices);
  require(s.predicted.empty() || s.predicted.size() == s.programs.size());

  std::string first = ps::format_schedule_yaml(s);
  auto again = ps::parse_schedule_yaml(first, "again.yaml");
  require(again.ok());
  require(again->programs == s.programs);
  require(ps::format_schedule_yaml(*again) == first);
  require(ps::canonical_text(*again) == ps::canonical_text(s));

  if (!ps::check_pytorch_csv_exportable(s).is_ok()) return 0;  // R ops: no CSV form
  std::string csv = ps::format_pytorch_csv(s);
  auto c = ps::parse_pytorch_csv(csv, "fuzz.csv");
  if (c.ok()) require(c->schedule.programs == s.programs);
  return 0;
}
