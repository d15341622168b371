// moves.cpp — seeds, the timeline diagnosis and the moves of the tuner (see moves.h).
#include "ir/units.h"
#include "synth/tuner/moves.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <numeric>

#include "ir/problem.h"
#include "synth/baselines/baselines.h"
#include "synth/plan/partition.h"
#include "synth/plan/placement.h"

namespace ps::tuner_detail {

const char* diagnosis_name(Diagnosis d) {
  switch (d) {
    case Diagnosis::kMemory: return "memory";
    case Diagnosis::kImbalance: return "imbalance";
    case Diagnosis::kBoundary: return "boundary idle";
    case Diagnosis::kResidual: return "residual idle";
  }
  return "?";
}

namespace {

constexpr double kEps = 1e-9;

int argmax(const std::vector<double>& v) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(v.size()); ++i)
    if (v[i] > v[best] + kEps) best = i;
  return best;
}
int argmin(const std::vector<double>& v) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(v.size()); ++i)
    if (v[i] < v[best] - kEps) best = i;
  return best;
}

int stage_layers(const std::vector<int>& cuts, int s) { return cuts[s + 1] - cuts[s]; }

double range_sum(const std::vector<double>& per_layer, int first, int end) {
  double x = 0;
  for (int l = first; l < end; ++l) x += per_layer[l];
  return x;
}

std::vector<double> device_sums(const SearchSpace& sp, const std::vector<int>& cuts,
                                const std::vector<int>& placement, const std::vector<double>& per_layer) {
  std::vector<double> out(sp.devices, 0);
  for (size_t s = 0; s < placement.size(); ++s) out[placement[s]] += range_sum(per_layer, cuts[s], cuts[s + 1]);
  return out;
}

// Longest-processing-time-first placement of the stages that `cuts` makes (synth/plan/placement.h).
std::vector<int> lpt_placement_of(const SearchSpace& sp, const std::vector<int>& cuts) {
  const int S = static_cast<int>(cuts.size()) - 1;
  std::vector<double> t(S);
  for (int s = 0; s < S; ++s) t[s] = range_sum(sp.layer_ms, cuts[s], cuts[s + 1]);
  return placement_lpt(t, sp.devices);
}

// One layer per stage on devices d0..d0+nd-1: the first nd of `layers` (chain order) one per
// device, so that every device can start early; the others heaviest first, each to the least loaded
// device (longest processing time first); then polished: while it lowers the larger of the two
// loads, move one layer off the most loaded device, or swap one of its layers with another
// device's, or two of its layers for one, or one for two (first improvement, deterministic; the
// polish may move the first layers too: pinning them gives worse seeds on most shipped models).
//
// With `ramp` (per layer: its forward prefix over M, in ms per microbatch), a device whose first
// layer is deeper in the chain starts later, and that start counts as load: device i's load starts
// at ramp[layers[i]], and the first nd layers stay where they are (they define those starts).
//
// With `fwd` as well (per layer: its forward time), the start is not the first layer's ramp but the
// forward-weighted mean of the device's layers' ramps: in the warm-up a device runs only forwards and
// its stages get inputs at the chain's pace, so it waits about that long in all (docs/tuner.md,
// Limits). Device i's cost is then its load + that mean, and the packing and the polish balance it.
//
// With `bands`, the layers (chain order) are dealt in bands of nd, one layer of every band per
// device (a band's heaviest layer to the least-loaded device), and the polish only swaps two
// layers of the same or neighbouring bands. Each device then holds a layer in every stretch of the
// chain, as with a looped placement, and has forwards to run in the warm-up as soon as the first
// microbatch reaches that stretch; plain packing can leave a device's layers far apart along the
// chain, and it idles until the first microbatch gets to its second layer (docs/tuner.md, P = 16).
void pack_layers(const SearchSpace& sp, const std::vector<int>& layers, int d0, int nd, std::vector<int>& dev,
                 const std::vector<double>* ramp = nullptr, bool bands = false, const std::vector<double>* fwd = nullptr) {
  if (nd <= 0) return;  // no devices (callers pass P / nodes >= 1); also keeps used[] non-empty
  const int n = static_cast<int>(layers.size());
  std::vector<double> load(nd, 0);
  std::vector<double> sf(nd, 0), sfa(nd, 0);  // with fwd: per device, sum of F and of F x arrival
  const bool weighted = fwd && ramp;
  // Device k's cost (its load, plus with fwd its mean ramp) after adding dl, df and dfa to its sums.
  auto cost_with = [&](int k, double dl, double df, double dfa) {
    const double f = sf[k] + df;
    return load[k] + dl + (weighted && f > 0 ? (sfa[k] + dfa) / f : 0.0);
  };
  auto cost = [&](int k) { return cost_with(k, 0, 0, 0); };
  std::vector<int> band(sp.layers, 0);
  std::vector<int> order = layers;  // the first nd in chain order, the rest heaviest first (per band)
  for (int i = 0; i < n; ++i) band[layers[i]] = i / nd;
  const auto heavier = [&](int a, int b) { return sp.layer_ms[a] > sp.layer_ms[b] + kEps; };
  if (bands)
    for (int b0 = nd; b0 < n; b0 += nd) std::stable_sort(order.begin() + b0, order.begin() + std::min(b0 + nd, n), heavier);
  else if (n > nd)
    std::stable_sort(order.begin() + nd, order.end(), heavier);
  std::vector<char> used(nd, 0);  // bands: devices that already hold a layer of this band
  for (int i = 0; i < n; ++i) {
    const int l = order[i];
    if (i % nd == 0) std::fill(used.begin(), used.end(), 0);
    int d = i;
    if (i >= nd) {
      d = -1;
      for (int k = 0; k < nd; ++k)  // a band has at most nd layers: some device is free
        if (!(bands && used[k]) && (d < 0 || cost(k) < cost(d) - kEps)) d = k;
    }
    used[d] = 1;
    dev[l] = d0 + d;
    load[d] += sp.layer_ms[l] + (ramp && !weighted && i < nd ? (*ramp)[l] : 0.0);
    if (weighted) {
      sf[d] += (*fwd)[l];
      sfa[d] += (*fwd)[l] * (*ramp)[l];
    }
  }
  const int pinned = ramp ? std::min(nd, n) : 0;  // layers[0..pinned) do not move
  // Layers `give` (on the busiest device hi) go to device `to`, layers `take` (on `to`) come back,
  // if that lowers the larger of the two costs (loads, or load + mean ramp with fwd).
  std::vector<char> fixed(sp.layers, 0);
  for (int i = 0; i < pinned; ++i) fixed[layers[i]] = 1;
  auto exchange = [&](int hi, int to, std::initializer_list<int> give, std::initializer_list<int> take) {
    if (bands && (give.size() != 1 || take.size() != 1 || std::abs(band[*give.begin()] - band[*take.begin()]) > 1))
      return false;
    for (int l : give)
      if (fixed[l]) return false;
    for (int l : take)
      if (fixed[l]) return false;
    if (to == hi) return false;
    double delta = 0, df = 0, dfa = 0;
    for (int l : give) delta += sp.layer_ms[l];
    for (int l : take) delta -= sp.layer_ms[l];
    if (weighted) {
      for (int l : give) df += (*fwd)[l], dfa += (*fwd)[l] * (*ramp)[l];
      for (int l : take) df -= (*fwd)[l], dfa -= (*fwd)[l] * (*ramp)[l];
    }
    const int h = hi - d0, t = to - d0;
    const double before = cost(h);
    if (cost_with(h, -delta, -df, -dfa) >= before - kEps || cost_with(t, delta, df, dfa) >= before - kEps) return false;
    load[h] -= delta, sf[h] -= df, sfa[h] -= dfa;
    load[t] += delta, sf[t] += df, sfa[t] += dfa;
    for (int l : give) dev[l] = to;
    for (int l : take) dev[l] = hi;
    return true;
  };
  for (int iter = 0; iter < 4 * n * nd; ++iter) {
    int hi = d0;
    for (int k = 1; k < nd; ++k)
      if (cost(k) > cost(hi - d0) + kEps) hi = d0 + k;
    bool moved = false;
    for (int ia = 0; ia < n && !moved; ++ia) {  // move a, or swap it with a lighter b
      const int a = layers[ia];
      if (dev[a] != hi) continue;
      for (int d = d0; d < d0 + nd && !moved; ++d) moved = exchange(hi, d, {a}, {});
      for (int ib = 0; ib < n && !moved; ++ib) moved = exchange(hi, dev[layers[ib]], {a}, {layers[ib]});
    }
    for (int ia = 0; ia < n && !moved; ++ia) {  // two for one, one for two
      const int a = layers[ia];
      if (dev[a] != hi) continue;
      for (int ia2 = ia + 1; ia2 < n && !moved; ++ia2)
        for (int ib = 0; ib < n && !moved && dev[layers[ia2]] == hi; ++ib)
          moved = exchange(hi, dev[layers[ib]], {a, layers[ia2]}, {layers[ib]});
      for (int ib = 0; ib < n && !moved; ++ib)
        for (int ib2 = ib + 1; ib2 < n && !moved; ++ib2)
          if (dev[layers[ib2]] == dev[layers[ib]]) moved = exchange(hi, dev[layers[ib]], {a}, {layers[ib], layers[ib2]});
    }
    if (!moved) break;
  }
}

