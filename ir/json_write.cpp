// json_write.cpp — see json_write.h. The document is dumped as it is; only when the writer refuses a
// string (nlohmann's type_error 316) is a copy with the offending strings escaped dumped instead.
#include "ir/json_write.h"

#include <fmt/format.h>

namespace ps {

namespace {

// Length of the well-formed UTF-8 sequence at text[i] (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF), or 0.
size_t utf8_length(std::string_view text, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = at(i);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c == 0xE0) len = 3, lo = 0xA0;
  else if (c >= 0xE1 && c <= 0xEC) len = 3;
  else if (c == 0xED) len = 3, hi = 0x9F;
  else if (c >= 0xEE && c <= 0xEF) len = 3;
  else if (c == 0xF0) len = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) len = 4;
  else if (c == 0xF4) len = 4, hi = 0x8F;
  else return 0;
  if (i + len > text.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  return len;
}

template <class Json>
Json escaped(const Json& j) {
  if (j.is_string()) return Json(escape_invalid_utf8(j.template get_ref<const std::string&>()));
  if (j.is_array()) {
    Json out = Json::array();
    for (const Json& v : j) out.push_back(escaped(v));
    return out;
  }
  if (j.is_object()) {
    Json out = Json::object();
    for (auto it = j.begin(); it != j.end(); ++it) out[escape_invalid_utf8(it.key())] = escaped(it.value());
    return out;
  }
  return j;
}

template <class Json>
std::string dump(const Json& j, int indent) {
  try {
    return j.dump(indent);
  } catch (const nlohmann::json::type_error&) {  // a string that is not UTF-8 (316)
    return escaped(j).dump(indent);
  }
}

}  // namespace

std::string escape_invalid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_length(text, i);
    if (len == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string dump_json(const nlohmann::json& j, int indent) { return dump(j, indent); }
std::string dump_json(const nlohmann::ordered_json& j, int indent) { return dump(j, indent); }

}  // namespace ps
