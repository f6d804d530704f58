#include "stages/analysis/html_report_builder.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace rpl::stages::analysis {

namespace {

/// The larger of the compute and the memory percent of peak; nullopt without a compute percent.
std::optional<double> percent_of_peak(const kernel_roofline& r) {
  if (!r.percent_of_compute_peak)
    return std::nullopt;
  return std::max(*r.percent_of_compute_peak, r.percent_of_memory_peak.value_or(0.0));
}

html_kernel_row kernel_row(const kernel_analysis& k,
                           const std::map<std::string, const kernel_roofline*>& rooflines) {
  html_kernel_row row;
  row.kernel = k.name;
  row.dispatches = k.dispatches;
  row.total_ns = k.total_ns;
  row.share = k.share;
  row.critical_path_share = k.critical_path_share;
  if (const auto it = rooflines.find(k.name); it != rooflines.end())
    row.percent_of_peak = percent_of_peak(*it->second);
  if (k.bottleneck.label) {
    row.bottleneck = std::string(to_string(*k.bottleneck.label));
    row.because = k.bottleneck.because;
    row.next_step = k.bottleneck.next_step;
  } else {
    row.bottleneck = "no class";
    row.because = k.bottleneck.missing;
  }
  return row;
}

} // namespace

html_report_input build_html_report_input(const profile_report& report,
                                          const roofline_report& roofline,
                                          const application_analysis& analysis) {
  html_report_input page;
  if (roofline.roofs) {
    page.memory_bytes_per_s = roofline.roofs->bytes_per_s;
    for (const auto& [type, flops_per_s] : roofline.roofs->flops_per_s)
      page.compute_roofs.push_back({type, flops_per_s});
  }
  // By name, the last of a repeated name winning, as in the analysis's findings.
  std::map<std::string, const kernel_roofline*> rooflines;
  for (const auto& k : roofline.kernels) {
    if (!k.roofline) {
      continue;
    }
    rooflines[k.name] = &*k.roofline;
    if (k.roofline->intensity)
      page.points.push_back(
          {k.name, *k.roofline->intensity, k.roofline->flops_per_s, k.roofline->bound});
  }
  page.title = report.command ? report.command->front() : "the traced application";
  page.notes = analysis.notes;
  for (const auto& k : analysis.kernels)
    page.kernels.push_back(kernel_row(k, rooflines));
  return page;
}

} // namespace rpl::stages::analysis
