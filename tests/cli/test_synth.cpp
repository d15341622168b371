// `pipesmith synth` through the command line, as a user runs it (fixed partition and placement).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "ir/schedule_io.h"
#include "test_util.h"

using pstest::contains;
using pstest::read_file;
using pstest::run_cli;
using pstest::source_path;
using pstest::temp_path;
using ps::Result;

namespace {

// 8 layers of F=2, I=2, W=1.5 ms on 4 devices (2 layers per stage), 100 MB per boundary over
// 100 GB/s: a 1 ms transfer. 1 GB of activation and 1 GB of model states per stage.
std::string model_path() {
  std::string path = temp_path("synth-model.yaml");
  std::ofstream(path) << R"(schema: 1
model:
  name: synth-test
  layer_types:
    T: {name: block, forward_ms: 2, backward_input_ms: 2, backward_weight_ms: 1.5, activation_mb: 500,
        wgrad_stash_mb: 100, output_mb: 100, params_m: 500}
  layers: "TTTTTTTT"
cluster: {name: test, devices: 4, memory_gb: 0, link: {bandwidth_gb_per_s: 100, latency_us: 0}}
pipeline: {microbatches: 6, bytes_per_param: 1}
)";
  return path;
}

const std::string kFixed = " --partition balanced --placement sequential";

// Runs `pipesmith ARGS_A` and then `pipesmith ARGS_B` (two runs meant to write the same file); both
// must succeed. Returns the first one's output.
std::string synth_twice(const std::string& args_a, const std::string& args_b) {
  auto ra = run_cli(args_a);
  auto rb = run_cli(args_b);
  INFO(ra.output);
  INFO(rb.output);
  REQUIRE(ra.exit_code == 0);
  REQUIRE(rb.exit_code == 0);
  return ra.output;
}

}  // namespace

TEST_CASE("cli synth: writes a certified schedule that pipesmith verify accepts, proven optimal") {
  const std::string out = temp_path("synth-out.yaml");
  const std::string csv = temp_path("synth-out.csv");
  const std::string svg = temp_path("synth-out.svg");
  auto r = run_cli(fmt::format("synth {}{} --memory-limit-gb 4 --time-limit 60 --rlimit 20000000 -o {} --csv {} --svg {}",
                               model_path(), kFixed, out, csv, svg));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "valid under rendezvous semantics"));
  CHECK(contains(r.output, "(proven optimal)"));
  CHECK(contains(r.output, "synth: ["));  // progress on stderr
  auto v = run_cli("verify " + out);
  INFO(v.output);
  CHECK(v.exit_code == 0);
  CHECK(contains(v.output, "VALID"));
  const std::string text = read_file(out);
  CHECK(contains(text, "optimal: \"true\""));
  CHECK(contains(text, "z3_version:"));
  CHECK(contains(text, "bound_proven_ms:"));
  CHECK(contains(text, "schedule_method:"));  // the solver block
  CHECK(contains(text, "bound_method:"));
  CHECK(contains(text, "z3_improved_ms:"));
  CHECK(contains(text, "SEND_F"));  // written with its comm order
  {
    // A claim edited in the file (here the proof withdrawn) is caught: the digest seals every claim.
    std::string forged = text;
    const size_t at = forged.find("optimal: \"true\"");
    REQUIRE(at != std::string::npos);
    forged.replace(at, std::string("optimal: \"true\"").size(), "optimal: \"false\"");
    const std::string forged_path = temp_path("synth-forged.yaml");
    std::ofstream(forged_path) << forged;
    auto fv = run_cli("verify " + forged_path);
    INFO(fv.output);
    CHECK(fv.exit_code == 3);
    CHECK(contains(fv.output, "certificate.mismatch"));
    CHECK(contains(fv.output, "'digest'"));
  }
  CHECK(contains(read_file(svg), "<svg"));
  auto vc = run_cli("verify " + csv);
  INFO(vc.output);
  CHECK(vc.exit_code == 0);
}

TEST_CASE("cli synth: same seed and budget, byte-identical files; --quiet is quiet") {
  const std::string a = temp_path("synth-a.yaml"), b = temp_path("synth-b.yaml");
  const std::string args = fmt::format("synth {}{} --memory-limit-gb 3.5 --microbatches 8 --seed 5 --rlimit 2000000 "
                                       "--time-limit 120 --quiet",
                                       model_path(), kFixed);
  const std::string said = synth_twice(args + " -o " + a, args + " -o " + b);
  CHECK_FALSE(contains(said, "synth: ["));
  CHECK(read_file(a) == read_file(b));
  CHECK(contains(read_file(a), "seed: \"5\""));
}

