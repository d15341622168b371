// import_options.h — the import options the importer fuzz targets write every accepted model with:
// the defaults, vocabulary shards (each MTP module's head then a layer type of its own), sublayers, and
// both with many shards, so that MTP modules, shards and sublayers meet in every input the fuzzer makes.
#pragma once

#include <vector>

#include "fuzz/require.h"
#include "ir/model.h"
#include "ir/model_import.h"

namespace psfuzz {

inline const std::vector<ps::ImportOptions>& import_option_sets() {
  static const std::vector<ps::ImportOptions> k = [] {
    std::vector<ps::ImportOptions> v(4);
    v[1].vocab_shards = 2;
    v[2].vocab_shards = 3;
    v[2].sublayers = true;
    v[3].vocab_shards = 64;
    v[3].sublayers = true;
    return v;
  }();
  return k;
}

// Writes an imported model under every option set: the writer refuses (bad input) or writes a model
// YAML that the model reader accepts.
inline void write_with_every_option_set(const ps::ImportedModel& m) {
  for (const ps::ImportOptions& opt : import_option_sets()) {
    auto yaml = ps::write_imported_model(m, opt);
    if (!yaml.ok()) {
      require(yaml.status().code() == ps::ErrorCode::kBadInput);
      continue;
    }
    require(ps::parse_spec(*yaml, "fuzz.yaml").ok());
  }
}

}  // namespace psfuzz
