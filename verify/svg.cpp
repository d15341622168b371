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

#include "verify/verify.h"

namespace ps {
namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
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
  const int k = std::clamp(shade, 0, 2);
  switch (t) {
    case OpType::F: return kF[k];
    case OpType::B: return kB[k];
    case OpType::I: return kI[k];
    case OpType::W: return kW[k];
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

}  // namespace

std::string format_svg(const Report& r, const std::string& title_in) {
  const Schedule& s = r.checked;
  std::string base = s.source;
  if (const size_t slash = base.find_last_of('/'); slash != std::string::npos) base = base.substr(slash + 1);
  const std::string title = !title_in.empty() ? title_in : base.empty() ? std::string("pipesmith schedule") : base;
  const char* time_unit = s.problem.unit_costs ? "time (unit costs: 1 = one forward)" : "time (ms)";
  const int D = s.num_devices();
  const double kLeft = 78, kRight = 96;
  double kChartW = 1100;
  double W = kLeft + kChartW + kRight;
  std::string body;

  if (!r.sim || D == 0) {
    const double H = 120;
    std::string out = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
        "font-family=\"Helvetica, Arial, sans-serif\">\n",
        num(W), num(H), num(W), num(H));
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
  const Simulation& sim = *r.sim;
  const double T = sim.makespan_ms > 0 ? sim.makespan_ms : 1.0;
  {
    // Width: at least 1100 px; wider (up to 2400) so that 80% of the compute boxes get 16 px.
    std::vector<double> dur;
    for (int d = 0; d < D; ++d)
      for (size_t i = 0; i < s.programs[d].size(); ++i)
        if (!is_comm(s.programs[d][i].type) && sim.times[d][i].end_ms > sim.times[d][i].start_ms)
          dur.push_back(sim.times[d][i].end_ms - sim.times[d][i].start_ms);
    if (!dur.empty()) {
      std::sort(dur.begin(), dur.end());
      kChartW = std::clamp(16.0 * T / dur[dur.size() / 5], 1100.0, 2400.0);
      W = kLeft + kChartW + kRight;
    }
  }
  const double xs = kChartW / T;
  auto X = [&](double t) { return kLeft + t * xs; };

  // Vertical layout.
  const double row_h = D <= 8 ? 30 : std::max(8.0, std::min(30.0, 520.0 / D));
  const double comm_h = std::max(3.0, row_h * 0.22);
  const double row_gap = std::max(2.0, row_h * 0.25);
  const double pitch = row_h + comm_h + row_gap + 2;
  const double gantt_top = 104;
  const double gantt_h = D * pitch;
  const double axis_y = gantt_top + gantt_h + 4;
  const double mem_title_y = axis_y + 48;
  const double mem_h = D <= 8 ? 46 : std::max(14.0, std::min(46.0, 520.0 / D));
  const double mem_gap = std::max(4.0, mem_h * 0.25);
  const double mem_top = mem_title_y + 12;
  const double mem_axis_y = mem_top + D * (mem_h + mem_gap);
  const double H = mem_axis_y + 40;

  // Which stages live on each device, in order: the shade of their boxes.
  std::vector<std::map<int, int>> shade(D);
  for (int st = 0; st < s.problem.num_stages(); ++st) {
    const int d = s.problem.device_of(st);
    if (d >= 0 && d < D) {
      const int k = static_cast<int>(shade[d].size());
      shade[d][st] = k;
    }
  }
  bool multi_stage = false;
  for (const auto& m : shade) multi_stage |= m.size() > 1;

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"Helvetica, Arial, sans-serif\">\n",
      num(W), num(H), num(W), num(H));
  out +=
      "<defs><pattern id=\"idle\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f3f3f3\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#d9d9d9\" stroke-width=\"2\"/></pattern></defs>\n";
  out += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", num(W), num(H));

