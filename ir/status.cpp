#include "ir/status.h"

#include <fmt/format.h>

namespace ps {

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

void assert_fail(const char* expr, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "pipesmith internal error at %s:%d: assertion '%s' failed: %s\n", file, line,
               expr, msg.c_str());
  std::abort();
}

}  // namespace ps
