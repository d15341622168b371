#include "runtime/sequential_reference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/host_ops.h"
#include "runtime/stage_compute.h"

namespace ps::rt {

Result<ReferenceResult> run_sequential_reference(const ExecModel& model,
                                                 const std::function<void(int done, int total)>& progress) {
  HostOps ops("reference");
  StageCompute sc(model, ops);
  const int S = model.num_stages();
  for (int s = 0; s < S; ++s) PS_RETURN_IF_ERROR(sc.add_stage(s));
  for (int m = 0; m < model.microbatches; ++m) {
    Tensor x;
    for (int s = 0; s < S; ++s) {
      auto y = sc.forward(s, m, std::move(x));
      if (!y.ok()) return y.status();
      x = std::move(*y);
    }
    Tensor dy;
    for (int s = S - 1; s >= 0; --s) {
      auto dx = sc.backward_input(s, m, std::move(dy));
      if (!dx.ok()) return dx.status();
      dy = std::move(*dx);
    }
    for (int s = 0; s < S; ++s) PS_RETURN_IF_ERROR(sc.backward_weight(s, m));
    if (progress) progress(m + 1, model.microbatches);
  }
  ReferenceResult r;
  for (int s = 0; s < S; ++s) {
    auto g = sc.gradients(s);
    if (!g.ok()) return g.status();
    r.gradients[s] = std::move(*g);
  }
  for (int m = 0; m < model.microbatches; ++m) {
    auto l = sc.loss(m);
    if (!l.ok()) return l.status();
    r.losses[m] = *l;
  }
  return r;
}

GradientComparison compare_gradients(const ExecModel& model,
                                     const std::map<int, std::vector<std::vector<float>>>& got,
                                     const std::map<int, double>& got_losses, const ReferenceResult& ref,
                                     double rel_tol) {
  GradientComparison c;
  c.ok = true;
  if (got.empty()) {
    c.ok = false;
    c.problem = "no gradients were collected";
  }
  for (const auto& [stage, params] : got) {
    auto it = ref.gradients.find(stage);
    const auto specs = model.stage_params(stage);
    if (it == ref.gradients.end() || it->second.size() != params.size() || specs.size() != params.size()) {
      c.ok = false;
      c.problem = fmt::format("stage {}: parameter list differs from the reference", stage);
      continue;
    }
    for (size_t p = 0; p < params.size(); ++p) {
      const auto& g = params[p];
      const auto& r = it->second[p];
      if (g.size() != r.size()) {
        c.ok = false;
        c.problem = fmt::format("{}: {} elements, reference {}", specs[p].name, g.size(), r.size());
        continue;
      }
      double max_diff = 0, max_ref = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        double diff = std::fabs(static_cast<double>(g[i]) - static_cast<double>(r[i]));
        if (std::isnan(diff)) diff = std::numeric_limits<double>::infinity();  // NaN never passes
        max_diff = std::max(max_diff, diff);
        max_ref = std::max(max_ref, std::fabs(static_cast<double>(r[i])));
      }
      const double rel = max_diff / std::max(max_ref, 1e-30);
      ++c.tensors;
      c.elements += g.size();
      c.max_abs_diff = std::max(c.max_abs_diff, max_diff);
      if (c.worst_param.empty() || rel > c.max_rel_diff) {
        c.max_rel_diff = rel;
        c.worst_param = specs[p].name;
      }
      if (!(rel <= rel_tol)) c.ok = false;
    }
  }
  // A comparison with a side missing fails: every stage and every microbatch's loss of the
  // reference must be in the run's results (a multi-process run gathers them first).
  for (int s = 0; s < model.num_stages(); ++s) {
    if (got.count(s) == 0) {
      c.ok = false;
      c.problem = fmt::format("stage {}: no gradients in the run's results", s);
    }
  }
  for (const auto& [m, l] : ref.losses) {
    auto it = got_losses.find(m);
    if (it == got_losses.end()) {
      c.ok = false;
      c.problem = fmt::format("microbatch {}: no loss in the run's results", m);
      continue;
    }
    double diff = std::fabs(it->second - l);
    if (std::isnan(diff)) diff = std::numeric_limits<double>::infinity();
    c.max_loss_diff = std::max(c.max_loss_diff, diff);
    if (!(diff <= rel_tol * std::max(std::fabs(l), 1.0))) {
      c.ok = false;
      if (c.problem.empty()) c.problem = fmt::format("microbatch {}: loss {} against the reference's {}", m, it->second, l);
    }
  }
  return c;
}

}  // namespace ps::rt
