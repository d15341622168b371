// Analytic cost model: derived numbers against hand calculations (docs/inputs.md has the formulas).
#include <doctest/doctest.h>

#include "ir/cost_model.h"

using namespace ps;

namespace {

Architecture llama2_7b() {
  Architecture a;
  a.hidden_size = 4096;
  a.ffn_hidden_size = 11008;
  a.num_attention_heads = 32;
  a.vocab_size = 32000;
  a.seq_length = 4096;
  a.micro_batch_size = 1;
  return a;
}

Hardware h100() {
  Hardware h;
  h.peak_tflops = 989;
  h.achievable_fraction = 0.5;
  h.hbm_gb_per_s = 3350;
  return h;
}

std::vector<Component> kind(const char* k) {
  Result<std::vector<Component>> r = parse_kind(k);
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("cost model: Korthikanti et al. 2022 activation memory, 34sbh + 5as^2b bytes per layer") {
  // Their setting: GPT-style layer, MHA, GeLU MLP of 4h, dropout, no flash attention, 16-bit.
  Architecture a;
  a.hidden_size = 1024;
  a.ffn_hidden_size = 4096;
  a.num_attention_heads = 16;
  a.seq_length = 2048;
  a.micro_batch_size = 2;
  a.gated_mlp = false;
  a.dropout = true;
  a.flash_attention = false;
  Result<DerivedCosts> d = derive_costs(kind("dense_block"), a, h100());
  REQUIRE(d.ok());
  const double s = 2048, b = 2, h = 1024, heads = 16;
  const double expected_bytes = s * b * h * (34 + 5 * heads * s / h);  // 813,694,976
  CHECK(expected_bytes == 813694976.0);
  CHECK(d->activation_mb == doctest::Approx(expected_bytes / 1e6).epsilon(1e-12));
}

TEST_CASE("cost model: Llama 2 7B parameter count is the published 6,738,415,616") {
  Architecture a = llama2_7b();
  double params = 0;
  for (const char* k : {"embedding", "head"}) {
    Result<DerivedCosts> d = derive_costs(kind(k), a, h100());
    REQUIRE(d.ok());
    params += d->params_m * 1e6;
  }
  Result<DerivedCosts> block = derive_costs(kind("dense_block"), a, h100());
  REQUIRE(block.ok());
  params += 32 * block->params_m * 1e6;
  CHECK(params == doctest::Approx(6738415616.0).epsilon(1e-12));
}

TEST_CASE("cost model: Llama 2 7B decoder layer FLOPs and times") {
  Architecture a = llama2_7b();
  Result<ComponentWork> att = component_work(Component::kAttention, a);
  Result<ComponentWork> mlp = component_work(Component::kMlp, a);
  REQUIRE(att.ok());
  REQUIRE(mlp.ok());
  // Projections: 2 * T * (h*3h + h*h) = 2 * 4096 * 67,108,864; causal scores 4 * a*d * s^2/2.
  const double proj = 2.0 * 4096 * 67108864;             // 549,755,813,888
  const double core = 4.0 * 4096 * (4096.0 * 4096 / 2);  // 137,438,953,472
  CHECK(att->fwd_flops == proj + core);
  CHECK(att->bwd_input_flops == proj + 2 * core);  // the score backward is 2x forward, all in I
  CHECK(att->bwd_weight_flops == proj);
  const double mlp_flops = 2.0 * 4096 * 3 * 4096 * 11008;  // SwiGLU: 3 matrices
  CHECK(mlp->fwd_flops == mlp_flops);
  CHECK(mlp->bwd_input_flops == mlp_flops);
  CHECK(mlp->bwd_weight_flops == mlp_flops);

  Result<DerivedCosts> d = derive_costs(kind("attention+mlp"), a, h100());
  REQUIRE(d.ok());
  const double flops_per_ms = 989e12 * 0.5 / 1e3;
  CHECK(d->forward_ms == doctest::Approx((proj + core + mlp_flops) / flops_per_ms));
  CHECK(d->forward_ms == doctest::Approx(3.6305).epsilon(1e-4));
  CHECK(d->backward_input_ms == doctest::Approx((proj + 2 * core + mlp_flops) / flops_per_ms));
  CHECK(d->backward_weight_ms == doctest::Approx((proj + mlp_flops) / flops_per_ms));
  // Activations (flash attention, no dropout, bf16): attention 2Th + T*3h + T*h words + fp32 LSE,
  // MLP 2Th + 3Tf words.
  const double T = 4096, h = 4096, f = 11008;
  const double act = 2 * (2 * T * h + T * 3 * h + T * h) + 4 * T * 32 + 2 * (2 * T * h + 3 * T * f);
  CHECK(d->activation_mb == doctest::Approx(act / 1e6));
  CHECK(d->wgrad_stash_mb == doctest::Approx(2 * (T * h + T * h + T * h + T * f) / 1e6));
  CHECK(d->output_mb == doctest::Approx(2 * T * h / 1e6));
}

TEST_CASE("cost model: sliding-window attention counts w*s - w^2/2 query-key pairs") {
  Architecture a;
  a.hidden_size = 64;
  a.num_attention_heads = 1;
  a.head_dim = 1;
  a.seq_length = 1000;
  a.attention_window = 100;
  Result<ComponentWork> w = component_work(Component::kAttention, a);
  REQUIRE(w.ok());
  const double proj = 2.0 * 1000 * (64 * 3 + 1 * 64);
  CHECK(w->fwd_flops == proj + 4.0 * (100 * 1000 - 100 * 100 / 2));
  a.attention_window = 5000;  // a window longer than the sequence is full causal attention
  Result<ComponentWork> full = component_work(Component::kAttention, a);
  REQUIRE(full.ok());
  CHECK(full->fwd_flops == proj + 4.0 * 1000 * 1000 / 2);
  a.attention_window.reset();
  a.causal = false;
  Result<ComponentWork> bidir = component_work(Component::kAttention, a);
  REQUIRE(bidir.ok());
  CHECK(bidir->fwd_flops == proj + 4.0 * 1000 * 1000);
}

TEST_CASE(
    "cost model: embedding is memory-bound; head is 2hV FLOPs per token plus the loss traffic") {
  Architecture a = llama2_7b();
  Hardware hw = h100();
  Result<DerivedCosts> e = derive_costs(kind("embedding"), a, hw);
  REQUIRE(e.ok());
  const double T = 4096, h = 4096, V = 32000;
  CHECK(e->forward_ms == doctest::Approx(2 * T * h * 2 / 3350e9 * 1e3));  // read + write T rows
  CHECK(e->backward_input_ms == 0);  // token ids have no gradient
  CHECK(e->backward_weight_ms == doctest::Approx(T * h * (2 + 8) / 3350e9 * 1e3));
  CHECK(e->params_m == doctest::Approx(V * h / 1e6));

  Result<ComponentWork> head = component_work(Component::kHead, a);
  REQUIRE(head.ok());
  CHECK(head->fwd_flops == 2 * T * h * V);
  CHECK(head->fwd_hbm_bytes == T * V * (2 + 4));
  CHECK(head->activation_bytes == 4 * T * h + 4 * T * V);  // Korthikanti: 4sbh + 4sbv
  CHECK(head->output_bytes == 0);
  Result<DerivedCosts> d = derive_costs(kind("head"), a, hw);
  REQUIRE(d.ok());
  CHECK(d->forward_ms ==
        doctest::Approx(2 * T * h * V / (989e12 * 0.5) * 1e3 + T * V * 6 / 3350e9 * 1e3));
  // Faster HBM makes the memory-bound parts faster and nothing else.
  hw.hbm_gb_per_s = 4800;
  Result<DerivedCosts> e2 = derive_costs(kind("embedding"), a, hw);
  REQUIRE(e2.ok());
  CHECK(e2->forward_ms == doctest::Approx(e->forward_ms * 3350 / 4800));
}

TEST_CASE("cost model: MoE counts router + top-k routed + shared experts, at the MoE efficiency") {
  Architecture a;
  a.hidden_size = 8;
  a.moe_num_experts = 4;
  a.moe_top_k = 2;
  a.moe_ffn_hidden_size = 16;
  a.moe_shared_experts = 1;
  a.seq_length = 10;
  Result<ComponentWork> w = component_work(Component::kMoe, a);
  REQUIRE(w.ok());
  // params: norm 8 + router 8*4 + (4 routed + 1 shared) * 3*8*16
  CHECK(w->params == 8 + 32 + 5 * 384);
  // FLOPs: router 2*T*h*E + experts 2*T*(k+S)*3*h*f
  CHECK(w->fwd_flops == 2 * 10 * 8 * 4 + 2 * 10 * 3 * 384);
  CHECK(w->fwd_hbm_bytes == 2 * 2 * 10 * 8 * (1 + 2));
  CHECK(w->moe_efficiency);

  Hardware hw;
  hw.peak_tflops = 1;
  hw.achievable_fraction = 0.5;
  hw.hbm_gb_per_s = 1e9;  // make the permutation traffic negligible
  Result<DerivedCosts> dense_rate = derive_costs({Component::kMoe}, a, hw);
  hw.moe_achievable_fraction = 0.25;
  Result<DerivedCosts> moe_rate = derive_costs({Component::kMoe}, a, hw);
  REQUIRE(dense_rate.ok());
  REQUIRE(moe_rate.ok());
  CHECK(moe_rate->forward_ms == doctest::Approx(2 * dense_rate->forward_ms).epsilon(1e-6));

  a.moe_top_k = 5;
  Result<ComponentWork> bad = component_work(Component::kMoe, a);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("moe_top_k (5) must be <= moe_num_experts (4)") !=
        std::string::npos);
}

TEST_CASE("cost model: Mamba-2 layer of Nemotron-H-8B has 109,640,064 parameters") {
  Architecture a;
  a.hidden_size = 4096;
  a.mamba_state_size = 128;
  a.mamba_expand = 2;
  a.mamba_head_dim = 64;
  a.mamba_groups = 8;
  a.mamba_conv_kernel = 4;
  a.mamba_chunk_size = 128;
  a.seq_length = 8192;
  Result<ComponentWork> w = component_work(Component::kMamba, a);
  REQUIRE(w.ok());
  // in_proj 4096*(2*8192 + 2*8*128 + 128), out_proj 8192*4096, conv (8192+2048)*(4+1),
  // A/D/dt_bias 3*128, gated norm 8192, pre-norm 4096.
  CHECK(w->params == 4096.0 * 18560 + 8192.0 * 4096 + 10240.0 * 5 + 384 + 8192 + 4096);
  CHECK(w->params == 109640064.0);
  const double T = 8192;
  const double gemm = 2 * T * (4096.0 * 18560 + 8192.0 * 4096);
  const double conv = 2 * T * 10240 * 4;
  const double ssd = T * (2.0 * 128 * 8 * 128 + 2.0 * 128 * 8192 + 4.0 * 128 * 8192);
  CHECK(w->fwd_flops == gemm + conv + ssd);
  CHECK(w->bwd_input_flops == gemm + conv + 2 * ssd);
  CHECK(w->bwd_weight_flops == gemm + conv);
  // Kept for the backward (bf16): pre-norm and in_proj inputs 2h, in_proj output 18560, conv output
  // 10240, SSD output and out_proj input 2 * 8192 per token; chunk states are recomputed.
  CHECK(w->activation_bytes == 2 * T * (2 * 4096 + 18560 + 10240 + 2 * 8192));
  CHECK(w->wgrad_stash_bytes == 2 * T * (4096 + 10240 + 8192));
}

TEST_CASE("cost model: lightning attention is linear in the sequence length") {
  Architecture a;
  a.hidden_size = 2048;
  a.num_attention_heads = 16;
  a.head_dim = 128;
  a.linear_attention_block = 256;
  a.seq_length = 8192;
  Result<ComponentWork> w1 = component_work(Component::kLinearAttention, a);
  a.seq_length = 16384;
  Result<ComponentWork> w2 = component_work(Component::kLinearAttention, a);
  REQUIRE(w1.ok());
  REQUIRE(w2.ok());
  CHECK(w2->fwd_flops == doctest::Approx(2 * w1->fwd_flops));
  const double core = 16.0 * 8192 * (4 * 256 * 128 + 4 * 128 * 128);
  CHECK(w1->fwd_flops == 2.0 * 8192 * (2048.0 * 2048 * 3 + 2048.0 * 2048) + core);
}

TEST_CASE("cost model: kinds, aliases and errors") {
  Result<std::vector<Component>> k = parse_kind("mtp");
  REQUIRE(k.ok());
  CHECK(k->size() == 4);
  CHECK(k->front() == Component::kMtpProjection);
  CHECK(k->back() == Component::kHead);
  Result<std::vector<Component>> combo = parse_kind("linear_attention+moe");
  REQUIRE(combo.ok());
  CHECK(*combo == std::vector<Component>{Component::kLinearAttention, Component::kMoe});
  Result<std::vector<Component>> bad = parse_kind("attention+mpl");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("unknown kind 'mpl'") != std::string::npos);
  CHECK_FALSE(parse_kind("").ok());
  CHECK_FALSE(parse_kind("mlp+").ok());

