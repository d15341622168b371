// cost_model.h — analytic per-layer costs: from architecture numbers and hardware to the numbers of
// a LayerType (F/I/W ms, activation/stash/output MB, millions of parameters).
//
// Guarantees:
//  * derive_costs is a pure function of its inputs; every number it returns is finite and >= 0, and
//    wgrad_stash_mb <= activation_mb holds by construction.
//  * A missing architecture or hardware field is an error naming the field and the component that
//    needs it (never a silent default, except the defaults documented below and in docs/inputs.md).
//
// Model (docs/inputs.md has the derivations and sources):
//  * A layer type is a sequence of components (kind "attention+mlp" = an attention sublayer, then an
//    MLP sublayer). Per component and per microbatch of T = micro_batch_size * seq_length tokens we
//    count matmul FLOPs (2 per multiply-add), the HBM bytes of memory-bound kernels, the bytes of
//    activations kept for the backward (Korthikanti et al. 2022's accounting: every input of a
//    matmul or nonlinearity that the backward reads), the part of those the W pass needs (the
//    inputs of the weight matmuls), the output that crosses to the next layer, and the parameters.
//  * Matmuls with weights: backward-input FLOPs = backward-weight FLOPs = forward FLOPs. Weight-free
//    cores (attention scores, the SSD scan): backward = 2x forward, all in I.
//  * Time of a pass = FLOPs / (peak_tflops * achievable_fraction) + bytes / hbm_gb_per_s
//    (compute-bound and memory-bound kernels run one after the other).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"

namespace ps {

// Architecture numbers (the `architecture:` block). Unset fields are std::nullopt; merged_with lets
// a layer type's block override the model's. Defaults used when unset are given in the comments.
struct Architecture {
  std::optional<long long> hidden_size;          // 4096 (h)
  std::optional<long long> ffn_hidden_size;      // 11008 (f)
  std::optional<long long> num_attention_heads;  // 32 (a)
  std::optional<long long> num_kv_heads;         // 8 (default: num_attention_heads)
  std::optional<long long> head_dim;             // 128 (default: hidden_size / num_attention_heads)
  std::optional<long long> vocab_size;           // 32000 (V)
  std::optional<long long> vocab_shards;         // 4 (default 1): the head layer is one of K
                                                 // vocabulary shards (V/K classes each) of a
                                                 // vocabulary-parallel head chain (docs/inputs.md)
  std::optional<long long> seq_length;           // 4096 (s)
  std::optional<long long> micro_batch_size;     // 1 (b; default 1)
  std::optional<long long> moe_num_experts;      // 64 (E)
  std::optional<long long> moe_top_k;            // 6 (k)
  std::optional<long long> moe_ffn_hidden_size;  // 1408 (default: ffn_hidden_size)
  std::optional<long long> moe_shared_experts;   // 2 (default 0), each of moe_ffn_hidden_size
  std::optional<long long> moe_shared_ffn_hidden_size;  // 3712 (default moe_shared_experts *
                                                        // moe_ffn_hidden_size): all shared experts'
                                                        // hidden units together
  std::optional<long long> q_lora_rank;          // 1536 (MLA; default 0 = Q not compressed)
  std::optional<long long> kv_lora_rank;         // 512 (MLA: the compressed KV latent)
  std::optional<long long> qk_nope_head_dim;     // 128 (MLA: per-head Q/K dims without RoPE)
  std::optional<long long> qk_rope_head_dim;     // 64 (MLA: per-head Q dims with RoPE; K's is shared)
  std::optional<long long> v_head_dim;           // 128 (MLA: per-head V dims)
  std::optional<long long> mamba_state_size;     // 128 (N)
  std::optional<long long> mamba_num_heads;      // 256 (default: mamba_expand * h / mamba_head_dim);
                                                 // when given, d_inner = heads * mamba_head_dim
  std::optional<long long> mamba_expand;         // 2 (default 2): d_inner = expand * h
  std::optional<long long> mamba_head_dim;       // 64 (default 64): P
  std::optional<long long> mamba_groups;         // 8 (default 1): G groups of B/C
  std::optional<long long> mamba_conv_kernel;    // 4 (default 4)
  std::optional<long long> mamba_chunk_size;     // 128 (default 256): SSD chunk length Q
  std::optional<long long> attention_window;     // 4096 (default 0 = full attention)
  std::optional<long long> linear_attention_block;  // 256 (default 256): lightning-attention block
  std::optional<long long> deltanet_key_heads;      // 16 (gated DeltaNet: Q/K heads)
  std::optional<long long> deltanet_value_heads;    // 32 (gated DeltaNet: V heads; default key heads)
  std::optional<long long> deltanet_key_head_dim;   // 128 (d_k)
  std::optional<long long> deltanet_value_head_dim; // 128 (d_v)
  std::optional<long long> deltanet_conv_kernel;    // 4 (default 4)
  std::optional<long long> deltanet_chunk_size;     // 64 (default 64): chunk length C
  std::optional<bool> causal;                       // default true
  std::optional<bool> gated_mlp;                    // default true (SwiGLU/GeGLU: 3 matrices)
  std::optional<bool> flash_attention;              // default true (scores not stored)
  std::optional<bool> dropout;                      // default false (1-byte masks when true)
  std::optional<bool> attention_output_gate;        // default false: a sigmoid gate h -> a*d on the
                                                    // attention output (Qwen3-Next, MiniMax lightning)
  std::optional<bool> tied_embeddings;              // default false: the head's weight is the
                                                    // embedding's, counted once (in the embedding)
  std::optional<double> dtype_bytes;                // 2 (bf16 activations and weights; default 2)

