// The mesh (ir/mesh.h): the `parallel:` section and the overrides read by one reader, every
// inconsistency a located error, the node layout of the groups, and the per-GPU costs and memory.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>

#include "ir/mesh.h"
#include "ir/model.h"
#include "ir/problem.h"
#include "test_util.h"

using namespace ps;

namespace {

// A small dense model with analytic costs: embedding, 4 decoder layers, head.
std::string dense_model(const std::string& arch_extra = "", const std::string& rest = "") {
  return std::string(
             "schema: 1\n"
             "model:\n"
             "  name: dense\n"
             "  architecture:\n"
             "    hidden_size: 1024\n"
             "    ffn_hidden_size: 4096\n"
             "    num_attention_heads: 16\n"
             "    num_kv_heads: 4\n"
             "    vocab_size: 32000\n"
             "    seq_length: 2048\n") +
         arch_extra +
         "  hardware: {peak_tflops: 989, achievable_fraction: 0.5, hbm_gb_per_s: 3350}\n"
         "  layer_types:\n"
         "    E: {name: embedding, kind: embedding}\n"
         "    T: {name: decoder, kind: dense_block}\n"
         "    L: {name: head, kind: head}\n"
         "  layers: ETTTTL\n"
         "cluster:\n"
         "  devices: 2\n"
         "  memory_gb: 80\n"
         "  link: {bandwidth_gb_per_s: 360, latency_us: 10}\n"
         "  inter_node_link: {bandwidth_gb_per_s: 40, latency_us: 20}\n"
         "  gpus_per_node: 8\n"
         "pipeline: {microbatches: 8}\n" +
         rest;
}

std::string moe_model(const std::string& rest) {
  return std::string(
             "schema: 1\n"
             "model:\n"
             "  name: moe\n"
             "  architecture:\n"
             "    hidden_size: 1024\n"
             "    ffn_hidden_size: 4096\n"
             "    num_attention_heads: 16\n"
             "    vocab_size: 32000\n"
             "    seq_length: 2048\n"
             "    moe_num_experts: 16\n"
             "    moe_top_k: 2\n"
             "    moe_ffn_hidden_size: 1024\n"
             "  hardware: {peak_tflops: 989, achievable_fraction: 0.5, hbm_gb_per_s: 3350}\n"
             "  layer_types:\n"
             "    E: {name: embedding, kind: embedding}\n"
             "    X: {name: moe, kind: moe_block}\n"
             "    L: {name: head, kind: head}\n"
             "  layers: EXXXXL\n"
             "cluster:\n"
             "  devices: 2\n"
             "  link: {bandwidth_gb_per_s: 360, latency_us: 10}\n"
             "  inter_node_link: {bandwidth_gb_per_s: 40, latency_us: 20}\n"
             "  gpus_per_node: 8\n"
             "pipeline: {microbatches: 8}\n") +
         rest;
}

// The message of a refused spec (REQUIREs that it is refused).
std::string refusal(const std::string& text, const SpecOverrides& o = {}) {
  const std::string path = pstest::temp_path("mesh-model.yaml");
  std::ofstream(path) << text;
  Result<Spec> s = load_spec(path, "", o);
  REQUIRE_FALSE(s.ok());
  std::string msg = s.status().str();
  const size_t at = msg.find(path);
  if (at != std::string::npos) msg.replace(at, path.size(), "m.yaml");
  return msg;
}

Spec loaded(const std::string& text, const SpecOverrides& o = {}) {
  const std::string path = pstest::temp_path("mesh-model.yaml");
  std::ofstream(path) << text;
  Result<Spec> s = load_spec(path, "", o);
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  return *s;
}

}  // namespace

