#include "cli/synth_progress.h"

#include <fmt/format.h>

#include <type_traits>

namespace ps::cli {

namespace {

std::string heuristic_line(const HeuristicProgress& p) {
  const char* trimmed = p.portfolio == HeuristicProgress::Portfolio::kOne    ? ", portfolio cut to one policy for the budget"
                        : p.portfolio == HeuristicProgress::Portfolio::kLean ? ", lean portfolio for the budget"
                                                                             : "";
  const std::string baseline = p.best_baseline_ms ? fmt::format("best baseline {:.3f} ms,", *p.best_baseline_ms)
                                                  : std::string("no baseline fits,");
  return fmt::format("[heuristic] {:.3f} ms ({}; {} policies{}, {:.2f} s), {} {:.2f} s; {} ops", p.makespan_ms, p.policy,
                     p.policies, trimmed, p.heuristic_s, baseline, p.baselines_s, p.ops);
}

std::string bound_line(const BoundProgress& p) {
  return fmt::format("[bound] {:.3f} ms: {} ({} trials, {} search nodes, {:.1f} M steps{}); incumbent {:.3f} ms  {:.2f} s",
                     p.bound_ms, p.reason, p.trials, p.nodes, static_cast<double>(p.work) / 1e6,
                     p.work_capped ? ", a work cap hit" : "", p.incumbent_ms, p.elapsed_s);
}

std::string smt_bound_line(const SmtBoundProgress& p) {
  if (p.failure) return fmt::format("[smt-bound] not raised: {}", *p.failure);
  return fmt::format("[smt-bound] {:.3f} ms{} ({} relaxations, {} too large for the budget, {} checks, {} trials, "
                     "{:.1f} M rlimit); incumbent {:.3f} ms  {:.2f} s",
                     p.bound_ms, p.raised ? ": " + p.reason : std::string(": not raised"), p.relaxations, p.skipped,
                     p.checks, p.trials, static_cast<double>(p.rlimit_used) / 1e6, p.incumbent_ms, p.elapsed_s);
}

std::string solve_line(const SolveStepProgress& p) {
  const double gap = p.bound_ms > 0 ? 100 * (p.incumbent_ms - p.bound_ms) / p.bound_ms : 0.0;
  return fmt::format("[{} {}] incumbent {:.3f} ms  bound {:.3f} ms  gap {:.2f}%  {:.1f} s", p.model, p.phase,
                     p.incumbent_ms, p.bound_ms, gap, p.elapsed_s);
}

std::string exact_memory_line(const ExactMemoryProgress& p) {
  return fmt::format("[exact-memory proof] incumbent {:.3f} ms  bound {:.3f} ms ({} checks)", p.incumbent_ms,
                     p.bound_ms, p.checks);
}

}  // namespace

std::string synth_progress_line(const SynthProgress& progress) {
  return std::visit(
      [](const auto& p) -> std::string {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, HeuristicProgress>) return heuristic_line(p);
        else if constexpr (std::is_same_v<T, BoundProgress>) return bound_line(p);
        else if constexpr (std::is_same_v<T, SmtBoundProgress>) return smt_bound_line(p);
        else if constexpr (std::is_same_v<T, SolveStepProgress>) return solve_line(p);
        else return exact_memory_line(p);
      },
      progress);
}

}  // namespace ps::cli
