#include "cli/number_flags.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "ir/limits.h"
#include "ir/status.h"
#include "ir/units.h"

namespace ps::cli::flags {

namespace {

// The whole text as a double (strtod: decimal, exponent, inf, nan), or nothing.
std::optional<double> parse_double(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

std::string range_text(double lo, double hi, const std::string& unit, bool open_low) {
  return fmt::format("{}{:g}, {:g}]{}", open_low ? "(" : "[", lo, hi, unit.empty() ? "" : " " + unit);
}

}  // namespace

CLI::Validator number_in(double lo, double hi, const std::string& unit, bool open_low) {
  const std::string range = range_text(lo, hi, unit, open_low);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::optional<double> v = parse_double(text);
        const bool ok = v && std::isfinite(*v) && (open_low ? *v > lo : *v >= lo) && *v <= hi;
        return ok ? std::string() : fmt::format("must be a finite number in {}, got '{}'", range, excerpt(text, 40));
      },
      "NUMBER in " + range);
}

Result<long long> option_value(const limits::IntOption& o, const std::string& text) {
  long long v = 0;
  const char* first = text.data() + (!text.empty() && text[0] == '+' ? 1 : 0);
  const auto [end, ec] = std::from_chars(first, text.data() + text.size(), v);
  if (ec == std::errc() && end == text.data() + text.size() && limits::in_range(o, v)) return v;
  return Status::bad_input(fmt::format("must be an integer in {}, got '{}'", limits::range_text(o), excerpt(text, 40)));
}

CLI::Validator option(const limits::IntOption& o) {
  return CLI::Validator(
      [o](std::string& text) -> std::string {
        Result<long long> v = option_value(o, text);
        return v.ok() ? std::string() : v.status().message();
      },
      "INT in " + limits::range_text(o));
}

CLI::Validator time_limit_s() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<double> v = parse_double(text);
        if (!v || !time_limit_ok(*v))
          return fmt::format("must be {}, got '{}'", time_limit_rule(), excerpt(text, 40));
        if (*v > limits::kMaxTimeLimitS) text = fmt::format("{}", limits::kMaxTimeLimitS);
        return std::string();
      },
      "SECONDS > 0");
}

CLI::Validator memory_limit_gb() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<double> v = parse_double(text);
        if (v && memory_limit_ok(*v)) return std::string();
        return fmt::format("must be {}, got '{}'", memory_limit_rule(), excerpt(text, 40));
      },
      fmt::format("GB in [0, {:g}]", limits::kMaxIterationTotal));
}
CLI::Validator timeout_s() { return number_in(0, limits::kMaxTimeLimitS, "s", true); }
CLI::Validator scale() { return number_in(0, 64, "", true); }

}  // namespace ps::cli::flags