  // Title and figures.
  out += fmt::format("<text x=\"{}\" y=\"28\" font-size=\"18\" font-weight=\"bold\" fill=\"#222\">{}</text>\n",
                     num(kLeft), esc(title));
  const char* ms = s.problem.unit_costs ? "" : " ms";
  std::string sub = fmt::format(
      "{} · {} semantics · {} devices, {} stages, {} microbatches · makespan {:.3f}{} · lower bound {:.3f}{} "
      "· bubble {:.1f}%",
      r.valid ? "valid" : "INVALID", semantics_name(r.semantics), D, s.problem.num_stages(),
      s.problem.microbatches, sim.makespan_ms, ms, r.lower_bound_ms, ms, 100 * sim.bubble_ratio);
  if (r.comms_inserted) sub += " · comms inserted";
  if (s.problem.unit_costs) sub += " · unit costs";
  out += fmt::format("<text x=\"{}\" y=\"50\" font-size=\"12.5\" fill=\"{}\">{}</text>\n", num(kLeft),
                     r.valid ? "#444" : "#b03336", esc(sub));

  // Legend.
  {
    double lx = kLeft;
    const double ly = 66;
    auto item = [&](const std::string& fill, const std::string& label, bool thin = false) {
      if (thin)
        out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"4\" fill=\"{}\"/>\n", num(lx),
                           num(ly + 5), fill);
      else
        out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"14\" rx=\"2\" fill=\"{}\" "
                           "stroke=\"#888\" stroke-width=\"0.5\"/>\n",
                           num(lx), num(ly), fill);
      out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#333\">{}</text>\n", num(lx + 21),
                         num(ly + 11), esc(label));
      lx += 21 + 7.0 * static_cast<double>(label.size()) + 18;
    };
    bool has[4] = {false, false, false, false};
    for (const auto& p : s.programs)
      for (const Action& a : p) {
        if (a.type == OpType::F) has[0] = true;
        if (a.type == OpType::I) has[1] = true;
        if (a.type == OpType::W) has[2] = true;
        if (a.type == OpType::B) has[3] = true;
      }
    if (has[0]) item(base_colour(OpType::F, 0), "F forward");
    if (has[1]) item(base_colour(OpType::I, 0), "I backward (input)");
    if (has[2]) item(base_colour(OpType::W, 0), "W backward (weights)");
    if (has[3]) item(base_colour(OpType::B, 0), "B backward (fused)");
    item("url(#idle)", "idle");
    item("#8a8a8a", "SEND/RECV transfer", true);
    if (multi_stage) {
      out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#555\">darker = a later stage on "
                         "the same device · number = microbatch</text>\n",
                         num(lx), num(ly + 11));
    } else {
      out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#555\">number = microbatch</text>\n",
                         num(lx), num(ly + 11));
    }
  }

  // Time grid and axis.
  const double step = tick_step(T, 12);
  const double mem_panel_bottom = mem_axis_y;
  for (double t = 0; t <= T + 1e-9 * T; t += step) {
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e6e6e6\" stroke-width=\"1\"/>\n",
                       num(X(t)), num(gantt_top - 4), num(axis_y));
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#efefef\" stroke-width=\"1\"/>\n",
                       num(X(t)), num(mem_top - 2), num(mem_panel_bottom));
  }
  auto axis = [&](double y) {
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#444\" stroke-width=\"1\"/>\n",
                       num(kLeft), num(y), num(kLeft + kChartW), num(y));
    for (double t = 0; t <= T + 1e-9 * T; t += step) {
      out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#444\" stroke-width=\"1\"/>\n",
                         num(X(t)), num(y), num(y + 5));
      out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#333\" text-anchor=\"middle\">{}</text>\n",
                         num(X(t)), num(y + 17), tick_label(t, step));
    }
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#333\" text-anchor=\"end\">{}</text>\n",
                       num(kLeft + kChartW), num(y + 31), time_unit);
  };

  // Microbatch labels: one font size for the whole chart (the size at which 80% of the boxes fit
  // their label, between 6 and 12 px); boxes too narrow for it stay unlabelled.
  auto fit_px = [&](double w, const std::string& label) {
    return std::min({12.0, row_h * 0.55, (w - 2) / (0.62 * static_cast<double>(label.size()))});
  };
  double label_px = 12;
  {
    std::vector<double> fits;
    for (int d = 0; d < D; ++d)
      for (size_t i = 0; i < s.programs[d].size(); ++i) {
        const Action& a = s.programs[d][i];
        const double w = (sim.times[d][i].end_ms - sim.times[d][i].start_ms) * xs;
        if (!is_comm(a.type) && w > 0) fits.push_back(fit_px(w, fmt::format("{}", a.mb)));
      }
    if (!fits.empty()) {
      std::sort(fits.begin(), fits.end());
      label_px = std::clamp(fits[fits.size() / 5], 6.0, 12.0);
    }
  }

  // Device rows.
  const bool label_rows = row_h >= 12;
  for (int d = 0; d < D; ++d) {
    const double y = gantt_top + d * pitch;
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#idle)\"/>\n", num(kLeft),
                       num(y), num(kChartW), num(row_h));
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\"/>\n", num(kLeft),
                       num(y + row_h + 1), num(kChartW), num(comm_h));
    if (label_rows || d % std::max(1, D / 16) == 0)
      out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#222\" text-anchor=\"end\">device {}</text>\n",
                         num(kLeft - 8), num(y + row_h * 0.5 + 4), label_rows ? "12" : "9", d);
    const auto& prog = s.programs[d];
    for (size_t i = 0; i < prog.size(); ++i) {
      const Action& a = prog[i];
      const OpInterval& iv = sim.times[d][i];
      const std::string tip = fmt::format("{} · device {} op {} · {:.3f}–{:.3f} ms", to_string(a), d, i,
                                          iv.start_ms, iv.end_ms);
      if (is_comm(a.type)) {
        if (!is_send(a.type)) continue;  // one bar per transfer on the sender's lane and ...
        const double w = std::max(1.0, (iv.end_ms - iv.start_ms) * xs);
        out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#8a8a8a\"><title>{}</title></rect>\n",
                           num(X(iv.start_ms)), num(y + row_h + 1), num(w), num(comm_h), esc(tip));
        continue;
      }
      const double x0 = X(iv.start_ms), w = (iv.end_ms - iv.start_ms) * xs;
      if (w <= 0) continue;
      auto it = shade[d].find(a.stage);
      const int sh = it == shade[d].end() ? 0 : it->second;
      out += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"{}\">"
          "<title>{}</title></rect>\n",
          num(x0), num(y), num(w), num(row_h), base_colour(a.type, sh), w > 3 ? "0.8" : "0.2", esc(tip));
      const std::string label = fmt::format("{}", a.mb);
      if (fit_px(w, label) >= label_px)
        out += fmt::format(
            "<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#ffffff\" text-anchor=\"middle\">{}</text>\n",
            num(x0 + w / 2), num(y + row_h / 2 + label_px * 0.36), num(label_px), label);
    }
    // ... the receiver's lane shows the same transfer.
    for (size_t i = 0; i < prog.size(); ++i) {
      const Action& a = prog[i];
      if (!is_recv(a.type)) continue;
      const OpInterval& iv = sim.times[d][i];
      const double w = std::max(1.0, (iv.end_ms - iv.start_ms) * xs);
      out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#b5b5b5\"><title>{} · device {} op {} "
                         "· {:.3f}–{:.3f} ms</title></rect>\n",
                         num(X(iv.start_ms)), num(y + row_h + 1), num(w), num(comm_h), to_string(a), d, i,
                         iv.start_ms, iv.end_ms);
    }
  }
  axis(axis_y);

  // Memory panels: one per device, all on one scale. When model states dominate, the scale starts
  // at a round value below the smallest of them (stated in the heading) so the changes stay visible.
  double max_mb = 0, min_base = 1e300;
  for (int d = 0; d < D; ++d) {
    max_mb = std::max(max_mb, sim.peak_memory_mb[d]);
    if (!sim.memory[d].empty()) min_base = std::min(min_base, sim.memory[d].front().mb);
  }
  const double limit_mb = r.memory_limit_gb * 1000.0;
  const bool show_limit = limit_mb > 0 && limit_mb <= 1.5 * std::max(max_mb, 1e-9);
  double top_mb = std::max(max_mb, show_limit ? limit_mb : 0.0);
  if (top_mb <= 0) top_mb = 1;
  double bottom_mb = 0;
  if (min_base < 1e300 && min_base > 0.4 * top_mb) {
    const double st = tick_step(top_mb - 0.8 * min_base, 4);
    bottom_mb = std::floor(0.9 * min_base / st) * st;
  }
  const bool in_gb = top_mb >= 1000.0;
  auto mem_str = [&](double mb) {
    return in_gb ? fmt::format("{:.3g} GB", mb / 1000.0) : fmt::format("{:.3g} MB", mb);
  };
  out += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"13\" font-weight=\"bold\" fill=\"#222\">memory per device</text>"
      "<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#555\">every panel spans {} – {} · dashed: model "
      "states{} · dot: peak</text>\n",
      num(kLeft), num(mem_title_y), num(kLeft + 150), num(mem_title_y), mem_str(bottom_mb), mem_str(top_mb),
      show_limit ? fmt::format(" · red: limit {}", mem_str(limit_mb)) : std::string());
  for (int d = 0; d < D; ++d) {
    const double y0 = mem_top + d * (mem_h + mem_gap);
    auto Y = [&](double mb) { return y0 + mem_h - ((mb - bottom_mb) / (top_mb - bottom_mb)) * mem_h; };
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f7f9fc\" stroke=\"#dde3ea\" "
                       "stroke-width=\"0.6\"/>\n",
                       num(kLeft), num(y0), num(kChartW), num(mem_h));
    if (mem_h >= 12 || d % std::max(1, D / 16) == 0)
      out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#222\" text-anchor=\"end\">device {}</text>\n",
                         num(kLeft - 8), num(y0 + mem_h * 0.5 + 4), mem_h >= 12 ? "11" : "9", d);
    const auto& curve = sim.memory[d];
    if (curve.empty()) continue;
    std::string path = fmt::format("M{},{}", num(X(0)), num(Y(curve.front().mb)));
    for (size_t k = 1; k < curve.size(); ++k)
      path += fmt::format(" H{} V{}", num(X(curve[k].time_ms)), num(Y(curve[k].mb)));
    path += fmt::format(" H{}", num(X(T)));
    // Filled area under the step curve, then the line.
    out += fmt::format("<path d=\"{} V{} H{} Z\" fill=\"#9ecae1\" fill-opacity=\"0.45\" stroke=\"none\"/>\n", path,
                       num(y0 + mem_h), num(X(0)));
    out += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#2b6ca3\" stroke-width=\"1.2\"/>\n", path);
    const double base = curve.front().mb;
    if (base > 0)
      out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#555\" stroke-dasharray=\"4,3\" "
                         "stroke-width=\"0.8\"/>\n",
                         num(X(0)), num(Y(base)), num(X(T)));
    if (show_limit)
      out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#d62728\" stroke-dasharray=\"6,3\" "
                         "stroke-width=\"1\"/>\n",
                         num(X(0)), num(Y(limit_mb)), num(X(T)));
    const int pk = sim.peak_op_index[d];
    if (pk >= 0) {
      const double pt = sim.times[d][pk].start_ms;
      out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2.6\" fill=\"#d62728\"/>\n", num(X(pt)),
                         num(Y(sim.peak_memory_mb[d])));
    }
    const bool over = show_limit && sim.peak_memory_mb[d] > limit_mb;
    if (mem_h >= 12 || d % std::max(1, D / 16) == 0)
      out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"{}\">peak {}</text>\n",
                         num(kLeft + kChartW + 6), num(y0 + mem_h * 0.5 + 4), mem_h >= 12 ? "11" : "9",
                         over ? "#d62728" : "#333", mem_str(sim.peak_memory_mb[d]));
  }
  axis(mem_axis_y);
  out += body;
  out += "</svg>\n";
  return out;
}

}  // namespace ps
