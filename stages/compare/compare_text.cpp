#include "stages/compare/compare_text.hpp"

#include <cmath>
#include <cstdio>
#include <optional>

namespace rpl::stages::compare {

namespace {

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

/// "12.345 us", "1.234 ms", "-" when unknown.
std::string duration(const std::optional<double>& ns) {
  if (!ns || !std::isfinite(*ns))
    return "-";
  const double v = *ns;
  if (std::abs(v) >= 1e6)
    return format("%.3f ms", v / 1e6);
  return format("%.3f us", v / 1e3);
}

std::string change(const std::optional<double>& before, const std::optional<double>& after) {
  if (!before || !after || *before <= 0)
    return "-";
  return format("%+.1f %%", 100.0 * (*after / *before - 1.0));
}

std::string ratio_text(const kernel_change& k) {
  if (k.verdict == kernel_verdict::added || k.verdict == kernel_verdict::removed ||
      !std::isfinite(k.interval.ratio))
    return "-";
  std::string out = format("%.3f", k.interval.ratio);
  if (k.interval.bounded)
    out += " [" + format("%.3f", k.interval.low) + ", " + format("%.3f", k.interval.high) + "]";
  else
    out += " [too few dispatches]";
  return out;
}

std::string effect_text(const kernel_change& k) {
  if (!k.critical_path_effect_ns)
    return "-";
  return (*k.critical_path_effect_ns >= 0 ? "+" : "") + duration(k.critical_path_effect_ns);
}

std::string kernel_label(const kernel_change& k, std::size_t width) {
  std::string name = k.name;
  if (width > 0 && name.size() > width)
    name = name.substr(0, width - 3) + "...";
  return name;
}

std::string shape_text(const kernel_change& k) {
  if (k.base_shape.empty() && k.new_shape.empty())
    return "";
  if (k.base_shape == k.new_shape || k.new_shape.empty())
    return k.base_shape;
  if (k.base_shape.empty())
    return k.new_shape;
  return k.base_shape + " → " + k.new_shape;
}

std::string side_line(const char* label, const side_summary& s) {
  std::string inputs;
  for (const auto& i : s.inputs)
    inputs += (inputs.empty() ? "" : ", ") + i;
  if (!s.store_run.empty())
    return std::string(label) + " " + inputs + " (results store, run " + s.store_run + ", " +
           std::to_string(s.dispatches) + " samples)\n";
  return std::string(label) + " " + inputs + " (" + std::to_string(s.runs) +
         (s.runs == 1 ? " run, " : " runs, ") + std::to_string(s.dispatches) + " dispatches" +
         (s.counters ? ", counters" : "") + ")\n";
}

std::string verdict_counts(const comparison& c) {
  std::string out;
  for (const auto v : {kernel_verdict::slower, kernel_verdict::faster, kernel_verdict::ambiguous,
                       kernel_verdict::added, kernel_verdict::removed, kernel_verdict::same}) {
    const std::size_t n = count(c, v);
    if (n > 0)
      out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + std::string(verdict_name(v));
  }
  return out.empty() ? "none" : out;
}

struct app_row {
  const char* label;
  std::optional<double> base, next;
};

/// The application's figures; none for results stores (configurations, no timeline).
std::vector<app_row> application_rows(const comparison& c) {
  if (!c.base.store_run.empty() || !c.next.store_run.empty())
    return {};
  return {{"GPU time (kernels)", c.base.gpu_time_ns, c.next.gpu_time_ns},
          {"critical path", c.base.critical_path_ns, c.next.critical_path_ns},
          {"makespan", c.base.makespan_ns, c.next.makespan_ns}};
}

std::string band_text(const comparison& c) {
  return "noise band ±" + format("%.1f", 100.0 * c.noise_floor) + " % or the measured noise, " +
         format("%.0f", 100.0 * c.confidence) + " % intervals";
}

} // namespace

std::string to_text(const comparison& c) {
  std::string out = side_line("BASE", c.base) + side_line("NEW ", c.next) + "\n";
  char line[512];
  const auto rows = application_rows(c);
  if (!rows.empty()) {
    std::snprintf(line, sizeof line, "%-22s %14s %14s %9s\n", "application", "BASE", "NEW",
                  "change");
    out += line;
  }
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "  %-20s %14s %14s %9s\n", r.label, duration(r.base).c_str(),
                  duration(r.next).c_str(), change(r.base, r.next).c_str());
    out += line;
  }
  out += "\nkernels: " + verdict_counts(c) + " (" + band_text(c) + ")\n";
  std::snprintf(line, sizeof line, "%-9s %-40s %15s %12s %12s %-24s %s\n", "verdict", "kernel",
                "dispatches", "median BASE", "median NEW", "NEW/BASE [interval]", "critical path");
  out += line;
  for (const auto& k : c.kernels) {
    const std::string dispatches =
        std::to_string(k.base_dispatches) + "/" + std::to_string(k.new_dispatches);
    std::snprintf(line, sizeof line, "%-9s %-40s %15s %12s %12s %-24s %s\n",
                  std::string(verdict_name(k.verdict)).c_str(), kernel_label(k, 40).c_str(),
                  dispatches.c_str(), duration(k.base_median_ns).c_str(),
                  duration(k.new_median_ns).c_str(), ratio_text(k).c_str(), effect_text(k).c_str());
    out += line;
    if (const std::string shape = shape_text(k); !shape.empty())
      out += "          launch: " + shape + "\n";
    if (!k.critical_path_note.empty() && k.verdict != kernel_verdict::same)
      out += "          " + k.critical_path_note + "\n";
    if (!k.reasons.empty()) {
      std::string why;
      for (const auto& r : k.reasons)
        why += (why.empty() ? "" : "; ") + r;
      out += "          why: " + why + "\n";
    }
  }
  for (const auto& n : c.notes)
    out += "note: " + n + "\n";
  return out;
}