TEST_CASE("mesh: no parallel section, no gpus, no override: no mesh, the numbers as without one") {
  Spec plain = loaded(dense_model());
  CHECK_FALSE(plain.mesh.has_value());
  CHECK(plain.mesh_types.empty());
  // The same numbers as derive_costs gives for the whole layer.
  Architecture a;
  a.hidden_size = 1024, a.ffn_hidden_size = 4096, a.num_attention_heads = 16, a.num_kv_heads = 4;
  a.vocab_size = 32000, a.seq_length = 2048;
  Hardware hw;
  hw.peak_tflops = 989, hw.achievable_fraction = 0.5, hw.hbm_gb_per_s = 3350;
  Result<DerivedCosts> d = derive_costs({Component::kAttention, Component::kMlp}, a, hw);
  REQUIRE(d.ok());
  CHECK(plain.model.types.at('T').forward_ms == d->forward_ms);
  CHECK(plain.model.types.at('T').params_m == d->params_m);
}

TEST_CASE("mesh: data follows from the GPUs; a global batch sets M") {
  Spec s = loaded(dense_model("", "parallel: {tensor: 2, global_batch: 64}\n"), [] {
    SpecOverrides o;
    o.parallel.gpus = 16;
    return o;
  }());
  REQUIRE(s.mesh.has_value());
  CHECK(s.mesh->pipeline == 2);
  CHECK(s.mesh->tensor == 2);
  CHECK(s.mesh->data == 4);  // 16 / (2 x 2)
  CHECK(s.mesh->gpus == 16);
  CHECK(s.mesh->global_batch == 64);
  CHECK(s.pipeline.microbatches == 16);  // 64 / (1 x 4)
  // Without gpus: data 1 and gpus the product; the global batch follows M.
  Spec t = loaded(dense_model("", "parallel: {tensor: 4}\n"));
  CHECK(t.mesh->data == 1);
  CHECK(t.mesh->gpus == 8);
  CHECK(t.mesh->global_batch == 8);
}

