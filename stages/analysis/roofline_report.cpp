#include "stages/analysis/roofline_report.hpp"

#include <nlohmann/json.hpp>

#include "stages/hardware/arch_model.hpp"

namespace rpl::stages::analysis {

namespace {

using nlohmann::json;

/// The roofs of the first kernel whose counters name a target; what went wrong goes to `notes`.
void find_roofs(const std::map<std::string, rocpd::kernel_counters>& counters,
                const roofline_context& context,
                roofline_report& out) {
  for (const auto& [key, k] : counters) {
    if (k.target.empty())
      continue;
    try {
      out.roofs =
          peaks_for(load_arch(k.target), k.product.empty() ? context.trace_product : k.product,
                    context.peak_overrides);
      out.target = k.target;
      for (const auto& note : out.roofs->notes)
        out.notes.push_back(note);
    } catch (const std::exception& error) {
      out.notes.push_back("no roofline peaks for " + k.target + ": " + error.what());
    }
    break;
  }
}

roofline_kernel kernel_entry(const kernel_report& kernel,
                             const std::map<std::string, rocpd::kernel_counters>& counters,
                             const roofline_context& context,
                             roofline_report& out) {
  roofline_kernel entry;
  entry.name = kernel.runtime.name;
  const rocpd::kernel_counters* found = rocpd::find_kernel_counters(counters, entry.name);
  if (found == nullptr) {
    entry.missing = !context.counter_passes
                        ? "no counter pass: record one with `rocm-perf profile --counters "
                          "roofline`"
                        : "the counter passes did not record this kernel";
    return entry;
  }
  if (!out.roofs) {
    entry.missing = "no peaks for this GPU in configs/arch";
    return entry;
  }
  entry.computed = true;
  auto outcome = compute_roofline(*found, *out.roofs,
                                  kernel.runtime.count > 0 ? std::optional(kernel.runtime.mean_ns)
                                                           : std::nullopt);
  out.notes.insert(out.notes.end(), outcome.problems.begin(), outcome.problems.end());
  if (outcome.roofline) {
    entry.roofline = std::move(outcome.roofline);
  } else {
    entry.missing =
        outcome.problems.empty() ? outcome.missing : "inconsistent counters (see the notes)";
  }
  entry.problems = std::move(outcome.problems);
  entry.dispatches = dispatch_rooflines(*found, *out.roofs);
  return entry;
}

json dispatch_json(const kernel_roofline& d) {
  return {{"duration_ns", d.duration_ns},
          {"flops", d.total_flops},
          {"dram_bytes", d.dram_bytes ? json(*d.dram_bytes) : json(nullptr)},
          {"arithmetic_intensity", d.intensity ? json(*d.intensity) : nullptr},
          {"flops_per_second", d.flops_per_s},
          {"dram_bytes_per_second", d.bytes_per_s ? json(*d.bytes_per_s) : nullptr},
          {"bound", d.bound.empty() ? json(nullptr) : json(d.bound)}};
}

json kernel_json(const roofline_kernel& k) {
  json entry = {{"name", k.name}, {"roofline", nullptr}};
  if (k.roofline)
    entry["roofline"] = to_json(*k.roofline);
  if (k.computed) {
    if (!k.problems.empty())
      entry["problems"] = k.problems;
    json per_dispatch = json::array();
    for (const auto& d : k.dispatches)
      per_dispatch.push_back(d ? dispatch_json(*d) : json(nullptr));
    entry["dispatches"] = std::move(per_dispatch);
  }
  if (!k.roofline)
    entry["missing"] = k.missing;
  return entry;
}

} // namespace

roofline_report build_roofline_report(const profile_report& report,
                                      const std::map<std::string, rocpd::kernel_counters>& counters,
                                      const roofline_context& context) {
  roofline_report out;
  find_roofs(counters, context, out);
  for (const auto& kernel : report.kernels)
    out.kernels.push_back(kernel_entry(kernel, counters, context, out));
  return out;
}

json to_json(const roofline_report& r) {
  json doc = {{"schema_version", "1.0"},
              {"peaks", nullptr},
              {"kernels", json::array()},
              {"notes", json::array()}};
  if (r.roofs) {
    doc["peaks"] = to_json(*r.roofs);
    doc["peaks"]["target"] = r.target;
  }
  for (const auto& k : r.kernels)
    doc["kernels"].push_back(kernel_json(k));
  return doc;
}

} // namespace rpl::stages::analysis
