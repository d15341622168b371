// config_json.cpp — see config_json.h. nlohmann's SAX parser reads the text through an iterator that
// tracks the byte it has reached; each event places its value at the first byte after the previous
// token that is not a blank or a separator.
#include "ir/config_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "ir/input_file.h"
#include "ir/limits.h"

namespace ps {

namespace {

// Byte offset -> 1-based line:col.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text) {
    starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') starts_.push_back(i + 1);
  }
  SourceLoc at(size_t offset, const std::string& file) const {
    auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
    const size_t line = static_cast<size_t>(it - starts_.begin());
    return SourceLoc{file, static_cast<int>(line), static_cast<int>(offset - starts_[line - 1] + 1)};
  }

 private:
  std::vector<size_t> starts_;
};

bool json_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The non-standard tokens outside strings, replaced by blanks; their values by offset. A token is one
// of them only where a value starts (after ':', ',', '[' or at the start of the text); one after a
// sign ("-NaN", "--Infinity", "+Infinity": no JSON and no Python writes them) sets `bad` to the
// offsets of the first sign and of the token's end, and nothing after it is replaced.
std::map<size_t, double> blank_non_finite(std::string& text, std::optional<std::pair<size_t, size_t>>& bad) {
  std::map<size_t, double> at;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      continue;
    }
    struct Token {
      std::string_view word;
      double value;
    };
    for (const Token& t : {Token{"-Infinity", -std::numeric_limits<double>::infinity()},
                           Token{"Infinity", std::numeric_limits<double>::infinity()},
                           Token{"NaN", std::numeric_limits<double>::quiet_NaN()}}) {
      if (text.compare(i, t.word.size(), t.word) != 0) continue;
      // A whole token: not part of a longer word (an identifier the parser will refuse anyway).
      const size_t end = i + t.word.size();
      auto word_char = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
      if ((i > 0 && word_char(text[i - 1])) || (end < text.size() && word_char(text[end]))) continue;
      // Where it stands: the byte before it, blanks skipped.
      size_t b = i;
      while (b > 0 && json_blank(text[b - 1])) --b;
      if (b > 0 && (text[b - 1] == '-' || text[b - 1] == '+')) {
        while (b > 0 && (text[b - 1] == '-' || text[b - 1] == '+' || json_blank(text[b - 1]))) --b;
        while (json_blank(text[b])) ++b;
        bad = std::pair<size_t, size_t>{b, end};
        return at;
      }
      if (b > 0 && text[b - 1] != ':' && text[b - 1] != ',' && text[b - 1] != '[') continue;  // the parser refuses it
      // "0" then blanks: a number the parser accepts, of the same length.
      text[i] = '0';
      for (size_t k = i + 1; k < end; ++k) text[k] = ' ';
      at[i] = t.value;
      i = end - 1;
      break;
    }
  }
  return at;
}

// Tracks how far the parser has read.
struct CountingIterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;
  const char* p = nullptr;
  const char** reached = nullptr;
  reference operator*() const { return *p; }
  CountingIterator& operator++() {
    ++p;
    *reached = p;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const CountingIterator& o) const { return p == o.p; }
  bool operator!=(const CountingIterator& o) const { return p != o.p; }
};

class TreeBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  TreeBuilder(std::string_view text, const char* const* reached, const std::map<size_t, double>& special,
              const LineIndex& lines, const std::string& file)
      : text_(text), reached_(reached), special_(special), lines_(lines), file_(file) {}

  bool null() override { return scalar(JsonValue{}); }
  bool boolean(bool v) override {
    JsonValue j;
    j.kind = JsonValue::Kind::kBool;
    j.boolean = v;
    return scalar(std::move(j));
  }
  bool number_integer(number_integer_t v) override {
    JsonValue j;
    j.kind = JsonValue::Kind::kInt;
    j.integer = v;
    j.number = static_cast<double>(v);
    return scalar(std::move(j));
  }
  bool number_unsigned(number_unsigned_t v) override {
    JsonValue j;
    if (v <= static_cast<number_unsigned_t>(std::numeric_limits<long long>::max())) {
      j.kind = JsonValue::Kind::kInt;
      j.integer = static_cast<long long>(v);
    } else {
      j.kind = JsonValue::Kind::kFloat;
    }
    j.number = static_cast<double>(v);
    return scalar(std::move(j));
  }
  bool number_float(number_float_t v, const string_t&) override {
    JsonValue j;
    j.kind = JsonValue::Kind::kFloat;
    j.number = v;
    return scalar(std::move(j));
  }
  bool string(string_t& v) override {
    JsonValue j;
    j.kind = JsonValue::Kind::kString;
    j.string = std::move(v);
    return scalar(std::move(j));
  }
  bool binary(binary_t&) override { return false; }  // not produced by the JSON format
  bool start_object(std::size_t) override { return open(JsonValue::Kind::kObject); }
  bool start_array(std::size_t) override { return open(JsonValue::Kind::kArray); }
  bool key(string_t& k) override {
    pending_key_ = std::move(k);
    cursor_ = offset();
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception& ex) override {
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line 3, column 5: syntax
    // error while parsing value - invalid literal; last read: '...'": keep what follows the position.
    std::string what = ex.what();
    if (size_t c = what.find(": "); c != std::string::npos) what = what.substr(c + 2);
    // A whole token of the wrong kind ("unexpected string literal") is located at its start; a token
    // the lexer could not read, at the byte where it stopped.
    size_t at = position == 0 ? 0 : std::min(position - 1, text_.size());
    if (what.find("unexpected") != std::string::npos && position >= last_token.size() &&
        text_.compare(position - last_token.size(), last_token.size(), last_token) == 0)
      at = position - last_token.size();
    error_ = Status::bad_input(fmt::format("JSON {}", what), lines_.at(at, file_));
    return false;
  }

  Status error() const { return error_; }
  JsonValue take_root() { return std::move(root_); }

 private:
  size_t offset() const { return static_cast<size_t>(*reached_ - text_.data()); }
  // Where the value just read starts: the first byte at or after the cursor that is not a blank or
  // a separator.
  size_t value_start() const {
    size_t i = cursor_;
    while (i < text_.size() && (std::isspace(static_cast<unsigned char>(text_[i])) || text_[i] == ':' ||
                                text_[i] == ',' || text_[i] == '[' || text_[i] == '{'))
      ++i;
    return i;
  }
  bool count(size_t start) {
    if (++values_ <= limits::kMaxJsonValues) return true;
    error_ = Status::bad_input(
        fmt::format("more than {} JSON values; pipesmith reads config files of at most {} values (docs/inputs.md, "
                    "\"Limits\")",
                    limits::with_commas(limits::kMaxJsonValues), limits::with_commas(limits::kMaxJsonValues)),
        lines_.at(start, file_));
    return false;
  }
  void place(JsonValue&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
    } else if (stack_.back().kind == JsonValue::Kind::kObject) {
      v.key = std::move(pending_key_);
      stack_.back().items.push_back(std::move(v));
    } else {
      stack_.back().items.push_back(std::move(v));
    }
  }
  bool scalar(JsonValue v) {
    const size_t start = value_start();
    if (!count(start)) return false;
    v.loc = lines_.at(start, file_);
    if (auto it = special_.find(start); it != special_.end() && v.kind == JsonValue::Kind::kInt) {
      v.kind = JsonValue::Kind::kFloat;
      v.number = it->second;
      v.integer = 0;
    }
    place(std::move(v));
    cursor_ = offset();
    return true;
  }
  bool open(JsonValue::Kind kind) {
    const size_t start = offset() - 1;  // the '{' or '[' just read
    if (!count(start)) return false;
    if (static_cast<int>(stack_.size()) >= limits::kMaxJsonDepth) {
      error_ = Status::bad_input(
          fmt::format("JSON nested deeper than {} levels (objects and arrays inside each other)", limits::kMaxJsonDepth),
          lines_.at(start, file_));
      return false;
    }
    JsonValue v;
    v.kind = kind;
    v.loc = lines_.at(start, file_);
    keys_.push_back(std::move(pending_key_));
    stack_.push_back(std::move(v));
    cursor_ = offset();
    return true;
  }
  bool close() {
    JsonValue v = std::move(stack_.back());
    stack_.pop_back();
    pending_key_ = std::move(keys_.back());
    keys_.pop_back();
    place(std::move(v));
    cursor_ = offset();
    return true;
  }

  std::string_view text_;
  const char* const* reached_;
  const std::map<size_t, double>& special_;
  const LineIndex& lines_;
  const std::string& file_;
  std::vector<JsonValue> stack_;
  std::vector<std::string> keys_;  // the key each open container sits under
  std::string pending_key_;
  JsonValue root_;
  size_t cursor_ = 0;
  int64_t values_ = 0;
  Status error_;
};

}  // namespace

const JsonValue* JsonValue::find(std::string_view key) const {
  const JsonValue* found = nullptr;
  if (kind != Kind::kObject) return nullptr;
  for (const JsonValue& v : items)
    if (v.key == key) found = &v;
  return found;
}

const char* JsonValue::kind_name() const {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "a boolean";
    case Kind::kInt:
      return "an integer";
    case Kind::kFloat:
      return "a number";
    case Kind::kString:
      return "a string";
    case Kind::kArray:
      return "an array";
    case Kind::kObject:
      return "an object";
  }
  return "?";
}

Result<JsonValue> parse_config_json(std::string_view input, const std::string& file_name) {
  std::string text(input);
  std::optional<std::pair<size_t, size_t>> signed_special;
  const std::map<size_t, double> special = blank_non_finite(text, signed_special);
  const LineIndex lines(text);
  if (signed_special) {
    const auto [from, to] = *signed_special;
    std::string token = text.substr(from, std::min<size_t>(to - from, 40));
    std::replace_if(token.begin(), token.end(), json_blank, ' ');
    return Status::bad_input(fmt::format("JSON: '{}' is not a number: the non-standard numbers read are the bare "
                                         "Infinity, -Infinity and NaN that Python writes, with no other sign",
                                         token),
                             lines.at(from, file_name));
  }
  const char* reached = text.data();
  TreeBuilder builder(text, &reached, special, lines, file_name);
  CountingIterator first{text.data(), &reached};
  CountingIterator last{text.data() + text.size(), &reached};
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(first, last, &builder);
  } catch (const std::exception& e) {  // defensive: the SAX interface reports errors by return value
    return Status::bad_input(fmt::format("JSON: {}", e.what()), lines.at(reached - text.data(), file_name));
  }
  if (!ok) {
    Status st = builder.error();
    if (st.is_ok()) st = Status::bad_input("JSON: unreadable", lines.at(reached - text.data(), file_name));
    return st;
  }
  return builder.take_root();
}

Result<JsonValue> load_config_json(const std::string& path) {
  std::string text;
  if (std::optional<InputFileError> why = read_input_file(path, text))
    return Status::bad_input(fmt::format("cannot read config file: {}", why->reason), SourceLoc{path, 0, 0});
  return parse_config_json(text, path);
}

}  // namespace ps
