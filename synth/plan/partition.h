// partition.h — the partitions the synthesizer chooses by name: the balanced partition (shared with
// the checker, ir/partition.h) and Megatron's even partition.
//
// Guarantees:
//  * even_partition is Megatron's default: leading embedding layers stay with the first stage,
//    trailing loss/MTP layers with the last (kinds as synth/plan/megatron_layout.h maps them: symbols
//    'E', 'L', 'm' or type kinds/names embedding, head, mtp), and the remaining ("decoder")
//    layers are split evenly; when they do not divide, the first stages get one extra layer each.
//    With fewer decoder layers than stages, all layers are split evenly instead.
//  * Results are deterministic.
#pragma once

#include <string>

#include "ir/partition.h"

namespace ps {

Result<Partition> even_partition(const Spec& spec, int stages);

// "balanced" | "balanced-memory" | "even" → the matching partition. (Megatron layout strings are
// read by synth/plan/megatron_layout.h because they also fix the placement.)
Result<Partition> partition_by_name(const Spec& spec, int stages, const std::string& method);
// The refusal of a word that names no method (and is no Megatron layout string).
Status unknown_partition(const std::string& method);
bool is_partition_method_name(const std::string& method);

}  // namespace ps
