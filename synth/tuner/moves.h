// moves.h — where the tuner looks: seed candidates and bubble-aware moves.
//
// Diagnosis of an evaluated candidate (OctoPipe, arXiv 2509.23722, §4: the tuner reads the
// simulated timeline), in this order:
//   memory     it does not fit: move layers (or a stage) off the device that overflows;
//   imbalance  the per-microbatch load spread between the busiest and idlest device exceeds the
//              cost of one layer the busiest device could give away: move layers across a stage
//              boundary (single shifts, and a greedy device-aware rebalance of all boundaries);
//   boundary   warm-up/cool-down idle dominates the internal gaps: change the placement — split a
//              stage onto the idlest device, move or swap stages between devices, disperse adjacent
//              stages that share a device, merge neighbours on one device; each also in a
//              rebalanced variant;
//   residual   internal gaps dominate: change the scheduling policy (extended portfolio).
// Guarantees: every returned candidate has contiguous non-empty stages covering all layers, one
// device in [0, P) per stage, every device used, at most max_stages stages, and respects the
// fixed partition / placement of the search space; generation is a pure function of its inputs
// and the RNG state (deterministic).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ir/model.h"
#include "synth/tuner/evaluate.h"
#include "synth/tuner/tuner.h"

namespace ps::tuner_detail {

struct SearchSpace {
  const Spec* spec = nullptr;     // with the tuner's devices, microbatches and memory
  int devices = 0;                // P
  int layers = 0;
  int max_stages = 0;             // k·P (capped by the layer count)
  std::vector<double> layer_ms;   // F+I+W per layer, one microbatch
  std::vector<double> layer_mb;   // model states + one microbatch of activation per layer
  std::vector<double> head_ms;    // per layer: longest forward path before it can start (microbatch 0)
  bool fixed_partition = false;
  bool fixed_placement = false;
  bool canonical = true;          // identical devices and links: rename devices by first use
  bool include_baselines = true;
  int max_stages_per_device = 8;
  int search_policy_set = 2;      // how the search re-scores screened plans (evaluate.h)
  RecomputeChoice recompute = RecomputeChoice::kNone;
  // Per layer, MB of activation each recompute mode drops (activation − kept): a stage whose layers
  // drop nothing under a mode does not take it.
  std::vector<double> layer_drop_selective, layer_drop_full;
  bool memory_limited = false;    // spec.cluster.memory_gb > 0
  // Fused backward by choice (Candidate::fused): per layer, whether its backward splits and what
  // running B instead of I and W saves, I + W − B in ms (negative where B is dearer). A stage may run
  // B by choice when all its layers split and B saves time there (their savings plus the op overhead
  // of the W it drops); fuse_choice: some stage can, so the search tries it.
  std::vector<char> layer_splits;
  std::vector<double> layer_fuse_gain_ms;
  std::vector<double> layer_walk_ms;  // weight_walk_ms: a split stage's W grows by it per layer below
  bool fuse_choice = false;
};

enum class Diagnosis : unsigned char { kMemory, kImbalance, kBoundary, kResidual };
const char* diagnosis_name(Diagnosis d);
Diagnosis diagnose(const SearchSpace& space, const Candidate& c, const Evaluation& e);

// The starting points (see tuner.h). With a fixed partition and/or placement only compatible ones.
std::vector<Candidate> seed_candidates(const SearchSpace& space, const std::vector<int>* fixed_cuts,
                                       const std::vector<int>* fixed_placement);

// Seeds with paced fronts (several nodes only; none with a fixed partition or placement): the
// chain's first layers merged into P groups of about equal forward time F / (kPacedFrontRounds P),
// one per device, pinned, and the rest of the chain packed per node as the plain packed seeds are.
// A device whose first stage is light gets its inputs at the pace of the heaviest stage upstream
// and idles through most of the warm-up; equal groups keep every device busy from its first input
// (docs/tuner.md, "Paced fronts"). The tuner lets them start the search only when the best of them
// beats every other seed (Tuner::try_paced_fronts).
constexpr int kPacedFrontRounds = 3;
std::vector<Candidate> paced_front_seeds(const SearchSpace& space);

// Wave seeds (M <= 2P; none with a fixed partition or placement). With few microbatches
// the iteration is mostly warm-up and cool-down: the microbatches pass along the chain as a forward
// wave and a backward wave, and a device idles wherever two of them need it at once. These seeds
// time every layer's ops on an ideal schedule (microbatch j's forward of layer l at a_l + j·delta,
// its input gradient at c_l + j·delta; a_l the forward prefix, c_l the whole forward plus the input
// gradients above l; delta a multiple of the longest forward or input gradient, kWaveFactors) and
// place the layers, one stage per run of layers on one device, so that the time two layers on one
// device would need it at once (their overlap on that ideal schedule) plus kWaveBalance times each
// device's work above the mean is small: heaviest layer first onto the device that adds least,
// then moves and swaps of single layers (kWaveSteps, random, deterministic in `seed`) kept where
// they lower it. On several nodes each boundary between two layers on different nodes adds
// kWaveCrossWeight times its transfers on the inter-node link (M activations and M gradients), so the
// chain crosses the slow link at few boundaries. The tuner gives them a search of their own beside
// the other seeds' (docs/tuner.md, "Wave seeds").
inline constexpr double kWaveFactors[] = {1.5, 1.6, 1.7};
inline constexpr int kWaveSeedsPerFactor = 3;
inline constexpr double kWaveBalance = 5.0;
inline constexpr int kWaveSteps = 40000;
inline constexpr int kWaveMaxLayers = 512;
inline constexpr int kWaveDescentPasses = 1000;
inline constexpr double kWaveCrossWeight = 10.0;
// A dealing with more stages than the search allows is dealt again with a cost per stage boundary
// (the longest op, doubled up to this many times) until it fits.
inline constexpr int kWaveStageCostDoublings = 12;
// The tuner searches from the wave seeds only where their best is within this fraction of the best
// other seed's makespan (both screened alike; Tuner::try_wave_lineage).
inline constexpr double kWaveLineageMargin = 0.03;
std::vector<Candidate> wave_seeds(const SearchSpace& space, uint64_t seed);

// Moves from `c` for its diagnosis; with `all_kinds`, moves of every kind (the escalation used when
// a candidate's own kind of move found nothing better).
std::vector<Candidate> bubble_moves(const SearchSpace& space, const Candidate& c, const Evaluation& e,
                                    bool all_kinds);

// `count` random perturbations of `c` (shift a boundary by one layer, move or swap a stage).
std::vector<Candidate> kick_moves(const SearchSpace& space, const Candidate& c, std::mt19937_64& rng,
                                  int count);

// Greedy device-aware balancing: repeatedly shifts one boundary layer off the device with the
// largest per-microbatch load (or memory, by_memory) while that lowers the maximum. Returns the
// new cut points (unchanged if nothing helps).
std::vector<int> rebalance_cuts(const SearchSpace& space, std::vector<int> cuts,
                                const std::vector<int>& placement, bool by_memory);

// Candidates with the recompute modes of `c` raised (none → selective → full, up a step where a
// mode drops nothing) on the device that exceeds its memory most, and on every device whose memory
// binds (Evaluation::memory_tight, or over the cap); and lowered a step on each device that
// recomputes with room to spare, and everywhere. Only with RecomputeChoice::kSearch under a cap.
std::vector<Candidate> recompute_moves(const SearchSpace& space, const Candidate& c, const Evaluation& e);
// `c` with every stage at `mode` (kRecompute seeds).
std::optional<Candidate> with_uniform_recompute(const SearchSpace& space, const Candidate& c, RecomputeMode mode);

// Candidates with other backwards (Candidate::fused), where SearchSpace::fuse_choice: B on every
// stage; I and W on every stage (when some is fused); B on the busiest device's stages; I and W on the
// stages of the device with the most internal gaps (W fills gaps) among those with fused stages.
std::vector<Candidate> backward_moves(const SearchSpace& space, const Candidate& c, const Evaluation& e);
// `c` with B on every stage that may run it by choice (fused-backward seeds); none when no stage may.
std::optional<Candidate> with_fused_backward(const SearchSpace& space, const Candidate& c);

// Normalises a candidate (canonical device names when allowed; fused stages only where a stage may
// run B by choice, none everywhere cleared; recompute modes as the space's
// RecomputeChoice has them: cleared for kNone, uniform for kSelective / kFull, with kSearch a mode
// that drops nothing on a stage's layers set to none, and none everywhere cleared) and checks the
// invariants above.
bool finish_candidate(const SearchSpace& space, Candidate& c);

// A lower bound on the makespan of any order of the candidate's plan (comm taken as free): over
// devices, when its earliest layer can start (sp.head_ms) plus M times its layers' F+I+W (F + the
// cheaper of B and I + W on a fused stage). The tuner
// skips moves whose floor cannot beat the beam.
double plan_floor_ms(const SearchSpace& sp, const Candidate& c);
// sp.head_ms for a model: over each layer's inputs, the longest path of forward times.
std::vector<double> forward_heads_ms(const Model& model);

}  // namespace ps::tuner_detail
