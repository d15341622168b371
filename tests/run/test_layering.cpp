// The house's arrows: each source folder includes only the folders below it (CMakeLists.txt states
// the direction). Read from the sources, so a new include that points up fails here, naming the file
// and the line.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "test_util.h"

namespace {

namespace fs = std::filesystem;

// Folder → the folders its sources may include (itself included).
const std::map<std::string, std::set<std::string>>& allowed() {
  static const std::map<std::string, std::set<std::string>> a = {
      {"ir", {"ir"}},
      {"verify", {"ir", "verify"}},
      {"report", {"ir", "verify", "report"}},
      {"export", {"ir", "verify", "export"}},
      {"synth", {"ir", "verify", "report", "synth"}},
      {"runtime", {"ir", "runtime"}},
      {"kernels", {"ir", "runtime", "kernels"}},
      {"run", {"ir", "verify", "runtime", "run"}},
  };
  return a;
}

}  // namespace

TEST_CASE("layering: every folder includes only the folders below it") {
  const std::regex include_re(R"re(^\s*#\s*include\s+"([a-z_]+)/)re");
  int files = 0;
  for (const auto& rule : allowed()) {
    const auto& folder = rule.first;
    const auto& ok = rule.second;
    const fs::path dir = pstest::source_path(folder);
    REQUIRE(fs::is_directory(dir));
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cpp" && ext != ".cu") continue;
      ++files;
      std::ifstream in(entry.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        std::smatch m;
        if (!std::regex_search(line, m, include_re)) continue;
        const std::string target = m[1].str();
        INFO(entry.path().string() << ":" << n << ": " << line);
        CHECK_MESSAGE(ok.count(target) == 1, folder << "/ may not include " << target << "/");
      }
    }
  }
  CHECK(files > 100);
}

TEST_CASE("layering: verify/ links no solver and no synthesizer") {
  const std::string cmake = pstest::read_file(pstest::source_path("verify/CMakeLists.txt"));
  CHECK_FALSE(pstest::contains(cmake, "PkgConfig::Z3"));
  CHECK_FALSE(pstest::contains(cmake, "pipesmith_synth"));
  const std::string run_cmake = pstest::read_file(pstest::source_path("run/CMakeLists.txt"));
  CHECK_FALSE(pstest::contains(run_cmake, "pipesmith_kernels"));  // run/ needs no CUDA
}
