// Every file in configs/invalid must be rejected with the line (and column, when given) and the
// message its first line announces:
//   # expect-error: LINE[:COL]: SUBSTRING     (LINE 0: the error has no line, only the file)
// An optional second line `# load-as: cluster` loads it as a cluster file (--cluster) instead of a
// model file. Checked through the library and through `pipesmith lower` (exit code 1).
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "ir/graph.h"
#include "ir/model.h"
#include "test_util.h"

using namespace ps;

namespace {

struct Expectation {
  std::string path;  // relative to the source dir, as a user would type it
  int line = -1;
  int col = 0;  // 0: not checked
  std::string substring;
  bool as_cluster = false;
};

Expectation read_expectation(const std::string& rel) {
  Expectation e;
  e.path = rel;
  std::string text = pstest::read_file(pstest::source_path(rel));
  const std::string tag = "# expect-error: ";
  REQUIRE_MESSAGE(text.rfind(tag, 0) == 0,
                  rel << " must begin with '" << tag << "LINE: SUBSTRING'");
  std::string first = text.substr(tag.size(), text.find('\n') - tag.size());
  size_t colon = first.find(':');
  REQUIRE(colon != std::string::npos);
  e.line = std::stoi(first.substr(0, colon));
  std::string rest = first.substr(colon + 1);
  if (!rest.empty() && std::isdigit(static_cast<unsigned char>(rest[0]))) {
    size_t c2 = rest.find(':');
    REQUIRE(c2 != std::string::npos);
    e.col = std::stoi(rest.substr(0, c2));
    rest = rest.substr(c2 + 1);
  }
  REQUIRE(!rest.empty());
  REQUIRE(rest[0] == ' ');
  e.substring = rest.substr(1);
  REQUIRE(!e.substring.empty());
  e.as_cluster = text.find("\n# load-as: cluster\n") != std::string::npos;
  return e;
}

std::vector<std::string> invalid_files() {
  std::vector<std::string> out;
  for (const auto& entry :
       std::filesystem::directory_iterator(pstest::source_path("configs/invalid"))) {
    if (entry.path().extension() == ".yaml")
      out.push_back("configs/invalid/" + entry.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("invalid configs: each is rejected with its expected line and message") {
  std::vector<std::string> files = invalid_files();
  CHECK(files.size() >= 12);
  for (const std::string& rel : files) {
    CAPTURE(rel);
    Expectation e = read_expectation(rel);
    std::string path = pstest::source_path(rel);
    Status st;
    if (e.as_cluster) {
      Result<Cluster> c = load_cluster(path);
      REQUIRE_FALSE(c.ok());
      st = c.status();
      // Through load_spec with a valid model, too.
      Result<Spec> s = load_spec(pstest::source_path("configs/models/llama2-7b.yaml"), path);
      REQUIRE_FALSE(s.ok());
      CHECK(s.status().str() == st.str());
    } else {
      Result<Spec> s = load_spec(path);
      // A model that reads fine must fail when lowered (the IR's own checks).
      if (s.ok()) {
        Result<LoweredModel> l = lower(s->model);
        REQUIRE_FALSE(l.ok());
        st = l.status();
      } else {
        st = s.status();
      }
    }
    CHECK(st.code() == ErrorCode::kBadInput);
    CHECK(st.loc().file == path);
    CHECK(st.loc().line == e.line);
    if (e.col > 0) CHECK(st.loc().col == e.col);
    CHECK_MESSAGE(st.message().find(e.substring) != std::string::npos,
                  "message: " << st.message() << "\nexpected to contain: " << e.substring);
  }
}

TEST_CASE("invalid configs: `pipesmith lower` exits 1 and prints file:line: and the message") {
  // Relative paths, as a user types them: run from the source directory (as ctest does).
  struct CwdGuard {
    std::filesystem::path old = std::filesystem::current_path();
    CwdGuard() { std::filesystem::current_path(PIPESMITH_SOURCE_DIR); }
    ~CwdGuard() { std::filesystem::current_path(old); }
  } guard;
  for (const std::string& rel : invalid_files()) {
    CAPTURE(rel);
    Expectation e = read_expectation(rel);
    std::string args =
        e.as_cluster ? "lower configs/models/llama2-7b.yaml --cluster " + rel : "lower " + rel;
    pstest::CliResult r = pstest::run_cli(args);
    CHECK(r.exit_code == 1);
    std::string where = e.line > 0 ? rel + ":" + std::to_string(e.line) + ":" : rel + ": ";
    if (e.col > 0) where += std::to_string(e.col) + ":";
    CHECK_MESSAGE(r.output.find("pipesmith: error: " + where) != std::string::npos, r.output);
    CHECK_MESSAGE(r.output.find(e.substring) != std::string::npos, r.output);
  }
}
