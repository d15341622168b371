// Outputs through the command line: written whole or not at all, never over an input, and a failed
// write (to a file or to stdout) is exit 1. Write failures are injected through the writer
// (PIPESMITH_WRITE_FAULT, ir/output_file.h); a kill lands while the writer is stalled in the middle.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "test_util.h"

using pstest::contains;
using pstest::dir_entries;
using pstest::fresh_dir;
using pstest::read_file;
using pstest::run_cli;
using pstest::source_path;
using pstest::temp_path;

namespace {

namespace fs = std::filesystem;

const std::string kLlamaModel = source_path("configs/models/llama2-7b.yaml");

// Runs a shell script and returns what it printed.
std::string sh(const std::string& script_path, const std::string& script) {
  std::ofstream(script_path) << script;
  std::string out;
  if (FILE* p = popen(("sh " + script_path + " 2>&1").c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  return out;
}

}  // namespace

TEST_CASE("cli outputs: an injected write failure keeps the old file and leaves no temporary") {
  const std::string dir = fresh_dir("out-fault");
  const std::string out = dir + "/s.yaml";
  auto first = run_cli(fmt::format("baseline {} --schedule 1f1b -o {}", kLlamaModel, out));
  REQUIRE(first.exit_code == 0);
  const std::string valid = read_file(out);
  REQUIRE(contains(valid, "certificate:"));
  // Each failure of the writer's steps, with an anonymous and with a named temporary.
  for (const char* fault : {"enospc:100", "enospc:0", "fsync", "close", "rename", "named,enospc:100", "named,fsync",
                            "named,close", "named,rename"}) {
    CAPTURE(fault);
    auto r = run_cli(fmt::format("baseline {} --schedule gpipe -o {} --csv {}/s.csv", kLlamaModel, out, dir),
                     fmt::format("PIPESMITH_WRITE_FAULT={}", fault));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.output, "pipesmith: error: cannot write '" + out + "': "));
    CHECK(read_file(out) == valid);  // the 1F1B file, whole
    CHECK(dir_entries(dir) == std::set<std::string>{"s.yaml"});  // no temporary, and the CSV was not written
  }
  CHECK(contains(run_cli(fmt::format("baseline {} --schedule gpipe -o {}", kLlamaModel, out), "PIPESMITH_WRITE_FAULT=enospc:10")
                     .output,
                 "write failed: No space left on device"));
  // Without a fault the same command replaces the file.
  auto ok = run_cli(fmt::format("baseline {} --schedule gpipe -o {}", kLlamaModel, out));
  CHECK(ok.exit_code == 0);
  CHECK(contains(read_file(out), "gpipe"));
  CHECK(dir_entries(dir) == std::set<std::string>{"s.yaml"});
}

TEST_CASE("cli outputs: SIGKILL in the middle of a write leaves the old file whole and no other file") {
  const std::string dir = fresh_dir("out-kill");
  const std::string out = dir + "/s.yaml";
  REQUIRE(run_cli(fmt::format("baseline {} --schedule 1f1b -o {}", kLlamaModel, out)).exit_code == 0);
  const std::string valid = read_file(out);
  for (const std::string fault : {"stall:2000", "named,stall:2000"}) {
    CAPTURE(fault);
    // Each run has a log of its own, outside `dir`, that does not exist before it starts: the waiting
    // loop must never see an earlier run's "stalled after" and kill this one before it has written.
    const std::string log = temp_path("out-kill-" + std::to_string(fault.size()) + ".log");
    fs::remove(log);
    // The writer stalls after 2000 bytes of the new file and says so; the kill lands there.
    const std::string said = sh(temp_path("out-kill.sh"),
                                fmt::format("PIPESMITH_WRITE_FAULT={} '{}' baseline '{}' --schedule gpipe -o '{}' > '{}' 2>&1 &\n"
                                            "p=$!\ni=0\n"
                                            "until grep -q 'stalled after' '{}' || [ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done\n"
                                            "kill -KILL $p\nwait $p\necho status=$?\n",
                                            fault, PIPESMITH_CLI, kLlamaModel, out, log, log));
    INFO(said, read_file(log));
    CHECK(contains(said, "status=137"));  // killed by SIGKILL
    CHECK(contains(read_file(log), "stalled after 2000 bytes"));
    CHECK(read_file(out) == valid);
    if (fault == "stall:2000") {
      CHECK(dir_entries(dir) == std::set<std::string>{"s.yaml"});  // the anonymous temporary died with the process
    } else {
      // A named temporary cannot be removed by a killed process; it never carries the target's name.
      for (const std::string& e : dir_entries(dir))
        if (e != "s.yaml") CHECK(contains(e, ".s.yaml.pipesmith-"));
    }
  }
}