  // Fields set in `over` replace ours.
  Architecture merged_with(const Architecture& over) const;
};

// The `hardware:` block.
struct Hardware {
  std::optional<double> peak_tflops;          // 989 (dense bf16 TFLOP/s of one device)
  std::optional<double> achievable_fraction;  // 0.5 (of peak reached by GEMM/attention kernels)
  std::optional<double> hbm_gb_per_s;         // 3350 (GB/s reached by memory-bound kernels)
  std::optional<double>
      moe_achievable_fraction;  // 0.25 (expert GEMMs; default achievable_fraction)

  Hardware merged_with(const Hardware& over) const;
};

// Building blocks of a layer kind.
enum class Component {
  kEmbedding,        // token embedding lookup (memory-bound)
  kAttention,        // pre-norm + QKV projection + softmax attention (full or windowed) + out proj
  kMla,              // pre-norm + multi-head latent attention (low-rank Q and KV, decoupled RoPE)
  kGatedDeltaNet,    // pre-norm + gated DeltaNet (projections, conv, chunked delta rule, gated norm)
  kLinearAttention,  // pre-norm + QKV projection + lightning (linear) attention + out proj
  kMlp,              // pre-norm + dense MLP (gated or not)
  kMoe,              // pre-norm + router + top-k routed experts + shared experts
  kMamba,            // pre-norm + Mamba-2 mixer (in_proj, conv1d, SSD, gated norm, out_proj)
  kHead,             // final norm + LM head + softmax/cross-entropy loss
  kMtpProjection,    // multi-token-prediction input: two norms + concat + projection 2h -> h
};
const char* component_name(Component c);  // "attention"

// Parses a kind: a component or alias, or several joined by '+' ("attention+moe").
// Aliases: dense_block = attention+mlp, moe_block = attention+moe, mtp = mtp_projection+attention+
// moe+head. Errors list the known names. Components: embedding, attention, mla, gated_deltanet,
// linear_attention, mlp, moe, mamba, head, mtp_projection.
Result<std::vector<Component>> parse_kind(std::string_view kind);
// "embedding, attention, ..., dense_block, moe_block, mtp" (for messages and --help).
std::string known_kinds();

// Work and memory of one component for one microbatch.
struct ComponentWork {
  double fwd_flops = 0, bwd_input_flops = 0, bwd_weight_flops = 0;  // compute-bound kernels
  double fwd_hbm_bytes = 0, bwd_input_hbm_bytes = 0, bwd_weight_hbm_bytes = 0;  // memory-bound
  bool moe_efficiency = false;   // its FLOPs run at moe_achievable_fraction
  double activation_bytes = 0;   // kept from F until the backward
  double wgrad_stash_bytes = 0;  // part of activation_bytes that W needs
  double output_bytes = 0;       // what it hands to the next component / layer
  double params = 0;             // parameters (count)
  double input_bytes = 0;        // what it receives (kept by full recomputation)
  double core_fwd_flops = 0;     // attention core (Q K^T, softmax, times V) of fwd_flops
  double quadratic_activation_bytes = 0;  // part of activation_bytes that grows with s^2 (scores,
                                          // dropout mask and output); 0 with flash attention
  // What the mesh (ir/mesh.h) needs to spread the component over tensor, context and expert groups:
  double hidden_activation_bytes = 0;  // part of activation_bytes that is hidden-sized (norm inputs,
                                       // the inputs of column-parallel matmuls, dropout masks): kept
                                       // whole on every tensor-parallel rank without sequence parallelism
  double expert_params = 0;            // routed experts' part of params (spread over EP x ETP)
  double routed_token_bytes = 0;       // 8.4e7: the k routed copies of the tokens (p*k*T*h) that the
                                       // MoE dispatch and combine all-to-alls move
  double cp_kv_bytes = 0;              // K and V of the whole microbatch (what a context-parallel
                                       // ring passes around); 0 without an attention core
  double cp_state_bytes = 0;           // 2.1e6: the recurrent state one sequence chunk hands the next
                                       // (linear mixers under context parallelism)
  enum class TpPattern { kNone, kBlock, kEmbedding, kHead };
  TpPattern tp = TpPattern::kNone;     // its tensor-parallel collectives (docs/mesh.md)
};
// Errors name the missing/invalid architecture field, e.g. "architecture.vocab_size is needed by
// the head component".
Result<ComponentWork> component_work(Component c, const Architecture& arch);

// Numbers in LayerType units (ms, MB = 1e6 bytes, millions of parameters).
struct DerivedCosts {
  double forward_ms = 0, backward_input_ms = 0, backward_weight_ms = 0;
  double activation_mb = 0, wgrad_stash_mb = 0, output_mb = 0, params_m = 0;
  // Recomputation (docs/inputs.md, "Recomputation"). full: the whole forward again, keeping the
  // first component's input. selective (Korthikanti et al. 2022, section 4.2): the attention cores
  // again, keeping everything but their quadratic activations (5·a·s²·b bytes per layer with bf16
  // and dropout); nothing to drop (0 ms, the whole activation kept) without such activations.
  double recompute_full_ms = 0, recompute_full_kept_mb = 0;
  double recompute_selective_ms = 0, recompute_selective_kept_mb = 0;
};
// Sums the components (output_mb is the last component's output). Needs all hardware fields except
// moe_achievable_fraction.
Result<DerivedCosts> derive_costs(const std::vector<Component>& kind, const Architecture& arch,
                                  const Hardware& hw);

}  // namespace ps
