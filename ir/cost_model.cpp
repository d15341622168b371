// cost_model.cpp — the formulas behind derive_costs. Every formula is written out in docs/inputs.md
// ("Analytic costs") with its source; keep the two in step.
#include "ir/cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace ps {

namespace {

template <class T>
void take(std::optional<T>& mine, const std::optional<T>& over) {
  if (over) mine = over;
}

struct KindName {
  const char* name;
  std::vector<Component> parts;
};

const std::vector<KindName>& kind_table() {
  static const std::vector<KindName> kTable = {
      {"embedding", {Component::kEmbedding}},
      {"attention", {Component::kAttention}},
      {"mla", {Component::kMla}},
      {"gated_deltanet", {Component::kGatedDeltaNet}},
      {"linear_attention", {Component::kLinearAttention}},
      {"mlp", {Component::kMlp}},
      {"moe", {Component::kMoe}},
      {"mamba", {Component::kMamba}},
      {"head", {Component::kHead}},
      {"mtp_projection", {Component::kMtpProjection}},
      {"dense_block", {Component::kAttention, Component::kMlp}},
      {"moe_block", {Component::kAttention, Component::kMoe}},
      {"mtp",
       {Component::kMtpProjection, Component::kAttention, Component::kMoe, Component::kHead}},
  };
  return kTable;
}

// Reads architecture fields for one component; the first problem is kept in `status`.
class Dims {
 public:
  Dims(const Architecture& arch, Component c) : arch_(arch), comp_(c) {}

  // A field the component cannot do without; must be >= 1.
  double need(const std::optional<long long>& v, const char* field) {
    if (!v) {
      fail(fmt::format("architecture.{} is needed by the {} component", field,
                       component_name(comp_)));
      return 1;
    }
    if (*v < 1) {
      fail(fmt::format("architecture.{} must be >= 1, got {}", field, *v));
      return 1;
    }
    return static_cast<double>(*v);
  }
  // An optional field with a default; must be >= min_value.
  double opt(const std::optional<long long>& v, double dflt, const char* field,
             long long min_value) {
    if (!v) return dflt;
    if (*v < min_value) {
      fail(fmt::format("architecture.{} must be >= {}, got {}", field, min_value, *v));
      return dflt;
    }
    return static_cast<double>(*v);
  }
  bool flag(const std::optional<bool>& v, bool dflt) const { return v ? *v : dflt; }
  double dtype_bytes() {
    double p = arch_.dtype_bytes.value_or(2.0);
    if (!(p > 0) || !std::isfinite(p)) {
      fail(fmt::format("architecture.dtype_bytes must be > 0, got {}", p));
      return 2.0;
    }
    return p;
  }
  void fail(std::string msg) {
    if (status.is_ok()) status = Status::bad_input(std::move(msg));
  }

  const Architecture& arch() const { return arch_; }
  Status status;

