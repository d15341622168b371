#include "ir/yaml_util.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>
#include <optional>
#include <vector>

#include "ir/limits.h"

namespace ps::yamlu {

SourceLoc loc_of(const YAML::Node& n, const std::string& file, const SourceLoc& fallback) {
  if (!n.IsDefined()) return fallback.valid() ? fallback : SourceLoc{file, 0, 0};
  YAML::Mark m = n.Mark();
  if (m.is_null() || m.line < 0) return fallback.valid() ? fallback : SourceLoc{file, 0, 0};
  return SourceLoc{file, m.line + 1, m.column + 1};
}

namespace {

SourceLoc loc_at(const YAML::Mark& m, const std::string& file) {
  return m.is_null() || m.line < 0 ? SourceLoc{file, 0, 0} : SourceLoc{file, m.line + 1, m.column + 1};
}

// Thrown out of the event parser to stop it at a node past a limit.
struct Refused {
  Status status;
};

// Counts the events of one document (see load_document) and remembers where it starts. An alias
// counts as the node it names, expanded where the alias stands (its events are replayed there, located
// at the alias), so a file is held to the limits by what its reader will walk, not by its size.
class CountingHandler : public YAML::EventHandler {
 public:
  CountingHandler(const std::string& file, const CountedList* counted) : file_(file), counted_(counted) {}
  YAML::Mark mark = YAML::Mark::null_mark();

  void OnDocumentStart(const YAML::Mark& m) override { mark = m; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t anchor) override {
    define_scalar(anchor, record(Event::kNull, 0, "", anchor != 0));
    scalar(m, "");
  }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t anchor) override {
    record(Event::kAlias, anchor, "");
    expand(m, anchor);
  }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor, const std::string& value) override {
    define_scalar(anchor, record(Event::kScalar, 0, value, anchor != 0));
    scalar(m, value);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    start(m, false, anchor);
  }
  void OnSequenceEnd() override { end(Event::kSeqEnd); }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    start(m, true, anchor);
  }
  void OnMapEnd() override { end(Event::kMapEnd); }

 private:
  struct Frame {
    bool map = false;
    bool want_key = false;  // a map's next node is a key
    bool is_key = false;    // this collection is a (complex) key of the map around it
    std::string key;        // a map's current key
    YAML::anchor_t anchor = 0;  // the anchor this collection defines (0: none)
    size_t log_start = 0;       // its first event in log_
  };
  // The events of anchored nodes, kept while one is open so that an alias can replay them.
  struct Event {
    enum Kind : uint8_t { kScalar, kNull, kAlias, kSeq, kSeqEnd, kMap, kMapEnd } kind;
    YAML::anchor_t anchor;  // kAlias: the anchor it names
    std::string value;      // kScalar
  };

  // Logs an event when it belongs to an anchored node (one is open, or this one defines it); returns
  // its index in log_.
  size_t record(Event::Kind kind, YAML::anchor_t anchor, const std::string& value, bool defines = false) {
    if (open_anchored_ == 0 && !defines) return log_.size();
    log_.push_back(Event{kind, anchor, value});
    return log_.size() - 1;
  }
  void define_scalar(YAML::anchor_t anchor, size_t at) {
    if (anchor) anchors_[anchor] = {at, at + 1};
  }
  void start(const YAML::Mark& m, bool map, YAML::anchor_t anchor) {
    const size_t at = record(map ? Event::kMap : Event::kSeq, 0, "", anchor != 0);
    open(m, map);
    if (anchor) {
      stack_.back().anchor = anchor;
      stack_.back().log_start = at;
      ++open_anchored_;
    }
  }
  void end(Event::Kind kind) {
    record(kind, 0, "");
    if (!stack_.empty() && stack_.back().anchor) {
      anchors_[stack_.back().anchor] = {stack_.back().log_start, log_.size()};
      --open_anchored_;
    }
    close();
  }
  // The alias at `m`: the anchored node's events again, here. Each replayed node counts (node() stops
  // the replay at the node limit, so nested aliases cannot multiply without bound).
  void expand(const YAML::Mark& m, YAML::anchor_t anchor) {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) {
      throw Refused{Status::bad_input("an alias inside the node its anchor names (a node containing itself)",
                                      loc_at(m, file_))};
    }
    const auto [from, to] = it->second;
    for (size_t i = from; i < to; ++i) {
      const Event& e = log_[i];
      switch (e.kind) {
        case Event::kScalar: scalar(m, e.value); break;
        case Event::kNull: scalar(m, ""); break;
        case Event::kAlias: expand(m, e.anchor); break;
        case Event::kSeq: open(m, false); break;
        case Event::kMap: open(m, true); break;
        case Event::kSeqEnd:
        case Event::kMapEnd: close(); break;
      }
    }
  }

  void node(const YAML::Mark& m) {
    if (++nodes_ <= limits::kMaxYamlNodes) return;
    throw Refused{Status::bad_input(
        fmt::format("more than {} YAML nodes; pipesmith reads files of at most {} nodes (docs/inputs.md, \"Limits\")",
                    limits::with_commas(limits::kMaxYamlNodes), limits::with_commas(limits::kMaxYamlNodes)),
        loc_at(m, file_))};
  }
  // A node in a map's key position becomes its current key; a value ends the map's entry.
  bool take_key(const std::string& value) {
    if (stack_.empty() || !stack_.back().map || !stack_.back().want_key) return false;
    stack_.back().key = value;
    stack_.back().want_key = false;
    return true;
  }
  void value_done() {
    if (!stack_.empty() && stack_.back().map) stack_.back().want_key = true;
  }
  bool in_counted_list() const {
    return counted_ && stack_.size() == 4 && stack_[0].map && stack_[0].key == counted_->section && !stack_[1].map &&
           stack_[2].map && stack_[2].key == counted_->list && !stack_[3].map;
  }
  void scalar(const YAML::Mark& m, const std::string& value) {
    node(m);
    if (take_key(value)) return;
    if (in_counted_list()) {
      counted_total_ += counted_->weight(value);
      if (counted_total_ > counted_->max) throw Refused{counted_->too_many(loc_at(m, file_))};
    }
    value_done();
  }
  void open(const YAML::Mark& m, bool map) {
    node(m);
    if (static_cast<int>(stack_.size()) >= limits::kMaxYamlDepth)
      throw Refused{Status::bad_input(fmt::format("nested deeper than {} levels (maps and sequences inside each other)",
                                                  limits::kMaxYamlDepth),
                                      loc_at(m, file_))};
    Frame f;
    f.map = map;
    f.want_key = map;
    f.is_key = take_key("");
    stack_.push_back(std::move(f));
  }
  void close() {
    const bool was_key = !stack_.empty() && stack_.back().is_key;
    if (!stack_.empty()) stack_.pop_back();
    if (!was_key) value_done();
  }

  const std::string& file_;
  const CountedList* counted_;
  std::vector<Frame> stack_;
  int64_t nodes_ = 0;
  int64_t counted_total_ = 0;
  std::vector<Event> log_;                                       // events of anchored nodes
  std::map<YAML::anchor_t, std::pair<size_t, size_t>> anchors_;  // anchor -> its events [from, to) in log_
  int open_anchored_ = 0;                                        // anchored collections open now
};