// One layer per stage, packed onto devices by load (pack_layers), on `nodes` nodes of P / nodes
// devices: the chain is cut into pieces (piece i = layers [piece_cuts[i], piece_cuts[i + 1]), on
// node piece_node[i]); each node's layers, in chain order, are packed onto its devices, so the
// chain crosses between nodes only between pieces. Returns the device of every layer.
std::vector<int> pack_pieces(const SearchSpace& sp, int nodes, const std::vector<int>& piece_cuts,
                             const std::vector<int>& piece_node, const std::vector<double>* ramp, bool bands,
                             const std::vector<double>* fwd) {
  const int per = sp.devices / nodes;
  std::vector<int> dev(sp.layers, 0);
  std::vector<std::vector<int>> node_layers(nodes);
  for (size_t i = 0; i < piece_node.size(); ++i)
    for (int l = piece_cuts[i]; l < piece_cuts[i + 1]; ++l) node_layers[piece_node[i]].push_back(l);
  for (int k = 0; k < nodes; ++k) pack_layers(sp, node_layers[k], k * per, per, dev, ramp, bands, fwd);
  return dev;
}

// The busiest device's load; with `ramp`, plus the ramp of the device's first layer (with `fwd`: the
// forward-weighted mean ramp of its layers, as pack_layers counts it).
double max_device_load(const SearchSpace& sp, const std::vector<int>& dev, const std::vector<double>* ramp,
                       const std::vector<double>* fwd) {
  std::vector<double> load(sp.devices, 0), sf(sp.devices, 0), sfa(sp.devices, 0);
  std::vector<char> started(sp.devices, 0);
  for (int l = 0; l < sp.layers; ++l) {
    load[dev[l]] += sp.layer_ms[l];
    if (ramp && fwd) {
      sf[dev[l]] += (*fwd)[l];
      sfa[dev[l]] += (*fwd)[l] * (*ramp)[l];
    } else if (ramp && !started[dev[l]]) {
      load[dev[l]] += (*ramp)[l];
    }
    started[dev[l]] = 1;
  }
  for (int d = 0; d < sp.devices; ++d)
    if (sf[d] > 0) load[d] += sfa[d] / sf[d];
  return *std::max_element(load.begin(), load.end());
}

// pack_pieces; with `refine_cuts`, the cuts between pieces are moved (by 1-4, 6, 8, 12 or 16 layers
// either way) where that lowers the busiest device's load — one cut at a time, then two at once,
// until no move helps (at most 8 passes and 4000 packings): a node's total that is right on average
// can still be the wrong mix of layers for its devices, e.g. 17 MoE layers for 8 devices. Then
// neighbours on one device merge into one stage.
void packed_pieces(const SearchSpace& sp, int nodes, std::vector<int> piece_cuts, const std::vector<int>& piece_node,
                   bool refine_cuts, const std::vector<double>* ramp, bool bands, const std::vector<double>* fwd,
                   std::vector<int>& cuts,
                   std::vector<int>& placement) {
  std::vector<int> dev = pack_pieces(sp, nodes, piece_cuts, piece_node, ramp, bands, fwd);
  double best = max_device_load(sp, dev, ramp, fwd);
  const int inner = refine_cuts ? static_cast<int>(piece_cuts.size()) - 2 : 0;  // cuts between pieces: 1..inner
  // Moves cut i by di and cut j by dj (j = 0: only cut i); keeps it if the busiest load drops.
  // At most kTries packings (each O(layers^3) at worst): many nodes and pieces stay affordable.
  constexpr int kTries = 4000;
  int tries = 0;
  auto try_move = [&](int i, int di, int j, int dj) {
    if (++tries > kTries) return false;
    std::vector<int> pc = piece_cuts;
    pc[i] += di;
    if (j > 0) pc[j] += dj;
    for (int k = 1; k <= inner; ++k)
      if (pc[k] <= pc[k - 1] || pc[k] >= pc[k + 1]) return false;
    std::vector<int> d2 = pack_pieces(sp, nodes, pc, piece_node, ramp, bands, fwd);
    const double m = max_device_load(sp, d2, ramp, fwd);
    if (m >= best - kEps) return false;
    best = m;
    piece_cuts = std::move(pc);
    dev = std::move(d2);
    return true;
  };
  const int steps[] = {-16, -12, -8, -6, -4, -3, -2, -1, 1, 2, 3, 4, 6, 8, 12, 16};
  for (int pass = 0; pass < 8; ++pass) {
    bool improved = false;
    for (int i = 1; i <= inner; ++i)
      for (int di : steps) improved |= try_move(i, di, 0, 0);
    // Two cuts at once: a node that needs fewer of some layer type but the same total must give
    // at one end of its piece and take at another.
    for (int i = 1; i <= inner && !improved; ++i)
      for (int j = i + 1; j <= inner; ++j)
        for (int di : steps)
          for (int dj : steps) improved |= try_move(i, di, j, dj);
    if (!improved) break;
  }
  cuts = {0};
  placement.clear();
  for (int j = 0; j < sp.layers; ++j) {
    if (j > 0 && dev[j] == dev[j - 1]) continue;
    if (j > 0) cuts.push_back(j);
    placement.push_back(dev[j]);
  }
  cuts.push_back(sp.layers);
}

// The first layer at or after `from` where the prefix load reaches `target` (the nearer side of
// it), leaving `keep` layers after it.
int cut_at_load(const std::vector<double>& pre, int from, double target, int keep) {
  const int n = static_cast<int>(pre.size()) - 1;
  int c = from + 1;
  while (c < n - keep && pre[c] + (pre[c + 1] - pre[c]) / 2 <= target) ++c;
  return std::min(c, n - keep);
}

// Pieces for packed_pieces on `nodes` nodes. Zigzag: `segments` pieces of equal load dealt to nodes
// 0, 1, .., k-1, k-1, .., 0, 0, 1, ... V with short fronts (`front_layers` > 0): node i first gets
// the next front_layers layers (i = 0..k-1: every device can hold a layer near the start of the
// chain and start early), then the rest of the chain goes back over the nodes k-1..0, each piece
// cut where that node's total load reaches 1/k of the model.
void node_pieces(const SearchSpace& sp, int nodes, int segments, int front_layers, std::vector<int>& piece_cuts,
                 std::vector<int>& piece_node) {
  const int n = sp.layers;
  std::vector<double> pre(n + 1, 0);
  for (int l = 0; l < n; ++l) pre[l + 1] = pre[l] + sp.layer_ms[l];
  const double total = pre[n];
  piece_cuts = {0};
  piece_node.clear();
  auto push = [&](int end, int node) {
    if (end <= piece_cuts.back()) return;
    if (!piece_node.empty() && piece_node.back() == node) piece_cuts.back() = end;
    else {
      piece_cuts.push_back(end);
      piece_node.push_back(node);
    }
  };
  if (front_layers <= 0) {
    for (int g = 0; g < segments; ++g) {
      const int round = g / nodes, i = g % nodes;
      const int node = round % 2 == 0 ? i : nodes - 1 - i;
      push(g + 1 == segments ? n : cut_at_load(pre, piece_cuts.back(), total * (g + 1) / segments, segments - g - 1), node);
    }
    return;
  }
  std::vector<double> front(nodes, 0);
  for (int i = 0; i < nodes; ++i) {
    const int from = piece_cuts.back();
    const int end = std::min(from + front_layers, n - (2 * nodes - 1 - i));
    front[i] = pre[end] - pre[from];
    push(end, i);
  }
  for (int i = nodes - 1; i >= 0; --i) {
    const int from = piece_cuts.back();
    push(i == 0 ? n : cut_at_load(pre, from, pre[from] + total / nodes - front[i], i), i);
  }
}

std::vector<int> to_cuts(const Partition& p) {
  std::vector<int> cuts{0};
  for (const LayerRange& r : p) cuts.push_back(r.last + 1);
  return cuts;
}

// A list-scheduled candidate (policy set 0, no baseline order): what every move produces.
Candidate heuristic_candidate(std::vector<int> cuts, std::vector<int> placement, MoveKind kind, std::string origin) {
  Candidate n;
  n.cuts = std::move(cuts);
  n.placement = std::move(placement);
  n.kind = kind;
  n.origin = std::move(origin);
  return n;
}

// Shifts the boundary between stage b and b+1 (cut b+1) by delta layers: +1 moves stage b+1's first
// layer into stage b, -1 moves stage b's last layer into stage b+1. Fails if a stage would be empty.
bool shift_cut(std::vector<int>& cuts, int b, int delta) {
  const int S = static_cast<int>(cuts.size()) - 1;
  if (b < 0 || b + 1 >= S) return false;
  const int c = cuts[b + 1] + delta;
  if (c <= cuts[b] || c >= cuts[b + 2]) return false;
  cuts[b + 1] = c;
  return true;
}