 private:
  const Architecture& arch_;
  Component comp_;
};

// Shared by the two attention flavours: the projections around the attention core.
struct AttentionShape {
  double h, a, kv, d, s, b, T, p;
  bool gate;                                                        // sigmoid output gate
  double qkv_out() const { return a * d + 2 * kv * d; }             // Q, K, V columns
  double gate_out() const { return gate ? a * d : 0.0; }            // gate columns
  double gemm_params() const { return h * (qkv_out() + gate_out()) + a * d * h; }  // + out proj
};

AttentionShape attention_shape(Dims& x) {
  const Architecture& A = x.arch();
  AttentionShape sh{};
  sh.h = x.need(A.hidden_size, "hidden_size");
  sh.a = x.need(A.num_attention_heads, "num_attention_heads");
  sh.kv = x.opt(A.num_kv_heads, sh.a, "num_kv_heads", 1);
  if (sh.kv > sh.a) {
    x.fail(fmt::format("architecture.num_kv_heads ({}) must be <= num_attention_heads ({})", sh.kv,
                       sh.a));
  }
  sh.d = x.opt(A.head_dim, sh.h / sh.a, "head_dim", 1);
  sh.s = x.need(A.seq_length, "seq_length");
  sh.b = x.opt(A.micro_batch_size, 1, "micro_batch_size", 1);
  sh.T = sh.b * sh.s;
  sh.p = x.dtype_bytes();
  sh.gate = x.flag(A.attention_output_gate, false);
  return sh;
}

// (query, key) pairs per sequence that the score kernels compute: full causal s^2/2, non-causal
// s^2, a causal sliding window w < s: w*s - w^2/2.
double attention_pairs(Dims& x, double s) {
  const Architecture& A = x.arch();
  double window = x.opt(A.attention_window, 0, "attention_window", 0);
  bool causal = x.flag(A.causal, true);
  if (window > 0 && window < s) return window * s - window * window / 2;
  return causal ? s * s / 2 : s * s;
}

// Activation bytes of the projections of an attention sublayer (no scores): pre-norm input, QKV
// input, Q/K/V, output-projection input, the gate's pre-activation (when gated), and the dropout
// mask after the projection.
double attention_proj_activation(const AttentionShape& sh, bool dropout) {
  return sh.p * sh.T * sh.h + sh.p * sh.T * sh.h + sh.p * sh.T * sh.qkv_out() +
         sh.p * sh.T * sh.a * sh.d + sh.p * sh.T * sh.gate_out() + (dropout ? sh.T * sh.h : 0.0);
}

ComponentWork embedding_work(Dims& x) {
  const Architecture& A = x.arch();
  double h = x.need(A.hidden_size, "hidden_size");
  double V = x.need(A.vocab_size, "vocab_size");
  double s = x.need(A.seq_length, "seq_length");
  double b = x.opt(A.micro_batch_size, 1, "micro_batch_size", 1);
  double p = x.dtype_bytes();
  bool dropout = x.flag(A.dropout, false);
  double T = b * s;
  ComponentWork w;
  w.params = V * h;
  w.fwd_hbm_bytes = 2 * T * h * p;           // gather: read T rows, write T rows
  w.bwd_weight_hbm_bytes = T * h * (p + 8);  // scatter-add: read the gradient, r/w fp32 grad rows
  w.activation_bytes = 8 * T + (dropout ? T * h : 0.0);  // int64 token ids (+ dropout mask)
  w.wgrad_stash_bytes = 8 * T;
  w.output_bytes = p * T * h;
  w.input_bytes = 8 * T;  // the token ids
  w.hidden_activation_bytes = dropout ? T * h : 0.0;
  w.tp = ComponentWork::TpPattern::kEmbedding;
  return w;
}

ComponentWork attention_work(Dims& x) {
  const Architecture& A = x.arch();
  AttentionShape sh = attention_shape(x);
  bool flash = x.flag(A.flash_attention, true);
  bool dropout = x.flag(A.dropout, false);
  double pairs = attention_pairs(x, sh.s);
  double gemm = 2 * sh.T * sh.gemm_params();
  double core = 4 * sh.b * sh.a * sh.d * pairs;  // Q K^T and (softmax) V
  ComponentWork w;
  w.params = sh.gemm_params() + sh.h;  // + pre-norm weight
  w.fwd_flops = gemm + core;
  w.bwd_input_flops = gemm + 2 * core;
  w.bwd_weight_flops = gemm;
  double scores = 0;
  if (flash) {
    scores = 4 * sh.T * sh.a;  // fp32 log-sum-exp per (token, head)
  } else {
    double sq = sh.a * sh.s * sh.s * sh.b;
    scores = sh.p * sq + (dropout ? sq + sh.p * sq : 0.0);  // softmax out (+ mask, dropout out)
  }
  w.activation_bytes = attention_proj_activation(sh, dropout) + scores;
  w.wgrad_stash_bytes = sh.p * sh.T * sh.h + sh.p * sh.T * sh.a * sh.d;  // QKV and out-proj inputs
  w.output_bytes = sh.p * sh.T * sh.h;
  w.core_fwd_flops = core;
  w.quadratic_activation_bytes = flash ? 0.0 : scores;
  w.hidden_activation_bytes = 2 * sh.p * sh.T * sh.h + (dropout ? sh.T * sh.h : 0.0);
  w.cp_kv_bytes = sh.p * sh.T * 2 * sh.kv * sh.d;
  w.tp = ComponentWork::TpPattern::kBlock;
  return w;
}

// Multi-head latent attention (DeepSeek-AI 2024, DeepSeek-V2 arXiv:2405.04434, section 2.1): Q goes
// through a rank-q_lora bottleneck (q_a, a norm, q_b; none when q_lora_rank is 0), K and V through the
// rank-kv_lora latent (kv_a, which also emits the one shared RoPE key of dr dims, a norm, kv_b), then
// attention with Q/K head dims dn + dr and V head dim dv, and the output projection a*dv -> h.
ComponentWork mla_work(Dims& x) {
  const Architecture& A = x.arch();
  double h = x.need(A.hidden_size, "hidden_size");
  double a = x.need(A.num_attention_heads, "num_attention_heads");
  double qr = x.opt(A.q_lora_rank, 0, "q_lora_rank", 0);
  double kr = x.need(A.kv_lora_rank, "kv_lora_rank");
  double dn = x.need(A.qk_nope_head_dim, "qk_nope_head_dim");
  double dr = x.need(A.qk_rope_head_dim, "qk_rope_head_dim");
  double dv = x.need(A.v_head_dim, "v_head_dim");
  double s = x.need(A.seq_length, "seq_length");
  double b = x.opt(A.micro_batch_size, 1, "micro_batch_size", 1);
  double p = x.dtype_bytes();
  bool dropout = x.flag(A.dropout, false);
  double pairs = attention_pairs(x, s);
  double T = b * s;
  double dq = dn + dr;  // Q and K head dim
  double q_gemm = qr > 0 ? h * qr + qr * a * dq : h * a * dq;
  double kv_gemm = h * (kr + dr) + kr * a * (dn + dv);
  double o_gemm = a * dv * h;
  double gemm_params = q_gemm + kv_gemm + o_gemm;
  double gemm = 2 * T * gemm_params;
  double core = 2 * b * a * pairs * dq + 2 * b * a * pairs * dv;  // Q K^T, then softmax V
  ComponentWork w;
  w.params = gemm_params + h + qr + kr;  // + pre-norm, q_a and kv_a norms
  w.fwd_flops = gemm + core;
  w.bwd_input_flops = gemm + 2 * core;
  w.bwd_weight_flops = gemm;
  w.activation_bytes = p * T * h              // pre-norm input
                       + p * T * h            // q_a / kv_a input (the normalized x)
                       + 2 * p * T * qr       // q norm input, q_b input
                       + 2 * p * T * kr       // kv norm input, kv_b input
                       + p * T * dr           // the shared RoPE key before rotation
                       + 2 * p * T * a * dq   // Q, K
                       + p * T * a * dv       // V
                       + p * T * a * dv       // output-projection input
                       + 4 * T * a            // fp32 log-sum-exp (flash attention)
                       + (dropout ? T * h : 0.0);
  w.wgrad_stash_bytes = p * T * h + p * T * qr + p * T * kr + p * T * a * dv;
  w.output_bytes = p * T * h;
  w.core_fwd_flops = core;
  w.hidden_activation_bytes = 2 * p * T * h + (dropout ? T * h : 0.0);
  w.cp_kv_bytes = p * T * a * (dq + dv);
  w.tp = ComponentWork::TpPattern::kBlock;
  return w;
}

// Gated DeltaNet (Yang et al. 2024, arXiv:2412.06464; Qwen3-Next's linear-attention layers): in_proj
// to Q, K (nk heads of dk), V, Z (nv heads of dv) and the per-value-head beta and decay, a causal
// depthwise conv of width K over Q, K, V, the chunked gated delta rule (chunk C, state dk x dv per
// value head), a gated RMSNorm (weight dv) and out_proj nv*dv -> h.
ComponentWork gated_deltanet_work(Dims& x) {
  const Architecture& A = x.arch();
  double h = x.need(A.hidden_size, "hidden_size");
  double nk = x.need(A.deltanet_key_heads, "deltanet_key_heads");
  double nv = x.opt(A.deltanet_value_heads, nk, "deltanet_value_heads", 1);
  double dk = x.need(A.deltanet_key_head_dim, "deltanet_key_head_dim");
  double dv = x.need(A.deltanet_value_head_dim, "deltanet_value_head_dim");
  double K = x.opt(A.deltanet_conv_kernel, 4, "deltanet_conv_kernel", 1);
  double C = x.opt(A.deltanet_chunk_size, 64, "deltanet_chunk_size", 1);
  double s = x.need(A.seq_length, "seq_length");
  double b = x.opt(A.micro_batch_size, 1, "micro_batch_size", 1);
  double p = x.dtype_bytes();
  double T = b * s;
  double proj_out = 2 * nk * dk + 2 * nv * dv + 2 * nv;  // q, k, v, z, beta, decay
  double conv_ch = 2 * nk * dk + nv * dv;                // q, k, v go through the conv
  double gemm_params = h * proj_out + nv * dv * h;       // in_proj + out_proj
  double gemm = 2 * T * gemm_params;
  double conv = 2 * T * conv_ch * K;
  // Chunked delta rule, per token and value head (Q and K shared by nv/nk value heads): within the
  // chunk K K^T and Q K^T 4 C dk, the WY factors W = A (beta K) 2 C dk and U = A (beta V) 2 C dv, the
  // masked scores times the new values 2 C dv; across chunks Q S and W S 4 dk dv, the state update
  // K^T U 2 dk dv.
  double core = T * nv * (6 * C * dk + 4 * C * dv + 6 * dk * dv);
  ComponentWork w;
  w.params = h + gemm_params + conv_ch * K + 2 * nv + dv;  // norm, projections, conv, A/dt, gated norm
  w.fwd_flops = gemm + conv + core;
  w.bwd_input_flops = gemm + conv + 2 * core;
  w.bwd_weight_flops = gemm + conv;
  // Chunk states are recomputed in the backward (as the flash-linear-attention kernels do).
  w.activation_bytes = p * T * h           // pre-norm input
                       + p * T * h         // in_proj input
                       + p * T * proj_out  // in_proj output (conv input, z, beta, decay)
                       + p * T * conv_ch   // conv output (the delta rule's inputs)
                       + p * T * nv * dv   // delta-rule output (gated-norm input)
                       + p * T * nv * dv;  // out_proj input
  w.wgrad_stash_bytes = p * T * h + p * T * conv_ch + p * T * nv * dv;
  w.output_bytes = p * T * h;
  w.hidden_activation_bytes = 2 * p * T * h;
  w.cp_state_bytes = 4 * b * nv * dk * dv;  // fp32 state per value head
  w.tp = ComponentWork::TpPattern::kBlock;
  return w;
}

ComponentWork linear_attention_work(Dims& x) {
  const Architecture& A = x.arch();
  AttentionShape sh = attention_shape(x);
  double B = x.opt(A.linear_attention_block, 256, "linear_attention_block", 1);
  bool dropout = x.flag(A.dropout, false);
  double gemm = 2 * sh.T * sh.gemm_params();
  // Per head and token: intra-block tile (Q K^T, then V) 4 B d; inter-block Q (K^T V) and the
  // K^T V state update 4 d^2.
  double core = sh.a * sh.T * (4 * B * sh.d + 4 * sh.d * sh.d);
  ComponentWork w;
  w.params = sh.gemm_params() + sh.h;
  w.fwd_flops = gemm + core;
  w.bwd_input_flops = gemm + 2 * core;
  w.bwd_weight_flops = gemm;
  w.activation_bytes = attention_proj_activation(sh, dropout);  // block states are recomputed
  w.wgrad_stash_bytes = sh.p * sh.T * sh.h + sh.p * sh.T * sh.a * sh.d;
  w.output_bytes = sh.p * sh.T * sh.h;
  w.hidden_activation_bytes = 2 * sh.p * sh.T * sh.h + (dropout ? sh.T * sh.h : 0.0);
  w.cp_state_bytes = 4 * sh.b * sh.a * sh.d * sh.d;  // fp32 K^T V state per head
  w.tp = ComponentWork::TpPattern::kBlock;
  return w;
}

ComponentWork mlp_work(Dims& x) {
  const Architecture& A = x.arch();
  double h = x.need(A.hidden_size, "hidden_size");
  double f = x.need(A.ffn_hidden_size, "ffn_hidden_size");
  double s = x.need(A.seq_length, "seq_length");
  double b = x.opt(A.micro_batch_size, 1, "micro_batch_size", 1);
  double p = x.dtype_bytes();
  bool gated = x.flag(A.gated_mlp, true);
  bool dropout = x.flag(A.dropout, false);
  double T = b * s;
  double gemm_params = (gated ? 3 : 2) * h * f;
  ComponentWork w;
  w.params = gemm_params + h;
  w.fwd_flops = w.bwd_input_flops = w.bwd_weight_flops = 2 * T * gemm_params;
  // pre-norm input, fc1 input, activation-function inputs/outputs (gated: gate, up, product).
  w.activation_bytes = 2 * p * T * h + (gated ? 3 : 2) * p * T * f + (dropout ? T * h : 0.0);
  w.wgrad_stash_bytes = p * T * h + p * T * f;  // fc1 and fc2 inputs
  w.output_bytes = p * T * h;
  w.hidden_activation_bytes = 2 * p * T * h + (dropout ? T * h : 0.0);
  w.tp = ComponentWork::TpPattern::kBlock;
  return w;
}

ComponentWork moe_work(Dims& x) {
  const Architecture& A = x.arch();
  double h = x.need(A.hidden_size, "hidden_size");
  double E = x.need(A.moe_num_experts, "moe_num_experts");
  double k = x.need(A.moe_top_k, "moe_top_k");
  if (k > E)
    x.fail(fmt::format("architecture.moe_top_k ({}) must be <= moe_num_experts ({})", k, E));
  double fe = A.moe_ffn_hidden_size ? x.need(A.moe_ffn_hidden_size, "moe_ffn_hidden_size")
                                    : x.need(A.ffn_hidden_size, "moe_ffn_hidden_size");
  double S = x.opt(A.moe_shared_experts, 0, "moe_shared_experts", 0);
  // All shared experts' hidden units together (each token goes through every shared expert).
  double fs = x.opt(A.moe_shared_ffn_hidden_size, S * fe, "moe_shared_ffn_hidden_size", 0);
  double s = x.need(A.seq_length, "seq_length");
  double b = x.opt(A.micro_batch_size, 1, "micro_batch_size", 1);
  double p = x.dtype_bytes();
  double g = x.flag(A.gated_mlp, true) ? 3 : 2;
  bool dropout = x.flag(A.dropout, false);
  double T = b * s;
  double expert_params = g * h * fe;
  ComponentWork w;
  double shared_params = g * h * fs;
  w.params = h + h * E + E * expert_params + shared_params;  // norm, router, routed + shared experts
  double flops = 2 * T * h * E + 2 * T * (k * expert_params + shared_params);
  w.fwd_flops = w.bwd_input_flops = w.bwd_weight_flops = flops;
  w.moe_efficiency = true;
  // Token permutation: dispatch reads T rows and writes k*T; combine reads k*T and writes T.
  w.fwd_hbm_bytes = w.bwd_input_hbm_bytes = 2 * p * T * h * (1 + k);
  w.activation_bytes = p * T * h        // pre-norm input
                       + p * T * h      // router / shared-expert input
                       + 4 * T * E      // fp32 router probabilities
                       + k * p * T * h  // permuted expert inputs
                       + k * g * p * T * fe + g * p * T * fs + (dropout ? T * h : 0.0);
  w.wgrad_stash_bytes = p * T * h + k * p * T * h + k * p * T * fe + p * T * fs;
  w.output_bytes = p * T * h;
  w.hidden_activation_bytes = 2 * p * T * h + (dropout ? T * h : 0.0);
  w.expert_params = E * expert_params;
  w.routed_token_bytes = k * p * T * h;
  w.tp = fs > 0 ? ComponentWork::TpPattern::kBlock : ComponentWork::TpPattern::kNone;
  return w;
}

ComponentWork mamba_work(Dims& x) {
  const Architecture& A = x.arch();
  double h = x.need(A.hidden_size, "hidden_size");
  double N = x.need(A.mamba_state_size, "mamba_state_size");
  double e = x.opt(A.mamba_expand, 2, "mamba_expand", 1);
  double P = x.opt(A.mamba_head_dim, 64, "mamba_head_dim", 1);
  double G = x.opt(A.mamba_groups, 1, "mamba_groups", 1);
  double K = x.opt(A.mamba_conv_kernel, 4, "mamba_conv_kernel", 1);
  double Q = x.opt(A.mamba_chunk_size, 256, "mamba_chunk_size", 1);
  double s = x.need(A.seq_length, "seq_length");
  double b = x.opt(A.micro_batch_size, 1, "micro_batch_size", 1);
  double p = x.dtype_bytes();
  double T = b * s;
  double nh_given = x.opt(A.mamba_num_heads, 0, "mamba_num_heads", 1);
  double di = nh_given > 0 ? nh_given * P : e * h;  // d_inner
  double nh = di / P;                               // SSM heads
  double in_out = 2 * di + 2 * G * N + nh;   // z, x, B, C, dt
  double conv_ch = di + 2 * G * N;           // x, B, C go through the causal conv
  double gemm_params = h * in_out + di * h;  // in_proj + out_proj
  ComponentWork w;
  w.params = h + gemm_params + conv_ch * (K + 1) + 3 * nh +
             di;  // norm, projections, conv, A/D/dt, gated norm
  double gemm = 2 * T * gemm_params;
  double conv = 2 * T * conv_ch * K;
  // SSD (chunked): per token, C B^T within the chunk 2 Q N G, (L o C B^T) X 2 Q d_inner, chunk
  // states B^T X 2 N d_inner, outputs from states C h 2 N d_inner.
  double ssd = T * (2 * Q * G * N + 2 * Q * di + 4 * N * di);
  w.fwd_flops = gemm + conv + ssd;
  w.bwd_input_flops = gemm + conv + 2 * ssd;
  w.bwd_weight_flops = gemm + conv;
  // The SSD's chunk states are recomputed in the backward (as the Mamba-2 kernels do), not kept.
  w.activation_bytes = p * T * h          // pre-norm input
                       + p * T * h        // in_proj input
                       + p * T * in_out   // in_proj output: z, x/B/C (conv input), dt
                       + p * T * conv_ch  // conv output (SSD inputs)
                       + p * T * di       // SSD output (gated-norm input)
                       + p * T * di;      // out_proj input
  w.wgrad_stash_bytes = p * T * h + p * T * conv_ch + p * T * di;  // in_proj, conv, out_proj inputs
  w.output_bytes = p * T * h;
  w.hidden_activation_bytes = 2 * p * T * h;
  w.cp_state_bytes = 4 * b * di * N;  // fp32 SSM state: heads x head_dim x state size
  w.tp = ComponentWork::TpPattern::kBlock;
  return w;
}

ComponentWork head_work(Dims& x) {
  const Architecture& A = x.arch();
  double h = x.need(A.hidden_size, "hidden_size");
  double V = x.need(A.vocab_size, "vocab_size");
  double s = x.need(A.seq_length, "seq_length");
  double b = x.opt(A.micro_batch_size, 1, "micro_batch_size", 1);
  double K = x.opt(A.vocab_shards, 1, "vocab_shards", 1);
  double p = x.dtype_bytes();
  double T = b * s;
  // One shard of a vocabulary-parallel head holds V/K classes. Each shard normalizes its input
  // (the chain passes the un-normalized activation on, so every shard pays the final norm) and hands
  // the next shard the activation plus two fp32 numbers per token: the running log-sum-exp of the
  // logits so far and the target's logit (docs/inputs.md). K = 1 is the usual head.
  if (K > V) x.fail(fmt::format("architecture.vocab_shards ({}) must be <= vocab_size ({})", K, V));
  V = V / K;
  bool tied = x.flag(A.tied_embeddings, false);
  ComponentWork w;
  w.params = h + (tied ? 0.0 : V * h);  // a tied weight is the embedding's, counted there
  w.fwd_flops = w.bwd_input_flops = w.bwd_weight_flops = 2 * T * h * V;
  w.fwd_hbm_bytes = T * V * (p + 4);        // softmax/loss: read logits, write fp32 probabilities
  w.bwd_input_hbm_bytes = T * V * (4 + p);  // read probabilities, write logit gradients
  w.activation_bytes = p * T * h + p * T * h + 4 * T * V;  // norm input, head input, fp32 logits
  w.wgrad_stash_bytes = p * T * h;
  w.output_bytes = K > 1 ? p * T * h + 8 * T : 0;  // the loss alone when unsharded
  w.hidden_activation_bytes = 2 * p * T * h;
  w.tp = ComponentWork::TpPattern::kHead;
  return w;
}

ComponentWork mtp_projection_work(Dims& x) {
  const Architecture& A = x.arch();
  double h = x.need(A.hidden_size, "hidden_size");
  double s = x.need(A.seq_length, "seq_length");
  double b = x.opt(A.micro_batch_size, 1, "micro_batch_size", 1);
  double p = x.dtype_bytes();
  double T = b * s;
  ComponentWork w;
  w.params = 2 * h * h + 2 * h;
  w.fwd_flops = w.bwd_input_flops = w.bwd_weight_flops = 2 * T * 2 * h * h;
  w.activation_bytes = 2 * p * T * h + 2 * p * T * h;  // two norm inputs, the concatenation
  w.wgrad_stash_bytes = 2 * p * T * h;
  w.output_bytes = p * T * h;
  w.hidden_activation_bytes = 4 * p * T * h;
  w.tp = ComponentWork::TpPattern::kBlock;
  return w;
}

Status check_hw(const std::optional<double>& v, const char* field, bool at_most_one) {
  if (!v) return Status::bad_input(fmt::format("hardware.{} is needed to derive costs", field));
  if (!(*v > 0) || !std::isfinite(*v) || (at_most_one && *v > 1)) {
    return Status::bad_input(fmt::format("hardware.{} must be {}, got {}", field,
                                         at_most_one ? "in (0, 1]" : "> 0", *v));
  }
  return Status::ok();
}

}  // namespace