  Architecture a = llama2_7b();
  a.vocab_size.reset();
  Result<DerivedCosts> d = derive_costs(kind("head"), a, h100());
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().message() == "architecture.vocab_size is needed by the head component");

  Hardware hw = h100();
  hw.hbm_gb_per_s.reset();
  Result<DerivedCosts> nohw = derive_costs(kind("mlp"), llama2_7b(), hw);
  REQUIRE_FALSE(nohw.ok());
  CHECK(nohw.status().message() == "hardware.hbm_gb_per_s is needed to derive costs");

  Architecture over;
  over.attention_window = 128;
  over.hidden_size = 1024;
  Architecture m = llama2_7b().merged_with(over);
  CHECK(*m.hidden_size == 1024);
  CHECK(*m.attention_window == 128);
  CHECK(*m.vocab_size == 32000);
}

TEST_CASE("cost model: every component keeps stash <= activation and non-negative numbers") {
  Architecture a = llama2_7b();
  a.moe_num_experts = 8;
  a.moe_top_k = 2;
  a.mamba_state_size = 64;
  for (const char* k : {"embedding", "attention", "linear_attention", "mlp", "moe", "mamba", "head",
                        "mtp_projection"}) {
    CAPTURE(k);
    Result<DerivedCosts> d = derive_costs(kind(k), a, h100());
    REQUIRE(d.ok());
    CHECK(d->wgrad_stash_mb <= d->activation_mb);
    CHECK(d->forward_ms >= 0);
    CHECK(d->backward_input_ms >= 0);
    CHECK(d->backward_weight_ms > 0);
    CHECK(d->params_m > 0);
  }
}