std::vector<int> split_stage_cuts(const SearchSpace& sp, const std::vector<int>& cuts, int s) {
  // Cut stage s where the prefix time comes closest to half of it (at least one layer each side).
  const int a = cuts[s], b = cuts[s + 1];
  const double half = range_sum(sp.layer_ms, a, b) / 2;
  double acc = 0, best_err = std::numeric_limits<double>::infinity();
  int best = a + 1;
  for (int l = a; l + 1 < b; ++l) {
    acc += sp.layer_ms[l];
    const double err = std::abs(acc - half);
    if (err < best_err - kEps) {
      best_err = err;
      best = l + 1;
    }
  }
  std::vector<int> out(cuts.begin(), cuts.begin() + s + 1);
  out.push_back(best);
  out.insert(out.end(), cuts.begin() + s + 1, cuts.end());
  return out;
}

// Per-stage choices of `from` (its recompute modes, its fused stages) carried onto a plan with other
// cuts: each stage takes the choice of the stage of `from` that holds its first layer (empty when
// `from` has none).
template <typename T>
std::vector<T> inherit_by_first_layer(const Candidate& from, const std::vector<T>& choice, const std::vector<int>& cuts) {
  if (choice.empty()) return {};
  std::vector<T> out;
  size_t src = 0;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) {
    while (src + 1 < choice.size() && from.cuts[src + 1] <= cuts[s]) ++src;
    out.push_back(choice[src]);
  }
  return out;
}

struct MoveSink {
  const SearchSpace& sp;
  std::vector<Candidate>& out;
  const Candidate* from = nullptr;  // the candidate the moves start from: its per-stage choices carry over

  void add(std::vector<int> cuts, std::vector<int> placement, MoveKind kind, std::string origin) {
    Candidate n = heuristic_candidate(std::move(cuts), std::move(placement), kind, std::move(origin));
    if (from) {
      n.recompute = inherit_by_first_layer(*from, from->recompute, n.cuts);
      n.fused = inherit_by_first_layer(*from, from->fused, n.cuts);
    }
    if (finish_candidate(sp, n)) out.push_back(std::move(n));
  }
  // The move and, when it differs, the move followed by a device-aware rebalance.
  void add_with_rebalance(std::vector<int> cuts, std::vector<int> placement, MoveKind kind, const std::string& origin) {
    if (!sp.fixed_partition) {
      std::vector<int> rb = rebalance_cuts(sp, cuts, placement, false);
      if (rb != cuts) add(std::move(rb), placement, kind, origin + " + rebalance");
    }
    add(std::move(cuts), std::move(placement), kind, origin);
  }
};

void partition_moves(const SearchSpace& sp, const Candidate& c, const Evaluation& e, MoveSink& sink) {
  if (sp.fixed_partition) return;
  const int S = c.stages();
  const int heavy = argmax(e.load_ms), light = argmin(e.load_ms);
  const auto& pl = c.placement;
  {
    std::vector<int> rb = rebalance_cuts(sp, c.cuts, pl, false);
    if (rb != c.cuts) sink.add(std::move(rb), pl, MoveKind::kPartition, "rebalance device loads");
  }
  for (int s = 0; s < S; ++s) {
    if (pl[s] == heavy) {
      for (int k : {1, 2}) {
        if (stage_layers(c.cuts, s) <= k) continue;
        if (s > 0 && pl[s - 1] != heavy) {
          std::vector<int> cuts = c.cuts;
          if (shift_cut(cuts, s - 1, k))
            sink.add(std::move(cuts), pl, MoveKind::kPartition,
                     fmt::format("give {} first layer(s) of stage {} to stage {}", k, s, s - 1));
        }
        if (s + 1 < S && pl[s + 1] != heavy) {
          std::vector<int> cuts = c.cuts;
          if (shift_cut(cuts, s, -k))
            sink.add(std::move(cuts), pl, MoveKind::kPartition,
                     fmt::format("give {} last layer(s) of stage {} to stage {}", k, s, s + 1));
        }
      }
    }
    if (pl[s] == light && light != heavy) {
      if (s > 0 && pl[s - 1] != light && stage_layers(c.cuts, s - 1) > 1) {
        std::vector<int> cuts = c.cuts;
        if (shift_cut(cuts, s - 1, -1))
          sink.add(std::move(cuts), pl, MoveKind::kPartition, fmt::format("stage {} takes a layer from stage {}", s, s - 1));
      }
      if (s + 1 < S && pl[s + 1] != light && stage_layers(c.cuts, s + 1) > 1) {
        std::vector<int> cuts = c.cuts;
        if (shift_cut(cuts, s, 1))
          sink.add(std::move(cuts), pl, MoveKind::kPartition, fmt::format("stage {} takes a layer from stage {}", s, s + 1));
      }
    }
  }
}

void placement_moves(const SearchSpace& sp, const Candidate& c, const Evaluation& e, MoveSink& sink) {
  if (sp.fixed_placement) return;
  const int S = c.stages();
  const int heavy = argmax(e.load_ms), light = argmin(e.load_ms);
  const auto& pl = c.placement;
  std::vector<int> count(sp.devices, 0);
  for (int d : pl) ++count[d];
  auto stage_ms = [&](int s) { return range_sum(sp.layer_ms, c.cuts[s], c.cuts[s + 1]); };

  // Split: the heaviest stage of the busiest device, and the heaviest stage overall.
  if (!sp.fixed_partition && S + 1 <= sp.max_stages) {
    std::vector<int> targets;
    int hs = -1, gs = -1;
    for (int s = 0; s < S; ++s) {
      if (stage_layers(c.cuts, s) < 2) continue;
      if (pl[s] == heavy && (hs < 0 || stage_ms(s) > stage_ms(hs) + kEps)) hs = s;
      if (gs < 0 || stage_ms(s) > stage_ms(gs) + kEps) gs = s;
    }
    if (hs >= 0) targets.push_back(hs);
    if (gs >= 0 && gs != hs) targets.push_back(gs);
    for (int s : targets) {
      std::vector<int> cuts = split_stage_cuts(sp, c.cuts, s);
      for (int half : {0, 1}) {
        std::vector<int> p = pl;
        p.insert(p.begin() + s + 1, pl[s]);
        if (light != pl[s]) p[s + half] = light;
        sink.add_with_rebalance(cuts, std::move(p), MoveKind::kPlacement,
                                fmt::format("split stage {}, {} half to device {}", s, half ? "second" : "first", light));
      }
    }
  }
  // Move a stage of the busiest device to the idlest one (uneven stage counts allowed).
  if (count[heavy] >= 2 && light != heavy) {
    for (int s = 0; s < S; ++s) {
      if (pl[s] != heavy) continue;
      std::vector<int> p = pl;
      p[s] = light;
      sink.add_with_rebalance(c.cuts, std::move(p), MoveKind::kPlacement,
                              fmt::format("move stage {} from device {} to {}", s, heavy, light));
    }
  }
  // Swap stages between the busiest and the idlest device.
  if (light != heavy) {
    int swaps = 0;
    for (int s = 0; s < S && swaps < 16; ++s) {
      if (pl[s] != heavy) continue;
      for (int t = 0; t < S && swaps < 16; ++t) {
        if (pl[t] != light) continue;
        std::vector<int> p = pl;
        std::swap(p[s], p[t]);
        ++swaps;
        sink.add_with_rebalance(c.cuts, std::move(p), MoveKind::kPlacement,
                                fmt::format("swap stages {} and {} (devices {} and {})", s, t, heavy, light));
      }
    }
  }
  // Swap neighbours in the chain when one of them sits on the busiest or idlest device.
  for (int s = 0; s + 1 < S; ++s) {
    if (pl[s] == pl[s + 1]) continue;
    if (pl[s] != heavy && pl[s + 1] != heavy && pl[s] != light && pl[s + 1] != light) continue;
    std::vector<int> p = pl;
    std::swap(p[s], p[s + 1]);
    sink.add_with_rebalance(c.cuts, std::move(p), MoveKind::kPlacement, fmt::format("swap devices of stages {} and {}", s, s + 1));
  }
  // Adjacent stages on one device: disperse (second one to the idlest device) or merge.
  for (int s = 0; s + 1 < S; ++s) {
    if (pl[s] != pl[s + 1]) continue;
    int target = light;
    if (target == pl[s]) {
      std::vector<double> l2 = e.load_ms;
      l2[pl[s]] = std::numeric_limits<double>::infinity();
      target = argmin(l2);
    }
    if (target != pl[s]) {
      std::vector<int> p = pl;
      p[s + 1] = target;
      sink.add_with_rebalance(c.cuts, std::move(p), MoveKind::kPlacement,
                              fmt::format("disperse stage {} to device {}", s + 1, target));
    }
    if (!sp.fixed_partition && S - 1 >= sp.devices) {
      std::vector<int> cuts = c.cuts;
      cuts.erase(cuts.begin() + s + 1);
      std::vector<int> p = pl;
      p.erase(p.begin() + s + 1);
      sink.add_with_rebalance(std::move(cuts), std::move(p), MoveKind::kPlacement,
                              fmt::format("merge stages {} and {} on device {}", s, s + 1, pl[s]));
    }
  }
}

