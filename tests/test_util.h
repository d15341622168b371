// test_util.h — helpers shared by the test suites: paths, running the CLI, reading files.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace pstest {

inline std::string source_path(const std::string& rel) { return std::string(PIPESMITH_SOURCE_DIR) + "/" + rel; }
// Test inputs that ship with the tests (tests/data/).
inline std::string data_path(const std::string& rel) { return std::string(PIPESMITH_TEST_DATA_DIR) + "/" + rel; }

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `pipesmith ARGS` through the shell (as a user would) and captures its output; `env` is put
// before the command ("NAME=value ...").
inline CliResult run_cli(const std::string& args, const std::string& env = "") {
  std::string cmd = env + " " + std::string(PIPESMITH_CLI) + " " + args + " 2>&1";
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int st = pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// `pipesmith ARGS` refused: exit 1, and its output says `said`.
inline void check_refused(const std::string& args, const std::string& said) {
  const CliResult r = run_cli(args);
  INFO(args, "\n", r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, said));
}

// `pipesmith synth SYNTH_ARGS -o OUT`, which must exit 0, then `pipesmith verify OUT`, which must say
// VALID without a certificate finding; synth's result (its summary, for the caller's checks).
inline CliResult synth_and_verify(const std::string& synth_args, const std::string& out) {
  CliResult r = run_cli("synth " + synth_args + " -o " + out);
  INFO(synth_args, "\n", r.output);
  REQUIRE(r.exit_code == 0);
  const CliResult v = run_cli("verify " + out);
  INFO(v.output);
  CHECK(v.exit_code == 0);
  CHECK(contains(v.output, "VALID"));
  CHECK_FALSE(contains(v.output, "INVALID"));
  CHECK_FALSE(contains(v.output, "certificate."));
  return r;
}

// `pipesmith ARGS` with at most 2 GB of address space (ulimit -v): a reader that held everything a
// big file lists would die of std::bad_alloc (exit 4) or be killed instead of refusing the file
// (exit 1). AddressSanitizer reserves terabytes of address space for its shadow memory and cannot
// start under ulimit -v: a sanitized build runs these commands unlimited (the release build's run
// asserts the bound).
#if defined(__SANITIZE_ADDRESS__)  // g++
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif
inline CliResult run_cli_2gb(const std::string& args) {
  return run_cli(args, kAddressSanitizer ? "" : "ulimit -v 2000000;");
}

inline std::string temp_path(const std::string& name) {
  return std::string("/tmp/pipesmith-test-") + std::to_string(getpid()) + "-" + name;
}

// A fresh, empty directory for one test (temp_path(name)).
inline std::string fresh_dir(const std::string& name) {
  const std::string dir = temp_path(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The names in a directory (hidden ones, such as a writer's temporaries, included).
inline std::set<std::string> dir_entries(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

}  // namespace pstest
