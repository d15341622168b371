#include "ir/yaml_util.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>
#include <vector>

namespace ps::yamlu {

SourceLoc loc_of(const YAML::Node& n, const std::string& file, const SourceLoc& fallback) {
  if (!n.IsDefined()) return fallback.valid() ? fallback : SourceLoc{file, 0, 0};
  YAML::Mark m = n.Mark();
  if (m.is_null() || m.line < 0) return fallback.valid() ? fallback : SourceLoc{file, 0, 0};
  return SourceLoc{file, m.line + 1, m.column + 1};
}

namespace {

// Remembers where a document starts; ignores everything else (used to count documents).
class DocumentStart : public YAML::EventHandler {
 public:
  YAML::Mark mark = YAML::Mark::null_mark();
  void OnDocumentStart(const YAML::Mark& m) override { mark = m; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

Result<YAML::Node> load_document(const std::string& text, const std::string& file) {
  try {
    // Count documents with the event parser, stopping at the second: YAML::LoadAll of yaml-cpp 0.7
    // can loop forever on malformed input that leaves tokens the document parser does not consume.
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStart first, second;
    if (parser.HandleNextDocument(first) && parser.HandleNextDocument(second)) {
      return Status::bad_input(
          "expected one YAML document, found more (an extra '---' section, or text after the "
          "document that does not belong to it)",
          second.mark.is_null() ? SourceLoc{file, 0, 0}
                                : SourceLoc{file, second.mark.line + 1, second.mark.column + 1});
    }
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    SourceLoc loc{file, 0, 0};
    if (!e.mark.is_null() && e.mark.line >= 0) loc = SourceLoc{file, e.mark.line + 1, e.mark.column + 1};
    return Status::bad_input(fmt::format("YAML syntax error: {}", e.msg), loc);
  } catch (const std::exception& e) {
    return Status::bad_input(fmt::format("cannot parse YAML: {}", e.what()), SourceLoc{file, 0, 0});
  }
}

std::string kind_name(const YAML::Node& n) {
  if (!n.IsDefined()) return "missing";
  switch (n.Type()) {
    case YAML::NodeType::Null: return "empty (null)";
    case YAML::NodeType::Scalar: {
      const std::string& t = n.Scalar();
      if (t.size() > 40) return fmt::format("the scalar '{}...'", t.substr(0, 40));
      return fmt::format("the scalar '{}'", excerpt(t));
    }
    case YAML::NodeType::Sequence: return "a sequence";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Undefined: return "missing";
  }
  return "unknown";
}

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string join(std::initializer_list<std::string_view> xs) {
  std::string s;
  for (auto x : xs) {
    if (!s.empty()) s += ", ";
    s += x;
  }
  return s;
}

}  // namespace

std::string_view suggest_key(std::string_view key, const std::vector<std::string_view>& allowed) {
  std::string_view best;
  for (auto a : allowed) {
    bool extends = key.size() >= 3 && a.substr(0, key.size()) == key;
    bool extended = a.size() >= 3 && key.substr(0, a.size()) == a;
    if ((extends || extended) && (best.empty() || a.size() < best.size())) best = a;
  }
  if (!best.empty()) return best;
  size_t best_d = std::min<size_t>(3, key.size() / 2 + 1);
  for (auto a : allowed) {
    size_t d = edit_distance(key, a);
    if (d < best_d) {
      best_d = d;
      best = a;
    }
  }
  return best;
}

Result<Fields> read_map(const YAML::Node& map, std::initializer_list<std::string_view> allowed,
                        const std::string& file, std::string_view what) {
  if (!map.IsMap()) {
    return Status::bad_input(fmt::format("{}: expected a map, got {}", what, kind_name(map)),
                             loc_of(map, file));
  }
  Fields out;
  for (const auto& kv : map) {
    YAML::Node k = kv.first;
    if (!k.IsScalar()) {
      return Status::bad_input(fmt::format("{}: keys must be plain names, got {}", what, kind_name(k)),
                               loc_of(k, file, loc_of(map, file)));
    }
    const std::string& key = k.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string_view best = suggest_key(key, std::vector<std::string_view>(allowed));
      std::string hint = best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
      return Status::bad_input(fmt::format("{}: unknown key '{}'{}; allowed keys: {}", what, excerpt(key), hint,
                                           join(allowed)),
                               loc_of(k, file, loc_of(map, file)));
    }
    if (out.count(key) > 0) {
      SourceLoc first = loc_of(out[key].key, file);
      return Status::bad_input(
          fmt::format("{}: duplicate key '{}' (first given at line {})", what, excerpt(key), first.line),
          loc_of(k, file, loc_of(map, file)));
    }
    out[key] = Field{k, kv.second};
  }
  return out;
}

const Field* find(const Fields& f, std::string_view key) {
  auto it = f.find(key);
  return it == f.end() ? nullptr : &it->second;
}

namespace {
Status not_scalar(const YAML::Node& n, const std::string& file, std::string_view what,
                  std::string_view expected) {
  return Status::bad_input(fmt::format("{}: expected {}, got {}", what, expected, kind_name(n)),
                           loc_of(n, file));
}
}  // namespace

Result<long long> to_int(const YAML::Node& n, const std::string& file, std::string_view what) {
  if (!n.IsScalar()) return not_scalar(n, file, what, "an integer");
  const std::string& s = n.Scalar();
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) {
    return Status::bad_input(fmt::format("{}: integer '{}' is out of range", what, excerpt(s)), loc_of(n, file));
  }
  if (ec != std::errc() || p != s.data() + s.size()) {
    return Status::bad_input(fmt::format("{}: expected an integer, got '{}'", what, excerpt(s)), loc_of(n, file));
  }
  return v;
}

Result<double> to_double(const YAML::Node& n, const std::string& file, std::string_view what) {
  if (!n.IsScalar()) return not_scalar(n, file, what, "a number");
  const std::string& s = n.Scalar();
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) {
    return Status::bad_input(fmt::format("{}: expected a finite number, got '{}'", what, excerpt(s)),
                             loc_of(n, file));
  }
  return v;
}