void schedule_moves(const Candidate& c, MoveSink& sink, const SearchSpace& sp) {
  if (c.baseline >= 0) {
    sink.add(c.cuts, c.placement, MoveKind::kSchedule, "list-schedule the baseline's partition and placement");
    return;
  }
  if (c.policy_set == 0) {
    Candidate n = c;
    n.policy_set = sp.search_policy_set;
    n.kind = MoveKind::kSchedule;
    n.origin = "extended scheduling portfolio";
    if (finish_candidate(sp, n)) sink.out.push_back(std::move(n));
  }
}

void memory_moves(const SearchSpace& sp, const Candidate& c, const Evaluation& e, MoveSink& sink) {
  if (e.min_footprint_mb.empty()) return;
  const int S = c.stages();
  const auto& pl = c.placement;
  const int over = argmax(e.min_footprint_mb), roomy = argmin(e.min_footprint_mb);
  if (!sp.fixed_partition) {
    std::vector<int> rb = rebalance_cuts(sp, c.cuts, pl, true);
    if (rb != c.cuts) sink.add(std::move(rb), pl, MoveKind::kMemory, "rebalance device memory");
    for (int s = 0; s < S; ++s) {
      if (pl[s] != over || stage_layers(c.cuts, s) < 2) continue;
      if (s > 0 && pl[s - 1] != over) {
        std::vector<int> cuts = c.cuts;
        if (shift_cut(cuts, s - 1, 1))
          sink.add(std::move(cuts), pl, MoveKind::kMemory, fmt::format("memory: stage {} gives a layer to stage {}", s, s - 1));
      }
      if (s + 1 < S && pl[s + 1] != over) {
        std::vector<int> cuts = c.cuts;
        if (shift_cut(cuts, s, -1))
          sink.add(std::move(cuts), pl, MoveKind::kMemory, fmt::format("memory: stage {} gives a layer to stage {}", s, s + 1));
      }
    }
  }
  if (!sp.fixed_placement && over != roomy) {
    int count = 0;
    for (int d : pl) count += d == over;
    for (int s = 0; s < S && count >= 2; ++s) {
      if (pl[s] != over) continue;
      std::vector<int> p = pl;
      p[s] = roomy;
      sink.add(c.cuts, p, MoveKind::kMemory, fmt::format("memory: move stage {} to device {}", s, roomy));
      if (!sp.fixed_partition) {
        std::vector<int> rb = rebalance_cuts(sp, c.cuts, p, true);
        if (rb != c.cuts) sink.add(std::move(rb), std::move(p), MoveKind::kMemory,
                                   fmt::format("memory: move stage {} to device {} + rebalance memory", s, roomy));
      }
    }
  }
}

// MB of activation stage s of `c` drops under `mode`.
double stage_drop_mb(const SearchSpace& sp, const Candidate& c, int s, RecomputeMode mode) {
  if (mode == RecomputeMode::kNone) return 0;
  const std::vector<double>& drop = mode == RecomputeMode::kFull ? sp.layer_drop_full : sp.layer_drop_selective;
  double mb = 0;
  for (int l = c.cuts[s]; l < c.cuts[s + 1] && l < static_cast<int>(drop.size()); ++l) mb += drop[l];
  return mb;
}

// The recompute modes as the space's RecomputeChoice has them (see finish_candidate).
void normalize_recompute(const SearchSpace& sp, Candidate& c) {
  const int S = c.stages();
  switch (sp.recompute) {
    case RecomputeChoice::kNone: c.recompute.clear(); return;
    case RecomputeChoice::kSelective: c.recompute.assign(S, RecomputeMode::kSelective); return;
    case RecomputeChoice::kFull: c.recompute.assign(S, RecomputeMode::kFull); return;
    case RecomputeChoice::kSearch: break;
  }
  if (c.recompute.empty()) return;
  c.recompute.resize(S, RecomputeMode::kNone);
  bool any = false;
  for (int s = 0; s < S; ++s) {
    if (c.recompute[s] != RecomputeMode::kNone && !(stage_drop_mb(sp, c, s, c.recompute[s]) > 0))
      c.recompute[s] = RecomputeMode::kNone;
    any = any || c.recompute[s] != RecomputeMode::kNone;
  }
  if (!any) c.recompute.clear();
}

// Whether stage s of `c` may run B by choice: all its layers split, and B saves time there.
bool may_fuse(const SearchSpace& sp, const Candidate& c, int s) {
  double gain = sp.spec->cluster.op_overhead_ms;  // the W op it drops
  for (int l = c.cuts[s]; l < c.cuts[s + 1]; ++l) {
    if (l >= static_cast<int>(sp.layer_splits.size()) || !sp.layer_splits[l]) return false;
    gain += sp.layer_fuse_gain_ms[l];
    if (l < static_cast<int>(sp.layer_walk_ms.size())) gain += sp.layer_walk_ms[l] * (l - c.cuts[s]);  // and W's walk
  }
  return gain > 1e-9;
}

// The fused stages as finish_candidate has them.
void normalize_fused(const SearchSpace& sp, Candidate& c) {
  if (!sp.fuse_choice) c.fused.clear();
  if (c.fused.empty()) return;
  const int S = c.stages();
  c.fused.resize(S, 0);
  bool any = false;
  for (int s = 0; s < S; ++s) {
    if (c.fused[s] && !may_fuse(sp, c, s)) c.fused[s] = 0;
    any = any || c.fused[s];
  }
  if (!any) c.fused.clear();
}

// One step up (none → selective → full; selective skipped where it drops nothing) or down.
RecomputeMode step_mode(const SearchSpace& sp, const Candidate& c, int s, RecomputeMode m, bool up) {
  if (up) {
    if (m == RecomputeMode::kNone && stage_drop_mb(sp, c, s, RecomputeMode::kSelective) > 0) return RecomputeMode::kSelective;
    return RecomputeMode::kFull;
  }
  if (m == RecomputeMode::kFull && stage_drop_mb(sp, c, s, RecomputeMode::kSelective) > 0) return RecomputeMode::kSelective;
  return RecomputeMode::kNone;
}

}  // namespace

std::vector<Candidate> recompute_moves(const SearchSpace& sp, const Candidate& c, const Evaluation& e) {
  std::vector<Candidate> out;
  if (sp.recompute != RecomputeChoice::kSearch || !sp.memory_limited || c.baseline >= 0) return out;
  const int S = c.stages();
  const int P = sp.devices;
  std::vector<RecomputeMode> cur = c.recompute;
  cur.resize(S, RecomputeMode::kNone);
  // A candidate with the modes of the stages on the marked devices a step up (or down), when that
  // changes any.
  auto add = [&](const std::vector<char>& devices, bool up, std::string origin) {
    Candidate n = c;
    n.recompute = cur;
    n.kind = MoveKind::kRecompute;
    n.origin = std::move(origin);
    bool changed = false;
    for (int s = 0; s < S; ++s) {
      if (!devices[c.placement[s]]) continue;
      const RecomputeMode m = cur[s];
      if ((up && m == RecomputeMode::kFull) || (!up && m == RecomputeMode::kNone)) continue;
      const RecomputeMode next = step_mode(sp, c, s, m, up);
      changed = changed || next != m;
      n.recompute[s] = next;
    }
    if (changed && finish_candidate(sp, n) && n.key() != c.key()) out.push_back(std::move(n));
  };
  const double cap_mb = gb_to_mb(sp.spec->cluster.memory_gb);
  std::vector<char> over(P, 0), tight(P, 0), roomy(P, 0);
  int worst = -1;
  for (int d = 0; d < P && d < static_cast<int>(e.min_footprint_mb.size()); ++d) {
    over[d] = e.min_footprint_mb[d] > cap_mb;
    tight[d] = over[d] || (d < static_cast<int>(e.memory_tight.size()) && e.memory_tight[d]);
    roomy[d] = e.feasible && !tight[d];
    if (over[d] && (worst < 0 || e.min_footprint_mb[d] > e.min_footprint_mb[worst])) worst = d;
  }
  if (worst >= 0) {
    std::vector<char> one(P, 0);
    one[worst] = 1;
    add(one, true, fmt::format("recompute: raise the modes of device {} (over its memory)", worst));
  }
  if (std::count(tight.begin(), tight.end(), 1) > 0)
    add(tight, true, "recompute: raise the modes of the devices whose memory binds");
  if (!c.recompute.empty()) {
    for (int d = 0; d < P; ++d) {
      if (!roomy[d]) continue;
      std::vector<char> one(P, 0);
      one[d] = 1;
      add(one, false, fmt::format("recompute: lower the modes of device {}", d));
    }
    add(std::vector<char>(P, 1), false, "recompute: lower every stage's mode");
  }
  return out;
}