TEST_CASE("mesh: every inconsistency is a located error") {
  // Product of the degrees against the GPUs.
  CHECK(refusal(dense_model("", "parallel:\n  tensor: 2\n  data: 3\n"), [] {
          SpecOverrides o;
          o.parallel.gpus = 16;
          return o;
        }()) == "m.yaml:26:9: pipeline devices (2) x tensor (2) x context (1) = 4 x data (3) = 12 must equal the gpus "
                "override (16)");
  CHECK(pstest::contains(refusal(dense_model("", "parallel: {tensor: 3}\n"), [] {
                           SpecOverrides o;
                           o.parallel.gpus = 16;
                           return o;
                         }()),
                         "the gpus override (16) is not a multiple of pipeline devices (2) x tensor (3)"));
  // Heads and KV heads divisible by tensor.
  CHECK(refusal(dense_model("", "parallel: {tensor: 8}\n")) ==
        "m.yaml:14:30: layer type 'T': architecture.num_kv_heads (4) must be divisible by parallel.tensor (8)");
  CHECK(refusal(dense_model("", "parallel: {tensor: 32}\n")) ==
        "m.yaml:14:30: layer type 'T': architecture.num_attention_heads (16) must be divisible by parallel.tensor (32)");
  // Experts divisible by expert; expert x expert_tensor dividing data x context x tensor.
  CHECK(refusal(moe_model("parallel: {expert: 3, data: 3}\n")) ==
        "m.yaml:16:26: layer type 'X': architecture.moe_num_experts (16) must be divisible by parallel.expert (3)");
  CHECK(refusal(moe_model("parallel: {expert: 4, data: 2}\n")) ==
        "m.yaml:25:20: expert (4) x expert_tensor (1) = 4 must divide data (2) x context (1) x tensor (1) = 2 (the "
        "GPUs of one stage, which the expert layers regroup)");
  // A micro-batch that does not divide the global batch.
  CHECK(refusal(dense_model("", "parallel: {micro_batch: 2, data: 2, global_batch: 10}\n")) ==
        "m.yaml:24:51: parallel.global_batch (10) must be a multiple of micro_batch (2) x data (2) = 4: every "
        "data-parallel rank runs whole microbatches");
  // An override that contradicts the global batch.
  {
    SpecOverrides o;
    o.microbatches = 4;
    CHECK(pstest::contains(refusal(dense_model("", "parallel: {global_batch: 16}\n"), o),
                           "= 16 microbatches, but the microbatches override says 4"));
  }
  // Unknown keys and words, bad values.
  CHECK(pstest::contains(refusal(dense_model("", "parallel: {tensr: 2}\n")), "m.yaml:24:12: parallel: unknown key 'tensr' (did you mean 'tensor'?)"));
  CHECK(refusal(dense_model("", "parallel: {optimizer: zero1}\n")) ==
        "m.yaml:24:23: parallel.optimizer: unknown optimizer 'zero1' (expected replicated, distributed (Megatron's "
        "distributed optimizer, ZeRO-1), fsdp (ZeRO-3))");
  CHECK(pstest::contains(refusal(dense_model("", "parallel: {tensor: 0}\n")),
                         "m.yaml:24:20: parallel.tensor must be an integer in [1, 1048576], got 0"));
  // The context: the sequence must split into 2 x context chunks.
  CHECK(refusal(dense_model("", "parallel: {context: 3}\n")) ==
        "m.yaml:14:30: layer type 'T': architecture.seq_length (2048) must be divisible by 2 x parallel.context (6): "
        "context parallelism gives every GPU two chunks of the sequence to balance causal attention");
  // A mesh over several nodes needs the link between them.
  {
    std::string text = dense_model("", "parallel: {tensor: 8, data: 2}\n");
    text.replace(text.find("  inter_node_link:"), text.find("  gpus_per_node") - text.find("  inter_node_link:"), "");
    CHECK(pstest::contains(refusal(text), "span 4 nodes of 8 GPUs, but the cluster gives no inter_node_link"));
  }
  // A layer type without a kind cannot be spread over tensor parallelism.
  {
    const std::string text =
        "schema: 1\nmodel:\n  layer_types:\n    A: {forward_ms: 1, backward_input_ms: 1, backward_weight_ms: 1, "
        "activation_mb: 1, wgrad_stash_mb: 0, output_mb: 1, params_m: 10}\n  layers: AA\ncluster: {devices: 2}\n"
        "pipeline: {microbatches: 4}\nparallel: {tensor: 2}\n";
    CHECK(pstest::contains(refusal(text), "m.yaml:4:5: layer type 'A' has no kind: the mesh's tensor, context and "
                                          "expert parallelism need the layer's structure"));
  }
}

TEST_CASE("mesh: the groups on the nodes, in Megatron's order (tensor innermost, then context, expert, data)") {
  Mesh m;
  m.pipeline = 16, m.tensor = 1, m.data = 128, m.expert = 64, m.gpus = 2048, m.gpus_per_node = 8;
  GroupPlacement ep = group_placement(m, MeshGroup::kExpert);
  CHECK(ep.size == 64);
  CHECK(ep.nodes == 8);
  CHECK(ep.members_in_first_node == 8);
  CHECK(group_placement(m, MeshGroup::kExpertData).size == 2);
  CHECK(group_placement(m, MeshGroup::kExpertData).stride == 64);
  Mesh t;
  t.pipeline = 16, t.tensor = 8, t.context = 2, t.data = 4, t.gpus = 1024, t.gpus_per_node = 8;
  CHECK(group_placement(t, MeshGroup::kTensor).nodes == 1);   // ranks 0-7: one node
  CHECK(group_placement(t, MeshGroup::kContext).nodes == 2);  // ranks 0 and 8
  CHECK(group_placement(t, MeshGroup::kData).stride == 16);
  CHECK(group_placement(t, MeshGroup::kData).nodes == 4);
  // All GPUs in one node (gpus_per_node 0).
  t.gpus_per_node = 0;
  CHECK(group_placement(t, MeshGroup::kData).nodes == 1);
}