TEST_CASE("cli outputs: an output that names an input is refused before any work, the input untouched") {
  const std::string dir = fresh_dir("out-input");
  const std::string model = dir + "/m.yaml", sched = dir + "/s.yaml", link = dir + "/hard.yaml";
  fs::copy_file(kLlamaModel, model);
  const std::string model_text = read_file(model);
  REQUIRE(run_cli(fmt::format("baseline {} --schedule 1f1b -o {}", model, sched)).exit_code == 0);
  fs::create_hard_link(sched, link);
  const std::string sched_text = read_file(sched);
  struct Case {
    std::string args, said;
  };
  const Case cases[] = {
      {fmt::format("synth {} --time-limit 5 -o {}", model, model), "(-o): it is the input file"},
      {fmt::format("synth {} --time-limit 5 -o {}/x.yaml --svg {}/./m.yaml", model, dir, dir), "(--svg): it is the input file"},
      {fmt::format("baseline {} --schedule 1f1b -o {}", model, model), "(-o): it is the input file"},
      {fmt::format("baseline {} --schedule 1f1b --csv {}", model, model), "(--csv): it is the input file"},
      {fmt::format("render {} --svg {}", sched, sched), "(--svg): it is the input file"},
      {fmt::format("render {} --trace {}", sched, link), "(--trace): it is the input file"},  // a hard link
      {fmt::format("verify {} --svg {}", sched, sched), "(--svg): it is the input file"},
      {fmt::format("convert {} {}", link, sched), "(OUT): it is the input file"},
      {fmt::format("run {} --trace {}", sched, sched), "(--trace): it is the input file"},
      {fmt::format("profile {} -o {}", model, model), "(-o): it is the input file"},
      {fmt::format("baseline {} --schedule 1f1b -o {}/a.yaml --svg {}/a.yaml", model, dir, dir),
       "-o and --svg both name"},
  };
  for (const Case& c : cases) {
    auto r = run_cli(c.args);
    INFO(c.args, "\n", r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.output, c.said));
    CHECK_FALSE(contains(r.output, "wrote"));
  }
  CHECK(read_file(model) == model_text);
  CHECK(read_file(sched) == sched_text);
  CHECK(dir_entries(dir) == std::set<std::string>{"m.yaml", "s.yaml", "hard.yaml"});
}

TEST_CASE("cli outputs: every output is checked before anything is written") {
  const std::string dir = fresh_dir("out-first");
  auto r = run_cli(fmt::format("baseline {} --schedule 1f1b -o {}/ok.yaml --svg /nonexistent-dir/x.svg", kLlamaModel, dir));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "cannot write '/nonexistent-dir/x.svg' (--svg): directory '/nonexistent-dir' does not exist"));
  CHECK(dir_entries(dir).empty());
}

TEST_CASE("cli outputs: a failed write to stdout is exit 1 with a message") {
  for (const std::string& args : {"verify " + source_path("tests/data/pytorch/ScheduleGPipe_p2_m4_v1.csv"),
                                 "lower " + kLlamaModel, "baseline " + kLlamaModel + " --schedule 1f1b -o -"}) {
    const std::string said = sh(temp_path("full.sh"), fmt::format("'{}' {} >/dev/full\necho status=$?\n", PIPESMITH_CLI, args));
    INFO(args, "\n", said);
    CHECK(contains(said, "status=1"));
    CHECK(contains(said, "pipesmith: error: cannot write to standard output: No space left on device"));
  }
  // A file that exists and is not a regular file is written in place (nothing to replace).
  auto ok = run_cli("baseline " + kLlamaModel + " --schedule 1f1b -o /dev/null");
  CHECK(ok.exit_code == 0);
}