std::optional<Candidate> with_uniform_recompute(const SearchSpace& sp, const Candidate& c, RecomputeMode mode) {
  Candidate n = c;
  n.recompute.assign(c.stages(), mode);
  n.kind = MoveKind::kRecompute;
  n.origin = fmt::format("{}, {} recomputation", c.origin, recompute_mode_name(mode));
  if (!finish_candidate(sp, n) || n.recompute.empty()) return std::nullopt;
  return n;
}

std::vector<Candidate> backward_moves(const SearchSpace& sp, const Candidate& c, const Evaluation& e) {
  std::vector<Candidate> out;
  if (!sp.fuse_choice || c.baseline >= 0) return out;
  const int S = c.stages();
  std::vector<char> cur = c.fused;
  cur.resize(S, 0);
  // `c` with the stages on device `device` (-1: every stage) fused or split, when that changes any.
  auto add = [&](int device, char fused, std::string origin) {
    Candidate n = c;
    n.fused = cur;
    for (int s = 0; s < S; ++s)
      if (device < 0 || c.placement[s] == device) n.fused[s] = fused;
    n.kind = MoveKind::kBackward;
    n.origin = std::move(origin);
    if (finish_candidate(sp, n) && n.key() != c.key()) out.push_back(std::move(n));
  };
  add(-1, 1, "backward: B on every stage");
  if (!c.fused.empty()) add(-1, 0, "backward: I and W on every stage");
  if (!e.busy_ms.empty()) {
    const int busy = argmax(e.busy_ms);
    add(busy, 1, fmt::format("backward: B on device {}'s stages (the busiest)", busy));
  }
  int gappy = -1;
  for (int s = 0; s < S; ++s) {
    const int d = c.placement[s];
    if (!cur[s] || d >= static_cast<int>(e.residual_idle_ms.size())) continue;
    if (gappy < 0 || e.residual_idle_ms[d] > e.residual_idle_ms[gappy]) gappy = d;
  }
  if (gappy >= 0) add(gappy, 0, fmt::format("backward: I and W on device {}'s stages (the most gaps)", gappy));
  return out;
}

std::optional<Candidate> with_fused_backward(const SearchSpace& sp, const Candidate& c) {
  Candidate n = c;
  n.fused.assign(c.stages(), 1);
  n.kind = MoveKind::kBackward;
  n.origin = c.origin + ", fused B";
  if (!finish_candidate(sp, n) || n.fused.empty()) return std::nullopt;
  return n;
}

bool finish_candidate(const SearchSpace& sp, Candidate& c) {
  const int S = c.stages();
  if (S < 1 || static_cast<int>(c.cuts.size()) != S + 1 || S > sp.max_stages) return false;
  if (c.cuts.front() != 0 || c.cuts.back() != sp.layers) return false;
  for (int s = 0; s < S; ++s)
    if (c.cuts[s + 1] <= c.cuts[s]) return false;
  normalize_recompute(sp, c);
  normalize_fused(sp, c);
  std::vector<char> used(sp.devices, 0);
  for (int d : c.placement) {
    if (d < 0 || d >= sp.devices) return false;
    used[d] = 1;
  }
  if (std::count(used.begin(), used.end(), 1) != sp.devices) return false;
  if (sp.canonical && !sp.fixed_placement && c.baseline < 0) c.placement = canonical_placement(c.placement);
  return true;
}

Diagnosis diagnose(const SearchSpace& sp, const Candidate& c, const Evaluation& e) {
  if (!e.feasible) return Diagnosis::kMemory;
  const int heavy = argmax(e.load_ms), light = argmin(e.load_ms);
  const double spread = e.load_ms[heavy] - e.load_ms[light];
  // The cheapest layer the busiest device could hand to a neighbouring stage on another device.
  double movable = std::numeric_limits<double>::infinity();
  const int S = c.stages();
  for (int s = 0; s < S && !sp.fixed_partition; ++s) {
    if (c.placement[s] != heavy || stage_layers(c.cuts, s) < 2) continue;
    if (s > 0 && c.placement[s - 1] != heavy) movable = std::min(movable, sp.layer_ms[c.cuts[s]]);
    if (s + 1 < S && c.placement[s + 1] != heavy) movable = std::min(movable, sp.layer_ms[c.cuts[s + 1] - 1]);
  }
  if (spread > movable + kEps) return Diagnosis::kImbalance;
  double boundary = 0, residual = 0;
  for (size_t d = 0; d < e.boundary_idle_ms.size(); ++d) {
    boundary += e.boundary_idle_ms[d];
    residual += e.residual_idle_ms[d];
  }
  return boundary >= residual ? Diagnosis::kBoundary : Diagnosis::kResidual;
}

std::vector<Candidate> bubble_moves(const SearchSpace& sp, const Candidate& c, const Evaluation& e, bool all_kinds) {
  std::vector<Candidate> out = recompute_moves(sp, c, e);
  for (Candidate& n : backward_moves(sp, c, e)) out.push_back(std::move(n));
  MoveSink sink{sp, out, &c};
  const Diagnosis d = diagnose(sp, c, e);
  if (d == Diagnosis::kMemory) {
    memory_moves(sp, c, e, sink);
    return out;
  }
  const bool part = all_kinds || d == Diagnosis::kImbalance;
  const bool place = all_kinds || d == Diagnosis::kBoundary;
  const bool sched = all_kinds || d == Diagnosis::kResidual;
  if (part) partition_moves(sp, c, e, sink);
  if (place) placement_moves(sp, c, e, sink);
  if (sched) schedule_moves(c, sink, sp);
  return out;
}

std::vector<Candidate> kick_moves(const SearchSpace& sp, const Candidate& c, std::mt19937_64& rng, int count) {
  std::vector<Candidate> out;
  MoveSink sink{sp, out, &c};
  const int S = c.stages();
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(std::max(1, n))); };
  for (int k = 0; k < count * 4 && static_cast<int>(out.size()) < count; ++k) {
    const int what = pick(3);
    if (what == 0 && !sp.fixed_partition && S >= 2) {
      std::vector<int> cuts = c.cuts;
      const int b = pick(S - 1);
      const int delta = pick(2) ? 1 : -1;
      if (shift_cut(cuts, b, delta))
        sink.add(std::move(cuts), c.placement, MoveKind::kKick, fmt::format("kick: shift boundary {} by {}", b, delta));
    } else if (what == 1 && !sp.fixed_placement) {
      std::vector<int> p = c.placement;
      const int s = pick(S), d = pick(sp.devices);
      if (p[s] == d) continue;
      p[s] = d;
      sink.add_with_rebalance(c.cuts, std::move(p), MoveKind::kKick, fmt::format("kick: move stage {} to device {}", s, d));
    } else if (what == 2 && !sp.fixed_placement && S >= 2) {
      std::vector<int> p = c.placement;
      const int s = pick(S), t = pick(S);
      if (p[s] == p[t]) continue;
      std::swap(p[s], p[t]);
      sink.add(c.cuts, std::move(p), MoveKind::kKick, fmt::format("kick: swap stages {} and {}", s, t));
    }
  }
  return out;
}

std::vector<int> rebalance_cuts(const SearchSpace& sp, std::vector<int> cuts, const std::vector<int>& placement,
                                bool by_memory) {
  const std::vector<double>& per = by_memory ? sp.layer_mb : sp.layer_ms;
  const int S = static_cast<int>(placement.size());
  std::vector<double> load = device_sums(sp, cuts, placement, per);
  using Score = std::pair<double, double>;  // (max device load, sum of squares)
  auto score = [](const std::vector<double>& l) {
    double mx = 0, sq = 0;
    for (double x : l) {
      mx = std::max(mx, x);
      sq += x * x;
    }
    return Score(mx, sq);
  };
  auto better = [](Score a, Score b) {
    if (a.first < b.first - 1e-9 * std::max(1.0, b.first)) return true;
    if (a.first > b.first + 1e-9 * std::max(1.0, b.first)) return false;
    return a.second < b.second - 1e-9 * std::max(1.0, b.second);
  };
  // One layer handed from a stage of device `from` to the neighbouring stage on another device:
  // boundary b shifts by delta (see shift_cut).
  struct Shift {
    int b = -1, delta = 0, layer = -1, to_device = -1;
  };
  auto shifts_from = [&](const std::vector<int>& c, int from) {
    std::vector<Shift> v;
    for (int s = 0; s < S; ++s) {
      if (placement[s] != from || stage_layers(c, s) < 2) continue;
      if (s > 0 && placement[s - 1] != from) v.push_back({s - 1, 1, c[s], placement[s - 1]});
      if (s + 1 < S && placement[s + 1] != from) v.push_back({s, -1, c[s + 1] - 1, placement[s + 1]});
    }
    return v;
  };
  for (int iter = 0; iter < 8 * sp.layers; ++iter) {
    const Score cur = score(load);
    const int heavy = argmax(load);
    Score best_score = cur;
    std::vector<Shift> best;
    for (const Shift& m : shifts_from(cuts, heavy)) {
      std::vector<double> l2 = load;
      l2[heavy] -= per[m.layer];
      l2[m.to_device] += per[m.layer];
      const Score sc = score(l2);
      if (better(sc, best_score)) {
        best_score = sc;
        best = {m};
      }
    }
    if (best.empty()) {
      // No single shift helps: try a chain (heavy → B, then B → C), which moves load across a
      // device whose own stages sit between the busiest device and an idle one.
      for (const Shift& m : shifts_from(cuts, heavy)) {
        std::vector<int> c2 = cuts;
        shift_cut(c2, m.b, m.delta);
        std::vector<double> l2 = load;
        l2[heavy] -= per[m.layer];
        l2[m.to_device] += per[m.layer];
        for (const Shift& m2 : shifts_from(c2, m.to_device)) {
          if (m2.to_device == heavy) continue;
          std::vector<double> l3 = l2;
          l3[m.to_device] -= per[m2.layer];
          l3[m2.to_device] += per[m2.layer];
          const Score sc = score(l3);
          if (better(sc, best_score)) {
            best_score = sc;
            best = {m, m2};
          }
        }
      }
    }
    if (best.empty()) break;
    int from = heavy;
    for (const Shift& m : best) {
      shift_cut(cuts, m.b, m.delta);
      load[from] -= per[m.layer];
      load[m.to_device] += per[m.layer];
      from = m.to_device;
    }
  }
  return cuts;
}