TEST_CASE("cost model: a vocabulary-sharded head splits the LM head's work K ways and passes the activation on") {
  Architecture a = llama2_7b();
  a.vocab_size = 256000;
  Result<DerivedCosts> whole = derive_costs(kind("head"), a, h100());
  REQUIRE(whole.ok());
  CHECK(whole->output_mb == 0);  // the loss
  const double h = 4096, T = 4096, V = 256000, p = 2;
  for (long long K : {2LL, 4LL, 8LL}) {
    CAPTURE(K);
    Architecture s = a;
    s.vocab_shards = K;
    Result<DerivedCosts> shard = derive_costs(kind("head"), s, h100());
    REQUIRE(shard.ok());
    // The projection's parameters and FLOPs split K ways; each shard repeats the final norm.
    CHECK(shard->params_m * 1e6 == doctest::Approx(h + V / K * h).epsilon(1e-12));
    CHECK(K * shard->params_m == doctest::Approx(whole->params_m + (K - 1) * h / 1e6).epsilon(1e-12));
    // The norm is memory-bound and tiny, so the times split K ways up to it.
    CHECK(K * shard->forward_ms == doctest::Approx(whole->forward_ms).epsilon(1e-3));
    CHECK(K * shard->backward_input_ms == doctest::Approx(whole->backward_input_ms).epsilon(1e-3));
    CHECK(K * shard->backward_weight_ms == doctest::Approx(whole->backward_weight_ms).epsilon(1e-3));
    // Logits (fp32) split K ways; the two activation inputs are kept by every shard.
    CHECK(shard->activation_mb * 1e6 == doctest::Approx(2 * p * T * h + 4 * T * V / K).epsilon(1e-12));
    // Hands on the activation plus a running log-sum-exp and target logit per token (fp32 each).
    CHECK(shard->output_mb * 1e6 == doctest::Approx(p * T * h + 8 * T).epsilon(1e-12));
  }
  Architecture bad = a;
  bad.vocab_shards = 0;
  Result<DerivedCosts> zero = derive_costs(kind("head"), bad, h100());
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.status().message().find("vocab_shards must be >= 1") != std::string::npos);
  bad.vocab_size = 4;
  bad.vocab_shards = 8;
  Result<DerivedCosts> many = derive_costs(kind("head"), bad, h100());
  REQUIRE_FALSE(many.ok());
  CHECK(many.status().message().find("vocab_shards (8) must be <= vocab_size (4)") != std::string::npos);
}

