#include "synth/baselines/baseline_plan.h"

#include "synth/certify.h"
#include "synth/plan/plan_spec.h"

namespace ps {

Result<BaselineRun> run_baseline(const Spec& spec, const BaselineRequest& request) {
  auto plan = baseline_plan(spec, request.kind, request.partition, request.stages_per_device);
  if (!plan.ok()) return plan.status();
  auto problem = make_problem(spec, plan->partition, plan->placement);
  if (!problem.ok()) return problem.status();
  PS_RETURN_IF_ERROR(set_recompute_all(spec, *problem, request.recompute));
  auto generated = make_baseline(*problem, request.kind);
  if (!generated.ok()) return generated.status();
  VerifyOptions vo;
  vo.semantics = Semantics::kRendezvous;
  auto cert = certify_schedule(*generated, vo);
  if (!cert.ok()) return cert.status();
  BaselineRun run;
  run.schedule = std::move(cert->schedule);
  run.report = std::move(cert->report);
  run.partition = std::move(plan->partition);
  run.placement = std::move(plan->placement);
  run.desc = std::move(plan->desc);
  run.notes = std::move(plan->notes);
  auto gb = global_lower_bound(spec, spec.cluster.devices, spec.pipeline.microbatches, spec.cluster.memory_gb);
  if (gb.ok()) run.global = *gb;
  return run;
}

}  // namespace ps