Architecture Architecture::merged_with(const Architecture& o) const {
  Architecture r = *this;
  take(r.hidden_size, o.hidden_size);
  take(r.ffn_hidden_size, o.ffn_hidden_size);
  take(r.num_attention_heads, o.num_attention_heads);
  take(r.num_kv_heads, o.num_kv_heads);
  take(r.head_dim, o.head_dim);
  take(r.vocab_size, o.vocab_size);
  take(r.vocab_shards, o.vocab_shards);
  take(r.seq_length, o.seq_length);
  take(r.micro_batch_size, o.micro_batch_size);
  take(r.moe_num_experts, o.moe_num_experts);
  take(r.moe_top_k, o.moe_top_k);
  take(r.moe_ffn_hidden_size, o.moe_ffn_hidden_size);
  take(r.moe_shared_experts, o.moe_shared_experts);
  take(r.moe_shared_ffn_hidden_size, o.moe_shared_ffn_hidden_size);
  take(r.q_lora_rank, o.q_lora_rank);
  take(r.kv_lora_rank, o.kv_lora_rank);
  take(r.qk_nope_head_dim, o.qk_nope_head_dim);
  take(r.qk_rope_head_dim, o.qk_rope_head_dim);
  take(r.v_head_dim, o.v_head_dim);
  take(r.mamba_num_heads, o.mamba_num_heads);
  take(r.deltanet_key_heads, o.deltanet_key_heads);
  take(r.deltanet_value_heads, o.deltanet_value_heads);
  take(r.deltanet_key_head_dim, o.deltanet_key_head_dim);
  take(r.deltanet_value_head_dim, o.deltanet_value_head_dim);
  take(r.deltanet_conv_kernel, o.deltanet_conv_kernel);
  take(r.deltanet_chunk_size, o.deltanet_chunk_size);
  take(r.attention_output_gate, o.attention_output_gate);
  take(r.tied_embeddings, o.tied_embeddings);
  take(r.mamba_state_size, o.mamba_state_size);
  take(r.mamba_expand, o.mamba_expand);
  take(r.mamba_head_dim, o.mamba_head_dim);
  take(r.mamba_groups, o.mamba_groups);
  take(r.mamba_conv_kernel, o.mamba_conv_kernel);
  take(r.mamba_chunk_size, o.mamba_chunk_size);
  take(r.attention_window, o.attention_window);
  take(r.linear_attention_block, o.linear_attention_block);
  take(r.causal, o.causal);
  take(r.gated_mlp, o.gated_mlp);
  take(r.flash_attention, o.flash_attention);
  take(r.dropout, o.dropout);
  take(r.dtype_bytes, o.dtype_bytes);
  return r;
}