TEST_CASE("mesh: per-GPU costs — compute over tensor x context, collectives on their link, activations") {
  Spec one = loaded(dense_model("", "parallel: {tensor: 1}\n"));
  Spec tp = loaded(dense_model("", "parallel: {tensor: 4}\n"));
  Spec sp = loaded(dense_model("", "parallel: {tensor: 4, sequence_parallel: true}\n"));
  const MeshLayerCosts& c1 = one.mesh_types.at('T');
  const MeshLayerCosts& c4 = tp.mesh_types.at('T');
  const MeshLayerCosts& s4 = sp.mesh_types.at('T');
  CHECK(c1.tp_ms == 0);
  CHECK(c4.compute_ms == doctest::Approx(c1.compute_ms / 4));
  // Two sublayers, each an all-reduce of the 2048 x 1024 bf16 hidden tensor in F and in I, over NVLink:
  // 2 (n-1)/n S / bw + 2 (n-1) latency per all-reduce.
  const double S = 2.0 * 2048 * 1024;
  const double ar_ms = 2 * (3 * 0.010 + 0.75 * S / 360e6);
  CHECK(c4.tp_ms == doctest::Approx(2 * 2 * ar_ms));
  CHECK(s4.tp_ms == doctest::Approx(c4.tp_ms));  // all-gather + reduce-scatter = all-reduce in bytes
  CHECK(tp.model.types.at('T').forward_ms + tp.model.types.at('T').backward_input_ms +
            tp.model.types.at('T').backward_weight_ms ==
        doctest::Approx(c4.compute_ms + c4.tp_ms));
  // Activations: without sequence parallelism the hidden-sized tensors stay whole on every rank.
  const double a1 = one.model.types.at('T').activation_mb, a4 = tp.model.types.at('T').activation_mb,
               s4a = sp.model.types.at('T').activation_mb;
  CHECK(a4 > a1 / 4);
  CHECK(s4a == doctest::Approx(a1 / 4));
  CHECK(sp.model.types.at('T').output_mb == doctest::Approx(one.model.types.at('T').output_mb / 4));
  CHECK(tp.model.types.at('T').output_mb == doctest::Approx(one.model.types.at('T').output_mb));
  // A tensor group over two nodes (2 GPUs per node) is priced on the inter-node link.
  std::string two_per_node = dense_model("", "parallel: {tensor: 4}\n");
  two_per_node.replace(two_per_node.find("gpus_per_node: 8"), 16, "gpus_per_node: 2");
  const Spec wide_spec = loaded(two_per_node);
  const MeshLayerCosts& wide = wide_spec.mesh_types.at('T');
  const double ar_inter_ms = 2 * (3 * 0.020 + 0.75 * S / 40e6);
  CHECK(wide.tp_ms == doctest::Approx(2 * 2 * ar_inter_ms));
}

