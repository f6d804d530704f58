#include "engine/commands/analysis_output.hpp"

#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stages/analysis/analysis_builder.hpp"
#include "stages/analysis/analysis_findings.hpp"
#include "stages/analysis/html_report_builder.hpp"
#include "stages/analysis/stream_idle.hpp"
#include "stages/analysis/timeline_dag.hpp"
#include "stages/analysis/timeline_view.hpp"
#include "stages/trace/counter_values.hpp"
#include "stages/trace/rocpd_reader.hpp"
#include "stages/trace/rocpd_timeline.hpp"
#include "workers/tracers/rocprofv3/thread_trace_files.hpp"

namespace rpl::engine::commands {

namespace {

namespace analysis = stages::analysis;
namespace rocpd = stages::rocpd;

/// What-if: the kernels with the most critical-path time, and by how much faster.
constexpr std::size_t what_if_kernels = 5;
constexpr double what_if_percents[] = {10, 25, 50};

/// The GPU's product name as the trace names it (the first GPU agent's), for its peaks.
std::string product_of(const rocpd::reader& files) {
  for (const auto& agent : files.agents())
    if (agent.type == "GPU")
      return agent.product_name;
  return {};
}

/// The CUs (SMs) of the first GPU agent that says how many it has.
std::optional<double> compute_units_of(const rocpd::reader& files) {
  for (const auto& agent : files.agents()) {
    if (agent.type == "GPU" && agent.extdata.is_object() && agent.extdata.contains("cu_count") &&
        agent.extdata["cu_count"].is_number()) {
      return agent.extdata["cu_count"].get<double>();
    }
  }
  return std::nullopt;
}

} // namespace

analysis_outputs analyze_application(const stages::profile_report& report,
                                     const analysis_inputs& inputs) {
  analysis_outputs out;
  analysis::analysis_sources sources;
  sources.report = &report;
  sources.notes = inputs.notes;

  const rocpd::reader files = rocpd::reader::open(inputs.timeline);
  sources.compute_units = compute_units_of(files);
  std::shared_ptr<const rocpd::timeline> read = inputs.timeline_read;
  if (!read)
    read = std::make_shared<const rocpd::timeline>(rocpd::read_timeline(files));
  const rocpd::timeline& timeline = *read;
  // The roofline (counters) beside the critical path (timeline): neither reads what the other
  // writes; their findings are added in the same order as before, once both are done.
  const std::string product = product_of(files);
  std::map<std::string, rocpd::kernel_counters> read_here;
  auto roofline = std::async(std::launch::async, [&] {
    // The counters the report's scan read, or read here (counter passes outside the report's
    // runs).
    if (!inputs.counters_read)
      read_here = rocpd::read_kernel_counters(inputs.counters);
    const auto& counters = inputs.counters_read ? *inputs.counters_read : read_here;
    return analysis::build_roofline_report(
        report, counters, {product, inputs.peak_overrides, !inputs.counters.empty()});
  });
  const std::vector<double> percents(std::begin(what_if_percents), std::end(what_if_percents));
  const analysis::critical_path_result path =
      analysis::critical_path(timeline, what_if_kernels, percents);
  const std::map<std::string, double> idle = analysis::median_idle_before_ns(timeline);
  out.roofline = roofline.get();
  analysis::add_critical_path(path, sources);
  analysis::add_stream_idle(idle, sources);
  if (inputs.counters.empty())
    sources.notes.push_back("no counters: the roofline and the compute and memory classes need a "
                            "counter pass (rocm-perf profile --counters roofline)");
  const auto& counters = inputs.counters_read ? *inputs.counters_read : read_here;
  analysis::add_roofline(out.roofline, sources);
  analysis::add_memory_access(report, counters, sources);
  if (!inputs.thread_traces.empty()) {
    const auto traces = workers::tracers::read_thread_traces(inputs.thread_traces);
    analysis::add_thread_traces(report, traces.kernels, traces.files.size(), sources);
  }

  out.analysis =
      analysis::build_application_analysis(sources, analysis::bottleneck_thresholds::defaults());
  if (inputs.want_dag)
    out.dag = analysis::to_json(timeline, path);
  if (inputs.want_timeline) {
    out.ops = analysis::timeline_ops(timeline, path);
    out.flows = analysis::timeline_flows(path);
  }
  out.page = analysis::build_html_report_input(report, out.roofline, out.analysis);
  return out;
}

} // namespace rpl::engine::commands
