// bench/tuner — the tuner's throughput at a fixed evaluation budget.
//
// With the time limit binding (P = 16, M >= 4P) the quality of `pipesmith synth` depends on how many
// candidates the search evaluates, so the cost of one evaluation is a quality figure. This bench runs
// the search with a fixed budget (max_evaluations; the time limit is a safety net only), which makes
// its result independent of the machine's speed, and prints per case: the wall time, the mean time
// per evaluation (one thread), the result and a digest of the chosen order. Two builds (or two
// commits) compared on the same machine, one after the other: same digests = same search, and the
// wall times give the speed-up. Flags:
//   bench/tuner [--quick] [--evaluations N] [--threads N] [--cases model:P:M,...]
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ir/model.h"
#include "synth/tuner/tuner.h"

namespace {

struct Case {
  std::string model;
  int P = 0;
  int M = 0;
};

// FNV-1a over the chosen plan and order: equal digests = the same search result.
uint64_t digest(const ps::TuneResult& r) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](int64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= static_cast<uint64_t>(v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  for (const ps::LayerRange& l : r.partition) mix(l.last);
  for (int d : r.placement) mix(d);
  for (const auto& dev : r.order.order)
    for (int op : dev) mix(op);
  mix(r.order.makespan);
  return h;
}

int usage(const char* msg) {
  if (msg) std::fprintf(stderr, "bench/tuner: %s\n", msg);
  std::fprintf(stderr, "usage: bench/tuner [--quick] [--evaluations N] [--threads N] [--cases model:P:M,...]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int evaluations = 400;
  int threads = 2;
  std::vector<Case> cases = {{"gemma-like", 16, 64}, {"nemotron-h-like", 16, 64}, {"deepseek-like", 16, 64},
                             {"minimax-like", 8, 32}};
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (k == "--quick") {
      evaluations = 100;
      cases = {{"gemma-like", 16, 64}, {"minimax-like", 8, 32}};
    } else if (k == "--evaluations" || k == "--threads") {
      const char* v = value();
      if (!v) return usage(fmt::format("{} needs a value", k).c_str());
      char* end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (*end != '\0' || n < 1 || n > 1000000) return usage(fmt::format("bad {} '{}'", k, v).c_str());
      (k == "--threads" ? threads : evaluations) = static_cast<int>(n);
    } else if (k == "--cases") {
      const char* v = value();
      if (!v) return usage("--cases needs a value");
      cases.clear();
      std::string s = v;
      size_t pos = 0;
      while (pos <= s.size()) {
        const size_t comma = std::min(s.find(',', pos), s.size());
        const std::string item = s.substr(pos, comma - pos);
        Case c;
        char name[128];
        if (std::sscanf(item.c_str(), "%127[^:]:%d:%d", name, &c.P, &c.M) != 3 || c.P < 1 || c.M < 1)
          return usage(fmt::format("bad case '{}' (model:P:M)", item).c_str());
        c.model = name;
        cases.push_back(c);
        pos = comma + 1;
      }
    } else if (k == "-h" || k == "--help") {
      usage(nullptr);
      return 0;
    } else {
      return usage(fmt::format("unknown flag '{}'", k).c_str());
    }
  }

  std::printf("| model | P | M | evaluations | wall s | ms per evaluation | result ms | digest |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---|\n");
  double total_s = 0;
  for (const Case& c : cases) {
    ps::SpecOverrides ov;
    ov.devices = c.P;
    ov.microbatches = c.M;
    const std::string cluster = c.P <= 8 ? "configs/clusters/8xh100-80gb.yaml" : "configs/clusters/2x8-h100.yaml";
    ps::Result<ps::Spec> spec = ps::load_spec("configs/models/" + c.model + ".yaml", cluster, ov);
    if (!spec.ok()) {
      std::fprintf(stderr, "%s\n", spec.status().str().c_str());
      return 1;
    }
    ps::TuneOptions o;
    o.max_evaluations = evaluations;
    o.time_limit_s = 3600;  // safety net: the budget ends the search
    o.threads = threads;
    std::fprintf(stderr, "%s P=%d M=%d ...\n", c.model.c_str(), c.P, c.M);
    const auto t0 = std::chrono::steady_clock::now();
    ps::Result<ps::TuneResult> r = ps::cooptimize(*spec, o);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().str().c_str());
      return 1;
    }
    total_s += wall;
    std::printf("| %s | %d | %d | %d | %.1f | %.1f | %.1f | %016llx |\n", c.model.c_str(), c.P, c.M,
                r->stats.evaluated, wall, r->stats.ms_per_eval, r->simulated_ms,
                static_cast<unsigned long long>(digest(*r)));
    std::fflush(stdout);
  }
  std::printf("\ntotal wall time: %.1f s (%d threads, budget %d evaluations per case)\n", total_s, threads, evaluations);
  return 0;
}
