// yaml_util.h — small helpers for reading YAML with yaml-cpp and writing it with our own emitter.
//
// Guarantees:
//  * Reading: every yaml-cpp exception is caught here and becomes a Status located at file:line:col
//    (1-based); scalars are converted strictly (an integer field rejects "2.5", "two" and "+5", a
//    number field rejects "inf", "nan" and "+1.5", a flag takes true or false only) with messages that
//    name the field and the text found; unknown and duplicate keys are errors that name the key (and
//    suggest the closest allowed one). Model, cluster and schedule files are all read through these
//    functions, so a field is accepted or refused with the same words in every file (docs/inputs.md).
//  * Writing: format_number prints the shortest text that reads back to the same double, and
//    quote_scalar prints a string so that yaml-cpp reads back exactly that string; both are pure
//    functions of their input, so output built from them is deterministic.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"

namespace ps::yamlu {

// Location of a node in `file` (1-based line/col); `fallback` when yaml-cpp has no mark for it
// (e.g. an absent value).
SourceLoc loc_of(const YAML::Node& n, const std::string& file, const SourceLoc& fallback = {});

// Scalars counted while a document is parsed, before it is built: those of the `list` sequence in each
// entry of the top-level `section` sequence (a schedule's programs[*].ops), each weighing weight(scalar).
// The first that takes the total past `max` is refused with too_many(its location).
struct CountedList {
  std::string_view section;  // "programs"
  std::string_view list;     // "ops"
  int64_t max = 0;           // limits::kMaxScheduleActions
  std::function<int64_t(std::string_view)> weight;
  std::function<Status(const SourceLoc&)> too_many;
};

// Parses `text` that must hold exactly one YAML document (empty text is a document holding null).
// A syntax error, or a second document, is a located bad-input Status. Before the document is built,
// one pass over its events refuses, at the node's file:line:col, a NUL byte, nesting deeper than
// limits::kMaxYamlDepth, more than limits::kMaxYamlNodes nodes, and more of `counted` than its max.
Result<YAML::Node> load_document(const std::string& text, const std::string& file,
                                 const CountedList* counted = nullptr);

// The entries of a YAML map by key (key order in the file is not kept: look fields up by name).
struct Field {
  YAML::Node key;
  YAML::Node value;
};
using Fields = std::map<std::string, Field, std::less<>>;

// One entry of a map, in file order, with its locations.
struct Entry {
  std::string key;      // the key's text
  YAML::Node key_node;  // the key itself
  YAML::Node value;
  SourceLoc key_loc;
  SourceLoc value_loc;  // key_loc where the value has no mark (e.g. empty)
};
// A map's entries in file order (what read_entries returns), and where the map is.
struct Entries {
  std::vector<Entry> entries;
  SourceLoc loc;
  const Entry* find(std::string_view key) const;  // nullptr when absent
};

// Reads `map`, which must be a map whose keys are scalars, all in `allowed`, each appearing once.
// `what` names the map in messages ("problem", "stage 3"). Errors point at the offending key (an
// unknown key's message suggests the closest allowed one) or at the node that is not a map;
// `fallback` locates a map without a mark (an empty value) and its keys. The one map reader of every
// YAML reader: read_map below is the same reading looked up by key.
Result<Entries> read_entries(const YAML::Node& map, const std::vector<std::string_view>& allowed,
                             const std::string& file, std::string_view what, const SourceLoc& fallback = {});
// read_entries by key.
Result<Fields> read_map(const YAML::Node& map, std::initializer_list<std::string_view> allowed,
                        const std::string& file, std::string_view what);
// The refusal of `key` (a key of the map `what`) that is not in `allowed`, and of a key given twice
// (first given at `first_line`): the one wording of every YAML reader, located at the key.
Status unknown_key(const YAML::Node& key, const std::vector<std::string_view>& allowed, const std::string& file,
                   std::string_view what, const SourceLoc& fallback = {});
Status duplicate_key(const YAML::Node& key, int first_line, const std::string& file, std::string_view what,
                     const SourceLoc& fallback = {});
// The allowed key a typo most likely meant: one that extends it ("fwd" -> "fwd_ms") or that it
// extends ("latency_usec" -> "latency_us"), else one within a few edits ("programz" -> "programs");
// empty when nothing is close. The one suggestion rule of every YAML reader.
std::string_view suggest_key(std::string_view key, const std::vector<std::string_view>& allowed);
// The field `key`, or nullptr when absent.
const Field* find(const Fields& f, std::string_view key);

// Strict scalar conversions. `what` names the field in messages ("problem.devices"); messages are
// located at the value, or at `fallback` (its key) where the value has no mark. Integers and numbers
// are the whole text in decimal (no sign '+', no blanks, no hex); a flag is true or false.
Result<long long> to_int(const YAML::Node& n, const std::string& file, std::string_view what,
                         const SourceLoc& fallback = {});
Result<double> to_double(const YAML::Node& n, const std::string& file, std::string_view what,
                         const SourceLoc& fallback = {});
Result<bool> to_bool(const YAML::Node& n, const std::string& file, std::string_view what,
                     const SourceLoc& fallback = {});
Result<std::string> to_string(const YAML::Node& n, const std::string& file, std::string_view what,
                              const SourceLoc& fallback = {});

// Kind of a node in words, for messages: "a map", "a sequence", "a scalar", "empty (null)".
std::string kind_name(const YAML::Node& n);

// Shortest round-trip text of a double ("0.1", "1e+20", "-0"); non-finite values are printed as YAML's
// ".inf", "-.inf", ".nan" (our readers reject them, so they never round-trip silently).
std::string format_number(double v);

// A YAML scalar for `s`: plain when that is unambiguous (e.g. `llama2-7b`, `pipesmith baseline`),
// otherwise double-quoted with escapes ("sha256:ab", "true", "", "1f1b", strings with control chars).
std::string quote_scalar(std::string_view s);
// Always double-quoted, with the same escapes as quote_scalar.
std::string double_quoted(std::string_view s);

}  // namespace ps::yamlu
