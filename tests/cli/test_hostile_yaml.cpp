// YAML aliases through the command line: an alias counts as what it expands to, against the nodes
// and actions limits, while the file is read (a few KB of aliases may not stand for gigabytes of
// schedule), and an alias inside the node it names is refused at the alias. Aliases within the limits
// read as before.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "test_util.h"

using pstest::contains;
using pstest::run_cli;
using pstest::temp_path;

// A named namespace (not an anonymous one): the unity build joins this file with others.
namespace hostile_yaml_test {

const char* kScheduleHead =
    "format: pipesmith-schedule/1\nproblem:\n  name: m\n  devices: 2\n  microbatches: 1\n"
    "  link: {bandwidth_gb_per_s: 200, latency_us: 5}\nstages:\n"
    "  - {id: 0, device: 0, fwd_ms: 1, bwd_input_ms: 1, bwd_weight_ms: 1}\n"
    "  - {id: 1, device: 1, fwd_ms: 1, bwd_input_ms: 1, bwd_weight_ms: 1}\n";

std::string write(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

// Under a 2 GB address-space cap (not under AddressSanitizer, which cannot start under one): a reader
// that expanded the aliases would run out, not pass.
pstest::CliResult run_capped(const std::string& args) { return pstest::run_cli_2gb(args); }

TEST_CASE("cli hostile yaml: aliases count as what they expand to against the actions limit, while reading") {
  // 1,000 ops anchored once and aliased by 1,000 programs (30 KB): a million actions, refused at the
  // alias of the program that passes 933,333 (the 934th aliasing program, line 10 + 1 + 934).
  std::string ops;
  for (int i = 0; i < 1000; ++i) ops += (i ? ", " : "") + std::string("0F0");
  std::string text = std::string(kScheduleHead) + "programs:\n  - device: 0\n    ops: &a [" + ops + "]\n";
  for (int i = 0; i < 1000; ++i) text += "  - {device: 1, ops: *a}\n";
  const std::string path = write("alias-actions.yaml", text);
  auto r = run_capped("verify " + path);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, path + ":945:22: more than 933,333 actions in the file"));
  CHECK_FALSE(contains(r.output, "internal error"));
  std::filesystem::remove(path);
}

TEST_CASE("cli hostile yaml: nested aliases count against the nodes limit; an alias inside its own node is refused") {
  // Ten levels of ten aliases each: 10^10 nodes from 1 KB, refused at the alias that passes 5,733,332.
  std::string text = std::string(kScheduleHead) + "extra:\n  l0: &l0 [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\n";
  for (int i = 1; i < 10; ++i) {
    text += fmt::format("  l{}: &l{} [", i, i);
    for (int k = 0; k < 10; ++k) text += fmt::format("{}*l{}", k ? ", " : "", i - 1);
    text += "]\n";
  }
  text += "programs: []\n";
  const std::string laughs = write("alias-nodes.yaml", text);
  auto r = run_capped("verify " + laughs);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, laughs + ":17:32: more than 5,733,332 YAML nodes"));
  // A node that contains an alias to itself would make the reader walk forever.
  const std::string self = write("alias-self.yaml", std::string(kScheduleHead) + "programs: &p [{device: 0, ops: *p}]\n");
  r = run_capped("verify " + self);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, self + ":10:32: an alias inside the node its anchor names"));
  // The model reader counts the same way: a model's layer list of aliases past the nodes limit.
  const std::string model = write(
      "alias-model.yaml",
      "schema: 1\nmodel:\n  name: m\n  layer_types:\n"
      "    T: {name: block, forward_ms: 1, backward_input_ms: 1, backward_weight_ms: 1, activation_mb: 10, "
      "wgrad_stash_mb: 4, output_mb: 1, params_m: 1}\n"
      "  junk:\n    a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
      "    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
      "    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
      "    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
      "    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
      "    f: [*e, *e]\n"
      "  layers: TTTT\ncluster: {devices: 2}\npipeline: {microbatches: 4}\n");
  r = run_capped("lower " + model);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "more than 5,733,332 YAML nodes"));
  for (const std::string& p : {laughs, self, model}) std::filesystem::remove(p);
}

TEST_CASE("cli hostile yaml: aliases within the limits read as the nodes they name") {
  const std::string model = write(
      "alias-ok.yaml",
      "schema: 1\nmodel:\n  name: m\n  layer_types:\n"
      "    T: &block {name: block, forward_ms: 1, backward_input_ms: 1, backward_weight_ms: 1, activation_mb: 10, "
      "wgrad_stash_mb: 4, output_mb: 1, params_m: 1}\n"
      "    U: *block\n"
      "  layers: TUTU\ncluster: {devices: 2}\npipeline: {microbatches: 4}\n");
  auto r = run_cli("lower " + model);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.output, "layers    4"));
  CHECK(contains(r.output, "U    block  -         2  1.000  1.000  1.000    10.0"));  // U read as T's map
  std::filesystem::remove(model);
}

}  // namespace hostile_yaml_test