TEST_CASE("cli synth: --evaluations makes a searched plan reproducible, whatever --search-threads; a search the clock "
          "ends says so") {
  // A time limit far shorter than 300 evaluations take: with --evaluations the clock does not end
  // the search, so two runs write the same file; without it the clock ends it, the run says the plan
  // depends on the machine's speed, and the file does not record the clock-decided counts.
  const std::string model = source_path("configs/models/gemma-like.yaml");
  const std::string a = temp_path("synth-eval-a.yaml"), b = temp_path("synth-eval-b.yaml");
  const std::string args =
      fmt::format("synth {} --devices 4 --microbatches 8 --evaluations 300 --time-limit 0.05 --quiet", model);
  // One search thread and three: the candidates are the same, and so is the file.
  const std::string said = synth_twice(args + " --search-threads 1 -o " + a, args + " --search-threads 3 -o " + b);
  CHECK(contains(said, "evaluation budget"));
  CHECK_FALSE(contains(said, "the time limit ended the search"));
  const std::string text = read_file(a);
  CHECK(text == read_file(b));
  CHECK(contains(text, "evaluations: \"300\""));
  CHECK(contains(text, "stop: evaluation budget\""));
  CHECK(contains(text, "time_limit_s: \"0.05\""));
  CHECK(run_cli("verify " + a).exit_code == 0);

  const std::string c = temp_path("synth-eval-c.yaml");
  auto rc = run_cli(fmt::format("synth {} --devices 4 --microbatches 8 --time-limit 0.05 --quiet -o {}", model, c));
  INFO(rc.output);
  REQUIRE(rc.exit_code == 0);
  CHECK(contains(rc.output, "time limit"));
  CHECK(contains(rc.output, "note          the time limit ended the search, so the plan depends on the speed of the machine it ran on"));
  CHECK(contains(read_file(c), "search: \"stop: time limit\""));

  // Nothing to search with both fixed, and a budget must be a count.
  auto both = run_cli(fmt::format("synth {}{} --evaluations 5 -o {}", model_path(), kFixed, c));
  CHECK(both.exit_code == 1);
  CHECK(contains(both.output, "evaluations budgets the search of the partition and placement"));
  auto zero = run_cli(fmt::format("synth {} --evaluations 0 -o {}", model_path(), c));
  CHECK(zero.exit_code == 1);
  CHECK(contains(zero.output, "--evaluations"));
}

TEST_CASE("cli synth: an output it could not write is refused before the search, with the flag named") {
  const std::string dir = temp_path("synth-out-dir");
  std::filesystem::create_directories(dir);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"-o " + dir + "/missing/s.yaml", "(-o): directory '" + dir + "/missing' does not exist"},
      {"--svg " + dir, "(--svg): it is a directory"},
      {"-o " + dir + "/s.yaml --csv " + model_path() + "/x.csv", "(--csv): '" + model_path() + "' is not a directory"},
  };
  for (const auto& [flags, said] : cases) {
    // A search far longer than the check: --evaluations 100000 would take minutes if it ran.
    auto r = run_cli(fmt::format("synth {} --evaluations 100000 --time-limit 600 --quiet {}",
                                 source_path("configs/models/gemma-like.yaml"), flags));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.output, said));
    CHECK_FALSE(contains(r.output, "candidates"));
  }
  CHECK_FALSE(std::filesystem::exists(dir + "/s.yaml"));
}

namespace {

// Runs `pipesmith synth ARGS` in the background, sends SIGTERM once its stderr shows `cue`, and
// returns what the shell saw ("status=N") and the seconds it all took.
std::pair<std::string, double> synth_terminated_at(const std::string& args, const std::string& cue,
                                                   const std::string& log) {
  const std::string script = temp_path("synth-int.sh");
  std::remove(log.c_str());  // a log left by an earlier run must not satisfy the cue
  std::ofstream(script) << fmt::format(
      "'{}' synth {} > '{}' 2>&1 &\n"
      "p=$!\ni=0\n"
      "until grep -qF '{}' '{}' || [ $i -ge 1200 ]; do sleep 0.1; i=$((i+1)); done\n"
      "kill -TERM $p\nwait $p\necho status=$?\n",
      PIPESMITH_CLI, args, log, cue, log);
  const auto t0 = std::chrono::steady_clock::now();
  FILE* p = popen(("sh " + script).c_str(), "r");
  std::string said;
  if (p) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) said += buf;
    pclose(p);
  }
  return {said, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

}  // namespace

