// libFuzzer target: the JSON config reader (ir/config_json.h) and the Hugging Face import
// (ir/hf_import.h) on whatever it accepts. Properties checked on every input:
//  * a rejected input gets a kBadInput message located in the file it was read from;
//  * an accepted config either is refused by the import with a kBadInput message, or imports to a
//    model YAML that the model reader accepts (the writer checks it loads; here it is read again),
//    under each of the import's option sets below (vocabulary shards with MTP modules and sublayers
//    multiply the layer types and layers: no combination may reach an assertion).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/import_options.h"
#include "fuzz/require.h"
#include "ir/config_json.h"
#include "ir/hf_import.h"
#include "ir/model.h"

namespace {
using psfuzz::require;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto j = ps::parse_config_json(text, "fuzz.json");
  if (!j.ok()) {
    require(j.status().code() == ps::ErrorCode::kBadInput);
    require(!j.status().message().empty());
    require(j.status().loc().file == "fuzz.json");
    require(j.status().loc().line >= 1);
    return 0;
  }
  auto m = ps::hf_model(*j, "fuzz");
  if (!m.ok()) {
    require(m.status().code() == ps::ErrorCode::kBadInput);
    return 0;
  }
  psfuzz::write_with_every_option_set(*m);
  return 0;
}
