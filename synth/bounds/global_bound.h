// global_bound.h — lower bounds on the iteration time over ALL partitions and placements.
//
// `pipesmith bound` answers "how fast could any schedule of this model on P devices with M
// microbatches possibly be?" before anything is partitioned. Each term is a valid lower bound for
// every contiguous partition of the layer chain, every stage → device placement and every order
// (comm times only ever add, so they are taken as zero, and so does the cluster's op_overhead_ms).
// With c_l = F_l + I_l + W_l of layer l, I_l its input gradient and W_0 layer 0's weight gradient
// (a type with a fused backward_ms B_l: c_l = F_l + min(B_l, I_l + W_l), I_l → min(I_l, B_l),
// W_0 → min(W_0, B_0 − min(I_0, B_0)), I_0 + W_0 → min(B_0, I_0 + W_0); B_l alone where the type
// cannot split, since a schedule may run either backward),
// a_l = F_0 + … + F_{l−1} (the earliest time any op of layer l can start), L layers and
// Q = min(P, L) devices that can hold work:
//   total_work      M·Σ c_l / Q                       the work has to be shared by Q devices
//   heaviest_layer  max_l max(a_l + M·c_l,            a layer is never split across devices and
//                     a_l + M·(F_l + g_l)             none of its ops starts before a_l; and the
//                     + Σ_{k<l} g_k + W_0)            device holding it ends its M forwards and M
//                                                     gradient parts g_l (I_l, or B_l) at
//                                                     a_l + M·(F_l + g_l) or later, the last of them
//                                                     a gradient part (each follows its microbatch's
//                                                     F), after which that microbatch's gradient
//                                                     still goes through every layer below and W_0
//                                                     follows (with its stage's layers around it the
//                                                     device only has more to do before it)
//   critical_path   max( (M−1)·F_0 + ΣF + ΣI + W_0,   the last F_0 to run starts after the other
//                        ΣF + Σ_{l≥1} I_l + M·(I_0+W_0) )  M−1, then its microbatch goes forward
//                                                     through every layer and back; and no I_0
//                                                     can start before one full forward and the
//                                                     input-gradients of layers ≥ 1
//   ramp            (M·Σ c_l + Σ_{j=1}^{Q−1} a_j) / Q before a_j at most j layers (so j devices)
//                                                     can have work: the Q devices lose at least
//                                                     Σ a_j of capacity
//   backward_ramp   a_L + (M·Σ b_l + Σ_{k=1}^{Q−1} g_k) / Q      the same for the backward: b_l =
//                                                     c_l − F_l, g_k = the gradients (I, or B) of
//                                                     the k last layers; see the device view below
//                                                     (the least C where Σ_k max(0, C − a_L − g_k)
//                                                     reaches M·Σ b_l: this formula when all Q
//                                                     devices open before C)
//   ramp_packing, backward_ramp_packing: the two ramps with whole layers (below).
//   forward_release max over T ≤ a_L of T + (M·Σ c_l − D(T)) / Q, where D(T) bounds the work any
//                   schedule can do before T:
//                     D(T) = min( Σ_{k<Q} (T − a_k)⁺,  Σ_l Σ_{j<M} min(F_l, (T − a_l − j·s_l)⁺) ),
//                   s_l = max_{k≤l} F_k. Before a_L only forwards can run (no backward op starts
//                   before a full forward), and the j-th forward of layer l to start (0-based, in
//                   time) starts at a_l + j·s_l at the earliest: the j+1 microbatches first through
//                   layer l all went through every layer k ≤ l, whose forwards run one at a time on
//                   one device from a_k, so the last of them ends layer k at a_k + (j+1)·F_k or later
//                   and still needs layers k+1 … l−1 (a stage's forward runs its layers in turn, so
//                   this holds per layer inside a stage). Each forward does at most its part inside
//                   [release, T] before T, and the k-th device by lowest layer works only after a_k
//                   (the ramps' device view, below); the rest of the work is done after T by at most
//                   Q devices. At M ≈ P the forwards of the late layers are released close to a_L,
//                   which the ramps (a device opens at a_k and then works without a pause) do not see.
//                   T runs over a grid of (0, a_L] (any T gives a valid bound).
//   release_packing max over T ≤ a_L of T + PACK_Q(w_0(T), …, w_{L−1}(T)), w_l(T) = M·c_l − d_l(T),
//                   d_l(T) = Σ_{j<M} min(F_l, (T − a_l − j·s_l)⁺), PACK_Q(x) any lower bound on the
//                   least load of the busiest of Q devices when the items x are dealt whole to them:
//                   the forwards' release times with whole layers. Before T ≤ a_L a layer has done
//                   at most d_l(T) of its work (only forwards run before a_L, released as above), so
//                   at least w_l(T) of it is left after T, all on the one device that holds the
//                   layer; a device runs one op at a time, so it ends at T + the sum of the w_l(T)
//                   of its layers or later, and the devices that hold layers (at most Q) deal the
//                   layers among them. PACK_Q is packing_bound.h's targeted_packing_bound: the
//                   pigeonhole bound and the mean, and where a search is asked (32 points of the
//                   grid, one budget of search nodes in all) the least capacity it proves too small
//                   for the w_l(T) rounded down to at most 12 sizes. It binds where layers are
//                   coarse beside Q (M·c_l of one layer is a large part of a device's load): at
//                   P = 32, M = 128 on GPT-OSS-like 2880.0 ms, the heaviest layer 2759.8 ms.
//   window_packing  each device on its own, with whole layers: Jackson's preemptive one-machine bound
//                   with release times and tails, for K = 3 windows at once. Every op of layer l gets
//                   a release time r_o and a tail q_o valid for every plan: the j-th of its M forwards
//                   to start (0-based, in time) starts at a_l + j·s_l or later (above), length F_l,
//                   and its microbatch still runs the forwards of layers > l, every gradient and W_0
//                   after it (tail Σ_{k>l} F_k + Σ_k g_k + W_0, g_k the gradient part I_k or B_k,
//                   W_0 as in critical_path); the j-th gradient part of layer l (length g_l) starts
//                   at a_L + Σ_{k>l} g_k + j·max(s_{L−1}, max_{k≥l} g_k) or later (the j+1 first
//                   microbatches to reach it all ended their last forward, the j-th of which ends at
//                   a_L + j·s_{L−1} or later, and all passed every layer k ≥ l above, whose gradient
//                   parts run one at a time on one device) and is followed by the gradients below
//                   (tail Σ_{k<l} g_k + W_0); the rest of its backward (length c_l − F_l − g_l, the W
//                   or the end of B) starts g_l after the j-th gradient part's release, tail 0. A
//                   stage's op runs its layers in turn, so these hold for each layer's part of it. An
//                   op runs inside [r_o, C − q_o], so inside a window [r, C − q] it runs at least
//                   max(0, p_o − (r − r_o)⁺ − (q − q_o)⁺); a device runs one op at a time, so where
//                   the layers it holds have work w_d(r, q) > 0 in the window, C ≥ r + q + w_d(r, q).
//                   For windows (r_k, q_k), k < K, a capacity C is refuted when the layers (items:
//                   their work in each window) cannot be dealt whole to Q devices so that every
//                   device meets all K at once — a K-dimensional vector packing; the devices may
//                   each be held up by a different window, which the single windows of
//                   forward_release and release_packing (q = 0, pooled or packed one T at a time)
//                   do not see. PACK: packing_bound.h's vector_packing_bound, on the layers'
//                   vectors rounded down to at most 16 (runs of each layer type), bisected above the
//                   other terms, every search node from one budget (a search that runs out counts
//                   as feasible). The windows: r on a grid of 32 points of [0, the last release],
//                   q = 0 or the least forward tail; the sets tried are the binding windows of the
//                   busiest devices of a dealing found by moves and swaps, and triples r − d, r,
//                   r + d; each screened with 10⁵ nodes, the best bisected with 4·10⁶ more. It binds
//                   where devices hold one or two layers: at P = M = 32, 866.84 ms on GPT-OSS-like
//                   against 832.37 ms (the heaviest layer). At P ≤ 16 on the shipped models it
//                   proves nothing above the other terms (docs/baselines.md says why).
//   window_lp       every window of the grid at once (64 dimensions: r on the 32 points, q = 0 or the
//                   least forward tail), the layers' work in them as they are: the least C that the
//                   vector packing's configuration LP (packing_lp.h) cannot refute. Weights y on the
//                   layers such that no set of layers that fits one device at C weighs more than 1,
//                   with Σ y > Q, prove that no dealing fits C; a revised simplex finds them, its
//                   columns (the sets that fit) from greedy orders and a branch and bound, and each
//                   proof is checked by the exact knapsack. Bisected between the terms before it and
//                   a dealing's value, within a fixed budget (GlobalBoundOptions; about a second), each
//                   capacity with an eighth of it; computed by `pipesmith bound` and for the tuner's
//                   result where it is more than 1 % above the other terms, not for the many bounds
//                   of `pipesmith plan`'s meshes or the baselines. It
//                   binds at P = 16 with M ≈ P on some shipped models: Gemma-like at P = M = 16,
//                   325.79 ms against 321.19 ms; GPT-OSS-like at P = 16, M = 32, 1369.75 against
//                   1349.61 ms; and where devices hold one or two layers (P = 32, M = 128 on
//                   GPT-OSS-like: 2894.49 against 2890.37 ms).
//   heavy_pairs     one layer alone, or two heavy layers, on one device, with the ops' release times
//                   and tails of window_packing: J(S), Jackson's preemptive one-machine bound on the
//                   ops of a set S of layers (the exact optimum of that relaxation: the released op
//                   with the longest tail runs, preempted by a release; the largest end + tail), is
//                   at most the iteration of any plan whose device holds S. A capacity C is refuted
//                   when some layer has J({l}) > C, or when the heavy layers — the most layers,
//                   heaviest first, of which any three hold more than C of work (the last three do),
//                   so at most two per device — number H > Q and the graph of the pairs with
//                   J({x, y}) ≤ C has no matching of H − Q edges (at least H − Q devices hold two
//                   of them, disjoint pairs). A maximum matching (Edmonds, Boost.Graph) decides it;
//                   bisection (the refutation only grows harder with C) gives the term. It binds
//                   where coarse layers outnumber the devices at M ≈ P: on GPT-OSS-like at
//                   P = M = 16, 24 MoE layers and 4 head shards on 16 devices, 730.16 ms against
//                   701.30 ms. A pair's J is computed only when a matching uses the pair; J's ops
//                   are counted against a budget, past which a set's J is estimated from below (its
//                   work, its layers' own J), so the term stays a bound; at most the 96 heaviest
//                   heavy layers (a subset of heavy layers is heavy) and 2,000 matchings in all.
// The device view behind the ramps, valid for every contiguous partition, every stage → device map
// (several stages per device, non-adjacent, included) and every order. Sort the devices that hold
// layers by the lowest layer they hold: the k-th one's lowest layer is at least k (distinct devices,
// distinct layers), and every op of a layer l needs F(l, m), so nothing on that device starts before
// a_k; its work is M·Σ c_l over its layers. So C ≥ a_k + its work: the layers (items M·c_l) pack
// into Q bins of capacities C − a_k. When no type can split its backward, the device's last op is
// a B of its lowest stage (a B of a higher stage is followed on it by the B of the lowest one), after
// which the gradient chain below it still runs: the capacity is C − a_k − Σ_{l<k} gradient_l. With W
// ops there is no such tail (a W can run last) — the drain at M ≈ P is taken by the backward instead:
// sort the devices by the highest layer they hold; the k-th one's highest layer is at most L−1−k, and
// no backward op of a layer can start before a full forward (a_L) and the gradients of every layer
// above it, so none of its backward work M·b_l (its W after its I) starts before a_L + g_k: the
// items M·b_l pack into Q bins of capacities C − a_L − g_k. `ramp` and `backward_ramp` are the two
// packings with layers split at will (the least C where the bins' capacities reach the work);
// `ramp_packing` and `backward_ramp_packing` keep layers whole (synth/bounds/packing_bound.h,
// offset_packing_bound: a search over how many layers of each cost each device takes, which
// stops after a fixed amount of work and then keeps the last capacity it proved too small). At
// M = P the ramp with whole layers reaches the optimum on uniform layers: 32 layers of F = I = W = 1 ms on
// 8 devices, M = 8 — Σ work / Q = 96, ramp 99.5, every device holding 4 layers of 24 ms puts the
// last one at 7 + 96 and 3 layers on it leaves 29 for 7 devices (one holds 5: 120), so 103, which
// interleaving one layer per stage reaches.
// The bound is their maximum. docs/baselines.md repeats the derivations; tests/synth/
// test_global_bound.cpp checks it against the optimum over every plan on small random models.
//
// Memory: every layer's model states (params_m · bytes_per_param) live on one device for the whole
// iteration, so with a per-device limit the devices must hold Σ states together (at least
// ceil(Σ states / limit) devices) and each layer's states plus one microbatch's activations must
// fit one device. When even P devices cannot, the problem is infeasible.
#pragma once