// Node count of the cluster when P devices split evenly into nodes of devices_per_node (else 1).
int node_count(const SearchSpace& sp) {
  const int dpn = sp.spec->cluster.devices_per_node, P = sp.devices;
  return dpn > 0 && dpn < P && P % dpn == 0 ? P / dpn : 1;
}

// Per layer: its forward prefix over M (when its first microbatch can start, in ms per microbatch).
std::vector<double> layer_ramps_ms(const SearchSpace& sp) {
  const Spec& spec = *sp.spec;
  std::vector<double> ramp(sp.layers, 0.0);
  const int M = std::max(1, spec.pipeline.microbatches);
  for (int l = 1; l < sp.layers; ++l) ramp[l] = ramp[l - 1] + spec.model.type_of(l - 1).forward_ms / M;
  return ramp;
}

std::vector<double> layer_forwards_ms(const SearchSpace& sp) {
  std::vector<double> fwd(sp.layers, 0.0);
  for (int l = 0; l < sp.layers; ++l) fwd[l] = sp.spec->model.type_of(l).forward_ms;
  return fwd;
}

// Layers packed onto devices in order and polished (packed_pieces), neighbours merged; on several
// nodes also per node (node_pieces): the chain cut into nodes x r pieces dealt to the nodes in
// zigzag order, or a V over the nodes with fronts of one or two layers per device. The packings run
// on `g`, a space of layer groups (group i = layers [starts[i], starts[i + 1]) of `sp`, with ramp
// and forward time per group): one layer per group for the plain seeds, the chain's front merged
// for paced_front_seeds (`plain` false: only the per-node shapes, ramp- or warm-up-aware, not in
// bands, so the front groups stay pinned).
void add_packed_seeds(const SearchSpace& sp, const SearchSpace& g, const std::vector<int>& starts,
                      const std::vector<double>& g_ramp, const std::vector<double>& g_fwd, bool plain,
                      const std::string& label, std::vector<Candidate>& out) {
  const int P = sp.devices, nodes = node_count(sp);
  struct Shape {
    int nodes, segments, front;
  };
  std::vector<Shape> shapes;
  if (plain) shapes.push_back({1, 1, 0});
  for (int r = 1; nodes > 1 && r <= 4; ++r)
    if (nodes * r <= g.layers) shapes.push_back({nodes, nodes * r, 0});
  for (int r = 1; nodes > 1 && r <= 2; ++r)
    if ((r + 1) * P <= g.layers) shapes.push_back({nodes, 0, r * (P / nodes)});
  for (const Shape& sh : shapes) {
    std::vector<int> piece_cuts, piece_node;
    node_pieces(g, sh.nodes, sh.segments, sh.front, piece_cuts, piece_node);
    const std::string what = sh.nodes == 1 ? std::string("")
                             : sh.front > 0 ? fmt::format(" per node, V over the nodes with {}-layer fronts", sh.front)
                             : sh.segments == sh.nodes ? std::string(" per node")
                                                       : fmt::format(" per node, {} pieces in zigzag", sh.segments);
    // The pieces as cut by load, and (several nodes) with their cuts refined for the devices'
    // loads: the first keeps the shorter ramp the load cut gives, the second the better balance.
    // Each also ramp-aware: a device's start (its first layer's forward prefix) counts as load.
    // Each also warm-up-aware: the forward-weighted mean ramp of a device's layers counts instead.
    // And each also dealt in bands (pack_layers): bands suit some models and plain packing others,
    // so both kinds are seeds.
    // Merged fronts (`plain` false) only come ramp- and warm-up-aware, not in bands: their
    // fronts stay pinned.
    struct Start {
      const std::vector<double>* ramp;  // ramp-aware: the first layer's ramp counts as load
      const std::vector<double>* fwd;   // warm-up-aware: the forward-weighted mean ramp instead
    };
    const Start starts_of[] = {{nullptr, nullptr}, {&g_ramp, nullptr}, {&g_ramp, &g_fwd}};
    for (bool bands : {false, true}) {
      if (bands && !plain) break;
      for (const auto& [ramp, fwd] : starts_of) {
        if (!plain && !ramp) continue;
        std::vector<int> first_cuts;
        for (bool refine : {false, true}) {
          if (refine && sh.nodes == 1) break;
          std::vector<int> gcuts, placement;
          packed_pieces(g, sh.nodes, piece_cuts, piece_node, refine, ramp, bands, fwd, gcuts, placement);
          if (refine && gcuts == first_cuts) break;
          if (!refine) first_cuts = gcuts;
          std::vector<int> cuts;
          for (int c : gcuts) cuts.push_back(starts[c]);
          const int S = static_cast<int>(placement.size());
          if (S > sp.max_stages) continue;
          Candidate c = heuristic_candidate(
              std::move(cuts), std::move(placement), MoveKind::kSeed,
              fmt::format("seed S={} layers packed in order{}{}{}{}{}", S, what, refine ? ", node cuts refined" : "",
                          fwd ? ", warm-up-aware" : ramp ? ", ramp-aware" : "", bands ? ", in bands" : "", label));
          if (finish_candidate(sp, c)) out.push_back(std::move(c));
        }
      }
    }
  }
}

