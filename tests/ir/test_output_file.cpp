// Tests of the output writer (ir/output_file.h) called directly: a set of files written all or
// none, and links that lead nowhere refused. The command-line tests (tests/cli/test_outputs.cpp,
// test_export.cpp) run the same writer through the commands.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "ir/output_file.h"
#include "test_util.h"

using pstest::contains;
using pstest::dir_entries;
using pstest::fresh_dir;
using pstest::read_file;

namespace {

namespace fs = std::filesystem;

void put(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Sets PIPESMITH_WRITE_FAULT for one scope.
struct FaultScope {
  explicit FaultScope(const char* fault) { ::setenv("PIPESMITH_WRITE_FAULT", fault, 1); }
  ~FaultScope() { ::unsetenv("PIPESMITH_WRITE_FAULT"); }
};

}  // namespace

TEST_CASE("write_output_files: all files replaced, a missing one created, no temporary left") {
  const std::string dir = fresh_dir("set-ok");
  put(dir + "/a.csv", "old a");
  put(dir + "/b.csv", "old b");
  const ps::Status st = ps::write_output_files({{dir + "/a.csv", "new a"}, {dir + "/b.csv", "new b"}, {dir + "/c.json", "new c"}});
  REQUIRE_MESSAGE(st.is_ok(), st.str());
  CHECK(read_file(dir + "/a.csv") == "new a");
  CHECK(read_file(dir + "/b.csv") == "new b");
  CHECK(read_file(dir + "/c.json") == "new c");
  CHECK(dir_entries(dir) == std::set<std::string>{"a.csv", "b.csv", "c.json"});
  fs::remove_all(dir);
}

TEST_CASE("write_output_files: the third file a directory — nothing changed, no temporary left") {
  const std::string dir = fresh_dir("set-dir");
  put(dir + "/a.csv", "old a");
  put(dir + "/b.csv", "old b");
  fs::create_directory(dir + "/c.json");
  const ps::Status st = ps::write_output_files({{dir + "/a.csv", "new a"}, {dir + "/b.csv", "new b"}, {dir + "/c.json", "new c"}});
  CHECK_FALSE(st.is_ok());
  CHECK(st.code() == ps::ErrorCode::kBadInput);
  CHECK(st.message() == fmt::format("cannot write '{0}/c.json': it is a directory; none of '{0}/a.csv', '{0}/b.csv' and "
                                    "'{0}/c.json' was changed",
                                    dir));
  CHECK(read_file(dir + "/a.csv") == "old a");
  CHECK(read_file(dir + "/b.csv") == "old b");
  CHECK(dir_entries(dir) == std::set<std::string>{"a.csv", "b.csv", "c.json"});
  fs::remove_all(dir);
}

TEST_CASE("write_output_files: a failure at the third file's write or rename keeps the old set, no temporary left") {
  for (const char* fault : {"enospc:2,on:c.json", "named,fsync,on:c.json", "close,on:c.json", "rename,on:c.json",
                            "named,rename,on:c.json"}) {
    CAPTURE(fault);
    const std::string dir = fresh_dir("set-fault");
    put(dir + "/a.csv", "old a");  // b.csv does not exist before: a rollback removes it again
    put(dir + "/c.json", "old c");
    ps::Status st;
    {
      FaultScope f(fault);
      st = ps::write_output_files({{dir + "/a.csv", "new a"}, {dir + "/b.csv", "new b"}, {dir + "/c.json", "new c"}});
    }
    CHECK_FALSE(st.is_ok());
    CHECK(contains(st.message(), fmt::format("cannot write '{}/c.json': ", dir)));
    CHECK(contains(st.message(), "was changed"));
    CHECK(read_file(dir + "/a.csv") == "old a");
    CHECK(read_file(dir + "/c.json") == "old c");
    CHECK(dir_entries(dir) == std::set<std::string>{"a.csv", "c.json"});
    fs::remove_all(dir);
  }
}

TEST_CASE("write_output_file: a dangling link or a link loop is refused, naming where it points; the link stays") {
  const std::string dir = fresh_dir("dangling");
  const std::string nowhere = dir + "/sub/none.yaml";
  fs::create_symlink(nowhere, dir + "/out.yaml");
  ps::Status st = ps::write_output_file(dir + "/out.yaml", "text");
  CHECK(st.message() == fmt::format("cannot write '{}/out.yaml': it is a dangling symbolic link to '{}', which does not "
                                    "exist (remove the link, or create the file it points to)",
                                    dir, nowhere));
  CHECK(fs::read_symlink(dir + "/out.yaml") == nowhere);
  fs::create_symlink(dir + "/loop2", dir + "/loop1");
  fs::create_symlink(dir + "/loop1", dir + "/loop2");
  st = ps::write_output_file(dir + "/loop1", "text");
  CHECK(contains(st.message(), fmt::format("cannot write '{}/loop1': it is a symbolic link that loops", dir)));
  // In a set, the set is refused whole.
  put(dir + "/a.csv", "old a");
  st = ps::write_output_files({{dir + "/a.csv", "new a"}, {dir + "/out.yaml", "new"}});
  CHECK(contains(st.message(), "dangling symbolic link"));
  CHECK(read_file(dir + "/a.csv") == "old a");
  CHECK(dir_entries(dir) == std::set<std::string>{"a.csv", "out.yaml", "loop1", "loop2"});
  // The pre-work check says the same, with the flag.
  st = ps::check_output_paths({{dir + "/out.yaml", "-o"}}, {});
  CHECK(contains(st.message(), fmt::format("cannot write '{}/out.yaml' (-o): it is a dangling symbolic link to '{}'", dir, nowhere)));
  fs::remove_all(dir);
}