#include <cstdint>
#include <string>

#include "ir/model.h"
#include "ir/status.h"

namespace ps {

struct GlobalBound {
  int devices = 0;
  int microbatches = 0;
  double total_work_ms = 0;
  double heaviest_layer_ms = 0;  // max_l a_l + M·c_l or with the chain below (the "single layer" term)
  int heaviest_layer = -1;       // the layer l reaching it
  double critical_path_ms = 0;
  double ramp_ms = 0;
  double backward_ramp_ms = 0;
  double ramp_packing_ms = 0;           // the forward ramp with whole layers
  double backward_ramp_packing_ms = 0;  // the backward ramp with whole layers
  double forward_release_ms = 0;        // the forwards' release times before a_L
  double release_packing_ms = 0;        // the same with whole layers: the work left after T packed
  double window_packing_ms = 0;         // each device on its own: its work inside windows (r, q), whole layers
  double window_lp_ms = 0;              // every device's windows over the whole grid: the packing's configuration LP
  double heavy_pairs_ms = 0;            // one layer alone, or heavy layers two to a device where their pair allows
  bool ramp_packing_decided = true;     // false: a packing search ran out of work (still a bound)
  double bound_ms = 0;  // max of the terms above
  std::string binding;  // name of the term that gives bound_ms: "total_work", ...