Hardware Hardware::merged_with(const Hardware& o) const {
  Hardware r = *this;
  take(r.peak_tflops, o.peak_tflops);
  take(r.achievable_fraction, o.achievable_fraction);
  take(r.hbm_gb_per_s, o.hbm_gb_per_s);
  take(r.moe_achievable_fraction, o.moe_achievable_fraction);
  return r;
}

const char* component_name(Component c) {
  switch (c) {
    case Component::kEmbedding:
      return "embedding";
    case Component::kAttention:
      return "attention";
    case Component::kMla:
      return "mla";
    case Component::kGatedDeltaNet:
      return "gated_deltanet";
    case Component::kLinearAttention:
      return "linear_attention";
    case Component::kMlp:
      return "mlp";
    case Component::kMoe:
      return "moe";
    case Component::kMamba:
      return "mamba";
    case Component::kHead:
      return "head";
    case Component::kMtpProjection:
      return "mtp_projection";
  }
  return "?";
}

std::string known_kinds() {
  std::string s;
  for (const KindName& k : kind_table()) {
    if (!s.empty()) s += ", ";
    s += k.name;
  }
  return s;
}

Result<std::vector<Component>> parse_kind(std::string_view kind) {
  std::vector<Component> out;
  size_t pos = 0;
  while (true) {
    size_t plus = kind.find('+', pos);
    std::string_view part =
        kind.substr(pos, plus == std::string_view::npos ? kind.npos : plus - pos);
    const KindName* found = nullptr;
    for (const KindName& k : kind_table()) {
      if (part == k.name) found = &k;
    }
    if (!found) {
      return Status::bad_input(
          fmt::format("unknown kind '{}' (expected one of: {}; or several joined "
                      "by '+', e.g. attention+moe)",
                      part, known_kinds()));
    }
    out.insert(out.end(), found->parts.begin(), found->parts.end());
    if (plus == std::string_view::npos) break;
    pos = plus + 1;
  }
  return out;
}