TEST_CASE("cost model: multi-head latent attention of DeepSeek-V3 has 187,114,496 parameters") {
  Architecture a;
  a.hidden_size = 7168;
  a.num_attention_heads = 128;
  a.q_lora_rank = 1536;
  a.kv_lora_rank = 512;
  a.qk_nope_head_dim = 128;
  a.qk_rope_head_dim = 64;
  a.v_head_dim = 128;
  a.seq_length = 4096;
  Result<ComponentWork> w = component_work(Component::kMla, a);
  REQUIRE(w.ok());
  // q_a 7168*1536, q_b 1536*128*(128+64), kv_a 7168*(512+64), kv_b 512*128*(128+128),
  // o 128*128*7168; norms: pre-norm 7168, q_a norm 1536, kv_a norm 512.
  const double gemm = 7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 +
                      128.0 * 128 * 7168;
  CHECK(gemm == 187105280.0);
  CHECK(w->params == gemm + 7168 + 1536 + 512);
  CHECK(w->params == 187114496.0);
  const double T = 4096, pairs = 4096.0 * 4096 / 2;  // causal
  const double core = 2 * 128 * pairs * 192 + 2 * 128 * pairs * 128;  // Q K^T (192), P V (128)
  CHECK(core == 687194767360.0);
  CHECK(w->fwd_flops == 2 * T * gemm + core);
  CHECK(w->bwd_input_flops == 2 * T * gemm + 2 * core);
  CHECK(w->bwd_weight_flops == 2 * T * gemm);
  // bf16 per token: pre-norm and q_a/kv_a input 2h, q norm + q_b inputs 2*1536, kv norm + kv_b inputs
  // 2*512, the RoPE key 64, Q and K 2*128*192, V 128*128, o input 128*128; fp32 LSE 4 bytes a head.
  const double per_token = 2.0 * (2 * 7168 + 2 * 1536 + 2 * 512 + 64 + 2 * 128 * 192 + 2 * 128 * 128) + 4 * 128;
  CHECK(w->activation_bytes == T * per_token);
  CHECK(w->wgrad_stash_bytes == 2 * T * (7168 + 1536 + 512 + 128 * 128));
  CHECK(w->output_bytes == 2 * T * 7168);
  // Without the Q bottleneck (V2-Lite: q_lora_rank 0) Q is one h -> a*(dn+dr) matrix.
  a.q_lora_rank = 0;
  Result<ComponentWork> noq = component_work(Component::kMla, a);
  REQUIRE(noq.ok());
  CHECK(noq->params == 7168.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 + 128.0 * 128 * 7168 + 7168 + 512);
  a.kv_lora_rank.reset();
  Result<ComponentWork> bad = component_work(Component::kMla, a);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "architecture.kv_lora_rank is needed by the mla component");
}

