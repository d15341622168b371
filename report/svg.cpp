// svg.cpp — format_svg: a Gantt chart of a simulated schedule with memory curves.
//
// Layout (top to bottom): title and a subtitle with the figures; a legend; one row per device
// (compute lane: F/I/W/B boxes in distinct colours with the microbatch number inside, later stages
// of the same device in a darker shade; idle time shows as the hatched row background; comm lane:
// thin grey bars where data moves, ticks for instantaneous transfers); a time axis with ticks;
// then one small memory panel per device (step curve, model-state baseline, peak marker, limit
// line when there is one) on the same time axis. Every box has a <title> tooltip with the action,
// op index and times. Deterministic (fixed formatting, no maps keyed by pointers).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "ir/units.h"
#include "report/report.h"

namespace ps {
namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '\x22': o += "&quot;"; break;  // the double quote
      default: o += c;
    }
  }
  return o;
}

// Base colours per compute type (Tableau 10) and a darker shade for a device's later stages.
const char* base_colour(OpType t, int shade) {
  static const char* kF[] = {"#4e79a7", "#2f5480", "#1d3a5e"};
  static const char* kB[] = {"#e15759", "#b03336", "#7f1f22"};
  static const char* kI[] = {"#f28e2b", "#c46a12", "#8e4a08"};
  static const char* kW[] = {"#59a14f", "#3a7a32", "#25541f"};
  static const char* kR[] = {"#b07aa1", "#8a5a7d", "#633f5a"};
  const int k = std::clamp(shade, 0, 2);
  switch (t) {
    case OpType::F: return kF[k];
    case OpType::B: return kB[k];
    case OpType::I: return kI[k];
    case OpType::W: return kW[k];
    case OpType::R: return kR[k];
    default: return "#999999";
  }
}

