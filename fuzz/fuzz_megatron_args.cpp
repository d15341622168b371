// libFuzzer target: the Megatron-LM argument import (ir/megatron_import.h) on any text. Properties
// checked on every input:
//  * a refused argument file gets a kBadInput message located in the file it was read from;
//  * accepted arguments either are refused by the writer with a kBadInput message, or import to a
//    model YAML that the model reader accepts, under each of the import's option sets (vocabulary
//    shards with --mtp-num-layers, sublayers: no combination may reach an assertion).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/import_options.h"
#include "fuzz/require.h"
#include "ir/megatron_import.h"
#include "ir/model.h"

namespace {
using psfuzz::require;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto m = ps::megatron_model(text, "fuzz.args", "fuzz");
  if (!m.ok()) {
    require(m.status().code() == ps::ErrorCode::kBadInput);
    require(!m.status().message().empty());
    require(m.status().loc().file == "fuzz.args");
    return 0;
  }
  psfuzz::write_with_every_option_set(*m);
  return 0;
}