TEST_CASE("cost model: MLA with a sliding window counts the windowed pairs") {
  Architecture a;
  a.hidden_size = 64;
  a.num_attention_heads = 2;
  a.kv_lora_rank = 8;
  a.qk_nope_head_dim = 4;
  a.qk_rope_head_dim = 2;
  a.v_head_dim = 4;
  a.seq_length = 1000;
  a.attention_window = 100;
  Result<ComponentWork> w = component_work(Component::kMla, a);
  REQUIRE(w.ok());
  const double gemm = 64.0 * 2 * 6 + 64.0 * 10 + 8.0 * 2 * 8 + 2.0 * 4 * 64;
  const double pairs = 100.0 * 1000 - 100.0 * 100 / 2;
  CHECK(w->fwd_flops == 2 * 1000 * gemm + 2 * 2 * pairs * 6 + 2 * 2 * pairs * 4);
}

TEST_CASE("cost model: an attention output gate adds an h x a*d projection") {
  Architecture a;
  a.hidden_size = 16;
  a.num_attention_heads = 2;
  a.num_kv_heads = 1;
  a.head_dim = 4;
  a.seq_length = 10;
  Result<ComponentWork> plain = component_work(Component::kAttention, a);
  a.attention_output_gate = true;
  Result<ComponentWork> gated = component_work(Component::kAttention, a);
  REQUIRE(plain.ok());
  REQUIRE(gated.ok());
  // Q 16*8, K and V 16*4 each, gate 16*8, o 8*16, pre-norm 16.
  CHECK(plain->params == 16 * 16 + 8 * 16 + 16);
  CHECK(gated->params == 16 * 24 + 8 * 16 + 16);
  CHECK(gated->fwd_flops - plain->fwd_flops == 2 * 10 * 16 * 8);
  CHECK(gated->activation_bytes - plain->activation_bytes == 2 * 10 * 8);  // the gate's input to sigmoid
  Result<ComponentWork> lin = component_work(Component::kLinearAttention, a);
  REQUIRE(lin.ok());
  CHECK(lin->params == gated->params);
}

