#include "stages/analysis/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <utility>

#include "stages/analysis/fixed_text.hpp"

namespace rpl::stages::analysis {

namespace {

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
    }
  }
  return out;
}

/// 1.2e12 -> "1.2 T": the chart's tick labels.
std::string si(double value) {
  if (value > 0 && value < 1) { // 0.01: ticks below one FLOP per byte
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
  }
  const char* units[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::fabs(value) >= 1000 && i < 6) {
    value /= 1000;
    ++i;
  }
  return fixed_text(value, value < 10 ? 1 : 0) + (i > 0 ? std::string(" ") + units[i] : "");
}

std::string duration(double ns) {
  if (ns >= 1e9)
    return fixed_text(ns / 1e9, 2) + " s";
  if (ns >= 1e6)
    return fixed_text(ns / 1e6, 2) + " ms";
  if (ns >= 1e3)
    return fixed_text(ns / 1e3, 1) + " us";
  return fixed_text(ns, 0) + " ns";
}

constexpr const char* palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2",
                                   "#edc948", "#ff9da7", "#9c755f", "#bab0ac", "#e15759"};

/// A log-log roofline: the memory roof's diagonal up to each compute roof, and the kernels.
std::string roofline_svg(const html_report_input& in) {
  constexpr double width = 720, height = 420, left = 70, right = 20, top = 20, bottom = 50;
  std::string svg = "<svg id=\"roofline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    fixed_text(width, 0) + "\" height=\"" + fixed_text(height, 0) +
                    "\" role=\"img\" aria-label=\"roofline\">\n";
  svg += "<rect x=\"0\" y=\"0\" width=\"" + fixed_text(width, 0) + "\" height=\"" +
         fixed_text(height, 0) + "\" fill=\"#ffffff\"/>\n";
  double peak = 0;
  for (const auto& roof : in.compute_roofs)
    peak = std::max(peak, roof.flops_per_s);
  const double bw = in.memory_bytes_per_s.value_or(0);
  std::vector<const html_roofline_point*> points;
  for (const auto& p : in.points)
    if (p.intensity > 0 && p.flops_per_s > 0 && std::isfinite(p.intensity) &&
        std::isfinite(p.flops_per_s))
      points.push_back(&p);
  if (peak <= 0 && points.empty()) {
    svg += "<text x=\"" + fixed_text(width / 2, 0) + "\" y=\"" + fixed_text(height / 2, 0) +
           "\" text-anchor=\"middle\" class=\"empty\">no roofline: record counters with "
           "rocm-perf profile --counters roofline</text>\n</svg>\n";
    return svg;
  }
  // Axis ranges: decades around the ridge points and the kernels.
  double x_min = std::numeric_limits<double>::max(), x_max = 0, y_min = x_min, y_max = 0;
  auto include = [&](double x, double y) {
    x_min = std::min(x_min, x);
    x_max = std::max(x_max, x);
    y_min = std::min(y_min, y);
    y_max = std::max(y_max, y);
  };
  for (const auto& roof : in.compute_roofs)
    if (roof.flops_per_s > 0 && bw > 0)
      include(roof.flops_per_s / bw, roof.flops_per_s);
  for (const auto* p : points)
    include(p->intensity, p->flops_per_s);
  if (x_max <= 0) {
    x_min = 0.1;
    x_max = 10;
  }
  if (y_max <= 0) {
    y_min = 1e9;
    y_max = 1e12;
  }
  const double lx0 = std::floor(std::log10(x_min)) - 1, lx1 = std::ceil(std::log10(x_max)) + 1;
  const double ly0 = std::floor(std::log10(y_min)) - 1, ly1 = std::ceil(std::log10(y_max)) + 0.3;
  auto X = [&](double x) {
    return left + (std::log10(x) - lx0) / (lx1 - lx0) * (width - left - right);
  };
  auto Y = [&](double y) {
    return height - bottom - (std::log10(y) - ly0) / (ly1 - ly0) * (height - top - bottom);
  };
  // Grid and ticks, one per decade.
  for (int d = static_cast<int>(lx0); d <= static_cast<int>(lx1); ++d) {
    const double x = X(std::pow(10.0, d));
    svg += "<line class=\"grid\" x1=\"" + fixed_text(x) + "\" y1=\"" + fixed_text(top) +
           "\" x2=\"" + fixed_text(x) + "\" y2=\"" + fixed_text(height - bottom) +
           "\" stroke=\"#e0e0e0\"/>\n";
    svg += "<text x=\"" + fixed_text(x) + "\" y=\"" + fixed_text(height - bottom + 16) +
           "\" text-anchor=\"middle\" font-size=\"11\">" + si(std::pow(10.0, d)) + "</text>\n";
  }
  for (int d = static_cast<int>(ly0); d <= static_cast<int>(std::floor(ly1)); ++d) {
    const double y = Y(std::pow(10.0, d));
    svg += "<line class=\"grid\" x1=\"" + fixed_text(left) + "\" y1=\"" + fixed_text(y) +
           "\" x2=\"" + fixed_text(width - right) + "\" y2=\"" + fixed_text(y) +
           "\" stroke=\"#e0e0e0\"/>\n";
    svg += "<text x=\"" + fixed_text(left - 6) + "\" y=\"" + fixed_text(y + 4) +
           "\" text-anchor=\"end\" font-size=\"11\">" + si(std::pow(10.0, d)) + "</text>\n";
  }
  svg += "<rect x=\"" + fixed_text(left) + "\" y=\"" + fixed_text(top) + "\" width=\"" +
         fixed_text(width - left - right) + "\" height=\"" + fixed_text(height - top - bottom) +
         "\" fill=\"none\" stroke=\"#888\"/>\n";
  svg += "<text x=\"" + fixed_text((left + width - right) / 2) + "\" y=\"" +
         fixed_text(height - 12) +
         "\" text-anchor=\"middle\" font-size=\"12\">arithmetic intensity (FLOP per DRAM "
         "byte)</text>\n";
  svg += "<text transform=\"translate(16," + fixed_text((top + height - bottom) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">FLOP/s</text>\n";
  // Roofs: the diagonal from the left edge to the ridge, then flat.
  const double x_left = std::pow(10.0, lx0), x_right = std::pow(10.0, lx1);
  int roof_index = 0;
  for (const auto& roof : in.compute_roofs) {
    if (roof.flops_per_s <= 0)
      continue;
    const char* color = palette[roof_index++ % 10];
    std::string points_attr;
    if (bw > 0) {
      const double ridge = roof.flops_per_s / bw;
      const double start_x = std::max(x_left, std::pow(10.0, ly0) / bw);
      points_attr = fixed_text(X(start_x)) + "," + fixed_text(Y(start_x * bw)) + " " +
                    fixed_text(X(ridge)) + "," + fixed_text(Y(roof.flops_per_s)) + " ";
    } else {
      points_attr = fixed_text(X(x_left)) + "," + fixed_text(Y(roof.flops_per_s)) + " ";
    }
    points_attr += fixed_text(X(x_right)) + "," + fixed_text(Y(roof.flops_per_s));
    svg += "<polyline class=\"roof\" points=\"" + points_attr + "\" fill=\"none\" stroke=\"" +
           color + "\" stroke-width=\"2\"><title>" + escape(roof.label) + ": " +
           si(roof.flops_per_s) + "FLOP/s</title></polyline>\n";
    svg += "<text x=\"" + fixed_text(width - right - 4) + "\" y=\"" +
           fixed_text(Y(roof.flops_per_s) - 4) + "\" text-anchor=\"end\" font-size=\"11\" fill=\"" +
           color + "\">" + escape(roof.label) + " " + si(roof.flops_per_s) + "FLOP/s</text>\n";
  }
  if (bw > 0)
    svg += "<text x=\"" + fixed_text(left + 6) + "\" y=\"" + fixed_text(top + 14) +
           "\" font-size=\"11\" fill=\"#555\">DRAM " + si(bw) + "B/s</text>\n";
  int point_index = 0;
  for (const auto* p : points) {
    const double x = X(p->intensity), y = Y(p->flops_per_s);
    svg += "<circle class=\"kernel-point\" cx=\"" + fixed_text(x) + "\" cy=\"" + fixed_text(y) +
           "\" r=\"6\" fill=\"" + (p->bound == "memory" ? "#e15759" : "#4e79a7") +
           "\" stroke=\"#222\"><title>" + escape(p->kernel) + ": " + fixed_text(p->intensity, 2) +
           " FLOP/B, " + si(p->flops_per_s) + "FLOP/s, " + escape(p->bound) +
           " bound</title></circle>\n";
    svg += "<text x=\"" + fixed_text(x + 8) + "\" y=\"" + fixed_text(y - 8) +
           "\" font-size=\"11\">" + std::to_string(++point_index) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

/// Tracks (device, stream) with their ops merged into runs of busy pixels, plus one track of the
/// critical path.
std::string timeline_svg(const std::vector<timeline_op>& ops) {
  constexpr double width = 1000, lane = 18, gap = 6, left = 170, top = 24;
  std::vector<std::pair<std::string, std::vector<std::size_t>>> tracks;
  std::map<std::string, std::size_t> track_of;
  std::vector<std::size_t> critical;
  std::int64_t t0 = std::numeric_limits<std::int64_t>::max(), t1 = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const std::string key = ops[i].device + " / " + ops[i].stream;
    auto [it, added] = track_of.emplace(key, tracks.size());
    if (added)
      tracks.push_back({key, {}});
    tracks[it->second].second.push_back(i);
    if (ops[i].critical)
      critical.push_back(i);
    t0 = std::min(t0, ops[i].start_ns);
    t1 = std::max(t1, ops[i].end_ns);
  }
  if (!critical.empty())
    tracks.insert(tracks.begin(), {"critical path", critical});
  const double height = top + static_cast<double>(tracks.size()) * (lane + gap) + 30;
  std::string svg = "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    fixed_text(width, 0) + "\" height=\"" + fixed_text(height, 0) +
                    "\" role=\"img\" aria-label=\"timeline\">\n";
  svg += "<rect x=\"0\" y=\"0\" width=\"" + fixed_text(width, 0) + "\" height=\"" +
         fixed_text(height, 0) + "\" fill=\"#ffffff\"/>\n";
  if (ops.empty()) {
    svg += "<text x=\"20\" y=\"30\" class=\"empty\">no kernels or copies in the trace</text>\n";
    return svg + "</svg>\n";
  }
  const double span = std::max<double>(1.0, static_cast<double>(t1 - t0));
  const double plot = width - left - 10;
  auto px = [&](std::int64_t ns) { return static_cast<double>(ns - t0) / span * plot; };
  svg += "<text x=\"" + fixed_text(left) + "\" y=\"14\" font-size=\"11\">0</text>\n";
  svg += "<text x=\"" + fixed_text(left + plot) +
         "\" y=\"14\" font-size=\"11\" text-anchor=\"end\">" + duration(span) + "</text>\n";
  for (std::size_t t = 0; t < tracks.size(); ++t) {
    const auto& [name, members] = tracks[t];
    const bool is_critical = !critical.empty() && t == 0;
    const double y = top + static_cast<double>(t) * (lane + gap);
    svg += "<text x=\"" + fixed_text(left - 6) + "\" y=\"" + fixed_text(y + lane - 5) +
           "\" text-anchor=\"end\" font-size=\"11\">" + escape(name) + "</text>\n";
    svg += "<rect x=\"" + fixed_text(left) + "\" y=\"" + fixed_text(y) + "\" width=\"" +
           fixed_text(plot) + "\" height=\"" + fixed_text(lane) + "\" fill=\"#f4f4f4\"/>\n";
    // Runs of busy pixels: ops sorted by start, merged while they touch the same half pixel.
    std::vector<std::pair<double, double>> spans;
    for (const std::size_t i : members)
      spans.push_back({px(ops[i].start_ns), px(std::max(ops[i].end_ns, ops[i].start_ns))});
    std::sort(spans.begin(), spans.end());
    std::vector<std::pair<double, double>> runs;
    for (const auto& s : spans) {
      if (!runs.empty() && s.first <= runs.back().second + 0.5)
        runs.back().second = std::max(runs.back().second, s.second);
      else
        runs.push_back(s);
    }
    for (const auto& [a, b] : runs) {
      svg += std::string("<rect class=\"") + (is_critical ? "op critical" : "op") + "\" x=\"" +
             fixed_text(left + a) + "\" y=\"" + fixed_text(y + 2) + "\" width=\"" +
             fixed_text(std::max(0.6, b - a)) + "\" height=\"" + fixed_text(lane - 4) +
             "\" fill=\"" + (is_critical ? "#e15759" : "#4e79a7") + "\"/>\n";
    }
  }
  return svg + "</svg>\n";
}

std::string percent(const std::optional<double>& fraction) {
  return fraction ? fixed_text(*fraction * 100) + " %" : "–";
}

} // namespace

std::string html_report(const html_report_input& in) {
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<title>" + escape(in.title.empty() ? "rocm-perf report" : in.title) + "</title>\n";
  page += "<style>\nbody{font-family:sans-serif;margin:24px;color:#222;background:#fff}"
          "h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
          "table{border-collapse:collapse;font-size:13px}"
          "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
          "th{background:#f0f0f0}td.num{text-align:right}.note{color:#555;font-size:13px}\n"
          "</style>\n</head>\n<body>\n";
  page += "<h1>What limits " + escape(in.title.empty() ? "this application" : in.title) + "</h1>\n";
  for (const auto& note : in.notes)
    page += "<p class=\"note\">" + escape(note) + "</p>\n";
  page += "<h2>Roofline</h2>\n" + roofline_svg(in);
  page += "<h2>Timeline and critical path</h2>\n" + timeline_svg(in.timeline);
  page += "<h2>Kernels</h2>\n<table id=\"kernels\">\n<tr><th>#</th><th>kernel</th>"
          "<th>dispatches</th><th>total</th><th>GPU time</th><th>critical path</th>"
          "<th>of peak</th><th>class</th><th>why</th><th>next step</th></tr>\n";
  std::map<std::string, std::size_t> point_number;
  for (std::size_t i = 0; i < in.points.size(); ++i)
    point_number.emplace(in.points[i].kernel, i + 1);
  std::size_t row_number = 0;
  for (const auto& k : in.kernels) {
    ++row_number;
    const auto it = point_number.find(k.kernel);
    page += "<tr><td class=\"num\">" +
            (it != point_number.end() ? std::to_string(it->second) : std::string("")) +
            "</td><td>" + escape(k.kernel) + "</td><td class=\"num\">" +
            std::to_string(k.dispatches) + "</td><td class=\"num\">" + duration(k.total_ns) +
            "</td><td class=\"num\">" + fixed_text(k.share * 100) + " %</td><td class=\"num\">" +
            percent(k.critical_path_share) + "</td><td class=\"num\">" +
            (k.percent_of_peak ? fixed_text(*k.percent_of_peak) + " %" : std::string("–")) +
            "</td><td>" + escape(k.bottleneck) + "</td><td>" + escape(k.because) + "</td><td>" +
            escape(k.next_step) + "</td></tr>\n";
  }
  (void)row_number;
  page += "</table>\n<p class=\"note\">Numbers on the roofline are the kernels' rows; the "
          "critical-path track shows the ops whose delay delays the end.</p>\n</body>\n</html>\n";
  return page;
}

} // namespace rpl::stages::analysis