TEST_CASE("cli synth: SIGTERM writes the best schedule so far, checked, then ends by the signal") {
  // As a batch system does at a job's time limit, with a 300 s budget under way.
  const std::string out = temp_path("synth-int.yaml"), log = temp_path("synth-int.log");
  const std::string model = source_path("configs/models/nemotron-h-like.yaml");
  SUBCASE("in the search (its first progress line is out)") {
    auto [said, seconds] = synth_terminated_at(fmt::format("'{}' --time-limit 300 -o '{}'", model, out), "synth: [seeds]", log);
    const std::string text = read_file(log);
    INFO(text);
    CHECK(contains(said, "status=143"));  // 128 + SIGTERM: the shell sees the signal
    CHECK(contains(text, "synth: interrupted: stopping"));
    CHECK(contains(text, "note          interrupted by SIGTERM: the search stopped early and Z3 did not run"));
    CHECK(seconds < 150);  // not the 300 s budget
    const std::string file = read_file(out);
    CHECK(contains(file, "search: \"stop: interrupted\""));
    CHECK(contains(file, "solver_status: \"not run: interrupted\""));
  }
  SUBCASE("in the refinement of a fixed plan (once its heuristic order is out: the bound, then Z3)") {
    auto [said, seconds] = synth_terminated_at(
        fmt::format("'{}' --partition balanced --placement interleaved --time-limit 300 -o '{}'", model, out),
        "synth: [heuristic]", log);
    const std::string text = read_file(log);
    INFO(text);
    CHECK(contains(said, "status=143"));
    CHECK(contains(text, "note          interrupted by SIGTERM: it came while the order was refined (bounds, Z3), which "
                         "stopped with the best order so far"));
    CHECK(contains(text, "stopped: interrupted"));
    CHECK(seconds < 150);
    CHECK(contains(read_file(out), "stopped: interrupted"));
  }
  CHECK(contains(read_file(log), "wrote " + out));
  auto v = run_cli("verify " + out);
  INFO(v.output);
  CHECK(v.exit_code == 0);
}

TEST_CASE("cli synth: a step whose budget outlasts --time-limit is stopped at the limit, and the best schedule so far "
          "is written") {
  // An --rlimit of 500 s of Z3 sizes the steps before Z3 too (the heuristic's portfolio, the
  // destructive bound's work, the local search's evaluations: tens of seconds on this plan), and
  // they poll no clock; --time-limit 2 stops them where they are, as a signal would, and the best
  // order so far is checked and written, exit 0, the certificate saying the limit cut the run short.
  // (The backstop past the limit is for what cannot poll; were these steps left to it, the run would
  // end "--time-limit 2 s reached while synthesizing ...: stopped, nothing more written", exit 1.)
  const std::string out = temp_path("synth-overrun.yaml");
  std::filesystem::remove(out);
  auto r = run_cli(fmt::format("synth {} --devices 16 --microbatches 16 --memory-limit-gb 0 --partition balanced "
                               "--placement interleaved --rlimit 1000000000 --time-limit 2 -o {}",
                               source_path("configs/models/gpt-oss-like.yaml"), out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(contains(r.output, "nothing more written"));
  CHECK(contains(r.output, "note          --time-limit 2 s reached while the order was refined: the steps under way "
                           "(local search, bounds, Z3) stopped with the best order and bound so far; this is the best "
                           "schedule found by then, checked"));
  CHECK(contains(r.output, "wrote " + out));
  const std::string text = read_file(out);
  CHECK(contains(text, "time_limit_reached: \"while the order was refined: "));
  CHECK(contains(text, "optimal: \"false\""));
  auto v = run_cli("verify " + out);
  INFO(v.output);
  CHECK(v.exit_code == 0);

  // A search that ends past the limit (1 ms: reading the inputs alone takes longer; the seeds go on
  // until a plan fits): Z3 does not start, and the search's plan is written, checked.
  auto s = run_cli(fmt::format("synth {} --devices 4 --microbatches 8 --time-limit 0.001 -o {}",
                               source_path("configs/models/gemma-like.yaml"), out));
  INFO(s.output);
  REQUIRE(s.exit_code == 0);
  CHECK(contains(s.output, "note          --time-limit 0.001 s reached in the search: its best plan is written as it "
                           "ordered it, and Z3 did not run"));
  CHECK(contains(s.output, "solver        not run: time limit reached"));
  const std::string searched = read_file(out);
  CHECK(contains(searched, "solver_status: \"not run: time limit reached\""));
  CHECK(contains(searched, "time_limit_reached: \"in the search: "));
  auto vs = run_cli("verify " + out);
  INFO(vs.output);
  CHECK(vs.exit_code == 0);
}

TEST_CASE("cli synth: an impossible memory limit exits 2 and says why in terms of the inputs") {
  auto r = run_cli(fmt::format("synth {}{} --memory-limit-gb 1.5 --quiet -o {}", model_path(), kFixed,
                               temp_path("never.yaml")));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "device 0 needs at least 2.0 GB but the limit is 1.5 GB"));
  CHECK(contains(r.output, "model states of stage 0 are 1.0 GB"));
  CHECK(contains(r.output, "one microbatch of activation of stage 0 is 1.0 GB"));
  CHECK(contains(r.output, "layers 0–1"));
}

