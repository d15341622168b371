#include "ir/units.h"
#include "synth/bounds/global_bound.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/max_cardinality_matching.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "synth/bounds/packing_bound.h"
#include "synth/bounds/packing_lp.h"
#include "synth/plan/partition.h"

namespace ps {

namespace {

// The part of a layer's backward on the gradient chain, at its least: I, or B when the type's fused
// backward_ms is cheaper than I or the type cannot split (its B, I + W without a backward_ms: the
// gradient comes out at B's end).
double gradient_ms(const LayerType& t) {
  if (!t.split_backward) return t.fused_backward_ms();
  return t.backward_ms ? std::min(t.backward_input_ms, *t.backward_ms) : t.backward_input_ms;
}

// The work any schedule can do before T ≤ a_L: forwards only, the j-th of layer l released at
// a_l + j·s_l (global_bound.h, forward_release), on the Q devices opening at a_0 … a_{Q−1}.
// With s_l ≥ F_l the releases of one layer are at least F_l apart, so the sum over j has a closed
// form: n forwards whole, then one in part.
double work_before(double T, const std::vector<double>& f, const std::vector<double>& a, const std::vector<double>& s,
                   double M, int Q) {
  double cap = 0;
  for (int k = 0; k < Q; ++k) cap += std::max(0.0, T - a[k]);
  double released = 0;
  for (size_t l = 0; l < f.size() && released < cap; ++l) {
    const double x = T - a[l];
    if (x <= 0 || f[l] <= 0) continue;
    const double whole = x < f[l] ? 0.0 : std::min(M, std::floor((x - f[l]) / s[l]) + 1);
    released += whole * f[l];
    if (whole < M) released += std::min(f[l], std::max(0.0, x - whole * s[l]));
  }
  return std::min(cap, released);
}

// max over a grid of T in (0, a_L] of T + (M·Σ c − D(T)) / Q: points enough to put T within a_L / 4096
// of the best where the model is small, at most about 10⁷ layer steps in all.
double forward_release_ms(const std::vector<double>& f, const std::vector<double>& a, double total_work, double M,
                          int Q) {
  const int L = static_cast<int>(f.size());
  std::vector<double> s(L);
  double top = 0;
  for (int l = 0; l < L; ++l) s[l] = top = std::max(top, f[l]);
  const double a_L = a[L];
  if (!(a_L > 0)) return 0;
  const int points = static_cast<int>(std::clamp<long long>(10'000'000LL / L, 16, 4096));
  double best = 0;
  for (int i = 1; i <= points; ++i) {
    const double T = a_L * i / points;
    best = std::max(best, T + (total_work - work_before(T, f, a, s, M, Q)) / Q);
  }
  return best;
}

// The most of layer l's forward work any schedule does before T: its M forwards released at
// a_l + j·s_l, each doing at most its part inside [release, T] (as in work_before).
double forward_done_before(double T, double f, double a, double s, double M) {
  const double x = T - a;
  if (x <= 0 || f <= 0) return 0;
  const double whole = x < f ? 0.0 : std::min(M, std::floor((x - f) / s) + 1);
  double done = whole * f;
  if (whole < M) done += std::min(f, std::max(0.0, x - whole * s));
  return done;
}

// max over T in (0, a_L] of T + (a bound on P‖Cmax of the layers' work left after T onto Q
// devices): layer l still has w_l(T) = work_l − forward_done_before(T) after T, each layer is whole on
// one device, so some device still has the busiest load of the best packing of the w_l(T) after T
// (global_bound.h, release_packing). Every grid point gets the cheap packing bound (pigeonhole, mean);
// 32 of them, in decreasing order of that, also get the search (targeted_packing_bound), asked whether
// they beat `floor_ms` (the other terms' maximum) or what this term has reached, out of one budget.
double release_packing_ms(const std::vector<double>& f, const std::vector<double>& a, const std::vector<double>& work,
                          double M, int Q, double floor_ms) {
  const int L = static_cast<int>(f.size());
  const double a_L = a[L];
  if (!(a_L > 0)) return 0;
  std::vector<double> s(L);
  double top = 0;
  for (int l = 0; l < L; ++l) s[l] = top = std::max(top, f[l]);
  auto left_after = [&](double T) {
    std::vector<double> w(L);
    for (int l = 0; l < L; ++l) w[l] = std::max(0.0, work[l] - forward_done_before(T, f[l], a[l], s[l], M));
    return w;
  };
  const int points = static_cast<int>(std::clamp<long long>(1'000'000LL / L, 16, 512));
  double best = 0;
  int64_t no_search = 0;
  for (int i = 1; i <= points; ++i) {
    const double T = a_L * i / points;
    best = std::max(best, T + targeted_packing_bound(left_after(T), Q, 0, no_search));
  }
  constexpr int kSearched = 32;
  std::vector<std::pair<double, double>> tried;
  for (int i = 1; i <= kSearched; ++i) {
    const double T = a_L * i / kSearched;
    tried.emplace_back(T + targeted_packing_bound(left_after(T), Q, 0, no_search), T);
  }
  std::stable_sort(tried.begin(), tried.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  int64_t budget = 1'000'000;  // search nodes in all (about 0.01 s)
  for (const auto& [v, T] : tried) {
    if (budget <= 0) break;
    const double target = std::max(best, floor_ms) - T;
    best = std::max(best, T + targeted_packing_bound(left_after(T), Q, target * (1 + 1e-9), budget));
  }
  return best;
}

// Σ_{j<M} max(0, e − (x − j·s)⁺): what M ops of effective length e, the j-th released j·s after the
// first, must do after a point x past the first release (x ≤ 0: all of it).
double left_after(double e, double x, double s, double M) {
  if (e <= 0) return 0;
  if (x <= 0) return M * e;
  if (s <= 0) return M * std::max(0.0, e - x);
  const double released_late = std::min(M, std::ceil(x / s));  // j < x / s: released before x
  double sum = (M - released_late) * e;
  const double j_lo = std::max(0.0, std::floor((x - e) / s) + 1);  // from here on a part is left
  const double n = released_late - j_lo;
  if (n > 0) sum += n * (e - x) + s * n * (j_lo + released_late - 1) / 2;
  return std::clamp(sum, 0.0, M * e);
}

// The ops heavy_pairs may run through Jackson's schedule in all (a few hundredths of a second); past it
// a layer's or a pair's bound is estimated from below (its work, its layers' own bounds).
constexpr int64_t kHeavyPairsBudget = 2'000'000;
// heavy_pairs works on at most this many heavy layers (the heaviest: any subset of them is heavy too),
// and finds at most this many maximum matchings in all; past that it refutes nothing more.
constexpr int kHeavyPairsMaxLayers = 96;
constexpr int kHeavyPairsMatchings = 2'000;

// One layer's ops as release times, lengths and tails (global_bound.h, window_packing): its M
// forwards, the parts of its M backwards on the gradient chain (I), and the rest (W).
struct LayerOps {
  double f = 0, f_first = 0, f_step = 0, f_tail = 0;   // forwards: F_l, a_l, s_l, Σ_{k>l} F + Σ g + W_0
  double g = 0, g_first = 0, g_step = 0, g_tail = 0;   // gradients: g_l, a_L + Σ_{k>l} g, step, Σ_{k<l} g + W_0
  double w = 0;                                        // the rest of the backward, released g after its I
  double window_ms(double r, double q, double M) const {
    return left_after(f - std::max(0.0, q - f_tail), r - f_first, f_step, M) +
           left_after(g - std::max(0.0, q - g_tail), r - g_first, g_step, M) +
           left_after(w - std::max(0.0, q), r - g_first - g, g_step, M);
  }
};

// A dealing of the layers to Q devices that keeps low the largest over the devices of max_k
// (offset_k + the device's work in window k) (where that work is not 0): layers by decreasing work in
// window 0 each onto the device where that grows least, then moves and swaps off the busiest device
// while they lower it, within `steps` (a window evaluated, a layer looked at: one step each). Returns
// each device's value and binding window. It only chooses the windows: nothing in the bound rests on
// it.
struct Dealt {
  std::vector<std::pair<double, int>> device;  // (value, binding window), one per device that holds work
};
Dealt deal_layers(const std::vector<double>& work, const std::vector<double>& offset, int L, int Q, double steps) {
  const int G = static_cast<int>(offset.size());
  std::vector<double> load(static_cast<size_t>(Q) * G, 0.0);
  auto value = [&](int d, const double* add, int* at) {
    double v = 0;
    for (int k = 0; k < G; ++k) {
      const double x = load[d * G + k] + (add ? add[k] : 0.0);
      if (x > 0 && offset[k] + x > v) {
        v = offset[k] + x;
        if (at) *at = k;
      }
    }
    return v;
  };
  auto shift = [&](int d, int l, double sign) {
    for (int k = 0; k < G; ++k) load[d * G + k] += sign * work[l * G + k];
  };
  std::vector<int> order(L), device_of(L, 0);
  for (int l = 0; l < L; ++l) order[l] = l;
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return work[x * G] > work[y * G]; });
  for (int l : order) {
    int best = 0;
    double best_v = std::numeric_limits<double>::infinity();
    for (int d = 0; d < Q; ++d) {
      const double v = value(d, &work[l * G], nullptr);
      if (v < best_v) {
        best_v = v;
        best = d;
      }
    }
    device_of[l] = best;
    shift(best, l, 1);
  }
  std::vector<double> dev_v(Q);
  for (int d = 0; d < Q; ++d) dev_v[d] = value(d, nullptr, nullptr);
  for (bool moved = true; moved && steps > 0;) {
    moved = false;
    const int worst = static_cast<int>(std::max_element(dev_v.begin(), dev_v.end()) - dev_v.begin());
    const double top = dev_v[worst];
    for (int l = 0; l < L && !moved && steps > 0; ++l) {
      steps -= 1;
      if (device_of[l] != worst) continue;
      shift(worst, l, -1);
      const double without = value(worst, nullptr, nullptr);
      for (int d = 0; d < Q && !moved && without < top - 1e-9; ++d) {
        if (d == worst) continue;
        steps -= G;
        const double v = value(d, &work[l * G], nullptr);
        if (v < top - 1e-9) {
          shift(d, l, 1);
          device_of[l] = d;
          dev_v[d] = v;
          dev_v[worst] = without;
          moved = true;
        }
      }
      for (int m = 0; m < L && !moved && steps > 0; ++m) {  // a swap with a layer of another device
        const int d = device_of[m];
        steps -= 1;
        if (d == worst) continue;
        steps -= 4 * G;
        shift(worst, m, 1);
        shift(d, m, -1);
        shift(d, l, 1);
        const double vw = value(worst, nullptr, nullptr), vd = value(d, nullptr, nullptr);
        if (vw < top - 1e-9 && vd < top - 1e-9) {
          device_of[l] = d;
          device_of[m] = worst;
          dev_v[worst] = vw;
          dev_v[d] = vd;
          moved = true;
        } else {
          shift(worst, m, -1);
          shift(d, m, 1);
          shift(d, l, -1);
        }
      }
      if (!moved) shift(worst, l, 1);
    }
  }
  Dealt out;
  for (int d = 0; d < Q; ++d) {
    int at = -1;
    const double v = value(d, nullptr, &at);
    if (at >= 0) out.device.emplace_back(v, at);
  }
  std::stable_sort(out.device.begin(), out.device.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  return out;
}

// The windows (r, q) of window_packing and window_lp (global_bound.h): r on a grid of kGrid points of
// [0, the last release of any op], q = 0 or the least forward tail; each layer's work inside each.
constexpr int kGrid = 32;
struct WindowGrid {
  std::vector<std::pair<double, double>> windows;
  std::vector<double> offset;  // r + q, per window
  std::vector<double> work;    // L × G, row-major
  double last = 0;
  int G = 0;
};
// Empty (G = 0) where the work matrix and the dealing would cost more than 10⁷ steps (L·Q·G): the
// terms are not tried there (their searches could not decide so many layers anyway).
WindowGrid window_grid(const std::vector<LayerOps>& ops, double M, int Q) {
  WindowGrid w;
  const int L = static_cast<int>(ops.size());
  double q_forward = std::numeric_limits<double>::infinity();
  for (const LayerOps& o : ops) {
    w.last = std::max({w.last, o.f_first + (M - 1) * o.f_step, o.g_first + o.g + (M - 1) * o.g_step});
    q_forward = std::min(q_forward, o.f_tail);
  }
  for (double q : {0.0, q_forward})
    for (int i = 0; i < kGrid; ++i) {
      w.windows.emplace_back(w.last * i / kGrid, q);
      w.offset.push_back(w.windows.back().first + q);
    }
  const int G = static_cast<int>(w.windows.size());
  if (static_cast<double>(L) * Q * G > 1e7) return WindowGrid{};
  w.G = G;
  w.work.resize(static_cast<size_t>(L) * G);
  for (int l = 0; l < L; ++l)
    for (int k = 0; k < G; ++k) w.work[l * G + k] = ops[l].window_ms(w.windows[k].first, w.windows[k].second, M);
  return w;
}

// The per-device single-machine bound with whole layers (global_bound.h, window_packing): a few sets
// of K = 3 of the grid's windows, and for each set the vector packing of the layers' work inside the
// windows decided by packing_bound.h's search; the best set gives the term. `dealt`: a good dealing
// of the layers over the whole grid (deal_layers), whose busiest devices' windows form one set.
double window_packing_ms(const WindowGrid& grid, const Dealt& dealt, const std::vector<int>& kind, int Q,
                         double floor_ms) {
  const int L = static_cast<int>(kind.size());
  const int G = grid.G;
  if (G == 0) return 0;
  constexpr int kWindows = 3;
  const auto& windows = grid.windows;
  const auto& offset = grid.offset;
  const auto& work = grid.work;
  const double last = grid.last;
  // The sets: the binding windows of the busiest devices of a good dealing, at least last / 10 apart;
  // and triples r − d, r, r + d (q = 0) for d a quarter and an eighth of the range, r every fourth
  // grid point.
  std::vector<std::vector<int>> sets;
  {
    std::vector<int> chosen;
    for (const auto& [v, k] : dealt.device) {
      bool apart = true;
      for (int c : chosen) apart = apart && std::abs(windows[c].first - windows[k].first) >= last / 10;
      if (static_cast<int>(chosen.size()) < kWindows && apart) chosen.push_back(k);
    }
    sets.push_back(chosen);
  }
  for (int apart : {kGrid / 4, kGrid / 8})
    for (int mid = apart; mid + apart < kGrid; mid += 4) sets.push_back({mid - apart, mid, mid + apart});
  // Each set is first asked, with a small budget, to beat the other terms; the one that raises the
  // bound most (the first on a tie) then gets the rest of the budget to bisect further. A set that
  // cannot (its rounded items fit, or its search runs out) is let go; every result is a bound.
  constexpr int64_t kScreen = 100'000, kFinal = 4'000'000;  // search nodes (about 0.15 s in all)
  auto run = [&](std::vector<int> chosen, double target, int64_t budget) {
    std::sort(chosen.begin(), chosen.end());
    chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
    std::vector<std::vector<double>> items(L, std::vector<double>(chosen.size()));
    std::vector<double> off;
    for (int k : chosen) off.push_back(offset[k]);
    for (int l = 0; l < L; ++l)
      for (size_t c = 0; c < chosen.size(); ++c) items[l][c] = work[l * G + chosen[c]];
    return vector_packing_bound(items, kind, off, Q, target, budget);
  };
  const double target = floor_ms * (1 + 1e-9);
  double best = 0;
  int winner = -1;
  for (size_t i = 0; i < sets.size(); ++i) {
    if (sets[i].empty()) continue;
    const double v = run(sets[i], target, kScreen);
    if (v > best + 1e-9 * best) {
      if (v >= target) winner = static_cast<int>(i);
      best = v;
    }
  }
  if (winner >= 0) best = std::max(best, run(sets[winner], best * (1 + 1e-9), kFinal));
  return best;
}

// Every device's windows over the whole grid at once, with whole layers (global_bound.h, window_lp):
// the configuration LP of the vector packing (packing_lp.h), bisected between the terms before it
// and the dealing's value (a packing that fits, so no capacity at or above it is refuted).
double window_lp_ms(const WindowGrid& grid, const Dealt& dealt, int L, int Q, double floor_ms, int64_t budget) {
  if (grid.G == 0 || dealt.device.empty() || Q < 2 || budget <= 0) return 0;
  const double ceiling = dealt.device.front().first;
  if (!(ceiling > floor_ms * (1 + 1e-6))) return 0;
  return vector_packing_lp_bound(grid.work, L, grid.offset, Q, floor_ms, ceiling, budget).bound_ms;
}

// Jackson's preemptive one-machine bound on the ops of `layers` on one device (global_bound.h,
// heavy_pairs): at each moment the released op with the longest tail runs, preempted by a release;
// the largest end + tail. A layer's forwards, gradient parts and the rest each form a sequence of
// M ops of one length and one tail, released at first + j·step, so the schedule keeps per sequence
// how many are released and done. Counts the ops against `budget`; returns -1 where the budget
// cannot pay for them.
double jackson_ms(const std::vector<LayerOps>& ops, std::initializer_list<int> layers, int M, int64_t& budget) {
  struct Seq {
    double first, step, length, tail, left;
    int released, done;
  };
  const int64_t count = 3LL * M * static_cast<int64_t>(layers.size());
  if (count > budget) return -1;
  budget -= count;
  std::vector<Seq> seq;
  for (int l : layers) {
    const LayerOps& o = ops[l];
    for (const Seq& x : {Seq{o.f_first, o.f_step, o.f, o.f_tail, o.f, 0, 0},
                         Seq{o.g_first, o.g_step, o.g, o.g_tail, o.g, 0, 0},
                         Seq{o.g_first + o.g, o.g_step, o.w, 0.0, o.w, 0, 0}})
      if (x.length > 0) seq.push_back(x);
  }
  constexpr double kNever = std::numeric_limits<double>::infinity();
  double t = 0, best = 0;
  for (;;) {
    double next = kNever;  // the next release after t
    int run = -1;          // the sequence with a released op left and the longest tail
    for (int k = 0; k < static_cast<int>(seq.size()); ++k) {
      Seq& x = seq[k];
      while (x.released < M && x.first + x.released * x.step <= t) ++x.released;
      if (x.released < M) next = std::min(next, x.first + x.released * x.step);
      if (x.done < x.released && (run < 0 || x.tail > seq[run].tail)) run = k;
    }
    if (run < 0) {
      if (next == kNever) break;
      t = next;
      continue;
    }
    Seq& x = seq[run];
    if (t + x.left <= next) {
      t += x.left;
      x.left = x.length;
      ++x.done;
      best = std::max(best, t + x.tail);
    } else {
      x.left -= next - t;
      t = next;
    }
  }
  return best;
}

// One layer alone, or two heavy layers, on one device (global_bound.h, heavy_pairs): the least C, as
// far as bisection proves it, at which every layer's own Jackson bound is at most C and the heavy
// layers (any three of them hold more than C of work) fit Q devices, two of them sharing a device
// only where their pair's Jackson bound is at most C (a maximum matching). Returns 0 where it proves
// nothing above `floor_ms`.
double heavy_pairs_ms(const std::vector<LayerOps>& ops, const std::vector<double>& work, int M, int Q,
                      double floor_ms) {
  const int L = static_cast<int>(ops.size());
  if (!(floor_ms > 0)) return 0;
  // Where the budget runs out, a layer's or a pair's bound is estimated from below (its work, its
  // layers' own bounds): fewer layers refute C, the matching allows more pairs, what it proves holds.
  int64_t budget = kHeavyPairsBudget;
  double single_top = 0;
  std::vector<double> single(L);
  for (int l = 0; l < L; ++l) {
    single[l] = jackson_ms(ops, {l}, M, budget);
    if (single[l] < 0) single[l] = work[l];
    single_top = std::max(single_top, single[l]);
  }
  // The heavy layers at C: the most layers, heaviest first, of which any three hold more than C of
  // work together (the last three do), so a device that ends by C holds at most two of them. At C
  // above the floor they are among those at the floor (fewer than 3Q + 3: the floor is at least the
  // mean load, so their work would exceed Q × floor).
  std::vector<int> by_work(L);
  std::iota(by_work.begin(), by_work.end(), 0);
  std::stable_sort(by_work.begin(), by_work.end(), [&](int x, int y) { return work[x] > work[y]; });
  auto heavy_count = [&](double C) {
    int k = std::min(L, 2);
    while (k < L && work[by_work[k - 2]] + work[by_work[k - 1]] + work[by_work[k]] > C) ++k;
    return k;
  };
  auto heavy_count_capped = [&](double C) { return std::min(heavy_count(C), kHeavyPairsMaxLayers); };
  const int H = heavy_count_capped(floor_ms);
  const std::vector<int> heavy(by_work.begin(), by_work.begin() + H);
  if (H <= Q) return single_top > floor_ms ? single_top : 0;
  // Each pair's bound, known (`exact`) or from below: at first the larger of the two layers' own
  // bounds and their work together. A pair's Jackson bound is computed only when a matching uses
  // the pair (memoised; none where the two layers' work is above `top`, where at most two layers are
  // heavy and only Q = 1 asks for a pair, nor past the budget).
  double top = single_top;
  if (L >= 3) top = std::max(top, work[by_work[0]] + work[by_work[1]] + work[by_work[2]]);
  std::vector<std::vector<double>> pair(H, std::vector<double>(H, 0.0));
  std::vector<std::vector<char>> exact(H, std::vector<char>(H, 0));
  for (int i = 0; i < H; ++i)
    for (int k = i + 1; k < H; ++k) {
      const double both = work[heavy[i]] + work[heavy[k]];
      pair[i][k] = pair[k][i] = std::max({both, single[heavy[i]], single[heavy[k]]});
      exact[i][k] = exact[k][i] = both > top;
    }
  // No plan ends by C: some layer's own bound is above C, or the heavy layers (at most two per
  // device) need more pairs on one device than a matching of the pairs whose bound is at most C
  // gives. A maximum matching on the pairs not known to exceed C; where it uses a pair whose bound
  // is not known yet, that bound is computed, and the matching found again if one exceeds C.
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  int matchings = kHeavyPairsMatchings;
  auto refuted = [&](double C) {
    if (single_top > C) return true;
    const int in = heavy_count_capped(C);  // heavy[0 .. in)
    const int need = in - Q;
    if (need <= 0) return false;
    while (matchings-- > 0) {
      Graph g(in);
      for (int x = 0; x < in; ++x)
        for (int y = x + 1; y < in; ++y)
          if (pair[x][y] <= C) boost::add_edge(x, y, g);
      std::vector<boost::graph_traits<Graph>::vertex_descriptor> mate(in);
      boost::edmonds_maximum_cardinality_matching(g, &mate[0]);
      if (static_cast<int>(boost::matching_size(g, &mate[0])) < need) return true;
      bool dropped = false;
      for (int x = 0; x < in; ++x) {
        const auto y = static_cast<int>(mate[x]);
        if (mate[x] == boost::graph_traits<Graph>::null_vertex() || y < x || exact[x][y]) continue;
        const double v = jackson_ms(ops, {heavy[x], heavy[y]}, M, budget);
        exact[x][y] = exact[y][x] = 1;
        if (v >= 0) pair[x][y] = pair[y][x] = std::max(pair[x][y], v);
        dropped = dropped || pair[x][y] > C;
      }
      if (!dropped) return false;
    }
    return false;
  };
  if (!refuted(floor_ms * (1 + 1e-9))) return 0;
  // Every C refuted is a bound; the refutation grows no easier with C, so bisect up to 2 × top (at
  // most two layers heavy there, every layer's own bound below it).
  double lo = floor_ms, hi = std::max(top, floor_ms) * 2;
  while (hi - lo > 1e-7 * hi) {
    const double mid = (lo + hi) / 2;
    (refuted(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

Result<GlobalBound> global_lower_bound(const Spec& spec, int devices, int microbatches,
                                       double memory_limit_gb, const GlobalBoundOptions& options) {
  const Model& model = spec.model;
  int L = static_cast<int>(model.layers.size());
  if (devices < 1)
    return Status::bad_input(fmt::format("bound needs devices >= 1, got {}", devices));
  if (microbatches < 1)
    return Status::bad_input(fmt::format("bound needs microbatches >= 1, got {}", microbatches));
  if (L < 1) return Status::bad_input(fmt::format("model '{}' has no layers", model.name));
  PS_RETURN_IF_ERROR(check_memory_limit_gb(memory_limit_gb, "bound: the memory limit"));

  GlobalBound g;
  g.devices = devices;
  g.microbatches = microbatches;
  const double M = microbatches;
  const int Q = std::min(devices, L);

  double sum_c = 0, sum_f = 0, sum_i = 0;
  std::vector<double> a(L + 1, 0.0);  // a[l] = F_0 + … + F_{l−1}
  for (int l = 0; l < L; ++l) {
    const LayerType& t = model.type_of(l);
    sum_c += layer_time_floor_ms(model, LayerId{l});
    sum_f += t.forward_ms;
    sum_i += gradient_ms(t);
    a[l + 1] = a[l] + t.forward_ms;
  }
  g.total_work_ms = M * sum_c / Q;

  const LayerType& t0 = model.type_of(0);
  // Layer 0's backward after its gradient piece, and its whole backward, at their least (a fused
  // backward_ms may be cheaper than I + W; a type that splits without one: W and I + W; one that
  // cannot split: nothing after its B).
  const double rest0 = t0.backward_ms || !t0.split_backward
                           ? std::min(t0.backward_weight_ms, t0.fused_backward_ms() - gradient_ms(t0))
                           : t0.backward_weight_ms;

  // A layer's M forwards and M gradient parts from a_l, then the gradient chain below it
  // (global_bound.h, heaviest_layer).
  double below_g = 0;  // Σ_{k<l} g_k
  for (int l = 0; l < L; ++l) {
    const LayerType& t = model.type_of(l);
    double v = a[l] + M * layer_time_floor_ms(model, LayerId{l});
    if (l > 0) v = std::max(v, a[l] + M * (t.forward_ms + gradient_ms(t)) + below_g + rest0);
    if (v > g.heaviest_layer_ms) {
      g.heaviest_layer_ms = v;
      g.heaviest_layer = l;
    }
    below_g += gradient_ms(t);
  }
  const double back0 = t0.backward_ms ? t0.least_backward_ms() : t0.backward_input_ms + t0.backward_weight_ms;
  double cp_last_forward = (M - 1) * t0.forward_ms + sum_f + sum_i + rest0;
  double cp_first_backward = sum_f + (sum_i - gradient_ms(t0)) + M * back0;
  g.critical_path_ms = std::max(cp_last_forward, cp_first_backward);

  double lost = 0;
  for (int j = 1; j < Q; ++j) lost += a[j];
  g.ramp_ms = (M * sum_c + lost) / Q;

  // The two ramps with whole layers (global_bound.h): the k-th device by lowest layer opens at
  // a_k (plus, when no type splits, the gradient chain below layer k after its last B), the k-th
  // by highest layer starts its backward at a_L + the gradients of the k layers above it.
  bool any_split = false;
  for (int l = 0; l < L; ++l) any_split = any_split || model.type_of(l).split_backward;
  std::vector<double> work(L), back(L), open_fwd(Q), open_bwd(Q);
  double below = 0, above = 0;
  for (int l = 0; l < L; ++l) {
    work[l] = M * layer_time_floor_ms(model, LayerId{l});
    back[l] = M * (layer_time_floor_ms(model, LayerId{l}) - model.type_of(l).forward_ms);
  }
  for (int k = 0; k < Q; ++k) {
    open_fwd[k] = a[k] + (any_split ? 0.0 : below);
    below += gradient_ms(model.type_of(k));
    open_bwd[k] = a[L] + above;
    above += gradient_ms(model.type_of(L - 1 - k));
  }
  const OffsetPacking fwd = offset_packing_bound(work, open_fwd);
  const OffsetPacking bwd = offset_packing_bound(back, open_bwd);
  g.backward_ramp_ms = bwd.fractional_ms;
  g.ramp_packing_ms = fwd.bound_ms;
  g.backward_ramp_packing_ms = bwd.bound_ms;
  g.ramp_packing_decided = fwd.decided && bwd.decided;

  std::vector<double> forward(L);
  for (int l = 0; l < L; ++l) forward[l] = model.type_of(l).forward_ms;
  g.forward_release_ms = forward_release_ms(forward, a, M * sum_c, M, Q);

  const double others_ms = std::max({g.total_work_ms, g.ramp_ms, g.heaviest_layer_ms, g.critical_path_ms,
                                     g.backward_ramp_ms, g.ramp_packing_ms, g.backward_ramp_packing_ms,
                                     g.forward_release_ms});
  g.release_packing_ms = release_packing_ms(forward, a, work, M, Q, others_ms);

  // The per-device windows with whole layers: each layer's ops as release times, lengths and tails.
  std::vector<LayerOps> ops(L);
  std::vector<int> kind(L);
  {
    double top_f = 0, top_g = 0, above_g = 0, below_g = 0, after_f = 0;
    for (int l = 0; l < L; ++l) top_f = std::max(top_f, forward[l]);  // s_{L−1}
    std::vector<double> g(L);
    for (int l = 0; l < L; ++l) g[l] = gradient_ms(model.type_of(l));
    double sum_g = 0;
    for (int l = 0; l < L; ++l) sum_g += g[l];
    double s_l = 0;
    for (int l = 0; l < L; ++l) {
      s_l = std::max(s_l, forward[l]);
      ops[l].f = forward[l];
      ops[l].f_first = a[l];
      ops[l].f_step = s_l;
      ops[l].g = g[l];
      ops[l].g_tail = below_g + rest0;
      ops[l].w = std::max(0.0, work[l] / M - forward[l] - g[l]);
      below_g += g[l];
      kind[l] = static_cast<unsigned char>(model.layers[l].type);
    }
    for (int l = L - 1; l >= 0; --l) {
      top_g = std::max(top_g, g[l]);
      ops[l].f_tail = after_f + sum_g + rest0;
      ops[l].g_first = a[L] + above_g;
      ops[l].g_step = std::max(top_f, top_g);
      after_f += forward[l];
      above_g += g[l];
    }
  }
  const double before_windows_ms = std::max(others_ms, g.release_packing_ms);
  const WindowGrid grid = window_grid(ops, M, Q);
  if (grid.G > 0) {
    const Dealt dealt = deal_layers(grid.work, grid.offset, L, Q, 2e7);
    g.window_packing_ms = window_packing_ms(grid, dealt, kind, Q, before_windows_ms);
    g.window_lp_ms = window_lp_ms(grid, dealt, L, Q, std::max(before_windows_ms, g.window_packing_ms),
                                  options.window_lp_budget);
  }
  g.heavy_pairs_ms = heavy_pairs_ms(ops, work, microbatches, Q,
                                    std::max({before_windows_ms, g.window_packing_ms, g.window_lp_ms}));

  g.bound_ms = g.total_work_ms;
  g.binding = "total_work";
  auto take = [&](double v, const char* name) {
    if (v > g.bound_ms) {
      g.bound_ms = v;
      g.binding = name;
    }
  };
  take(g.ramp_ms, "ramp");
  take(g.heaviest_layer_ms, "heaviest_layer");
  take(g.critical_path_ms, "critical_path");
  take(g.backward_ramp_ms, "backward_ramp");
  take(g.ramp_packing_ms, "ramp_packing");
  take(g.backward_ramp_packing_ms, "backward_ramp_packing");
  take(g.forward_release_ms, "forward_release");
  // Its mean-load part is below forward_release's (which also caps what the devices can do before T),
  // and its search, as the ramps', bisects to 1e-6 relative: it names the bound only where the whole
  // layers raise it by more than that, not on a tie.
  if (g.release_packing_ms > g.bound_ms * (1 + 1e-6))
    take(g.release_packing_ms, "release_packing");
  else
    g.bound_ms = std::max(g.bound_ms, g.release_packing_ms);
  // Its search bisects to 1e-6 relative too: named only where it raises the bound by more.
  if (g.window_packing_ms > g.bound_ms * (1 + 1e-6))
    take(g.window_packing_ms, "window_packing");
  else
    g.bound_ms = std::max(g.bound_ms, g.window_packing_ms);
  // Its bisection stops within 1e-4 relative, above the terms before it: named where it raises the
  // bound by more than 1e-6.
  if (g.window_lp_ms > g.bound_ms * (1 + 1e-6))
    take(g.window_lp_ms, "window_lp");
  else
    g.bound_ms = std::max(g.bound_ms, g.window_lp_ms);
  // Its bisection stops within 1e-7 relative: named only where it raises the bound by more than 1e-6.
  if (g.heavy_pairs_ms > g.bound_ms * (1 + 1e-6))
    take(g.heavy_pairs_ms, "heavy_pairs");
  else
    g.bound_ms = std::max(g.bound_ms, g.heavy_pairs_ms);

  // Memory.
  double states_mb = 0;
  for (int l = 0; l < L; ++l)
    states_mb += model.type_of(l).params_m * spec.pipeline.bytes_per_param;
  g.model_state_gb = mb_to_gb(states_mb);
  g.memory_limit_gb = memory_limit_gb;
  if (memory_limit_gb > 0) {
    double cap_mb = gb_to_mb(memory_limit_gb);
    g.min_devices_for_memory = static_cast<int>(std::ceil(states_mb / cap_mb - 1e-12));
    if (g.min_devices_for_memory < 1) g.min_devices_for_memory = 1;
    for (int l = 0; l < L; ++l) {
      const LayerType& t = model.type_of(l);
      double need_mb = t.params_m * spec.pipeline.bytes_per_param + t.activation_mb;
      if (need_mb > cap_mb) {
        g.memory_feasible = false;
        g.memory_reason = fmt::format(
            "layer {} ('{}', {}) alone needs {:.2f} GB (model states + one microbatch's "
            "activations), more than the {:.2f} GB per device",
            l, model.layers[l].type, t.name, mb_to_gb(need_mb), memory_limit_gb);
        break;
      }
    }
    if (g.memory_feasible && g.min_devices_for_memory > devices) {
      g.memory_feasible = false;
      g.memory_reason = fmt::format(
          "the model states need {:.2f} GB in total; at {:.2f} GB per device that takes at least "
          "{} devices, only {} given",
          g.model_state_gb, memory_limit_gb, g.min_devices_for_memory, devices);
    }
  }
  return g;
}

}  // namespace ps