std::vector<Candidate> seed_candidates(const SearchSpace& sp, const std::vector<int>* fixed_cuts,
                                       const std::vector<int>* fixed_placement) {
  std::vector<Candidate> out;
  const Spec& spec = *sp.spec;
  const int P = sp.devices;
  auto add = [&](std::vector<int> cuts, std::vector<int> placement, MoveKind kind, std::string origin, int baseline = -1) {
    Candidate c;
    c.cuts = std::move(cuts);
    c.placement = std::move(placement);
    c.kind = kind;
    c.origin = std::move(origin);
    c.baseline = baseline;
    if (finish_candidate(sp, c)) out.push_back(std::move(c));
  };
  struct NamedPlacement {
    std::string name;
    std::vector<int> placement;
  };
  auto placements_for = [&](int S) {
    std::vector<NamedPlacement> v;
    if (fixed_placement) {
      if (static_cast<int>(fixed_placement->size()) == S) v.push_back({"given placement", *fixed_placement});
      return v;
    }
    if (S == P) v.push_back({"sequential", placement_sequential(P)});
    if (S > P) v.push_back({"looped", placement_looped(S, P)});
    if (S > P && S % P == 0 && (S / P) % 2 == 0)
      v.push_back({S == 2 * P ? "v-shape" : fmt::format("zigzag V={}", S / P), placement_zigzag(S, P)});
    return v;
  };
  struct NamedCuts {
    std::string name;
    std::vector<int> cuts;
  };
  auto partitions_for = [&](int S) {
    std::vector<NamedCuts> v;
    if (fixed_cuts) {
      if (static_cast<int>(fixed_cuts->size()) == S + 1) v.push_back({"given partition", *fixed_cuts});
      return v;
    }
    auto b = balanced_partition(spec, S, PartitionCost::kTime);
    if (b.ok()) v.push_back({"balanced", to_cuts(*b)});
    auto bm = balanced_partition(spec, S, PartitionCost::kTimeThenMemory);
    if (bm.ok() && (!b.ok() || to_cuts(*bm) != to_cuts(*b))) v.push_back({"balanced-memory", to_cuts(*bm)});
    auto ev = even_partition(spec, S);
    if (ev.ok()) v.push_back({"even", to_cuts(*ev)});
    return v;
  };
  std::vector<int> stage_counts;
  if (fixed_cuts) stage_counts.push_back(static_cast<int>(fixed_cuts->size()) - 1);
  else if (fixed_placement) stage_counts.push_back(static_cast<int>(fixed_placement->size()));
  else
    for (int v = 1; v <= sp.max_stages_per_device && v * P <= sp.max_stages; ++v) stage_counts.push_back(v * P);
  for (int S : stage_counts) {
    for (const NamedCuts& nc : partitions_for(S)) {
      for (const NamedPlacement& np : placements_for(S)) {
        const std::string origin = fmt::format("seed S={} {} {}", S, nc.name, np.name);
        add(nc.cuts, np.placement, MoveKind::kSeed, origin);
        if (!fixed_cuts && S > P) {
          std::vector<int> rb = rebalance_cuts(sp, nc.cuts, np.placement, false);
          if (rb != nc.cuts) add(std::move(rb), np.placement, MoveKind::kSeed, origin + " + rebalance");
        }
      }
      // Irregular: the stages packed onto devices by load (uneven stage counts per device).
      if (!fixed_placement && S > P) {
        std::vector<int> lpt = lpt_placement_of(sp, nc.cuts);
        const std::string origin = fmt::format("seed S={} {} lpt-packed", S, nc.name);
        add(nc.cuts, lpt, MoveKind::kSeed, origin);
        if (!fixed_cuts) {
          std::vector<int> rb = rebalance_cuts(sp, nc.cuts, lpt, false);
          if (rb != nc.cuts) add(std::move(rb), lpt, MoveKind::kSeed, origin + " + rebalance");
        }
      }
    }
  }
  // One layer per stage (when the stage limit allows), packed by load.
  if (!fixed_cuts && !fixed_placement && sp.layers <= sp.max_stages && sp.layers > P) {
    std::vector<int> cuts(sp.layers + 1);
    std::iota(cuts.begin(), cuts.end(), 0);
    add(cuts, lpt_placement_of(sp, cuts), MoveKind::kSeed, fmt::format("seed S={} one layer per stage lpt-packed", sp.layers));
  }
  // Layers packed onto devices in order and polished (add_packed_seeds). Its polish tries moves of
  // up to three layers between the busiest device and any other, O(n³) per step: with thousands of
  // layers (a model written op by op) it alone took minutes. The shipped models have 30-150.
  constexpr int kPackedSeedLayers = 512;
  if (!fixed_cuts && !fixed_placement && sp.layers > P && sp.layers <= kPackedSeedLayers) {
    std::vector<int> one_per_layer(sp.layers + 1);
    std::iota(one_per_layer.begin(), one_per_layer.end(), 0);
    add_packed_seeds(sp, sp, one_per_layer, layer_ramps_ms(sp), layer_forwards_ms(sp), true, "", out);
  }
  if (sp.include_baselines) {
    // The published schedules on Megatron's even partition and on the balanced one.
    const BaselineKind kinds[] = {BaselineKind::k1F1B, BaselineKind::kInterleaved1F1B, BaselineKind::kZBH1,
                                  BaselineKind::kZBV};
    for (BaselineKind kind : kinds) {
      Result<BaselineShape> shape = baseline_shape(kind, 0);
      if (!shape.ok()) continue;
      const int S = shape->stages_per_device * P;
      const std::vector<int> placement = baseline_placement(*shape, P);
      if (fixed_placement && *fixed_placement != placement) continue;
      if (S > sp.layers) continue;
      std::vector<NamedCuts> parts;
      if (fixed_cuts) {
        if (static_cast<int>(fixed_cuts->size()) == S + 1) parts.push_back({"given partition", *fixed_cuts});
      } else {
        auto ev = even_partition(spec, S);
        if (ev.ok()) parts.push_back({"even", to_cuts(*ev)});
        auto b = balanced_partition(spec, S, PartitionCost::kTime);
        if (b.ok()) parts.push_back({"balanced", to_cuts(*b)});
      }
      for (const NamedCuts& nc : parts) {
        Candidate probe;
        probe.cuts = nc.cuts;
        probe.placement = placement;
        Result<Problem> pr = make_problem(spec, probe.partition(), placement);
        if (!pr.ok() || !check_baseline_shape(*pr, kind).is_ok()) continue;
        add(nc.cuts, placement, MoveKind::kBaseline, fmt::format("baseline {} ({})", baseline_name(kind), nc.name),
            static_cast<int>(kind));
      }
    }
  }
  return out;
}

std::vector<Candidate> paced_front_seeds(const SearchSpace& sp) {
  std::vector<Candidate> out;
  const int P = sp.devices;
  if (sp.fixed_partition || sp.fixed_placement || node_count(sp) == 1 || sp.layers < 2 * P) return out;
  // The first `light` groups are single layers, for the devices that will hold a layer heavier than
  // half a device's share (an LM head): they could not also take a full front group.
  const double share = range_sum(sp.layer_ms, 0, sp.layers) / P;
  int light = 0;
  for (int l = 0; l < sp.layers; ++l) light += sp.layer_ms[l] > share / 2 + kEps;
  if (light >= P) return out;
  const std::vector<double> ramp = layer_ramps_ms(sp), fwd = layer_forwards_ms(sp);
  const double pace = range_sum(fwd, 0, sp.layers) / (kPacedFrontRounds * P);
  std::vector<int> starts{0};
  for (int i = 0; i < P; ++i) {
    int l = starts.back() + 1;
    double acc = fwd[starts.back()];
    if (i >= light)
      while (l < sp.layers && std::abs(acc + fwd[l] - pace) < std::abs(acc - pace)) acc += fwd[l++];
    starts.push_back(l);
  }
  if (starts.back() + P > sp.layers) return out;  // the rest must still give every device a layer
  for (int l = starts.back() + 1; l <= sp.layers; ++l) starts.push_back(l);
  const int groups = static_cast<int>(starts.size()) - 1;
  SearchSpace g = sp;
  g.layers = groups;
  g.layer_ms.assign(groups, 0.0);
  g.layer_mb.assign(groups, 0.0);
  g.head_ms.assign(groups, 0.0);
  std::vector<double> g_ramp(groups), g_fwd(groups);
  for (int i = 0; i < groups; ++i) {
    g.layer_ms[i] = range_sum(sp.layer_ms, starts[i], starts[i + 1]);
    g.layer_mb[i] = range_sum(sp.layer_mb, starts[i], starts[i + 1]);
    g.head_ms[i] = sp.head_ms[starts[i]];
    g_ramp[i] = ramp[starts[i]];
    g_fwd[i] = range_sum(fwd, starts[i], starts[i + 1]);
  }
  add_packed_seeds(sp, g, starts, g_ramp, g_fwd, false, ", paced front", out);
  return out;
}

