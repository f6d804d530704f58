#include "engine/commands/analysis_output.hpp"

#include <algorithm>
#include <tuple>

#include "stages/analysis/analysis_builder.hpp"
#include "stages/analysis/kernel_roofline.hpp"
#include "stages/analysis/timeline_dag.hpp"
#include "stages/hardware/arch_model.hpp"
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

double median(std::vector<double>& values) {
  if (values.empty())
    return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

/// The GPU's product name as the trace names it (the first GPU agent's), for its peaks.
std::string product_of(const rocpd::reader& files) {
  for (const auto& agent : files.agents())
    if (agent.type == "GPU")
      return agent.product_name;
  return {};
}

/// roofline.json, and each kernel's roofline findings into `sources`.
nlohmann::json roofline_of(const stages::profile_report& report,
                           const analysis_inputs& inputs,
                           const rocpd::reader& files,
                           analysis::analysis_sources& sources) {
  nlohmann::json doc = {{"schema_version", "1.0"},
                        {"peaks", nullptr},
                        {"kernels", nlohmann::json::array()},
                        {"notes", nlohmann::json::array()}};
  const auto counters = rocpd::read_kernel_counters(inputs.counters);
  std::optional<analysis::peaks> roofs;
  for (const auto& [key, k] : counters) {
    if (k.target.empty())
      continue;
    try {
      roofs = analysis::peaks_for(stages::load_arch(k.target),
                                  k.product.empty() ? product_of(files) : k.product,
                                  inputs.peak_overrides);
      doc["peaks"] = analysis::to_json(*roofs);
      doc["peaks"]["target"] = k.target;
      for (const auto& note : roofs->notes)
        sources.notes.push_back(note);
    } catch (const std::exception& error) {
      sources.notes.push_back("no roofline peaks for " + k.target + ": " + error.what());
    }
    break;
  }
  for (const auto& kernel : report.kernels) {
    const std::string& name = kernel.runtime.name;
    analysis::kernel_findings& f = sources.kernels[name];
    nlohmann::json entry = {{"name", name}, {"roofline", nullptr}};
    const auto it = counters.find(rocpd::kernel_key(name));
    if (it == counters.end()) {
      f.roofline_missing = inputs.counters.empty()
                               ? "no counter pass: record one with `rocm-perf profile --counters "
                                 "roofline`"
                               : "the counter passes did not record this kernel";
    } else if (!roofs) {
      f.roofline_missing = "no peaks for this GPU in configs/arch";
    } else {
      const auto outcome = analysis::compute_roofline(
          it->second, *roofs,
          kernel.runtime.count > 0 ? std::optional(kernel.runtime.mean_ns) : std::nullopt);
      for (const auto& problem : outcome.problems)
        sources.notes.push_back(problem);
      if (outcome.roofline) {
        const auto& r = *outcome.roofline;
        f.roofline = analysis::to_json(r);
        // Compute: Nsight Compute's SM speed of light where the pass has it (every pipe, not only
        // FLOPs), else the roofline's percent of the FLOP peak. Memory: the DRAM bandwidth's
        // percent of peak, which is what "memory-bandwidth bound" means; ncu's memory speed of
        // light also counts L1 and shared memory (a tiled GEMM reaches 85 % there on an H100
        // while its DRAM traffic is negligible).
        f.compute_pct = r.sol_compute_pct ? r.sol_compute_pct : r.percent_of_compute_peak;
        f.memory_pct = r.percent_of_memory_peak ? r.percent_of_memory_peak : r.sol_memory_pct;
        f.active_thread_fraction = r.active_thread_fraction;
        f.issue_active = r.issue_active;
        f.top_stall = r.top_stall;
        f.top_stall_share = r.top_stall_share;
        entry["roofline"] = f.roofline;
      } else {
        f.roofline_missing =
            outcome.problems.empty() ? outcome.missing : "inconsistent counters (see the notes)";
      }
      if (!outcome.problems.empty())
        entry["problems"] = outcome.problems;
      // Per dispatch (the first 1000 of each pass, matched by order across passes).
      nlohmann::json per_dispatch = nlohmann::json::array();
      for (const auto& d : analysis::dispatch_rooflines(it->second, *roofs)) {
        if (!d) {
          per_dispatch.push_back(nullptr);
          continue;
        }
        per_dispatch.push_back(
            {{"duration_ns", d->duration_ns},
             {"flops", d->total_flops},
             {"dram_bytes",
              d->dram_bytes ? nlohmann::json(*d->dram_bytes) : nlohmann::json(nullptr)},
             {"arithmetic_intensity", d->intensity ? nlohmann::json(*d->intensity) : nullptr},
             {"flops_per_second", d->flops_per_s},
             {"dram_bytes_per_second", d->bytes_per_s ? nlohmann::json(*d->bytes_per_s) : nullptr},
             {"bound", d->bound.empty() ? nlohmann::json(nullptr) : nlohmann::json(d->bound)}});
      }
      entry["dispatches"] = std::move(per_dispatch);
    }
    if (entry["roofline"].is_null())
      entry["missing"] = f.roofline_missing;
    doc["kernels"].push_back(std::move(entry));
  }
  return doc;
}

/// Each thread-traced kernel's stall summary into its findings; its dominant stall stands in for
/// the warp stalls where Nsight Compute gave none. Matched by kernel_key of the demangled name or
/// the symbol.
void add_thread_traces(const stages::profile_report& report,
                       const std::vector<std::filesystem::path>& paths,
                       analysis::analysis_sources& sources) {
  if (paths.empty())
    return;
  const auto traces = workers::tracers::read_thread_traces(paths);
  std::map<std::string, std::string> kernel_by_key;
  for (const auto& kernel : report.kernels)
    kernel_by_key.emplace(rocpd::kernel_key(kernel.runtime.name), kernel.runtime.name);
  std::size_t matched = 0;
  for (const auto& summary : traces.kernels) {
    auto it = kernel_by_key.find(rocpd::kernel_key(summary.kernel));
    if (it == kernel_by_key.end())
      it = kernel_by_key.find(rocpd::kernel_key(summary.symbol));
    if (it == kernel_by_key.end()) {
      sources.notes.push_back("the thread trace of " + summary.kernel +
                              " matched no kernel of the trace (by name); it is left out");
      continue;
    }
    ++matched;
    analysis::kernel_findings& f = sources.kernels[it->second];
    f.thread_trace = stages::att::to_json(summary);
    if (f.top_stall.empty()) {
      f.top_stall = std::string(stages::att::to_id(summary.top));
      f.top_stall_share = summary.top_share;
      f.stall_source = "thread trace";
    }
    if (summary.inconsistent_rows > 0)
      sources.notes.push_back("the thread trace of " + summary.kernel + " has " +
                              std::to_string(summary.inconsistent_rows) +
                              " instruction rows whose stall exceeds their latency: counted as "
                              "stall only");
  }
  sources.notes.push_back("thread trace: " + std::to_string(traces.files.size()) + " file(s), " +
                          std::to_string(traces.kernels.size()) + " traced kernel(s), " +
                          std::to_string(matched) + " matched to the trace's kernels");
}

} // namespace