std::string to_markdown(const comparison& c) {
  std::string out = "### rocm-perf compare\n\n";
  out += "**BASE** " + side_line("", c.base).substr(1) + "\n**NEW** " +
         side_line("", c.next).substr(1) + "\n";
  const auto rows = application_rows(c);
  if (!rows.empty())
    out += "| application | BASE | NEW | change |\n|---|---:|---:|---:|\n";
  for (const auto& r : rows)
    out += std::string("| ") + r.label + " | " + duration(r.base) + " | " + duration(r.next) +
           " | " + change(r.base, r.next) + " |\n";
  out += "\n**Kernels:** " + verdict_counts(c) + " (" + band_text(c) + ")\n\n";
  out += "| verdict | kernel | dispatches | median BASE | median NEW | NEW/BASE [interval] | "
         "critical path | why |\n|---|---|---:|---:|---:|---|---|---|\n";
  for (const auto& k : c.kernels) {
    std::string name = k.name;
    for (auto& ch : name)
      if (ch == '|')
        ch = '/';
    std::string why;
    if (const std::string shape = shape_text(k); !shape.empty())
      why = shape;
    for (const auto& r : k.reasons)
      why += (why.empty() ? "" : "; ") + r;
    std::string effect = k.critical_path_effect_ns ? effect_text(k) : std::string();
    if (!k.critical_path_note.empty() && k.verdict != kernel_verdict::same)
      effect += (effect.empty() ? "" : ": ") + k.critical_path_note;
    if (effect.empty())
      effect = "-";
    out +=
        "| " +
        (k.verdict == kernel_verdict::same ? std::string(verdict_name(k.verdict))
                                           : "**" + std::string(verdict_name(k.verdict)) + "**") +
        " | `" + name + "` | " + std::to_string(k.base_dispatches) + "/" +
        std::to_string(k.new_dispatches) + " | " + duration(k.base_median_ns) + " | " +
        duration(k.new_median_ns) + " | " + ratio_text(k) + " | " + effect + " | " + why + " |\n";
  }
  if (!c.notes.empty()) {
    out += "\n";
    for (const auto& n : c.notes)
      out += "- " + n + "\n";
  }
  return out;
}

} // namespace rpl::stages::compare
