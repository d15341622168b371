#include "synth/plan/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <numeric>

namespace ps {

const char* placement_kind_name(PlacementKind k) {
  switch (k) {
    case PlacementKind::kSequential:
      return "sequential";
    case PlacementKind::kLooped:
      return "looped";
    case PlacementKind::kVShape:
      return "vshape";
    case PlacementKind::kExplicit:
      return "explicit";
  }
  return "?";
}

std::vector<int> placement_sequential(int stages) {
  std::vector<int> p(static_cast<size_t>(std::max(stages, 0)));
  for (int s = 0; s < stages; ++s) p[s] = s;
  return p;
}

std::vector<int> placement_looped(int stages, int devices) {
  PS_ASSERT(devices > 0, "looped placement needs at least one device");
  std::vector<int> p(static_cast<size_t>(std::max(stages, 0)));
  for (int s = 0; s < stages; ++s) p[s] = s % devices;
  return p;
}

std::vector<int> placement_vshape(int devices) { return placement_zigzag(2 * std::max(devices, 0), devices); }

std::vector<int> placement_zigzag(int stages, int devices) {
  PS_ASSERT(devices > 0 || stages == 0, "a zigzag placement needs at least one device");
  std::vector<int> p(static_cast<size_t>(std::max(stages, 0)));
  for (int s = 0; s < stages; ++s) {
    const int c = s / devices, i = s % devices;
    p[s] = c % 2 == 0 ? i : devices - 1 - i;
  }
  return p;
}

std::vector<int> placement_lpt(const std::vector<double>& stage_ms, int devices) {
  constexpr double kEps = 1e-9;
  const int S = static_cast<int>(stage_ms.size());
  std::vector<int> order(S);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return stage_ms[a] > stage_ms[b] + kEps; });
  std::vector<int> p(S, -1);
  std::vector<double> load(devices, 0);
  for (int s : order) {
    int best = -1;
    for (int pass = 0; pass < 2 && best < 0; ++pass) {
      for (int d = 0; d < devices; ++d) {
        if (pass == 0 && ((s > 0 && p[s - 1] == d) || (s + 1 < S && p[s + 1] == d))) continue;
        if (best < 0 || load[d] < load[best] - kEps) best = d;
      }
    }
    p[s] = best;
    load[best] += stage_ms[s];
  }
  return p;
}

Result<std::vector<int>> placement_explicit(const std::vector<int>& device_of_stage, int stages,
                                            int devices) {
  if (static_cast<int>(device_of_stage.size()) != stages)
    return Status::bad_input(fmt::format("placement lists {} devices but there are {} stages",
                                         device_of_stage.size(), stages));
  std::vector<bool> used(static_cast<size_t>(std::max(devices, 0)), false);
  for (int s = 0; s < stages; ++s) {
    int d = device_of_stage[s];
    if (d < 0 || d >= devices)
      return Status::bad_input(fmt::format(
          "placement puts stage {} on device {}, expected a device in [0, {})", s, d, devices));
    used[d] = true;
  }
  for (int d = 0; d < devices; ++d)
    if (!used[d])
      return Status::bad_input(fmt::format(
          "placement leaves device {} without a stage (every one of the {} devices needs one)", d,
          devices));
  return device_of_stage;
}

Result<std::vector<int>> parse_device_list(const std::string& text) {
  std::vector<int> out;
  size_t i = 0;
  while (i <= text.size()) {
    size_t start = i;
    long long v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      v = v * 10 + (text[i] - '0');
      if (v > 1'000'000) break;
      ++i;
    }
    if (i == start || v > 1'000'000)
      return Status::bad_input(
          fmt::format("bad placement '{}' at column {}: expected sequential, looped, vshape or a "
                      "comma-separated list of device numbers such as 0,1,1,0",
                      text, start + 1));
    out.push_back(static_cast<int>(v));
    if (i == text.size()) break;
    if (text[i] != ',')
      return Status::bad_input(fmt::format(
          "bad placement '{}' at column {}: expected ',' between device numbers", text, i + 1));
    ++i;
  }
  return out;
}

std::string canonical_placement_word(const std::string& word) {
  if (word == "interleaved" || word == "looped") return "looped";
  if (word == "v" || word == "vshape" || word == "v-shape") return "vshape";
  return word;
}

Result<std::vector<int>> make_placement(PlacementKind kind, const std::vector<int>& list, int stages, int devices) {
  if (devices <= 0)
    return Status::bad_input(fmt::format("placement needs devices > 0, got {}", devices));
  switch (kind) {
    case PlacementKind::kSequential:
      if (stages != devices)
        return Status::bad_input(fmt::format(
            "sequential placement needs as many stages as devices (P = {}), got {} stages", devices,
            stages));
      return placement_sequential(stages);
    case PlacementKind::kLooped:
      if (stages % devices != 0)
        return Status::bad_input(fmt::format(
            "looped placement needs a multiple of P = {} stages, got {}", devices, stages));
      return placement_looped(stages, devices);
    case PlacementKind::kVShape:
      if (stages != 2 * devices)
        return Status::bad_input(
            fmt::format("vshape placement needs 2·P = {} stages, got {}", 2 * devices, stages));
      return placement_vshape(devices);
    case PlacementKind::kExplicit: break;
  }
  return placement_explicit(list, stages, devices);
}

Result<std::vector<int>> parse_placement(const std::string& word, int stages, int devices) {
  const std::string text = canonical_placement_word(word);
  if (devices <= 0)
    return Status::bad_input(fmt::format("placement needs devices > 0, got {}", devices));
  if (text == "sequential") return make_placement(PlacementKind::kSequential, {}, stages, devices);
  if (text == "looped") return make_placement(PlacementKind::kLooped, {}, stages, devices);
  if (text == "vshape") return make_placement(PlacementKind::kVShape, {}, stages, devices);
  auto list = parse_device_list(text);
  if (!list.ok()) return list.status();
  return make_placement(PlacementKind::kExplicit, *list, stages, devices);
}

PlacementKind classify_placement(const std::vector<int>& placement, int devices) {
  int stages = static_cast<int>(placement.size());
  if (devices > 0 && stages == devices && placement == placement_sequential(stages))
    return PlacementKind::kSequential;
  if (devices > 0 && stages == 2 * devices && placement == placement_vshape(devices))
    return PlacementKind::kVShape;
  if (devices > 0 && stages % devices == 0 && placement == placement_looped(stages, devices))
    return PlacementKind::kLooped;
  return PlacementKind::kExplicit;
}

}  // namespace ps