TEST_CASE("cli synth: V placement, interleaved placement and the SMT-LIB2 dump") {
  const std::string smt2 = temp_path("synth.smt2");
  const std::string out = temp_path("synth-v.yaml");
  auto r = run_cli(fmt::format("synth {} --devices 2 --placement v --memory-limit-gb 5 --rlimit 5000000 --quiet "
                               "--dump-smt2 {} -o {}",
                               model_path(), smt2, out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "4 stages"));
  const std::string text = read_file(smt2);
  CHECK(contains(text, "start[F,s0,mb0]"));
  CHECK(contains(text, "(check-sat)"));
  CHECK(run_cli("verify " + out).exit_code == 0);
  auto il = run_cli(fmt::format("synth {} --devices 2 --placement interleaved --stages-per-device 2 --rlimit 2000000 "
                                "--quiet -o {}",
                                model_path(), out));
  INFO(il.output);
  CHECK(il.exit_code == 0);
  CHECK(run_cli("verify " + out).exit_code == 0);
}

TEST_CASE("cli synth and bound: every placement name --help gives is taken, and a synonym names the same plan") {
  const std::string m = model_path();
  for (const char* cmd : {"synth", "bound"}) {
    auto help = run_cli(fmt::format("{} --help", cmd));
    INFO(help.output);
    for (const char* word : {"sequential", "interleaved or looped", "v or vshape"}) CHECK(contains(help.output, word));
  }
  // Same inputs, the two names of one placement: byte-identical schedule files and bound reports.
  const std::vector<std::pair<std::string, std::string>> synonyms = {{"interleaved", "looped"}, {"v", "vshape"}};
  for (const auto& pair : synonyms) {
    const auto& a = pair.first;
    const auto& b = pair.second;
    std::string files[2], bounds[2];
    const std::string names[2] = {a, b};
    for (int i = 0; i < 2; ++i) {
      const std::string out = temp_path(fmt::format("synth-placement-{}.yaml", names[i]));
      auto r = run_cli(fmt::format("synth {} --devices 2 --partition balanced --stages-per-device 2 --placement {} "
                                   "--rlimit 2000000 --quiet -o {}",
                                   m, names[i], out));
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      files[i] = read_file(out);
      auto bd = run_cli(fmt::format("bound {} --devices 2 --partition balanced --stages-per-device 2 --placement {}", m,
                                    names[i]));
      INFO(bd.output);
      REQUIRE(bd.exit_code == 0);
      bounds[i] = bd.output;
    }
    CHECK_MESSAGE(files[0] == files[1], a << " and " << b << " gave different schedules");
    CHECK(bounds[0] == bounds[1]);
  }
}

TEST_CASE("cli synth: bad flags are usage errors") {
  const std::string m = model_path();
  CHECK(run_cli(fmt::format("synth {}{} --time-limit 0", m, kFixed)).exit_code == 1);
  auto r = run_cli(fmt::format("synth {} --partition balanced --placement diagonal", m));
  CHECK(r.exit_code == 1);
  auto r2 = run_cli(fmt::format("synth {} --placement sequential --stages-per-device 2", m));
  CHECK(r2.exit_code == 1);
  CHECK(contains(r2.output, "one stage on each device"));
  CHECK(run_cli(fmt::format("synth {}{} --devices 0", m, kFixed)).exit_code == 1);
  CHECK(run_cli("synth /nonexistent/model.yaml" + kFixed).exit_code == 1);
}

