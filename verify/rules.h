// rules.h — every invariant the checker enforces: a stable id and a one-line description.
//
// Guarantees: ids never change meaning (tools and tests match on them); the same table, in the same
// order, is docs/verifier-rules.md's rule table (a test compares them). Order = the order in which
// the checker runs them: structure first; later analyses run only on structurally sound input.
#pragma once

#include <array>
#include <string_view>

namespace ps::rules {

struct Rule {
  std::string_view id;           // "structure.index"
  std::string_view description;  // one line
};

inline constexpr std::string_view kLayers = "problem.layers";
inline constexpr std::string_view kIndex = "structure.index";
inline constexpr std::string_view kStagePlacement = "structure.stage-placement";
inline constexpr std::string_view kDuplicate = "structure.duplicate";
inline constexpr std::string_view kMissing = "structure.missing";
inline constexpr std::string_view kBackwardMix = "structure.backward-mix";
inline constexpr std::string_view kRecompute = "structure.recompute";
inline constexpr std::string_view kDataParallel = "structure.data-parallel";
inline constexpr std::string_view kDependency = "dependency";
inline constexpr std::string_view kCommSameDevice = "comm.same-device";
inline constexpr std::string_view kUnmatchedSend = "comm.unmatched-send";
inline constexpr std::string_view kUnmatchedRecv = "comm.unmatched-recv";
inline constexpr std::string_view kCommMissing = "comm.missing";
inline constexpr std::string_view kCommOrder = "comm.order";
inline constexpr std::string_view kDeadlock = "deadlock";
inline constexpr std::string_view kMemoryLimit = "memory.limit";
inline constexpr std::string_view kCertificateMismatch = "certificate.mismatch";
inline constexpr std::string_view kCertificateClaim = "certificate.claim";

inline constexpr std::array<Rule, 18> kAll = {{
    {kLayers, "the stages' layer ranges do not follow each other from layer 0 in order, without overlap "
              "or gap (or only some stages record theirs)"},
    {kIndex, "an op's stage or microbatch is out of range for the problem"},
    {kStagePlacement, "an op of stage s sits on a device other than the one stage s is placed on"},
    {kDuplicate, "the same op (type, stage, microbatch) appears more than once"},
    {kMissing, "a forward F, the backward (B, or I and W), or on a recomputing stage the "
               "recomputation R, of some (stage, microbatch) is absent"},
    {kBackwardMix, "a (stage, microbatch) mixes B with I/W, has only one of I and W, or splits a "
                   "stage that cannot split"},
    {kRecompute, "an R (recomputation) op on a stage whose recompute mode is none"},
    {kDataParallel, "a REDUCE_GRAD on a stage without a data-parallel step or an UNSHARD/RESHARD on a stage "
                    "FSDP does not shard, or a schedule that places data-parallel ops without each one its "
                    "stages need"},
    {kDependency, "program order on one device contradicts data flow (B/I before F, W before I, "
                  "R before F or after B/I, compute before its RECV, SEND before its producer, "
                  "adjacent local stages, REDUCE_GRAD or RESHARD before its stage's last backward, an FSDP stage's "
                  "compute before its UNSHARD, RESHARD before REDUCE_GRAD)"},
    {kCommSameDevice, "a SEND/RECV between two stages that sit on the same device"},
    {kUnmatchedSend, "a SEND that no RECV in the schedule can receive"},
    {kUnmatchedRecv, "a RECV that no SEND in the schedule can match (the device would wait forever)"},
    {kCommMissing, "a cross-device edge with neither SEND nor RECV (files that carry comms)"},
    {kCommOrder, "between two devices the k-th SEND and the k-th RECV carry different tensors "
                 "(NCCL matches by order)"},
    {kDeadlock, "under the chosen semantics the devices block each other (cycle) or wait for a "
                "partner that never comes"},
    {kMemoryLimit, "a device's peak memory (model states + live activations + stashes) exceeds the "
                   "limit"},
    {kCertificateMismatch, "a figure or the digest claimed in the certificate differs from the "
                           "recomputed one"},
    {kCertificateClaim, "a figure claimed in the certificate contradicts what the checker computes "
                        "itself (negative, or a makespan achieved below its lower bound)"},
}};

}  // namespace ps::rules
