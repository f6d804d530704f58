#include "stages/analysis/application_analysis.hpp"

#include <algorithm>
#include <cstdio>

#include "stages/analysis/fixed_text.hpp"

namespace rpl::stages::analysis {

namespace {

using nlohmann::json;

json optional_number(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

/// The share a kernel is ranked by: of the critical path where there is one, else of GPU time.
double rank_share(const kernel_analysis& k) {
  return k.critical_path_share.value_or(k.share);
}

} // namespace

std::vector<const kernel_analysis*> limiting_kernels(const application_analysis& analysis,
                                                     std::size_t top) {
  std::vector<const kernel_analysis*> out;
  for (const auto& k : analysis.kernels)
    if (rank_share(k) > 0)
      out.push_back(&k);
  // Stable on ties: the analysis' own order (by time) decides, so the output is deterministic.
  std::stable_sort(out.begin(), out.end(), [](const kernel_analysis* a, const kernel_analysis* b) {
    return rank_share(*a) > rank_share(*b);
  });
  if (out.size() > top)
    out.resize(top);
  return out;
}

json limits_json(const application_analysis& analysis, std::size_t top) {
  json limits = json::array();
  for (const kernel_analysis* k : limiting_kernels(analysis, top)) {
    json entry = {{"kernel", k->name},
                  {"critical_path_share", optional_number(k->critical_path_share)},
                  {"gpu_time_share", k->share}};
    if (k->bottleneck.label) {
      entry["class"] = to_id(*k->bottleneck.label);
      entry["because"] = k->bottleneck.because;
      entry["next_step"] = k->bottleneck.next_step;
    } else {
      entry["class"] = nullptr;
      entry["missing"] = k->bottleneck.missing;
    }
    limits.push_back(std::move(entry));
  }
  return limits;
}

json to_json(const application_analysis& analysis) {
  json kernels = json::array();
  for (const auto& k : analysis.kernels) {
    json what_if = json::array();
    for (const auto& w : k.what_if)
      what_if.push_back({{"faster_pct", w.faster_pct}, {"saving_ns", w.saving_ns}});
    json entry = {{"name", k.name},
                  {"dispatches", k.dispatches},
                  {"total_ns", k.total_ns},
                  {"gpu_time_share", k.share},
                  {"critical_path_ns", optional_number(k.critical_path_ns)},
                  {"critical_path_share", optional_number(k.critical_path_share)},
                  {"min_slack_ns", optional_number(k.min_slack_ns)},
                  {"what_if", what_if},
                  {"roofline", k.roofline.is_null() ? json(nullptr) : k.roofline},
                  {"bottleneck", to_json(k.bottleneck)}};
    if (k.roofline.is_null())
      entry["roofline_missing"] = k.roofline_missing;
    if (!k.thread_trace.is_null())
      entry["thread_trace"] = k.thread_trace;
    kernels.push_back(std::move(entry));
  }
  return {{"schema_version", "1.0"},
          {"notes", analysis.notes},
          {"critical_path_ns", optional_number(analysis.critical_path_ns)},
          {"critical_path_busy_ns", optional_number(analysis.critical_path_busy_ns)},
          {"makespan_ns", optional_number(analysis.makespan_ns)},
          {"kernels", std::move(kernels)},
          {"limits", limits_json(analysis)}};
}

std::string limits_text(const application_analysis& analysis, std::size_t top) {
  const auto limits = limiting_kernels(analysis, top);
  std::string out = "What limits this application";
  if (analysis.critical_path_ns && analysis.makespan_ns)
    out += " (critical path " + fixed_text(*analysis.critical_path_ns / 1e6, 3) + " ms of " +
           fixed_text(*analysis.makespan_ns / 1e6, 3) + " ms)";
  out += ":\n";
  if (analysis.critical_path_ns && analysis.critical_path_busy_ns &&
      *analysis.critical_path_ns > 0) {
    const double idle = *analysis.critical_path_ns - *analysis.critical_path_busy_ns;
    if (idle > 0.5 * *analysis.critical_path_ns)
      out += "  the GPU is idle " + fixed_text(100 * idle / *analysis.critical_path_ns) +
             " % of the critical path (" + fixed_text(idle / 1e6, 3) +
             " ms): the host, not a kernel, sets the pace (launches, synchronization, host "
             "work)\n";
  }
  if (limits.empty())
    return out + "  nothing: no user kernel ran\n";
  std::size_t width = 0;
  for (const auto* k : limits)
    width = std::max(width, std::min<std::size_t>(k->name.size(), 40));
  std::size_t n = 0;
  for (const auto* k : limits) {
    std::string name = k->name.size() > 40 ? k->name.substr(0, 37) + "..." : k->name;
    name.resize(width, ' ');
    const bool on_path = k->critical_path_share.has_value();
    out += "  " + std::to_string(++n) + ". " + name + "  " + fixed_text(rank_share(*k) * 100) +
           " % " + (on_path ? "of the critical path" : "of GPU time") + "  ";
    if (k->bottleneck.label) {
      out += std::string(to_string(*k->bottleneck.label)) + ": " + k->bottleneck.because +
             "\n     next: " + k->bottleneck.next_step + "\n";
    } else {
      out += "no class: " + k->bottleneck.missing + "\n";
    }
  }
  return out;
}

} // namespace rpl::stages::analysis