namespace {

// An op's busy interval on the wave seeds' ideal schedule, ms.
struct Busy {
  double start, end;
};

// The time two layers' ideal intervals overlap: each list sorted by start; `longest` bounds the
// length of b's intervals (so b's intervals that end before x starts are skipped).
double overlap_ms(const std::vector<Busy>& a, const std::vector<Busy>& b, double longest) {
  double sum = 0;
  size_t lo = 0;
  for (const Busy& x : a) {
    while (lo < b.size() && b[lo].start + longest <= x.start) ++lo;
    for (size_t k = lo; k < b.size() && b[k].start < x.end; ++k)
      sum += std::max(0.0, std::min(x.end, b[k].end) - std::max(x.start, b[k].start));
  }
  return sum;
}

// One wave placement (wave_seeds): per layer its device. `conflict` is the pairwise overlap matrix,
// `work` each layer's ms over the microbatches.
std::vector<int> wave_placement(const std::vector<std::vector<double>>& conflict, const std::vector<double>& work,
                                int P, std::mt19937_64& rng, const std::vector<int>* node, const std::vector<double>* cross,
                                double stage_cost) {
  const int L = static_cast<int>(work.size());
  const double total = std::accumulate(work.begin(), work.end(), 0.0), target = total / P;
  auto over = [&](double load) { return kWaveBalance * std::max(0.0, load - target); };
  // Changes smaller than this are rounding (the sums run to 10^6 ms and more on large models): a
  // move is an improvement only beyond it, so two moves cannot undo each other forever.
  double scale = total;
  for (const std::vector<double>& row : conflict) scale += std::accumulate(row.begin(), row.end(), 0.0);
  const double tol = 1e-9 * std::max(1.0, scale);
  std::vector<int> dev(L, -1);
  std::vector<double> load(P, 0.0);
  // What l's boundaries cost with l on d: stage_cost for each neighbour on another device (a stage
  // boundary) and, on several nodes (`node` set), (*cross)[b] for each boundary b (layers b and
  // b + 1) whose two layers sit on different nodes. A neighbour not placed yet costs nothing; `skip`
  // is a neighbour left out (the other layer of a swap, whose boundary with l keeps its cost).
  auto boundary_cost = [&](int l, int d, int skip) {
    if (!node && stage_cost <= 0) return 0.0;
    double c = 0;
    auto edge = [&](int nb, int b) {
      if (nb == skip || dev[nb] < 0) return;
      if (dev[nb] != d) c += stage_cost;
      if (node && (*node)[dev[nb]] != (*node)[d]) c += (*cross)[b];
    };
    if (l > 0) edge(l - 1, l - 1);
    if (l + 1 < L) edge(l + 1, l);
    return c;
  };
  // with[l][d]: l's overlap with the layers on d (l itself excluded).
  std::vector<std::vector<double>> with(L, std::vector<double>(P, 0.0));
  auto put = [&](int l, int d, double sign) {
    for (int x = 0; x < L; ++x)
      if (x != l) with[x][d] += sign * conflict[x][l];
    load[d] += sign * work[l];
  };
  std::vector<int> order(L);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return work[a] > work[b] + kEps; });
  for (int l : order) {
    int best = 0;
    double best_cost = std::numeric_limits<double>::infinity();
    for (int d = 0; d < P; ++d) {
      const double cost = with[l][d] + over(load[d] + work[l]) - over(load[d]) + boundary_cost(l, d, -1);
      if (cost < best_cost - kEps) {
        best_cost = cost;
        best = d;
      }
    }
    dev[l] = best;
    put(l, best, 1);
  }
  std::vector<int> count(P, 0);
  for (int l = 0; l < L; ++l) ++count[dev[l]];
  // A move of l to e, or a swap of x and y: the objective's change (a move that would leave a
  // device empty is not made).
  auto move_delta = [&](int l, int e) {
    const int d = dev[l];
    if (e == d || count[d] == 1) return std::numeric_limits<double>::infinity();
    return with[l][e] - with[l][d] + over(load[e] + work[l]) - over(load[e]) + over(load[d] - work[l]) - over(load[d]) +
           boundary_cost(l, e, -1) - boundary_cost(l, d, -1);
  };
  auto swap_delta = [&](int x, int y) {
    const int dx = dev[x], dy = dev[y];
    if (dx == dy) return std::numeric_limits<double>::infinity();
    const double dw = work[y] - work[x];
    return (with[x][dy] - conflict[x][y] - with[x][dx]) + (with[y][dx] - conflict[x][y] - with[y][dy]) +
           over(load[dx] + dw) - over(load[dx]) + over(load[dy] - dw) - over(load[dy]) + boundary_cost(x, dy, y) -
           boundary_cost(x, dx, y) + boundary_cost(y, dx, x) - boundary_cost(y, dy, x);
  };
  auto move = [&](int l, int e) {
    put(l, dev[l], -1);
    --count[dev[l]];
    dev[l] = e;
    put(l, e, 1);
    ++count[e];
  };
  // Random moves and swaps, kept where the objective does not rise (plateaus are crossed), then
  // every move and swap that lowers it until none does (a local optimum; at most
  // kWaveDescentPasses passes over them, a bound the shipped models never reach).
  int passes = 0;
  for (int step = 0; step < kWaveSteps; ++step) {
    if (rng() % 2 == 0) {
      const int l = static_cast<int>(rng() % L), e = static_cast<int>(rng() % P);
      if (move_delta(l, e) <= tol) move(l, e);
    } else {
      const int x = static_cast<int>(rng() % L), y = static_cast<int>(rng() % L);
      if (swap_delta(x, y) <= tol) {
        const int dx = dev[x], dy = dev[y];
        move(x, dy);
        move(y, dx);
      }
    }
  }
  for (bool improved = true; improved && passes < kWaveDescentPasses; ++passes) {
    improved = false;
    for (int l = 0; l < L; ++l)
      for (int e = 0; e < P; ++e)
        if (move_delta(l, e) < -tol) {
          move(l, e);
          improved = true;
        }
    for (int x = 0; x < L; ++x)
      for (int y = x + 1; y < L; ++y)
        if (swap_delta(x, y) < -tol) {
          const int dx = dev[x], dy = dev[y];
          move(x, dy);
          move(y, dx);
          improved = true;
        }
  }
  return dev;
}

}  // namespace

std::vector<Candidate> wave_seeds(const SearchSpace& sp, uint64_t seed) {
  std::vector<Candidate> out;
  const int P = sp.devices, L = sp.layers, M = sp.spec->pipeline.microbatches;
  if (sp.fixed_partition || sp.fixed_placement || P < 2 || M < 1 || M > 2 * P || L <= P || L > kWaveMaxLayers)
    return out;
  // On several nodes a boundary whose layers sit on two nodes costs kWaveCrossWeight times its
  // transfers on the inter-node link: M microbatches' activations forward and gradients back.
  const int nodes = node_count(sp);
  std::vector<int> node;
  std::vector<double> cross;
  if (nodes > 1) {
    for (int d = 0; d < P; ++d) node.push_back(d / (P / nodes));
    for (int l = 0; l + 1 < L; ++l)
      cross.push_back(kWaveCrossWeight * 2 * M *
                      sp.spec->cluster.inter_node_link.transfer_ms(sp.spec->model.type_of(l).output_mb));
  }
  // Per layer its forward and its input gradient (B where the backward does not split), one
  // microbatch; the ideal starts of microbatch 0's (a: the forward prefix; c: the whole forward,
  // then the input gradients of the layers above).
  std::vector<double> f(L), b(L), a(L, 0.0), c(L, 0.0), work(L);
  double longest = 0;
  for (int l = 0; l < L; ++l) {
    const LayerType& t = sp.spec->model.type_of(l);
    f[l] = t.forward_ms;
    b[l] = t.split_backward ? t.backward_input_ms : t.fused_backward_ms();
    longest = std::max({longest, f[l], b[l]});
    work[l] = M * sp.layer_ms[l];
    if (l > 0) a[l] = a[l - 1] + f[l - 1];
  }
  if (!(longest > 0)) return out;
  c[L - 1] = a[L - 1] + f[L - 1];
  for (int l = L - 2; l >= 0; --l) c[l] = c[l + 1] + b[l + 1];
  for (size_t fi = 0; fi < std::size(kWaveFactors); ++fi) {
    const double delta = kWaveFactors[fi] * longest;
    std::vector<std::vector<Busy>> busy(L);
    for (int l = 0; l < L; ++l) {
      for (int j = 0; j < M; ++j) {
        busy[l].push_back({a[l] + j * delta, a[l] + j * delta + f[l]});
        busy[l].push_back({c[l] + j * delta, c[l] + j * delta + b[l]});
      }
      std::sort(busy[l].begin(), busy[l].end(), [](const Busy& x, const Busy& y) {
        return x.start < y.start || (x.start == y.start && x.end < y.end);
      });
    }
    std::vector<std::vector<double>> conflict(L, std::vector<double>(L, 0.0));
    for (int x = 0; x < L; ++x)
      for (int y = x + 1; y < L; ++y) conflict[x][y] = conflict[y][x] = overlap_ms(busy[x], busy[y], longest);
    for (int k = 0; k < kWaveSeedsPerFactor; ++k) {
      // Where the dealing has more stages than the search allows (many layers per device), again
      // with each stage boundary costing stage_cost, doubled until it fits.
      std::vector<int> dev;
      double stage_cost = 0;
      for (int tries = 0;; ++tries) {
        std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + fi * 0x100 + k + 1);
        dev = wave_placement(conflict, work, P, rng, nodes > 1 ? &node : nullptr, nodes > 1 ? &cross : nullptr,
                             stage_cost);
        int runs = 1;
        for (int l = 1; l < L; ++l) runs += dev[l] != dev[l - 1];
        if (runs <= sp.max_stages || tries >= kWaveStageCostDoublings) break;
        stage_cost = stage_cost > 0 ? 2 * stage_cost : longest;
      }
      std::vector<int> cuts{0}, placement{dev[0]};
      for (int l = 1; l < L; ++l) {
        if (dev[l] == dev[l - 1]) continue;
        cuts.push_back(l);
        placement.push_back(dev[l]);
      }
      cuts.push_back(L);
      const int S = static_cast<int>(placement.size());
      if (S > sp.max_stages) continue;
      Candidate cand = heuristic_candidate(std::move(cuts), std::move(placement), MoveKind::kSeed,
                                           fmt::format("seed S={} wave x{:g} #{}", S, kWaveFactors[fi], k + 1));
      if (finish_candidate(sp, cand)) out.push_back(std::move(cand));
    }
  }
  return out;
}

double plan_floor_ms(const SearchSpace& sp, const Candidate& c) {
  const int P = sp.devices;
  std::vector<double> load(P, 0.0), head(P, std::numeric_limits<double>::infinity());
  for (int s = 0; s + 1 < static_cast<int>(c.cuts.size()); ++s) {
    const int d = c.placement[s];
    head[d] = std::min(head[d], sp.head_ms[c.cuts[s]]);
    const bool fused = s < static_cast<int>(c.fused.size()) && c.fused[s];
    for (int l = c.cuts[s]; l < c.cuts[s + 1]; ++l)
      load[d] += sp.layer_ms[l] - (fused ? std::max(0.0, sp.layer_fuse_gain_ms[l]) : 0.0);
  }
  const int M = sp.spec->pipeline.microbatches;
  double floor = 0;
  for (int d = 0; d < P; ++d)
    if (load[d] > 0) floor = std::max(floor, head[d] + M * load[d]);
  return floor;
}

std::vector<double> forward_heads_ms(const Model& model) {
  std::vector<double> head(model.layers.size(), 0.0);
  for (size_t l = 0; l < model.layers.size(); ++l)
    for (int u : model.layers[l].inputs) head[l] = std::max(head[l], head[u] + model.type_of(u).forward_ms);
  return head;
}

}  // namespace ps::tuner_detail
