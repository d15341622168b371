// placement.h — stage → device maps used by the baselines and the synthesizer.
//
// Guarantees: every function returns a vector with one device per stage, each in [0, devices);
// the named placements are pure functions of their arguments (deterministic). parse_placement
// accepts the names used on the command line and explicit comma-separated lists, and rejects
// anything else with a message that says what was expected.
//
//   sequential  stage s on device s                 (S == P; GPipe, 1F1B, ZB-H1/H2)
//   looped      stage s on device s mod P           (S == V·P; Megatron's interleaved 1F1B)
//   vshape      device d holds stages d and 2P−1−d  (S == 2P; ZB-V, DualPipeV)
//   zigzag      chunks of P stages, alternately 0..P−1 and P−1..0 (any S; the V-shape at S == 2P)
//   lpt         longest stage first to the least-loaded device (irregular stage times)
//   explicit    any list, e.g. "0,1,1,0"
#pragma once

#include <string>
#include <vector>

#include "ir/status.h"

namespace ps {

enum class PlacementKind { kSequential, kLooped, kVShape, kExplicit };
const char* placement_kind_name(PlacementKind k);  // "sequential", "looped", "vshape", "explicit"

// Stage s on device s. `stages` devices are used.
std::vector<int> placement_sequential(int stages);
// Stage s on device s mod devices.
std::vector<int> placement_looped(int stages, int devices);
// 2·devices stages: stage s < P on device s, stage s >= P on device 2P−1−s.
std::vector<int> placement_vshape(int devices);
// Chunk c = s / devices runs devices 0..P−1 when c is even, P−1..0 when odd.
std::vector<int> placement_zigzag(int stages, int devices);
// Longest-processing-time-first packing of stages (stage_ms: one microbatch's time per stage) onto
// devices: stages by decreasing time, each to the least-loaded device that does not hold its chain
// neighbours (when there is one), ties to the lower device id. Every device gets a stage when S >= P.
std::vector<int> placement_lpt(const std::vector<double>& stage_ms, int devices);

// Checks an explicit list: one entry per stage, each in [0, devices), every device used at least
// once (an idle device is almost certainly a typo; say so).
Result<std::vector<int>> placement_explicit(const std::vector<int>& device_of_stage, int stages,
                                            int devices);

// A stage → device list "0,1,1,0" (device numbers, comma-separated, no blanks); errors name the column.
Result<std::vector<int>> parse_device_list(const std::string& text);

// A placement word's canonical name: sequential, looped (interleaved, looped), vshape (v, vshape,
// v-shape); anything else (a list) unchanged.
std::string canonical_placement_word(const std::string& word);

// The placement of a kind for `stages` stages on `devices` devices (`list`: kExplicit's stage → device
// list, checked by placement_explicit; ignored otherwise). Errors name the expected shape, e.g.
// "vshape placement needs 2·P = 8 stages, got 6".
Result<std::vector<int>> make_placement(PlacementKind kind, const std::vector<int>& list, int stages, int devices);

// Reads a placement word (any alias above) or a list "0,1,2,3" for `stages` stages on `devices` devices:
// make_placement of what the word names.
Result<std::vector<int>> parse_placement(const std::string& text, int stages, int devices);

// Which named placement a vector is (kExplicit if none matches).
PlacementKind classify_placement(const std::vector<int>& placement, int devices);

}  // namespace ps