// A "nice" tick step (1, 2 or 5 × 10^k) giving about `target` ticks over `span`.
double tick_step(double span, int target) {
  if (span <= 0) return 1;
  const double raw = span / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

std::string num(double v) {  // compact coordinates
  std::string s = fmt::format("{:.2f}", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string tick_label(double v, double step) {
  if (step >= 1) return fmt::format("{:.0f}", v);
  const int dec = std::min(6, static_cast<int>(std::ceil(-std::log10(step))));
  return fmt::format("{:.{}f}", v, dec);
}

std::string svg_open(double W, double H) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"Helvetica, Arial, sans-serif\">\n",
      num(W), num(H), num(W), num(H));
}

constexpr double kLeft = 78, kRight = 96;  // margins of the chart, px
constexpr double kMinChartW = 1100;         // chart width when nothing asks for more, px

// A schedule that could not be simulated: the title and why there is no chart.
std::string no_timing_svg(const Report& r, const std::string& title) {
  const double W = kLeft + kMinChartW + kRight;
  const double H = 120;
  std::string out = svg_open(W, H);
  out += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", num(W), num(H));
  out += fmt::format("<text x=\"{}\" y=\"32\" font-size=\"18\" font-weight=\"bold\">{}</text>\n", num(kLeft),
                     esc(title));
  out += fmt::format(
      "<text x=\"{}\" y=\"62\" font-size=\"13\" fill=\"#b03336\">{} — no timing: the schedule could not "
      "be simulated ({} violation{})</text>\n",
      num(kLeft), r.valid ? "valid" : "INVALID", r.violations.size(), r.violations.size() == 1 ? "" : "s");
  out += "</svg>\n";
  return out;
}

// Width: at least 1100 px; wider (up to 2400) so that 80% of the compute boxes get 16 px.
double chart_width(const Schedule& s, const Simulation& sim, double T) {
  std::vector<double> dur;
  for (int d = 0; d < s.num_devices(); ++d)
    for (size_t i = 0; i < s.programs[d].size(); ++i)
      if (is_compute(s.programs[d][i].type) && sim.times[d][i].end_ms > sim.times[d][i].start_ms)
        dur.push_back(sim.times[d][i].end_ms - sim.times[d][i].start_ms);
  if (dur.empty()) return kMinChartW;
  std::sort(dur.begin(), dur.end());
  return std::clamp(16.0 * T / dur[dur.size() / 5], kMinChartW, 2400.0);
}

// Where everything goes, px (time T in the schedule's unit).
struct Layout {
  double T = 1;          // makespan (1 when it is 0)
  double chart_w = 0, W = 0, H = 0;
  double xs = 0;         // px per time unit
  double row_h = 0, comm_h = 0, pitch = 0, gantt_top = 0, axis_y = 0;
  double mem_title_y = 0, mem_h = 0, mem_gap = 0, mem_top = 0, mem_axis_y = 0;
  double X(double t) const { return kLeft + t * xs; }
};

Layout layout_for(const Schedule& s, const Simulation& sim) {
  const int D = s.num_devices();
  Layout L;
  L.T = sim.makespan_ms > 0 ? sim.makespan_ms : 1.0;
  L.chart_w = chart_width(s, sim, L.T);
  L.W = kLeft + L.chart_w + kRight;
  L.xs = L.chart_w / L.T;
  L.row_h = D <= 8 ? 30 : std::max(8.0, std::min(30.0, 520.0 / D));
  L.comm_h = std::max(3.0, L.row_h * 0.22);
  const double row_gap = std::max(2.0, L.row_h * 0.25);
  L.pitch = L.row_h + L.comm_h + row_gap + 2;
  L.gantt_top = 104;
  L.axis_y = L.gantt_top + D * L.pitch + 4;
  L.mem_title_y = L.axis_y + 48;
  L.mem_h = D <= 8 ? 46 : std::max(14.0, std::min(46.0, 520.0 / D));
  L.mem_gap = std::max(4.0, L.mem_h * 0.25);
  L.mem_top = L.mem_title_y + 12;
  L.mem_axis_y = L.mem_top + D * (L.mem_h + L.mem_gap);
  L.H = L.mem_axis_y + 40;
  return L;
}

// The memory panels' common scale, MB. When model states dominate, it starts at a round value
// below the smallest of them (stated in the heading) so the changes stay visible.
struct MemoryScale {
  double bottom_mb = 0, top_mb = 1;
  double limit_mb = 0;
  bool show_limit = false;
  bool in_gb = false;
  std::string str(double mb) const {
    return in_gb ? fmt::format("{:.3g} GB", mb_to_gb(mb)) : fmt::format("{:.3g} MB", mb);
  }
};

MemoryScale memory_scale(const Report& r, const Simulation& sim, int D) {
  double max_mb = 0, min_base = 1e300;
  for (int d = 0; d < D; ++d) {
    max_mb = std::max(max_mb, sim.peak_memory_mb[d]);
    if (!sim.memory[d].empty()) min_base = std::min(min_base, sim.memory[d].front().mb);
  }
  MemoryScale m;
  m.limit_mb = gb_to_mb(r.memory_limit_gb);
  m.show_limit = m.limit_mb > 0 && m.limit_mb <= 1.5 * std::max(max_mb, 1e-9);
  m.top_mb = std::max(max_mb, m.show_limit ? m.limit_mb : 0.0);
  if (m.top_mb <= 0) m.top_mb = 1;
  if (min_base < 1e300 && min_base > 0.4 * m.top_mb) {
    const double st = tick_step(m.top_mb - 0.8 * min_base, 4);
    m.bottom_mb = std::floor(0.9 * min_base / st) * st;
  }
  m.in_gb = m.top_mb >= kMbPerGb;
  return m;
}

// Which stages live on each device, in order: the shade of their boxes.
std::vector<std::map<int, int>> stage_shades(const Schedule& s) {
  const int D = s.num_devices();
  std::vector<std::map<int, int>> shade(D);
  for (int st = 0; st < s.problem.num_stages(); ++st) {
    const int d = s.problem.device_of(StageId{st});
    if (d >= 0 && d < D) {
      const int k = static_cast<int>(shade[d].size());
      shade[d][st] = k;
    }
  }
  return shade;
}

// The chart of a simulated schedule, written part by part into one string.
class Chart {
 public:
  Chart(const Report& r, const Simulation& sim)
      : r_(r), s_(r.checked), sim_(sim), D_(s_.num_devices()), L_(layout_for(s_, sim)), shade_(stage_shades(s_)),
        step_(tick_step(L_.T, 12)) {}

  std::string draw(const std::string& title) {
    header(title);
    legend();
    time_grid();
    const double label_px = label_size();
    for (int d = 0; d < D_; ++d) device_row(d, label_px);
    axis(L_.axis_y);
    const MemoryScale m = memory_scale(r_, sim_, D_);
    memory_heading(m);
    for (int d = 0; d < D_; ++d) memory_panel(d, m);
    axis(L_.mem_axis_y);
    out_ += "</svg>\n";
    return std::move(out_);
  }

 private:
  // The canvas, the idle pattern, the title and a subtitle with the figures.
  void header(const std::string& title) {
    out_ = svg_open(L_.W, L_.H);
    out_ +=
        "<defs><pattern id=\"idle\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f3f3f3\"/>"
        "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#d9d9d9\" stroke-width=\"2\"/></pattern></defs>\n";
    out_ += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", num(L_.W), num(L_.H));
    out_ += fmt::format("<text x=\"{}\" y=\"28\" font-size=\"18\" font-weight=\"bold\" fill=\"#222\">{}</text>\n",
                        num(kLeft), esc(title));
    const char* ms = s_.problem.unit_costs ? "" : " ms";
    std::string sub = fmt::format(
        "{} · {} semantics · {} devices, {} stages, {} microbatches · makespan {:.3f}{} · lower bound {:.3f}{} "
        "· bubble {:.1f}%",
        r_.valid ? "valid" : "INVALID", semantics_name(r_.semantics), D_, s_.problem.num_stages(),
        s_.problem.microbatches, sim_.makespan_ms, ms, r_.lower_bound_ms, ms, 100 * sim_.bubble_ratio);
    if (r_.comms_inserted) sub += " · comms inserted";
    if (s_.problem.unit_costs) sub += " · unit costs";
    out_ += fmt::format("<text x=\"{}\" y=\"50\" font-size=\"12.5\" fill=\"{}\">{}</text>\n", num(kLeft),
                        r_.valid ? "#444" : "#b03336", esc(sub));
  }

  // One legend entry at lx (a box, or a thin bar), then lx moves past it.
  void legend_item(double& lx, double ly, const std::string& fill, const std::string& label, bool thin = false) {
    if (thin)
      out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"4\" fill=\"{}\"/>\n", num(lx), num(ly + 5),
                          fill);
    else
      out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"14\" rx=\"2\" fill=\"{}\" "
                          "stroke=\"#888\" stroke-width=\"0.5\"/>\n",
                          num(lx), num(ly), fill);
    out_ += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#333\">{}</text>\n", num(lx + 21),
                        num(ly + 11), esc(label));
    lx += 21 + 7.0 * static_cast<double>(label.size()) + 18;
  }

  // The op kinds present, idle, transfers, and how to read shades and numbers.
  void legend() {
    double lx = kLeft;
    const double ly = 66;
    bool has[6] = {false, false, false, false, false, false};
    for (const auto& p : s_.programs)
      for (const Action& a : p) {
        if (a.type == OpType::F) has[0] = true;
        if (a.type == OpType::I) has[1] = true;
        if (a.type == OpType::W) has[2] = true;
        if (a.type == OpType::B) has[3] = true;
        if (a.type == OpType::R) has[4] = true;
        if (is_data_parallel(a.type)) has[5] = true;
      }
    if (has[0]) legend_item(lx, ly, base_colour(OpType::F, 0), "F forward");
    if (has[1]) legend_item(lx, ly, base_colour(OpType::I, 0), "I backward (input)");
    if (has[2]) legend_item(lx, ly, base_colour(OpType::W, 0), "W backward (weights)");
    if (has[3]) legend_item(lx, ly, base_colour(OpType::B, 0), "B backward (fused)");
    if (has[4]) legend_item(lx, ly, base_colour(OpType::R, 0), "R recomputation");
    legend_item(lx, ly, "url(#idle)", "idle");
    legend_item(lx, ly, "#8a8a8a", "SEND/RECV transfer", true);
    if (has[5]) legend_item(lx, ly, "#76b7b2", "REDUCE_GRAD (data-parallel)", true);
    bool multi_stage = false;
    for (const auto& m : shade_) multi_stage |= m.size() > 1;
    if (multi_stage) {
      out_ += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#555\">darker = a later stage on "
                          "the same device · number = microbatch</text>\n",
                          num(lx), num(ly + 11));
    } else {
      out_ += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#555\">number = microbatch</text>\n",
                          num(lx), num(ly + 11));
    }
  }

  // Vertical grid lines at every tick, across the Gantt rows and the memory panels.
  void time_grid() {
    for (double t = 0; t <= L_.T + 1e-9 * L_.T; t += step_) {
      out_ += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e6e6e6\" stroke-width=\"1\"/>\n",
                          num(L_.X(t)), num(L_.gantt_top - 4), num(L_.axis_y));
      out_ += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#efefef\" stroke-width=\"1\"/>\n",
                          num(L_.X(t)), num(L_.mem_top - 2), num(L_.mem_axis_y));
    }
  }

  // A time axis at y: the line, ticks with labels, and the unit.
  void axis(double y) {
    out_ += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#444\" stroke-width=\"1\"/>\n",
                        num(kLeft), num(y), num(kLeft + L_.chart_w), num(y));
    for (double t = 0; t <= L_.T + 1e-9 * L_.T; t += step_) {
      out_ += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#444\" stroke-width=\"1\"/>\n",
                          num(L_.X(t)), num(y), num(y + 5));
      out_ += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#333\" text-anchor=\"middle\">{}</text>\n",
                          num(L_.X(t)), num(y + 17), tick_label(t, step_));
    }
    const char* time_unit = s_.problem.unit_costs ? "time (unit costs: 1 = one forward)" : "time (ms)";
    out_ += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#333\" text-anchor=\"end\">{}</text>\n",
                        num(kLeft + L_.chart_w), num(y + 31), time_unit);
  }

  // The font size at which `label` fits a box w px wide.
  double fit_px(double w, const std::string& label) const {
    return std::min({12.0, L_.row_h * 0.55, (w - 2) / (0.62 * static_cast<double>(label.size()))});
  }

  // Microbatch labels: one font size for the whole chart (the size at which 80% of the boxes fit
  // their label, between 6 and 12 px); boxes too narrow for it stay unlabelled.
  double label_size() const {
    std::vector<double> fits;
    for (int d = 0; d < D_; ++d)
      for (size_t i = 0; i < s_.programs[d].size(); ++i) {
        const Action& a = s_.programs[d][i];
        const double w = (sim_.times[d][i].end_ms - sim_.times[d][i].start_ms) * L_.xs;
        if (is_compute(a.type) && w > 0) fits.push_back(fit_px(w, fmt::format("{}", a.mb)));
      }
    if (fits.empty()) return 12;
    std::sort(fits.begin(), fits.end());
    return std::clamp(fits[fits.size() / 5], 6.0, 12.0);
  }

  // A device's row: the idle background, its compute boxes and, on the comm lane below, its
  // transfers (a dark bar where it sends, a light one where it receives).
  void device_row(int d, double label_px) {
    const double y = L_.gantt_top + d * L_.pitch;
    const double row_h = L_.row_h, comm_h = L_.comm_h;
    const bool label_rows = row_h >= 12;
    out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#idle)\"/>\n", num(kLeft),
                        num(y), num(L_.chart_w), num(row_h));
    out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\"/>\n", num(kLeft),
                        num(y + row_h + 1), num(L_.chart_w), num(comm_h));
    if (label_rows || d % std::max(1, D_ / 16) == 0)
      out_ += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#222\" text-anchor=\"end\">device {}</text>\n",
                          num(kLeft - 8), num(y + row_h * 0.5 + 4), label_rows ? "12" : "9", d);
    const auto& prog = s_.programs[d];
    for (size_t i = 0; i < prog.size(); ++i) {
      const Action& a = prog[i];
      const OpInterval& iv = sim_.times[d][i];
      const std::string tip = fmt::format("{} · device {} op {} · {:.3f}–{:.3f} ms", to_string(a), d, i,
                                          iv.start_ms, iv.end_ms);
      if (is_comm(a.type)) {
        if (!is_send(a.type)) continue;  // one bar per transfer on the sender's lane and ...
        const double w = std::max(1.0, (iv.end_ms - iv.start_ms) * L_.xs);
        out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#8a8a8a\"><title>{}</title></rect>\n",
                            num(L_.X(iv.start_ms)), num(y + row_h + 1), num(w), num(comm_h), esc(tip));
        continue;
      }
      if (is_data_parallel(a.type)) {  // the data-parallel stream shares the comm lane, in teal
        const double w = std::max(1.0, (iv.end_ms - iv.start_ms) * L_.xs);
        out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#76b7b2\"><title>{}</title></rect>\n",
                            num(L_.X(iv.start_ms)), num(y + row_h + 1), num(w), num(comm_h), esc(tip));
        continue;
      }
      const double x0 = L_.X(iv.start_ms), w = (iv.end_ms - iv.start_ms) * L_.xs;
      if (w <= 0) continue;
      auto it = shade_[d].find(a.stage.value());
      const int sh = it == shade_[d].end() ? 0 : it->second;
      out_ += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"{}\">"
          "<title>{}</title></rect>\n",
          num(x0), num(y), num(w), num(row_h), base_colour(a.type, sh), w > 3 ? "0.8" : "0.2", esc(tip));
      const std::string label = fmt::format("{}", a.mb);
      if (fit_px(w, label) >= label_px)
        out_ += fmt::format(
            "<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#ffffff\" text-anchor=\"middle\">{}</text>\n",
            num(x0 + w / 2), num(y + row_h / 2 + label_px * 0.36), num(label_px), label);
    }
    // ... the receiver's lane shows the same transfer.
    for (size_t i = 0; i < prog.size(); ++i) {
      const Action& a = prog[i];
      if (!is_recv(a.type)) continue;
      const OpInterval& iv = sim_.times[d][i];
      const double w = std::max(1.0, (iv.end_ms - iv.start_ms) * L_.xs);
      out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#b5b5b5\"><title>{} · device {} op {} "
                          "· {:.3f}–{:.3f} ms</title></rect>\n",
                          num(L_.X(iv.start_ms)), num(y + row_h + 1), num(w), num(comm_h), to_string(a), d, i,
                          iv.start_ms, iv.end_ms);
    }
  }

  // Memory panels: one per device, all on one scale; the heading states it.
  void memory_heading(const MemoryScale& m) {
    out_ += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"13\" font-weight=\"bold\" fill=\"#222\">memory per device</text>"
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#555\">every panel spans {} – {} · dashed: model "
        "states{} · dot: peak</text>\n",
        num(kLeft), num(L_.mem_title_y), num(kLeft + 150), num(L_.mem_title_y), m.str(m.bottom_mb), m.str(m.top_mb),
        m.show_limit ? fmt::format(" · red: limit {}", m.str(m.limit_mb)) : std::string());
  }

  // A device's panel: the step curve over a filled area, the model-state baseline, the limit, the
  // peak marker and its figure.
  void memory_panel(int d, const MemoryScale& m) {
    const double mem_h = L_.mem_h;
    const double y0 = L_.mem_top + d * (mem_h + L_.mem_gap);
    auto Y = [&](double mb) { return y0 + mem_h - ((mb - m.bottom_mb) / (m.top_mb - m.bottom_mb)) * mem_h; };
    auto X = [&](double t) { return L_.X(t); };
    out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f7f9fc\" stroke=\"#dde3ea\" "
                        "stroke-width=\"0.6\"/>\n",
                        num(kLeft), num(y0), num(L_.chart_w), num(mem_h));
    if (mem_h >= 12 || d % std::max(1, D_ / 16) == 0)
      out_ += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#222\" text-anchor=\"end\">device {}</text>\n",
                          num(kLeft - 8), num(y0 + mem_h * 0.5 + 4), mem_h >= 12 ? "11" : "9", d);
    const auto& curve = sim_.memory[d];
    if (curve.empty()) return;
    std::string path = fmt::format("M{},{}", num(X(0)), num(Y(curve.front().mb)));
    for (size_t k = 1; k < curve.size(); ++k)
      path += fmt::format(" H{} V{}", num(X(curve[k].time_ms)), num(Y(curve[k].mb)));
    path += fmt::format(" H{}", num(X(L_.T)));
    // Filled area under the step curve, then the line.
    out_ += fmt::format("<path d=\"{} V{} H{} Z\" fill=\"#9ecae1\" fill-opacity=\"0.45\" stroke=\"none\"/>\n", path,
                        num(y0 + mem_h), num(X(0)));
    out_ += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#2b6ca3\" stroke-width=\"1.2\"/>\n", path);
    const double base = curve.front().mb;
    if (base > 0)
      out_ += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#555\" stroke-dasharray=\"4,3\" "
                          "stroke-width=\"0.8\"/>\n",
                          num(X(0)), num(Y(base)), num(X(L_.T)));
    if (m.show_limit)
      out_ += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#d62728\" stroke-dasharray=\"6,3\" "
                          "stroke-width=\"1\"/>\n",
                          num(X(0)), num(Y(m.limit_mb)), num(X(L_.T)));
    const int pk = sim_.peak_op_index[d];
    if (pk >= 0) {
      const double pt = sim_.times[d][pk].start_ms;
      out_ += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2.6\" fill=\"#d62728\"/>\n", num(X(pt)),
                          num(Y(sim_.peak_memory_mb[d])));
    }
    const bool over = m.show_limit && sim_.peak_memory_mb[d] > m.limit_mb;
    if (mem_h >= 12 || d % std::max(1, D_ / 16) == 0)
      out_ += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"{}\">peak {}</text>\n",
                          num(kLeft + L_.chart_w + 6), num(y0 + mem_h * 0.5 + 4), mem_h >= 12 ? "11" : "9",
                          over ? "#d62728" : "#333", m.str(sim_.peak_memory_mb[d]));
  }

  const Report& r_;
  const Schedule& s_;
  const Simulation& sim_;
  const int D_;
  const Layout L_;
  const std::vector<std::map<int, int>> shade_;
  const double step_;  // time between ticks
  std::string out_;
};

}  // namespace

std::string format_svg(const Report& r, const std::string& title_in) {
  const Schedule& s = r.checked;
  std::string base = s.source;
  if (const size_t slash = base.find_last_of('/'); slash != std::string::npos) base = base.substr(slash + 1);
  const std::string title = !title_in.empty() ? title_in : base.empty() ? std::string("pipesmith schedule") : base;
  if (!r.sim || s.num_devices() == 0) return no_timing_svg(r, title);
  return Chart(r, *r.sim).draw(title);
}

}  // namespace ps