  double model_state_gb = 0;       // Σ states over all layers
  double memory_limit_gb = 0;      // per device; 0 = unlimited
  int min_devices_for_memory = 0;  // ceil(Σ states / limit); 0 when unlimited
  bool memory_feasible = true;
  std::string memory_reason;  // why it is infeasible (empty when feasible)
};

// window_lp's budget (pivots and search nodes, weighted): about a second of one core at M ≈ P on the
// shipped models. The term is computed only where a caller gives it a budget: `pipesmith bound`
// (model_bound) and the tuner's result (where the chosen schedule is more than 1 % above the other
// terms) do; the many bounds of `pipesmith plan`'s meshes and of the baselines do not.
inline constexpr int64_t kWindowLpBudget = 150'000'000;
struct GlobalBoundOptions {
  int64_t window_lp_budget = 0;  // 0: window_lp is not computed (window_lp_ms stays 0)
};

// Never fails on a validated Spec with devices, microbatches >= 1; returns kBadInput otherwise.
// memory_limit_gb = 0 means unlimited. Infeasibility is reported in the result, not as an error,
// so that callers can print the time bound too.
Result<GlobalBound> global_lower_bound(const Spec& spec, int devices, int microbatches,
                                       double memory_limit_gb, const GlobalBoundOptions& options = {});

}  // namespace ps