TEST_CASE("cli outputs: an output on a dangling symbolic link is refused before any work, naming where it points") {
  const std::string dir = fresh_dir("out-dangling");
  const std::string sched = dir + "/s.yaml", link = dir + "/out.yaml", pt = dir + "/pt";
  REQUIRE(run_cli(fmt::format("baseline {} --schedule 1f1b -o {}", kLlamaModel, sched)).exit_code == 0);
  const std::string sched_text = read_file(sched);
  const std::string nowhere = temp_path("out-dangling-nowhere");  // never created
  fs::remove_all(nowhere);
  fs::create_symlink(nowhere, link);
  fs::create_directories(pt);
  fs::create_symlink(nowhere, pt + "/plan.json");
  const std::string said = fmt::format("it is a dangling symbolic link to '{}', which does not exist", nowhere);
  struct Case {
    std::string args, flag, path;
  };
  const Case cases[] = {
      {fmt::format("baseline {} --schedule 1f1b -o {}", kLlamaModel, link), "-o", link},
      {fmt::format("baseline {} --schedule 1f1b --csv {}", kLlamaModel, link), "--csv", link},
      {fmt::format("baseline {} --schedule 1f1b --svg {}", kLlamaModel, link), "--svg", link},
      {fmt::format("synth {} --time-limit 5 -o {}", kLlamaModel, link), "-o", link},
      {fmt::format("synth {} --time-limit 5 --dump-smt2 {}", kLlamaModel, link), "--dump-smt2", link},
      {fmt::format("render {} --svg {}", sched, link), "--svg", link},
      {fmt::format("verify {} --trace {}", sched, link), "--trace", link},
      {fmt::format("convert {} {}", sched, link), "OUT", link},
      {fmt::format("run {} --json {}", sched, link), "--json", link},
      {fmt::format("profile {} -o {}", kLlamaModel, link), "-o", link},
      {fmt::format("export {} --to pytorch -o {}", sched, pt), "-o", pt + "/plan.json"},
  };
  for (const Case& c : cases) {
    auto r = run_cli(c.args);
    INFO(c.args, "\n", r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.output, fmt::format("pipesmith: error: cannot write '{}' ({}): {}", c.path, c.flag, said)));
    CHECK_FALSE(contains(r.output, "File exists"));
    CHECK_FALSE(contains(r.output, "wrote"));
  }
  // -o DIR of export on a dangling link.
  auto r = run_cli(fmt::format("export {} --to pytorch -o {}", sched, link));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, fmt::format("-o '{}' is a dangling symbolic link to '{}', which does not exist", link, nowhere)));
  // The links stay as they were, and nothing was created where they point.
  CHECK(fs::read_symlink(link) == nowhere);
  CHECK(fs::read_symlink(pt + "/plan.json") == nowhere);
  CHECK_FALSE(fs::exists(fs::symlink_status(nowhere)));
  CHECK(read_file(sched) == sched_text);
  CHECK(dir_entries(dir) == std::set<std::string>{"s.yaml", "out.yaml", "pt"});
  CHECK(dir_entries(pt) == std::set<std::string>{"plan.json"});

  // A relative link, and a chain of links, name the file they end at.
  fs::create_symlink("missing.yaml", dir + "/rel.yaml");
  fs::create_symlink(dir + "/rel.yaml", dir + "/chain.yaml");
  for (const std::string& l : {dir + "/rel.yaml", dir + "/chain.yaml"}) {
    auto rr = run_cli(fmt::format("baseline {} --schedule 1f1b -o {}", kLlamaModel, l));
    INFO(rr.output);
    CHECK(rr.exit_code == 1);
    CHECK(contains(rr.output, fmt::format("cannot write '{}' (-o): it is a dangling symbolic link to '{}/missing.yaml'", l, dir)));
  }
  // A link loop.
  fs::create_symlink(dir + "/loop-b.yaml", dir + "/loop-a.yaml");
  fs::create_symlink(dir + "/loop-a.yaml", dir + "/loop-b.yaml");
  auto loop = run_cli(fmt::format("baseline {} --schedule 1f1b -o {}/loop-a.yaml", kLlamaModel, dir));
  CHECK(loop.exit_code == 1);
  CHECK(contains(loop.output, "(-o): it is a symbolic link that loops"));
  // A link to a file that exists is followed: the file is replaced, the link stays.
  std::ofstream(dir + "/real.yaml") << "old";
  fs::create_symlink(dir + "/real.yaml", dir + "/to-real.yaml");
  auto ok = run_cli(fmt::format("baseline {} --schedule 1f1b -o {}/to-real.yaml", kLlamaModel, dir));
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  CHECK(read_file(dir + "/real.yaml") == sched_text);
  CHECK(fs::is_symlink(fs::symlink_status(dir + "/to-real.yaml")));
  fs::remove_all(dir);
}

