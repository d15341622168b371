// The framework settings of a planned mesh (synth/mesh_plan.h): Megatron-LM arguments where Megatron
// can run the placement (with the partition as a pipeline layout), the reason where it cannot, and
// torchtitan's parallelism fragment.
#include <doctest/doctest.h>

#include <fstream>

#include "ir/problem.h"
#include "synth/mesh_plan.h"
#include "synth/plan/plan_spec.h"
#include "test_util.h"

using namespace ps;

namespace {

Spec mesh_spec(const std::string& parallel) {
  const std::string path = pstest::temp_path("mesh-plan-model.yaml");
  std::ofstream(path) << "schema: 1\nmodel:\n  architecture: {hidden_size: 1024, ffn_hidden_size: 4096, "
                         "num_attention_heads: 16, vocab_size: 32000, seq_length: 2048}\n"
                         "  hardware: {peak_tflops: 989, achievable_fraction: 0.5, hbm_gb_per_s: 3350}\n"
                         "  layer_types:\n    E: {kind: embedding}\n    T: {kind: dense_block}\n    L: {kind: head}\n"
                         "  layers: ETTTTTTTTL\ncluster: {devices: 2}\npipeline: {microbatches: 8}\n"
                      << parallel;
  Result<Spec> s = load_spec(path);
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  return *s;
}

Problem planned(const Spec& spec, const std::string& placement, int per_device) {
  Result<NamedPlan> plan = resolve_plan(spec, PlanSpec{"even", placement, per_device});
  REQUIRE_MESSAGE(plan.ok(), plan.status().str());
  Result<Problem> p = make_problem(spec, plan->partition, plan->placement);
  REQUIRE(p.ok());
  return *p;
}

MeshPlanRow row_of(const Spec& s) {
  MeshPlanRow r;
  r.pipeline = s.mesh->pipeline, r.tensor = s.mesh->tensor, r.context = s.mesh->context, r.expert = s.mesh->expert;
  r.data = s.mesh->data, r.optimizer = s.mesh->optimizer, r.sequence_parallel = s.mesh->sequence_parallel;
  return r;
}

}  // namespace

TEST_CASE("mesh plan: Megatron arguments of a sequential and an interleaved plan, none for a V or FSDP") {
  const Spec s = mesh_spec("parallel: {tensor: 2, data: 4, sequence_parallel: true, optimizer: distributed, global_batch: 64}\n");
  std::string why;
  CHECK(megatron_arguments(row_of(s), s, planned(s, "sequential", 0), why) ==
        "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --context-parallel-size 1 "
        "--expert-model-parallel-size 1 --expert-tensor-parallel-size 1 --micro-batch-size 1 --global-batch-size 64 "
        "--sequence-parallel --use-distributed-optimizer --pipeline-model-parallel-layout \"Etttt|ttttL\"\n");
  CHECK(pstest::contains(megatron_arguments(row_of(s), s, planned(s, "interleaved", 2), why),
                         "--pipeline-model-parallel-layout \"Ett|tt|tt|ttL\""));
  CHECK(megatron_arguments(row_of(s), s, planned(s, "v", 2), why).empty());
  CHECK(why == "the plan places its 4 stages vshape on 2 devices; Megatron-LM runs a stage per device or looped "
               "virtual stages only");
  const Spec f = mesh_spec("parallel: {data: 4, optimizer: fsdp}\n");
  CHECK(megatron_arguments(row_of(f), f, planned(f, "sequential", 0), why).empty());
  CHECK(pstest::contains(why, "FSDP"));
  // torchtitan: the degrees, FSDP for a sharded optimizer, the batch per data-parallel rank.
  const std::string t = torchtitan_fragment(row_of(s), s);
  CHECK(pstest::contains(t, "[parallelism]\npipeline_parallel_degree = 2\ntensor_parallel_degree = 2\n"));
  CHECK(pstest::contains(t, "data_parallel_shard_degree = 4\ndata_parallel_replicate_degree = 1\n"));
  CHECK(pstest::contains(t, "[training]\nlocal_batch_size = 16\nglobal_batch_size = 64\nseq_len = 2048\n"));
  const Spec r = mesh_spec("parallel: {data: 4}\n");
  CHECK(pstest::contains(torchtitan_fragment(row_of(r), r), "data_parallel_shard_degree = 1\ndata_parallel_replicate_degree = 4\n"));
}