TEST_CASE("cost model: MoE shared experts of their own size (Nemotron's MoE: squared-ReLU experts)") {
  Architecture a;
  a.hidden_size = 8;
  a.moe_num_experts = 4;
  a.moe_top_k = 2;
  a.moe_ffn_hidden_size = 16;
  a.moe_shared_experts = 1;
  a.moe_shared_ffn_hidden_size = 24;
  a.gated_mlp = false;  // 2 matrices an expert
  a.seq_length = 10;
  Result<ComponentWork> w = component_work(Component::kMoe, a);
  REQUIRE(w.ok());
  // norm 8, router 8*4, routed 4 * 2*8*16, shared 2*8*24.
  CHECK(w->params == 8 + 32 + 4 * 256 + 384);
  // router 2*T*h*E; each token through k routed experts and the shared one.
  CHECK(w->fwd_flops == 2 * 10 * 8 * 4 + 2 * 10 * (2 * 256 + 384));
  CHECK(w->activation_bytes ==
        2 * 10 * 8 + 2 * 10 * 8 + 4 * 10 * 4 + 2 * 2 * 10 * 8 + 2 * 2 * 2 * 10 * 16 + 2 * 2 * 10 * 24);
  CHECK(w->wgrad_stash_bytes == 2 * 10 * 8 + 2 * 2 * 10 * 8 + 2 * 2 * 10 * 16 + 2 * 10 * 24);
  // Without the size, S shared experts of moe_ffn_hidden_size each.
  a.moe_shared_ffn_hidden_size.reset();
  a.moe_shared_experts = 2;
  Result<ComponentWork> w2 = component_work(Component::kMoe, a);
  REQUIRE(w2.ok());
  CHECK(w2->params == 8 + 32 + 4 * 256 + 2 * 256);
}