Result<bool> to_bool(const YAML::Node& n, const std::string& file, std::string_view what) {
  if (!n.IsScalar()) return not_scalar(n, file, what, "true or false");
  const std::string& s = n.Scalar();
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return Status::bad_input(fmt::format("{}: expected true or false, got '{}'", what, excerpt(s)), loc_of(n, file));
}

Result<std::string> to_string(const YAML::Node& n, const std::string& file, std::string_view what) {
  if (!n.IsScalar()) return not_scalar(n, file, what, "a string");
  return n.Scalar();
}

std::string format_number(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  return fmt::format("{}", v);
}

namespace {

bool plain_ok(std::string_view s) {
  if (s.empty()) return false;
  auto first = static_cast<unsigned char>(s.front());
  if (!(std::isalpha(first) || first == '_')) return false;
  if (s.back() == ' ') return false;
  char prev = 0;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    bool ok = std::isalnum(u) || c == '_' || c == '.' || c == '/' || c == '+' || c == '-' ||
              (c == ' ' && prev != ' ');
    if (!ok || u >= 0x80) return false;
    prev = c;
  }
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static constexpr std::string_view kReserved[] = {"true", "false", "yes", "no",  "on",
                                                   "off",  "null",  "y",   "n",   "nan"};
  return std::find(std::begin(kReserved), std::end(kReserved), lower) == std::end(kReserved);
}

}  // namespace

std::string quote_scalar(std::string_view s) {
  if (plain_ok(s)) return std::string(s);
  return double_quoted(s);
}

std::string double_quoted(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    auto u = static_cast<unsigned char>(s[i]);
    // UTF-8 sequences that YAML treats as line breaks or a byte-order mark: escape them.
    auto next_is = [&](std::string_view seq) { return s.substr(i, seq.size()) == seq; };
    if (next_is("\xC2\x85")) {
      out += "\\u0085";
      i += 1;
    } else if (next_is("\xE2\x80\xA8")) {
      out += "\\u2028";
      i += 2;
    } else if (next_is("\xE2\x80\xA9")) {
      out += "\\u2029";
      i += 2;
    } else if (next_is("\xEF\xBB\xBF")) {
      out += "\\uFEFF";
      i += 2;
    } else if (s[i] == '"') {
      out += "\\\"";
    } else if (s[i] == '\\') {
      out += "\\\\";
    } else if (s[i] == '\n') {
      out += "\\n";
    } else if (s[i] == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      out += fmt::format("\\x{:02X}", static_cast<unsigned>(u));
    } else {
      out += s[i];
    }
  }
  out += '"';
  return out;
}

}  // namespace ps::yamlu