TEST_CASE("[slow] cli synth: with only --partition the placement is searched, with only --placement the partition") {
  const std::string m = model_path();
  const std::string out = temp_path("synth-partial.yaml");
  auto stages_of = [&](const std::string& path) {
    Result<ps::Schedule> s = ps::read_schedule_yaml(path);
    REQUIRE(s.ok());
    return s->problem.stages;
  };
  SUBCASE("--partition even: the even split over P stages, placement searched") {
    auto r = run_cli(fmt::format("synth {} --partition even --time-limit 5 --quiet -o {}", m, out));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.output, "even (given; placement searched: "));
    auto st = stages_of(out);
    REQUIRE(st.size() == 4);
    for (int s = 0; s < 4; ++s) {
      CHECK(st[s].first_layer == 2 * s);
      CHECK(st[s].last_layer == 2 * s + 1);
    }
    CHECK(run_cli("verify " + out).exit_code == 0);
  }
  SUBCASE("--placement LIST: exactly that placement, partition searched") {
    const std::vector<int> want = {0, 1, 2, 3, 3, 2, 1, 0};
    auto r = run_cli(fmt::format("synth {} --placement 0,1,2,3,3,2,1,0 --time-limit 5 --quiet -o {}", m, out));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.output, "searched for the given placement 0,1,2,3,3,2,1,0"));
    auto st = stages_of(out);
    REQUIRE(st.size() == want.size());
    for (size_t s = 0; s < st.size(); ++s) CHECK(st[s].device == want[s]);
    CHECK(run_cli("verify " + out).exit_code == 0);
  }
  SUBCASE("--stages-per-device 2 alone: interleaved placement over 2P stages, partition searched") {
    auto r = run_cli(fmt::format("synth {} --stages-per-device 2 --time-limit 5 --quiet -o {}", m, out));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto st = stages_of(out);
    REQUIRE(st.size() == 8);
    for (int s = 0; s < 8; ++s) CHECK(st[s].device == s % 4);
  }
  SUBCASE("--stages-per-device 0 is an error") {
    auto r = run_cli(fmt::format("synth {} --stages-per-device 0 --quiet -o {}", m, out));
    CHECK(r.exit_code == 1);
    CHECK(contains(r.output, "--stages-per-device must be an integer in [1, 100000], got"));
  }
}

TEST_CASE("cli synth: an encoding too large for the budget is not loaded; windows of the order run instead") {
  // Gemma-like, 32 stages on 8 devices, 16 microbatches: ~150k open pairs, far more than a 1 s
  // budget loads (Z3 would not stop while loading: the run would take minutes).
  const std::string out = temp_path("synth-big.yaml");
  auto r = run_cli(fmt::format("synth {} --devices 8 --microbatches 16 --partition balanced --placement interleaved "
                               "--stages-per-device 4 --time-limit 1 -o {}",
                               source_path("configs/models/gemma-like.yaml"), out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "solver        windows: "));
  CHECK_FALSE(contains(r.output, "skipped"));
  CHECK(contains(r.output, "valid under rendezvous semantics"));
  // Where the time goes: 32 stages looped over 8 devices, 4 each; the busiest device's work is at
  // least the mean, and the iteration at least the busiest device's work.
  const size_t at = r.output.find("device work   busiest device ");
  REQUIRE(at != std::string::npos);
  int dev = -1;
  double busiest = 0, mean = 0;
  REQUIRE(std::sscanf(r.output.c_str() + at, "device work   busiest device %d %lf ms, mean %lf ms", &dev, &busiest, &mean) == 3);
  CHECK(dev >= 0);
  CHECK(dev < 8);
  CHECK(busiest >= mean);
  CHECK(mean > 0);
  auto v = run_cli("verify " + out);
  CHECK(v.exit_code == 0);
}

