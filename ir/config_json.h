// config_json.h — reading a JSON file as model configs are found: every value with its file:line:col,
// and the bare `Infinity`, `-Infinity` and `NaN` tokens that Python's json module writes (real
// Hugging Face configs hold them, e.g. Nemotron-H's `time_step_limit`) accepted as numbers.
//
// Guarantees:
//  * One parser (nlohmann::json's SAX parser) reads the text; the non-standard tokens are replaced
//    outside strings, where a value starts, by blanks of the same length before it runs, so every byte
//    keeps its offset and every error keeps its line:col. A sign before one of them (`-NaN`,
//    `--Infinity`, `+Infinity`) is refused at the sign, not read as a number.
//  * A syntax error is a Status located at the byte where the parser stopped (file:line:col).
//  * Bounded like every input: the file is read with the kMaxInputBytes cap (ir/input_file.h), at
//    most limits::kMaxJsonValues values and limits::kMaxJsonDepth levels of nesting are accepted,
//    and the reader refuses the first one past them, at its line:col.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"

namespace ps {

struct JsonValue {
  enum class Kind { kNull, kBool, kInt, kFloat, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  long long integer = 0;  // kInt (unsigned values above the signed range are kFloat)
  double number = 0;      // kFloat; also kInt's value as a double
  std::string string;     // kString
  std::vector<JsonValue> items;  // kArray: the elements; kObject: the members, in file order
  std::string key;               // a member's key in the object holding it
  SourceLoc loc;                 // where the value starts

  // The member named `key` of an object (the last one when repeated, as Python's json does), or
  // nullptr (also when this is not an object).
  const JsonValue* find(std::string_view key) const;
  bool is_number() const { return kind == Kind::kInt || kind == Kind::kFloat; }
  // "an integer", "a string", ... (for messages).
  const char* kind_name() const;
};

// Parses `text`; `file_name` is used for locations only.
Result<JsonValue> parse_config_json(std::string_view text, const std::string& file_name);
// Reads `path` (with the input cap) and parses it.
Result<JsonValue> load_config_json(const std::string& path);

}  // namespace ps