Result<ComponentWork> component_work(Component c, const Architecture& arch) {
  Dims x(arch, c);
  ComponentWork w;
  switch (c) {
    case Component::kEmbedding:
      w = embedding_work(x);
      break;
    case Component::kAttention:
      w = attention_work(x);
      break;
    case Component::kMla:
      w = mla_work(x);
      break;
    case Component::kGatedDeltaNet:
      w = gated_deltanet_work(x);
      break;
    case Component::kLinearAttention:
      w = linear_attention_work(x);
      break;
    case Component::kMlp:
      w = mlp_work(x);
      break;
    case Component::kMoe:
      w = moe_work(x);
      break;
    case Component::kMamba:
      w = mamba_work(x);
      break;
    case Component::kHead:
      w = head_work(x);
      break;
    case Component::kMtpProjection:
      w = mtp_projection_work(x);
      break;
  }
  if (!x.status.is_ok()) return x.status;
  if (c != Component::kEmbedding) {
    // Every other component reads the hidden states: T tokens × h × dtype bytes.
    const Architecture& A = arch;
    if (!A.hidden_size || !A.seq_length)
      return Status::bad_input(fmt::format("architecture.{} is needed by the {} component",
                                           A.hidden_size ? "seq_length" : "hidden_size", component_name(c)));
    const double T = static_cast<double>(A.micro_batch_size.value_or(1)) * static_cast<double>(*A.seq_length);
    w.input_bytes = T * static_cast<double>(*A.hidden_size) * A.dtype_bytes.value_or(2.0);
  }
  return w;
}