TEST_CASE("mesh: memory per GPU — weights and gradients over tensor, experts over expert, optimizer by sharding") {
  Spec rep = loaded(dense_model("", "parallel: {tensor: 2, data: 4, optimizer: replicated}\n"));
  Spec dist = loaded(dense_model("", "parallel: {tensor: 2, data: 4, optimizer: distributed}\n"));
  Spec fsdp = loaded(dense_model("", "parallel: {tensor: 2, data: 4, optimizer: fsdp}\n"));
  Spec plain = loaded(dense_model());
  const double P = plain.model.types.at('T').params_m;  // the whole layer's parameters
  const MeshLayerCosts& r = rep.mesh_types.at('T');
  const MeshLayerCosts& d = dist.mesh_types.at('T');
  const MeshLayerCosts& f = fsdp.mesh_types.at('T');
  CHECK(r.params_per_gpu_m == doctest::Approx(P / 2));
  CHECK(r.weights_mb == doctest::Approx(2 * P / 2));
  CHECK(r.grads_mb == doctest::Approx(4 * P / 2));
  CHECK(r.optimizer_mb == doctest::Approx(12 * P / 2));
  CHECK(d.optimizer_mb == doctest::Approx(12 * P / 2 / 4));
  CHECK(d.weights_mb == r.weights_mb);
  CHECK(f.optimizer_mb == doctest::Approx(d.optimizer_mb));
  CHECK(f.weights_mb == doctest::Approx(2 * P / 2 / 4 + 2 * P / 2));  // the shard and the gathered stage
  // The lowered params_m is the model state over bytes/param, which the problem multiplies back.
  CHECK(dist.model.types.at('T').params_m * 18 == doctest::Approx(d.weights_mb + d.grads_mb + d.optimizer_mb));
  // Experts: the routed experts over expert, the rest over tensor.
  Spec moe1 = loaded(moe_model("parallel: {data: 4}\n"));
  Spec moe4 = loaded(moe_model("parallel: {data: 4, expert: 4}\n"));
  const double expert_m = 16 * 3.0 * 1024 * 1024 / 1e6;  // 16 experts of 3 h f
  CHECK(moe1.mesh_types.at('X').params_per_gpu_m - moe4.mesh_types.at('X').params_per_gpu_m ==
        doctest::Approx(expert_m * 3 / 4));
  // Expert parallelism prices the dispatch and combine all-to-alls; without it there are none.
  CHECK(moe1.mesh_types.at('X').ep_ms == 0);
  CHECK(moe4.mesh_types.at('X').ep_ms > 0);
}

TEST_CASE("mesh: activation memory of a transformer layer equals Korthikanti et al. 2022, Table 2") {
  // GPT-3 175B's layer as the paper models it: GeLU MLP of 4h, dropout, attention scores stored.
  const std::string text =
      "schema: 1\nmodel:\n  architecture: {hidden_size: 12288, ffn_hidden_size: 49152, num_attention_heads: 96, "
      "vocab_size: 51200, seq_length: 2048, gated_mlp: false, dropout: true, flash_attention: false}\n"
      "  hardware: {peak_tflops: 312, achievable_fraction: 0.5, hbm_gb_per_s: 2039}\n"
      "  layer_types:\n    A: {kind: attention, joins_next: true}\n    M: {kind: mlp}\n  layers: AM\n"
      "cluster: {devices: 1}\npipeline: {microbatches: 1}\n";
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  auto layer_mb = [](const Spec& sp) {
    return sp.model.types.at('A').activation_mb + sp.model.types.at('M').activation_mb;
  };
  CHECK(layer_mb(loaded(text)) == doctest::Approx(s * b * h * (34 + 5 * a * s / h) / 1e6));
  CHECK(layer_mb(loaded(text + "parallel: {tensor: 8}\n")) ==
        doctest::Approx(s * b * h * (10 + 24 / t + 5 * a * s / (h * t)) / 1e6));
  const Spec sp = loaded(text + "parallel: {tensor: 8, sequence_parallel: true}\n");
  CHECK(layer_mb(sp) == doctest::Approx(s * b * h * (34 / t + 5 * a * s / (h * t)) / 1e6));
  // Selective recomputation keeps everything but the attention core's s^2 tensors: 34 sbh / t.
  CHECK(sp.model.types.at('A').recompute_selective.kept_mb + sp.model.types.at('M').recompute_selective.kept_mb ==
        doctest::Approx(s * b * h * 34 / t / 1e6));
}

