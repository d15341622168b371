#include "ir/status.h"

#include <fmt/format.h>

namespace ps {

SharedPath::SharedPath(const std::string& text) {
  if (text.empty()) return;
  // The last name built on this thread: a reader builds the same one for every location of a file.
  thread_local std::shared_ptr<const std::string> last;
  if (!last || *last != text) last = std::make_shared<const std::string>(text);
  text_ = last;
}

const std::string& SharedPath::str() const {
  static const std::string kEmpty;
  return text_ ? *text_ : kEmpty;
}

std::string SourceLoc::str() const {
  std::string s = file;
  if (line > 0) {
    s += fmt::format("{}{}", s.empty() ? "line " : ":", line);
    if (col > 0) s += fmt::format(":{}", col);
  }
  return s;
}

std::string Status::str() const {
  if (is_ok()) return "ok";
  if (loc_.valid()) return loc_.str() + ": " + message_;
  return message_;
}

std::string excerpt(std::string_view text, size_t max_chars) {
  std::string out;
  size_t shown = 0, i = 0;
  for (; i < text.size() && shown < max_chars; ++i, ++shown) {
    const unsigned char ch = static_cast<unsigned char>(text[i]);
    // A well-formed UTF-8 sequence is one printable character: kept.
    const size_t len = ch >= 0xf0 && ch < 0xf5 ? 4 : ch >= 0xe0 && ch < 0xf0 ? 3 : ch >= 0xc2 && ch < 0xe0 ? 2 : 1;
    bool utf8 = len > 1 && i + len <= text.size();
    for (size_t k = 1; utf8 && k < len; ++k) utf8 = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    if (utf8) {
      out.append(text.substr(i, len));
      i += len - 1;
      continue;
    }
    if (ch == '\n') out += "\\n";
    else if (ch == '\t') out += "\\t";
    else if (ch == '\r') out += "\\r";
    else if (ch < 0x20 || ch >= 0x7f) out += fmt::format("\\x{:02x}", ch);
    else out += static_cast<char>(ch);
  }
  if (i < text.size()) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

std::vector<TextField> split_trimmed(std::string_view text, char sep) {
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  std::vector<TextField> fields;
  size_t pos = 0;
  while (true) {
    const size_t at = text.find(sep, pos);
    const size_t end = at == std::string_view::npos ? text.size() : at;
    size_t a = pos, b = end;
    while (a < b && blank(text[a])) ++a;
    while (b > a && blank(text[b - 1])) --b;
    fields.push_back(TextField{text.substr(a, b - a), a});
    if (at == std::string_view::npos) break;
    pos = at + 1;
  }
  return fields;
}

void assert_fail(const char* expr, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "pipesmith internal error at %s:%d: assertion '%s' failed: %s\n", file, line,
               expr, msg.c_str());
  std::abort();
}

}  // namespace ps