TEST_CASE("cli outputs: synth --dump-smt2 P.smt2 checks the window names P.wN.smt2 like any output") {
  const std::string dir = fresh_dir("out-windows");
  const std::string cluster = source_path("configs/clusters/8xh100-80gb.yaml");
  fs::copy_file(kLlamaModel, dir + "/p.w1.smt2");      // a model named like window 1's dump
  fs::copy_file(cluster, dir + "/c.w200.smt2");        // a cluster named like the last window's
  fs::copy_file(kLlamaModel, dir + "/m.yaml");
  fs::create_hard_link(dir + "/m.yaml", dir + "/h.w3.smt2");  // window 3's name is the model by another name
  fs::create_directory(dir + "/d.w7.smt2");
  const std::set<std::string> names = dir_entries(dir);
  const std::string model_text = read_file(kLlamaModel), cluster_text = read_file(cluster);
  struct Case {
    std::string args, said;
  };
  const Case cases[] = {
      {fmt::format("synth {0}/p.w1.smt2 --time-limit 5 --dump-smt2 {0}/p.smt2", dir),
       fmt::format("refusing to write '{0}/p.w1.smt2' (--dump-smt2, window 1): it is the input file '{0}/p.w1.smt2'", dir)},
      {fmt::format("synth {1} --cluster {0}/c.w200.smt2 --time-limit 5 --dump-smt2 {0}/c.smt2", dir, kLlamaModel),
       fmt::format("refusing to write '{0}/c.w200.smt2' (--dump-smt2, window 200): it is the input file '{0}/c.w200.smt2'", dir)},
      {fmt::format("synth {0}/m.yaml --time-limit 5 --dump-smt2 {0}/h.smt2", dir),
       fmt::format("refusing to write '{0}/h.w3.smt2' (--dump-smt2, window 3): it is the input file '{0}/m.yaml'", dir)},
      {fmt::format("synth {1} --time-limit 5 -o {0}/x.w2.smt2 --dump-smt2 {0}/x.smt2", dir, kLlamaModel),
       fmt::format("-o and --dump-smt2, window 2 both name '{}/x.w2.smt2'", dir)},
      {fmt::format("synth {1} --time-limit 5 --dump-smt2 {0}/d.smt2", dir, kLlamaModel),
       fmt::format("cannot write '{}/d.w7.smt2' (--dump-smt2, window 7): it is a directory", dir)},
  };
  for (const Case& c : cases) {
    auto r = run_cli(c.args);
    INFO(c.args, "\n", r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.output, "pipesmith: error: " + c.said));
    CHECK_FALSE(contains(r.output, "wrote"));
  }
  CHECK(read_file(dir + "/p.w1.smt2") == model_text);
  CHECK(read_file(dir + "/m.yaml") == model_text);
  CHECK(read_file(dir + "/h.w3.smt2") == model_text);
  CHECK(read_file(dir + "/c.w200.smt2") == cluster_text);
  CHECK(dir_entries(dir) == names);  // no dump, no schedule, no temporary
  fs::remove_all(dir);
}