TEST_CASE("cost model: Mamba-2 from its head count: Nemotron-H-56B's layer has 438,432,512 parameters") {
  Architecture a;
  a.hidden_size = 8192;
  a.mamba_num_heads = 256;
  a.mamba_head_dim = 64;
  a.mamba_state_size = 256;
  a.mamba_groups = 8;
  a.mamba_chunk_size = 128;
  a.seq_length = 8192;
  Result<ComponentWork> w = component_work(Component::kMamba, a);
  REQUIRE(w.ok());
  // d_inner = 256 * 64 = 16384; in_proj 8192*(2*16384 + 2*8*256 + 256), out_proj 16384*8192,
  // conv (16384 + 4096)*(4+1), A/D/dt_bias 3*256, gated norm 16384, pre-norm 8192.
  CHECK(w->params == 8192.0 * 37120 + 16384.0 * 8192 + 20480.0 * 5 + 768 + 16384 + 8192);
  CHECK(w->params == 438432512.0);
  const double T = 8192;
  CHECK(w->fwd_flops == 2 * T * (8192.0 * 37120 + 16384.0 * 8192) + 2 * T * 20480 * 4 +
                            T * (2.0 * 128 * 8 * 256 + 2.0 * 128 * 16384 + 4.0 * 256 * 16384));
}

TEST_CASE("cost model: gated DeltaNet of Qwen3-Next has 33,720,512 parameters") {
  Architecture a;
  a.hidden_size = 2048;
  a.deltanet_key_heads = 16;
  a.deltanet_value_heads = 32;
  a.deltanet_key_head_dim = 128;
  a.deltanet_value_head_dim = 128;
  a.seq_length = 4096;
  Result<ComponentWork> w = component_work(Component::kGatedDeltaNet, a);
  REQUIRE(w.ok());
  // in_proj_qkvz 2048*(2*16*128 + 2*32*128), in_proj_ba 2048*2*32, conv (2*2048 + 4096)*4 (no bias),
  // A_log and dt_bias 2*32, gated norm 128, out_proj 4096*2048, pre-norm 2048.
  CHECK(w->params == 2048.0 * (12288 + 64) + 8192.0 * 4 + 64 + 128 + 4096.0 * 2048 + 2048);
  CHECK(w->params == 33720512.0);
  const double T = 4096, C = 64;
  const double gemm = 2 * T * (2048.0 * 12352 + 4096.0 * 2048);
  const double conv = 2 * T * 8192 * 4;
  const double core = T * 32 * (6 * C * 128 + 4 * C * 128 + 6.0 * 128 * 128);
  CHECK(w->fwd_flops == gemm + conv + core);
  CHECK(w->bwd_input_flops == gemm + conv + 2 * core);
  CHECK(w->bwd_weight_flops == gemm + conv);
  CHECK(w->activation_bytes == 2 * T * (2 * 2048 + 12352 + 8192 + 2 * 4096));
  CHECK(w->wgrad_stash_bytes == 2 * T * (2048 + 8192 + 4096));
  // Linear in the sequence length.
  a.seq_length = 8192;
  Result<ComponentWork> w2 = component_work(Component::kGatedDeltaNet, a);
  REQUIRE(w2.ok());
  CHECK(w2->fwd_flops == doctest::Approx(2 * w->fwd_flops));
}

TEST_CASE("cost model: a tied head counts no weight of its own") {
  Architecture a = llama2_7b();
  a.tied_embeddings = true;
  Result<ComponentWork> head = component_work(Component::kHead, a);
  REQUIRE(head.ok());
  CHECK(head->params == 4096);  // the final norm; the projection is the embedding's
  CHECK(head->fwd_flops == 2.0 * 4096 * 4096 * 32000);  // the work is the same
}

TEST_CASE("cost model: the new components keep stash <= activation and positive numbers") {
  Architecture a = llama2_7b();
  a.kv_lora_rank = 64;
  a.qk_nope_head_dim = 32;
  a.qk_rope_head_dim = 16;
  a.v_head_dim = 32;
  a.deltanet_key_heads = 4;
  a.deltanet_key_head_dim = 64;
  a.deltanet_value_head_dim = 64;
  for (const char* k : {"mla", "gated_deltanet", "mla+moe"}) {
    CAPTURE(k);
    a.moe_num_experts = 8;
    a.moe_top_k = 2;
    Result<DerivedCosts> d = derive_costs(kind(k), a, h100());
    REQUIRE(d.ok());
    CHECK(d->wgrad_stash_mb <= d->activation_mb);
    CHECK(d->backward_input_ms > d->backward_weight_ms);
    CHECK(d->params_m > 0);
  }
}
