#include "stages/analysis/profile_report.hpp"

#include <algorithm>

namespace rpl::stages {

namespace {

nlohmann::json dims(const dim3& d) {
  return {d[0], d[1], d[2]};
}

nlohmann::json resources_json(const symbol_resources& r) {
  return {{"vgpr", r.vgpr},
          {"agpr", r.agpr},
          {"sgpr", r.sgpr},
          {"lds_bytes", r.lds_bytes},
          {"scratch_bytes", r.scratch_bytes},
          {"kernarg_bytes", r.kernarg_bytes}};
}

nlohmann::json kernel_json(const kernel_report& k) {
  const rocpd::kernel_stats& s = k.runtime;
  nlohmann::json j = {{"name", s.name},
                      {"dispatches", s.count},
                      {"total_ms", milliseconds(s.total_ns)},
                      {"mean_ms", milliseconds(s.mean_ns)},
                      {"median_ms", milliseconds(s.median_ns)},
                      {"p95_ms", milliseconds(s.p95_ns)},
                      {"min_ms", milliseconds(s.min_ns)},
                      {"max_ms", milliseconds(s.max_ns)},
                      {"cv", s.cv},
                      {"share", k.share},
                      {"block", dims(k.block)},
                      {"grid", dims(k.grid)}};
  j["resources"] = k.resources ? resources_json(*k.resources) : nlohmann::json(nullptr);
  j["occupancy"] = k.occupancy ? to_json(*k.occupancy) : nlohmann::json(nullptr);
  if (k.occupancy_note) {
    j["occupancy_note"] = *k.occupancy_note;
  }
  return j;
}

nlohmann::json kernels_json(const std::vector<kernel_report>& kernels) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : kernels) {
    out.push_back(kernel_json(k));
  }
  return out;
}

nlohmann::json groups_json(const std::vector<rocpd::group_total>& groups) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : groups) {
    out.push_back(
        {{"name", g.name}, {"dispatches", g.count}, {"total_ms", milliseconds(g.total_ns)}});
  }
  return out;
}

nlohmann::json stability_json(const report_stability& st) {
  nlohmann::json per_run_ms = nlohmann::json::array();
  for (double ns : st.per_run_ns) {
    per_run_ms.push_back(milliseconds(ns));
  }
  return {{"runs", st.per_run_ns.size()},
          {"per_run_ms", per_run_ms},
          {"mean_ms", milliseconds(st.mean_ns)},
          {"median_ms", milliseconds(st.median_ns)},
          {"stddev_ms", milliseconds(st.stddev_ns)},
          {"cv", st.cv},
          {"classification", to_string(st.classification)}};
}

void add_totals(nlohmann::json& report, const report_totals& t) {
  report["totals"] = {{"gpu_time_ms", milliseconds(t.gpu_time_ns)},
                      {"helper_gpu_time_ms", milliseconds(t.helper_gpu_time_ns)},
                      {"wall_span_ms", milliseconds(t.wall_span_ns)},
                      {"dispatches", t.dispatches}};
  report["per_agent"] = groups_json(t.per_agent);
  report["per_queue"] = groups_json(t.per_queue);
  report["per_stream"] = groups_json(t.per_stream);
  report["per_process"] = groups_json(t.per_process);
}

/// The specification's single-kernel fields describe the dominant kernel.
void add_dominant_kernel(nlohmann::json& report, const profile_report& r) {
  report["kernel"] = nullptr;
  report["resources"] = nullptr;
  report["occupancy"] = nullptr;
  const auto dominant =
      std::find_if(r.kernels.begin(), r.kernels.end(), [&](const kernel_report& k) {
        return !r.dominant_kernel.empty() && k.runtime.name == r.dominant_kernel;
      });
  if (dominant != r.kernels.end()) {
    const nlohmann::json k = kernel_json(*dominant);
    report["kernel"] = {{"name", k["name"]}, {"grid", k["grid"]}, {"block", k["block"]}};
    report["resources"] = k["resources"];
    report["occupancy"] = k["occupancy"];
  }
  report["dominant_kernel"] =
      r.dominant_kernel.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.dominant_kernel);
}

} // namespace

nlohmann::json to_json(const profile_report& r) {
  nlohmann::json report;
  report["schema_version"] = "1.1";
  report["backend"] = r.backend;
  report["command"] = r.command ? nlohmann::json(*r.command) : nlohmann::json(nullptr);
  report["databases"] = r.databases;
  nlohmann::json agents = nlohmann::json::array();
  for (const auto& a : r.agents) {
    agents.push_back(
        {{"name", a.name}, {"product_name", a.product_name}, {"logical_index", a.logical_index}});
  }
  report["gpu"] = {{"agents", agents}};
  report["runtime_ms"] = milliseconds(r.stability.median_ns);
  report["stability"] = stability_json(r.stability);
  if (r.totals) {
    add_totals(report, *r.totals);
  }
  report["kernels"] = kernels_json(r.kernels);
  report["helper_kernels"] = kernels_json(r.helper_kernels);
  add_dominant_kernel(report, r);
  report["roofline"] = nullptr;
  report["note"] = r.note ? nlohmann::json(*r.note) : nlohmann::json(nullptr);
  report["partial"] = r.partial;
  report["partial_reasons"] = r.partial_reasons;
  return report;
}

} // namespace rpl::stages