TEST_CASE("cli synth: the search reports the moves its plan floor skipped") {
  // Llama-2-7B on 4 devices: the seeds take a fraction of a second even under ASan, then the
  // search runs rounds with a full beam, and moves that cannot beat its last member are skipped.
  const std::string out = temp_path("synth-pruned.yaml");
  auto r = run_cli(fmt::format("synth {} --devices 4 --microbatches 8 --time-limit 3 -o {}",
                               source_path("configs/models/llama2-7b.yaml"), out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const size_t at = r.output.find("candidates in ");
  REQUIRE(at != std::string::npos);
  const size_t semi = r.output.find("; ", at);
  REQUIRE(semi != std::string::npos);
  long skipped = 0;
  REQUIRE(std::sscanf(r.output.c_str() + semi, "; %ld moves skipped by their plan floor", &skipped) == 1);
  CHECK(skipped > 0);
  CHECK(run_cli("verify " + out).exit_code == 0);
}

TEST_CASE("[slow] cli synth: the search reports the low-floor plans it gave the search portfolio") {
  // tiny-hetero: the search converges in well under a second, and some plans better balanced than
  // the best ranked only by the screening policies get the search portfolio.
  const std::string model = pstest::data_path("synth/tiny-hetero.yaml");
  const std::string out = temp_path("synth-floor.yaml");
  auto r = run_cli(fmt::format("synth {} --time-limit 10 -o {}", model, out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const size_t at = r.output.find("moves skipped by their plan floor; ");
  REQUIRE(at != std::string::npos);
  long given = 0;
  REQUIRE(std::sscanf(r.output.c_str() + at, "moves skipped by their plan floor; %ld low-floor plans given the search portfolio",
                      &given) == 1);
  CHECK(given > 0);
  CHECK(run_cli("verify " + out).exit_code == 0);
}

TEST_CASE("cli synth: on two nodes the search reports its paced-front seeds; on one node there are none") {
  // 26 layers (embedding, attention and MoE sublayers, a head) on 8 devices: light attention
  // sublayers at the front make paced-front groups of one attention + one MoE layer. Here a plain
  // seed starts better, so they are not admitted; the schedule is checked either way.
  const std::string two = temp_path("synth-two-nodes.yaml");
  std::ofstream(two) << R"(schema: 1
model:
  name: two-node-hetero
  layer_types:
    E: {name: embedding, forward_ms: 0.1, backward_input_ms: 0, backward_weight_ms: 0.1, activation_mb: 8, wgrad_stash_mb: 0, output_mb: 32, params_m: 100}
    A: {name: attention, forward_ms: 0.3, backward_input_ms: 0.4, backward_weight_ms: 0.2, activation_mb: 100, wgrad_stash_mb: 30, output_mb: 32, params_m: 20}
    X: {name: moe, forward_ms: 1.0, backward_input_ms: 1.0, backward_weight_ms: 0.9, activation_mb: 400, wgrad_stash_mb: 200, output_mb: 32, params_m: 300}
    L: {name: head, forward_ms: 4, backward_input_ms: 4, backward_weight_ms: 3.5, activation_mb: 1500, wgrad_stash_mb: 20, output_mb: 0, params_m: 200}
  layers: "EAXAXAXAXAXAXAXAXAXAXAXAXL"
cluster: {devices: 8, devices_per_node: 4, link: {bandwidth_gb_per_s: 300, latency_us: 10}, inter_node_link: {bandwidth_gb_per_s: 40, latency_us: 20}}
pipeline: {microbatches: 16}
)";
  const std::string out = temp_path("synth-two-nodes-out.yaml");
  // Bounded by candidates, not the clock: the seeds come first, whatever the machine's load.
  auto r = run_cli(fmt::format("synth {} --evaluations 100 -o {}", two, out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const size_t at = r.output.find(" paced-front seeds, ");
  REQUIRE(at != std::string::npos);
  const size_t semi = r.output.rfind("; ", at);
  REQUIRE(semi != std::string::npos);
  CHECK(std::atoi(r.output.c_str() + semi + 2) > 0);
  CHECK(contains(r.output, "paced-front seeds, not admitted (another seed started better)"));
  CHECK(run_cli("verify " + out).exit_code == 0);
  // The same model on one node of 8: no paced-front seeds, and the line does not mention them.
  const std::string one = temp_path("synth-one-node.yaml");
  std::string text = read_file(two);
  for (const std::string cut : {"devices_per_node: 4, ", ", inter_node_link: {bandwidth_gb_per_s: 40, latency_us: 20}"}) {
    REQUIRE(text.find(cut) != std::string::npos);
    text.erase(text.find(cut), cut.size());
  }
  std::ofstream(one) << text;
  auto r1 = run_cli(fmt::format("synth {} --evaluations 100 -o {}", one, out));
  INFO(r1.output);
  REQUIRE(r1.exit_code == 0);
  CHECK_FALSE(contains(r1.output, "paced-front"));
  CHECK(run_cli("verify " + out).exit_code == 0);
}

TEST_CASE("cli synth: at M <= 2P the search reports its wave seeds and searches from them (one node, two nodes, a memory cap); at 4P there are none") {
  const std::string model = pstest::data_path("synth/tiny-hetero.yaml");
  // The N of the search line's "; N wave seeds, <what became of them>" (-1: not there).
  auto wave_count = [](const std::string& output, const std::string& what) {
    const size_t at = output.find(" wave seeds, " + what);
    const size_t semi = at == std::string::npos ? at : output.rfind("; ", at);
    return semi == std::string::npos ? -1 : std::atoi(output.c_str() + semi + 2);
  };
  // Bounded by candidates: the two searches split the budget the same way on any machine.
  const std::string out = temp_path("synth-wave-out.yaml"), again = temp_path("synth-wave-again.yaml");
  auto r = run_cli(fmt::format("synth {} --evaluations 100 --rlimit 2000000 -o {}", model, out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(wave_count(r.output, "searched from as well") > 0);
  CHECK(run_cli("verify " + out).exit_code == 0);
  // Two searches and the same budgets: the same file.
  REQUIRE(run_cli(fmt::format("synth {} --evaluations 100 --rlimit 2000000 -o {}", model, again)).exit_code == 0);
  CHECK(read_file(out) == read_file(again));
  // M = 4P: no wave seeds, and the line does not mention them.
  auto r4 = run_cli(fmt::format("synth {} --microbatches 16 --evaluations 100 -o {}", model, out));
  INFO(r4.output);
  REQUIRE(r4.exit_code == 0);
  CHECK_FALSE(contains(r4.output, "wave seeds"));
  CHECK(run_cli("verify " + out).exit_code == 0);
  // Two nodes of two devices with a slow link between them, and one node under a 35 GB cap (the
  // search then runs in two phases, recomputation searched): wave seeds too, and the file verifies.
  for (const std::string& flags : {std::string("--cluster ") + temp_path("synth-wave-nodes.yaml"),
                                   std::string("--memory-limit-gb 35")}) {
    std::ofstream(temp_path("synth-wave-nodes.yaml"))
        << "schema: 1\ncluster: {devices: 4, devices_per_node: 2, link: {bandwidth_gb_per_s: 100, latency_us: 10}, "
           "inter_node_link: {bandwidth_gb_per_s: 5, latency_us: 20}}\n";
    auto rn = run_cli(fmt::format("synth {} {} --evaluations 100 --rlimit 2000000 -o {}", model, flags, out));
    INFO(flags);
    INFO(rn.output);
    REQUIRE(rn.exit_code == 0);
    CHECK(wave_count(rn.output, "") > 0);
    CHECK(run_cli("verify " + out).exit_code == 0);
  }
}

TEST_CASE("cli synth: a plan too large for the whole encoding gets Z3's share as windows of the order") {
  const std::string out = temp_path("synth-share.yaml");
  // Llama-2-7B on 8 devices, 16 microbatches, 22 GB, no recomputation: the whole encoding does not
  // load in a quarter of a 1 s budget per context, and the cap leaves a gap (with recomputation the
  // search finds a plan whose heuristic order meets its bound). The search is bounded by candidates and
  // Z3 by its rlimit, so the run does not depend on the clock (the time limit is only a cap far
  // above what the budget takes, sanitizers included).
  const std::string smt2 = temp_path("synth-share.smt2");
  const std::string first = temp_path("synth-share.w1.smt2");
  std::remove(first.c_str());
  auto r = run_cli(fmt::format("synth {} --devices 8 --microbatches 16 --memory-limit-gb 22 --evaluations 30 "
                               "--recompute none --rlimit 4000000 --time-limit 120 --dump-smt2 {} -o {}",
                               source_path("configs/models/llama2-7b.yaml"), smt2, out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "solver        windows: "));
  // Each window's encoding, with its target, loadable by the z3 binary as it is.
  CHECK(contains(r.output, "wrote " + first + " ... "));
  const std::string w1 = read_file(first);
  CHECK(contains(w1, "(check-sat)"));
  CHECK(contains(w1, "(declare-fun C () Int)"));
  CHECK(contains(w1, "(<= C "));
  CHECK(contains(r.output, "valid under rendezvous semantics"));
  CHECK(run_cli("verify " + out).exit_code == 0);
  const std::string text = read_file(out);
  CHECK_FALSE(contains(text, "z3_checks: \"0\""));
}

TEST_CASE("[slow] cli synth: a plan of 72,000 ops keeps to its budget — the portfolio is sized, Z3 works on windows of "
          "the order, and each window's encoding is written") {
  // Nemotron-H-like on 4 devices in a V, M = 2000: 48,000 compute ops and 24,000 transfers. A plan
  // this size must neither build the n² reachability table (28 GB at M = 8192 on 12 stages) nor run
  // the whole portfolio whatever the time limit.
  const std::string smt2 = temp_path("synth-big.smt2");
  const std::string out = temp_path("synth-big.yaml");
  std::remove(smt2.c_str());
  std::remove(temp_path("synth-big.w1.smt2").c_str());
  auto r = run_cli(fmt::format("synth {} --devices 4 --microbatches 2000 --partition balanced --placement v "
                               "--time-limit 2 --dump-smt2 {} -o {}",
                               source_path("configs/models/nemotron-h-like.yaml"), smt2, out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "; 72000 ops\n"));                     // the heuristic's progress line
  CHECK(contains(r.output, "lean portfolio for the budget"));     // 2 s do not buy the whole one
  CHECK(contains(r.output, "solver        windows: "));
  CHECK_FALSE(std::ifstream(smt2).good());  // no whole encoding (the windows' files, if any, instead)
  const std::string first = temp_path("synth-big.w1.smt2");
  CHECK(contains(r.output, "wrote " + first) == std::ifstream(first).good());
  CHECK(contains(r.output, "valid under rendezvous semantics"));  // synth's own checker run
  CHECK(contains(r.output, "M = 2000 microbatches"));
}

TEST_CASE("cli synth: a model of 3,000 layers is searched within its time limit") {
  // A model written op by op: the balanced partition's O(k·n²) table and the packed seeds' O(n³)
  // polish took minutes at 5,000 layers, before any candidate was evaluated, whatever the limit.
  const std::string model = temp_path("synth-long.yaml");
  const std::string out = temp_path("synth-long-out.yaml");
  std::ofstream(model) << "schema: 1\nmodel:\n  name: long\n  layer_types:\n"
                          "    T: {name: block, forward_ms: 2, backward_input_ms: 2, backward_weight_ms: 1.5, "
                          "activation_mb: 5, wgrad_stash_mb: 1, output_mb: 10, params_m: 5}\n"
                          "    U: {name: wide, forward_ms: 3, backward_input_ms: 3, backward_weight_ms: 2, "
                          "activation_mb: 5, wgrad_stash_mb: 1, output_mb: 10, params_m: 8}\n"
                       << "  layers: \"" << std::string(1500, 'T') << std::string(1500, 'U') << "\"\n"
                       << "cluster: {name: test, devices: 4, memory_gb: 80, link: {bandwidth_gb_per_s: 100, "
                          "latency_us: 0}}\npipeline: {microbatches: 8, bytes_per_param: 2}\n";
  auto r = run_cli(fmt::format("synth {} --time-limit 2 -o {}", model, out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "valid under rendezvous semantics"));
  CHECK(contains(r.output, "P = 4 devices, M = 8 microbatches"));
  CHECK(run_cli("verify " + out).exit_code == 0);
}

TEST_CASE("cli synth: an edit of any one field of the certificate is caught by verify (exit 3, certificate.mismatch)") {
  // A memory-bound plan, so the solver block is full (windows or the whole encoding, relaxation
  // bounds); then every line of the certificate but the verdict and semantics words, edited one at
  // a time: a digit changed, or a character added to a quoted text.
  const std::string out = temp_path("synth-every-field.yaml");
  auto r = run_cli(fmt::format("synth {} --cluster {} --devices 8 --microbatches 8 --memory-limit-gb 22 "
                               "--time-limit 3 --quiet -o {}",
                               source_path("configs/models/llama2-7b.yaml"),
                               source_path("configs/clusters/8xh100-80gb.yaml"), out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string text = read_file(out);
  REQUIRE(run_cli("verify " + out).exit_code == 0);
  const size_t cert = text.find("\ncertificate:\n");
  REQUIRE(cert != std::string::npos);
  int edited = 0;
  for (size_t at = text.find('\n', cert + 1) + 1; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    const size_t colon = line.find(": ");
    std::string changed = line;
    if (colon != std::string::npos && line.find("verdict:") == std::string::npos &&
        line.find("semantics:") == std::string::npos) {
      const size_t digit = line.find_first_of("0123456789", colon);
      if (digit != std::string::npos) {
        changed[digit] = static_cast<char>('0' + (line[digit] - '0' + 1) % 10);
      } else if (line.back() == '"') {
        changed.insert(changed.size() - 1, "x");
      }
    }
    if (changed != line) {
      CAPTURE(line);
      CAPTURE(changed);
      std::string forged = text;
      forged.replace(at, end - at, changed);
      const std::string path = temp_path("synth-every-field-forged.yaml");
      std::ofstream(path) << forged;
      auto v = run_cli("verify " + path);
      CHECK(v.exit_code == 3);
      CHECK(contains(v.output, "certificate.mismatch"));
      ++edited;
    }
    at = end + 1;
  }
  CHECK(edited >= 20);  // the figures, the digest and the extras
  CHECK(contains(text, "z3_checks:"));
  CHECK(contains(text, "bound_method:"));
}