TEST_CASE("mesh: layer types given by their numbers under data parallelism alone: times as given, states sharded") {
  const std::string text =
      "schema: 1\nmodel:\n  layer_types:\n    A: {forward_ms: 1, backward_input_ms: 2, backward_weight_ms: 1, "
      "activation_mb: 100, wgrad_stash_mb: 10, output_mb: 8, params_m: 1000}\n  layers: AAAA\n"
      "cluster: {devices: 2}\npipeline: {microbatches: 4}\n";
  const Spec rep = loaded(text + "parallel: {data: 4}\n");
  const Spec dist = loaded(text + "parallel: {data: 4, optimizer: distributed}\n");
  CHECK(dist.model.types.at('A').forward_ms == 1);  // a given number is one GPU's
  CHECK(dist.model.types.at('A').activation_mb == 100);
  CHECK(rep.model.types.at('A').params_m == doctest::Approx(1000));  // replicated: 18 bytes a parameter
  CHECK(dist.model.types.at('A').params_m * 18 == doctest::Approx(1000 * (6 + 12.0 / 4)));
  CHECK_FALSE(dist.mesh_types.at('A').derived);
  CHECK(dist.mesh->model_flops_per_token == 0);  // no kind: no FLOPs, no MFU
}

TEST_CASE("mesh: the K/V ring's exposed time and the MoE all-to-alls, priced on their links") {
  // Context 2 on one node: each of the 1 ring steps sends the GPU's K and V chunk (2 x 4 KV heads x 64 x
  // 2048/2 tokens x 2 bytes) while computing one step of the attention core; what the transfer takes
  // beyond that step is exposed, in F, and twice (K, V and their gradients against twice the compute) in I.
  const Spec cp = loaded(dense_model("", "parallel: {context: 2}\n"));
  const double step_ms = 0.010 + (2.0 * 2 * 4 * 64 * 2048 / 2) / 360e6;
  const double core_flops = 4.0 * 16 * 64 * (2048.0 * 2048 / 2);
  const double core_step_ms = core_flops / (989e12 * 0.5 / 1e3) / 2 / 2;
  CHECK(cp.mesh_types.at('T').cp_ms == doctest::Approx(3 * std::max(0.0, step_ms - core_step_ms)));
  // Expert 4 within a node: dispatch and combine of the 2 routed copies of 2048 tokens x 1024 x 2 bytes,
  // 3/4 of them to the other members, in F and in I.
  const double routed = 2.0 * 2 * 2048 * 1024;
  const Spec ep = loaded(moe_model("parallel: {data: 4, expert: 4}\n"));
  CHECK(ep.mesh_types.at('X').ep_ms == doctest::Approx(4 * (0.010 + routed * 3 / 4 / 360e6)));
  // Over two nodes of 2 GPUs: one member shares the node, two are across; the slower part bounds it.
  std::string two = moe_model("parallel: {data: 4, expert: 4}\n");
  two.replace(two.find("gpus_per_node: 8"), 16, "gpus_per_node: 2");
  const Spec ep2 = loaded(two);
  CHECK(ep2.mesh_types.at('X').ep_ms == doctest::Approx(4 * (0.020 + std::max(routed / 4 / 360e6, routed * 2 / 4 / 40e6))));
}

TEST_CASE("mesh: cp_comm_type all_gather exposes one all-gather of K and V in F and two in I; a2a refused") {
  // Context 2 on one node, all_gather: the whole sequence's K and V (2 x 4 KV heads x 64 x 2048 tokens x
  // 2 bytes) gathered by a ring of 2: one latency and half the bytes over NVLink, none of it overlapped.
  const Spec ag = loaded(dense_model("", "parallel: {context: 2, cp_comm_type: all_gather}\n"));
  const double gather_ms = 0.010 + 0.5 * (2.0 * 2 * 4 * 64 * 2048) / 360e6;
  CHECK(ag.mesh->cp_comm == CpComm::kAllGather);
  CHECK(ag.mesh_types.at('T').cp_ms == doctest::Approx(3 * gather_ms));
  const Spec p2p = loaded(dense_model("", "parallel: {context: 2}\n"));
  CHECK(p2p.mesh->cp_comm == CpComm::kP2p);
  CHECK(ag.model.types.at('T').forward_ms - p2p.model.types.at('T').forward_ms ==
        doctest::Approx(gather_ms - p2p.mesh_types.at('T').cp_ms / 3));
  // The override replaces the file's word; Megatron's all-to-all kinds are refused by name, located.
  SpecOverrides o;
  o.parallel.cp_comm = "p2p";
  const std::string path = pstest::temp_path("mesh-cp-comm.yaml");
  std::ofstream(path) << dense_model("", "parallel: {context: 2, cp_comm_type: all_gather}\n");
  Result<Spec> over = load_spec(path, "", o);
  REQUIRE(over.ok());
  CHECK(over->mesh->cp_comm == CpComm::kP2p);
  CHECK(refusal(dense_model("", "parallel: {context: 2, cp_comm_type: a2a}\n")).find(
            "parallel.cp_comm_type: 'a2a' (the all-to-all context parallelism) is not modelled (expected p2p, the "
            "K/V ring, or all_gather)") != std::string::npos);
  CHECK(refusal(dense_model("", "parallel: {context: 2, cp_comm_type: ring}\n")).find(
            "unknown cp_comm_type 'ring'") != std::string::npos);
}