Result<DerivedCosts> derive_costs(const std::vector<Component>& kind, const Architecture& arch,
                                  const Hardware& hw) {
  if (kind.empty()) return Status::bad_input("a kind needs at least one component");
  PS_RETURN_IF_ERROR(check_hw(hw.peak_tflops, "peak_tflops", false));
  PS_RETURN_IF_ERROR(check_hw(hw.achievable_fraction, "achievable_fraction", true));
  PS_RETURN_IF_ERROR(check_hw(hw.hbm_gb_per_s, "hbm_gb_per_s", false));
  if (hw.moe_achievable_fraction) {
    PS_RETURN_IF_ERROR(check_hw(hw.moe_achievable_fraction, "moe_achievable_fraction", true));
  }
  const double dense_flops_per_ms = *hw.peak_tflops * 1e12 * *hw.achievable_fraction / 1e3;
  const double moe_flops_per_ms =
      *hw.peak_tflops * 1e12 * hw.moe_achievable_fraction.value_or(*hw.achievable_fraction) / 1e3;
  const double bytes_per_ms = *hw.hbm_gb_per_s * 1e9 / 1e3;
  DerivedCosts d;
  double quadratic_mb = 0;
  bool first = true;
  for (Component c : kind) {
    Result<ComponentWork> r = component_work(c, arch);
    if (!r.ok()) return r.status();
    const ComponentWork& w = *r;
    double rate = w.moe_efficiency ? moe_flops_per_ms : dense_flops_per_ms;
    if (first) d.recompute_full_kept_mb = w.input_bytes / 1e6;
    first = false;
    if (w.quadratic_activation_bytes > 0) {
      d.recompute_selective_ms += w.core_fwd_flops / rate;
      quadratic_mb += w.quadratic_activation_bytes / 1e6;
    }
    d.forward_ms += w.fwd_flops / rate + w.fwd_hbm_bytes / bytes_per_ms;
    d.backward_input_ms += w.bwd_input_flops / rate + w.bwd_input_hbm_bytes / bytes_per_ms;
    d.backward_weight_ms += w.bwd_weight_flops / rate + w.bwd_weight_hbm_bytes / bytes_per_ms;
    d.activation_mb += w.activation_bytes / 1e6;
    d.wgrad_stash_mb += w.wgrad_stash_bytes / 1e6;
    d.params_m += w.params / 1e6;
    d.output_mb = w.output_bytes / 1e6;
  }
  d.recompute_full_ms = d.forward_ms;
  d.recompute_full_kept_mb = std::min(d.recompute_full_kept_mb, d.activation_mb);
  d.recompute_selective_kept_mb = d.activation_mb - quadratic_mb;
  return d;
}

}  // namespace ps