// Where the first NUL byte is (1-based line and column, UTF-8 continuation bytes not counted).
std::optional<SourceLoc> find_nul(const std::string& text, const std::string& file) {
  const size_t at = text.find('\0');
  if (at == std::string::npos) return std::nullopt;
  int line = 1, col = 1;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line, col = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++col;
    }
  }
  return SourceLoc{file, line, col};
}

// Remembers where a document starts; ignores everything else.
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

Result<YAML::Node> load_document(const std::string& text, const std::string& file, const CountedList* counted) {
  if (std::optional<SourceLoc> nul = find_nul(text, file))
    return Status::bad_input(fmt::format("NUL byte at {}:{}; a YAML file is text", nul->line, nul->col), *nul);
  try {
    // One pass over the events first: it counts the nodes (and `counted`), bounds the nesting, and stops
    // at the second document (YAML::LoadAll of yaml-cpp 0.7 can loop forever on malformed input that
    // leaves tokens the document parser does not consume). Only then is the document built.
    std::istringstream in(text);
    YAML::Parser parser(in);
    CountingHandler first(file, counted);
    DocumentStart second;
    if (parser.HandleNextDocument(first) && parser.HandleNextDocument(second)) {
      return Status::bad_input(
          "expected one YAML document, found more (an extra '---' section, or text after the "
          "document that does not belong to it)",
          second.mark.is_null() ? SourceLoc{file, 0, 0}
                                : SourceLoc{file, second.mark.line + 1, second.mark.column + 1});
    }
    return YAML::Load(text);
  } catch (const Refused& r) {
    return r.status;
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

std::string join(const std::vector<std::string_view>& xs) {
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

const Entry* Entries::find(std::string_view key) const {
  for (const Entry& e : entries)
    if (e.key == key) return &e;
  return nullptr;
}

Result<Entries> read_entries(const YAML::Node& map, const std::vector<std::string_view>& allowed,
                             const std::string& file, std::string_view what, const SourceLoc& fallback) {
  if (!map.IsMap()) {
    return Status::bad_input(fmt::format("{}: expected a map, got {}", what, kind_name(map)),
                             loc_of(map, file, fallback));
  }
  Entries out;
  out.loc = loc_of(map, file, fallback);
  for (auto it = map.begin(); it != map.end(); ++it) {
    // Copies: the iterator's operator-> yields a temporary pair.
    const YAML::Node k = it->first;
    const YAML::Node v = it->second;
    const SourceLoc kloc = loc_of(k, file, out.loc);
    if (!k.IsScalar())
      return Status::bad_input(fmt::format("{}: keys must be plain names, got {}", what, kind_name(k)), kloc);
    const std::string& key = k.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      return unknown_key(k, allowed, file, what, kloc);
    if (const Entry* first = out.find(key)) return duplicate_key(k, first->key_loc.line, file, what, kloc);
    out.entries.push_back(Entry{key, k, v, kloc, loc_of(v, file, kloc)});
  }
  return out;
}

Result<Fields> read_map(const YAML::Node& map, std::initializer_list<std::string_view> allowed,
                        const std::string& file, std::string_view what) {
  Result<Entries> entries = read_entries(map, std::vector<std::string_view>(allowed), file, what);
  if (!entries.ok()) return entries.status();
  Fields out;
  for (Entry& e : entries->entries) out.emplace(e.key, Field{std::move(e.key_node), std::move(e.value)});
  return out;
}

Status unknown_key(const YAML::Node& key, const std::vector<std::string_view>& allowed, const std::string& file,
                   std::string_view what, const SourceLoc& fallback) {
  const std::string& k = key.Scalar();
  const std::string_view best = suggest_key(k, allowed);
  const std::string hint = best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
  return Status::bad_input(fmt::format("{}: unknown key '{}'{}; allowed keys: {}", what, excerpt(k), hint, join(allowed)),
                           loc_of(key, file, fallback));
}

Status duplicate_key(const YAML::Node& key, int first_line, const std::string& file, std::string_view what,
                     const SourceLoc& fallback) {
  return Status::bad_input(
      fmt::format("{}: duplicate key '{}' (first given at line {})", what, excerpt(key.Scalar()), first_line),
      loc_of(key, file, fallback));
}

const Field* find(const Fields& f, std::string_view key) {
  auto it = f.find(key);
  return it == f.end() ? nullptr : &it->second;
}

namespace {
Status not_scalar(const YAML::Node& n, const std::string& file, std::string_view what,
                  std::string_view expected, const SourceLoc& fallback) {
  return Status::bad_input(fmt::format("{}: expected {}, got {}", what, expected, kind_name(n)),
                           loc_of(n, file, fallback));
}
}  // namespace

Result<long long> to_int(const YAML::Node& n, const std::string& file, std::string_view what,
                         const SourceLoc& fallback) {
  if (!n.IsScalar()) return not_scalar(n, file, what, "an integer", fallback);
  const std::string& s = n.Scalar();
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) {
    return Status::bad_input(fmt::format("{}: integer '{}' is out of range", what, excerpt(s)),
                             loc_of(n, file, fallback));
  }
  if (ec != std::errc() || p != s.data() + s.size()) {
    return Status::bad_input(fmt::format("{}: expected an integer, got '{}'", what, excerpt(s)),
                             loc_of(n, file, fallback));
  }
  return v;
}

Result<double> to_double(const YAML::Node& n, const std::string& file, std::string_view what,
                         const SourceLoc& fallback) {
  if (!n.IsScalar()) return not_scalar(n, file, what, "a number", fallback);
  const std::string& s = n.Scalar();
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) {
    return Status::bad_input(fmt::format("{}: expected a finite number, got '{}'", what, excerpt(s)),
                             loc_of(n, file, fallback));
  }
  return v;
}

Result<bool> to_bool(const YAML::Node& n, const std::string& file, std::string_view what,
                     const SourceLoc& fallback) {
  if (!n.IsScalar()) return not_scalar(n, file, what, "true or false", fallback);
  const std::string& s = n.Scalar();
  if (s == "true") return true;
  if (s == "false") return false;
  return Status::bad_input(fmt::format("{}: expected true or false, got '{}'", what, excerpt(s)),
                           loc_of(n, file, fallback));
}

Result<std::string> to_string(const YAML::Node& n, const std::string& file, std::string_view what,
                              const SourceLoc& fallback) {
  if (!n.IsScalar()) return not_scalar(n, file, what, "a string", fallback);
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