TEST_CASE("mesh: a stage's data-parallel step is its reduction, the optimizer's update and the distributed gather") {
  // Data 4 on one node, one stage per device: the decoder layers' gradients (4 bytes a parameter)
  // reduce-scattered by a ring of 4, the update of a quarter of them (30 bytes a parameter at 3350 GB/s)
  // and the updated weights (2 bytes a parameter) all-gathered by the same ring; replicated, an
  // all-reduce and the update of all of them, no gather.
  auto step = [](const std::string& optimizer) {
    const Spec s = loaded(dense_model("", "parallel: {data: 4, optimizer: " + optimizer + "}\n"));
    Result<Problem> p = make_problem(s, {{0, 2}, {3, 5}}, {0, 1});
    REQUIRE(p.ok());
    REQUIRE(p->stages[0].reduces_grad);
    return std::pair{p->stages[0].reduce_grad_ms, s.mesh_types.at('T').params_per_gpu_m * 1e6};
  };
  auto ring = [](double bytes) { return 3 * 0.010 + 0.75 * bytes / 360e6; };
  const auto [dist_ms, n] = step("distributed");
  const auto [rep_ms, n_rep] = step("replicated");
  const auto [fsdp_ms, n_fsdp] = step("fsdp");
  CHECK(n == doctest::Approx(n_rep));
  const Spec e = loaded(dense_model());  // the embedding's parameters, stage 0's other layer
  const double emb = e.model.types.at('E').params_m * 1e6;
  const double params = emb + 2 * n;  // stage 0: E, T, T
  CHECK(dist_ms == doctest::Approx(ring(4 * params) + params / 4 * 30 / 3350e6 + ring(2 * params)));
  CHECK(rep_ms == doctest::Approx(2 * ring(4 * params) + params * 30 / 3350e6));
  CHECK(fsdp_ms == doctest::Approx(ring(4 * params) + params / 4 * 30 / 3350e6));
}

TEST_CASE("mesh: a dense model under tensor parallelism alone has no data-parallel step") {
  // Tensor 2, data 1: the expert grid (expert-data 2) holds no expert of a dense model.
  const Spec s = loaded(dense_model("", "parallel: {tensor: 2}\n"));
  REQUIRE(s.mesh->data == 1);
  CHECK(s.mesh->expert_data() == 2);
  Result<Problem> p = make_problem(s, {{0, 2}, {3, 5}}, {0, 1});
  REQUIRE(p.ok());
  for (const StageSpec& st : p->stages) CHECK_FALSE(st.reduces_grad);
  // Data 2: every stage reduces.
  Result<Problem> d = make_problem(loaded(dense_model("", "parallel: {tensor: 2, data: 2}\n")), {{0, 2}, {3, 5}}, {0, 1});
  REQUIRE(d.ok());
  for (const StageSpec& st : d->stages) CHECK(st.reduces_grad);
}
