// json_write.h — the text of every JSON document pipesmith writes (reports, `lower --json`, `bound
// --json`, the export's plan, traces): valid JSON whatever bytes its names and paths hold.
//
// Guarantees:
//  * Strings (keys and values) that are well-formed UTF-8 are written as nlohmann::json writes them.
//  * A byte that is not part of well-formed UTF-8 (a file name in another encoding, a name a YAML file
//    gave as raw bytes) is written as the four characters `\xNN` (JSON "\\xNN"), as error messages
//    quote such bytes (ir/status.h, excerpt): the document stays valid JSON and says which byte it was.
//  * Deterministic: the same document gives the same text.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace ps {

// `text` with every byte outside well-formed UTF-8 written as `\xNN`; unchanged when it is valid.
std::string escape_invalid_utf8(std::string_view text);

// j.dump(indent), with escape_invalid_utf8 applied to every key and string that needs it.
std::string dump_json(const nlohmann::json& j, int indent = -1);
std::string dump_json(const nlohmann::ordered_json& j, int indent = -1);

}  // namespace ps