analysis_outputs analyze_application(const stages::profile_report& report,
                                     const analysis_inputs& inputs) {
  analysis_outputs out;
  analysis::analysis_sources sources;
  sources.report = &report;
  sources.notes = inputs.notes;

  const rocpd::reader files = rocpd::reader::open(inputs.timeline);
  for (const auto& agent : files.agents()) {
    if (agent.type == "GPU" && agent.extdata.is_object() && agent.extdata.contains("cu_count") &&
        agent.extdata["cu_count"].is_number()) {
      sources.compute_units = agent.extdata["cu_count"].get<double>();
      break;
    }
  }
  const rocpd::timeline timeline = rocpd::read_timeline(files);
  const std::vector<double> percents(std::begin(what_if_percents), std::end(what_if_percents));
  const analysis::critical_path_result path =
      analysis::critical_path(timeline, what_if_kernels, percents);
  sources.critical_path_ns = path.path_ns;
  sources.critical_path_busy_ns = path.busy_ns;
  sources.makespan_ns = path.makespan_ns;
  sources.notes.insert(sources.notes.end(), path.notes.begin(), path.notes.end());
  for (const auto& k : path.kernels) {
    analysis::kernel_findings& f = sources.kernels[k.name];
    f.critical_path_ns = k.critical_path_ns;
    f.min_slack_ns = k.min_slack_ns;
    for (const auto& [pct, saving] : k.what_if)
      f.what_if.push_back({pct, saving});
  }
  // How long each dispatch's stream sat idle just before it: the median per kernel name (a median,
  // so one long host pause does not make a kernel look launch-bound).
  std::vector<std::uint32_t> order(timeline.ops.size());
  for (std::uint32_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return std::tie(timeline.ops[a].track, timeline.ops[a].start_ns, a) <
           std::tie(timeline.ops[b].track, timeline.ops[b].start_ns, b);
  });
  std::vector<std::vector<double>> idle(timeline.names.size());
  for (std::size_t n = 1; n < order.size(); ++n) {
    const auto& op = timeline.ops[order[n]];
    const auto& prev = timeline.ops[order[n - 1]];
    if (prev.track == op.track && !op.copy)
      idle[static_cast<std::size_t>(op.name)].push_back(
          static_cast<double>(std::max<std::int64_t>(0, op.start_ns - prev.end_ns)));
  }
  for (std::size_t k = 0; k < timeline.names.size(); ++k)
    if (!idle[k].empty())
      sources.kernels[timeline.names[k]].mean_idle_before_ns = median(idle[k]);
  if (inputs.counters.empty())
    sources.notes.push_back("no counters: the roofline and the compute and memory classes need a "
                            "counter pass (rocm-perf profile --counters roofline)");
  out.roofline = roofline_of(report, inputs, files, sources);
  add_thread_traces(report, inputs.thread_traces, sources);

  out.analysis =
      analysis::build_application_analysis(sources, analysis::bottleneck_thresholds::defaults());
  out.dag = analysis::to_json(timeline, path);

  if (inputs.want_timeline) {
    out.ops.reserve(timeline.ops.size());
    for (std::uint32_t i = 0; i < timeline.ops.size(); ++i) {
      const auto& op = timeline.ops[i];
      analysis::timeline_op t;
      t.name = timeline.names[static_cast<std::size_t>(op.name)];
      t.category = op.copy ? "copy" : "kernel";
      const std::string& track = timeline.tracks[static_cast<std::size_t>(op.track)].name;
      const auto slash = track.rfind(" / ");
      t.device = track.substr(0, slash);
      t.stream = slash == std::string::npos ? track : track.substr(slash + 3);
      t.start_ns = op.start_ns;
      t.end_ns = op.end_ns;
      t.critical = path.on_path[i] != 0;
      t.slack_ns = static_cast<std::int64_t>(path.slack_ns[i]);
      out.ops.push_back(std::move(t));
    }
    for (const auto& e : path.cross_edges)
      out.flows.push_back({e.from, e.to, "stream_wait"});
  }

  analysis::html_report_input& page = out.page;
  if (out.roofline["peaks"].is_object()) {
    const auto& peaks = out.roofline["peaks"];
    if (peaks["dram_bytes_per_second"].is_number())
      page.memory_bytes_per_s = peaks["dram_bytes_per_second"].get<double>();
    for (const auto& [type, value] : peaks["flops_per_second"].items())
      page.compute_roofs.push_back({type, value.get<double>()});
  }
  for (const auto& k : out.roofline["kernels"]) {
    const auto& r = k["roofline"];
    if (r.is_object() && r["arithmetic_intensity"].is_number())
      page.points.push_back({k["name"], r["arithmetic_intensity"].get<double>(),
                             r["flops_per_second"].get<double>(),
                             r["bound"].is_string() ? r["bound"].get<std::string>() : ""});
  }
  page.title = report.command ? report.command->front() : "the traced application";
  page.notes = out.analysis.notes;
  for (const auto& k : out.analysis.kernels) {
    analysis::html_kernel_row row;
    row.kernel = k.name;
    row.dispatches = k.dispatches;
    row.total_ns = k.total_ns;
    row.share = k.share;
    row.critical_path_share = k.critical_path_share;
    if (k.roofline.is_object() && k.roofline["percent_of_compute_peak"].is_number())
      row.percent_of_peak = std::max(k.roofline["percent_of_compute_peak"].get<double>(),
                                     k.roofline["percent_of_memory_peak"].is_number()
                                         ? k.roofline["percent_of_memory_peak"].get<double>()
                                         : 0.0);
    if (k.bottleneck.label) {
      row.bottleneck = std::string(analysis::to_string(*k.bottleneck.label));
      row.because = k.bottleneck.because;
      row.next_step = k.bottleneck.next_step;
    } else {
      row.bottleneck = "no class";
      row.because = k.bottleneck.missing;
    }
    page.kernels.push_back(std::move(row));
  }
  return out;
}

} // namespace rpl::engine::commands
