#include "engine/commands/analysis_output.hpp"

#include <algorithm>
#include <unordered_map>

#include "stages/analysis/analysis_builder.hpp"
#include "stages/trace/rocpd_reader.hpp"

namespace rpl::engine::commands {

namespace {

namespace analysis = stages::analysis;
namespace rocpd = stages::rocpd;

/// One dispatch, compactly: a million of them stay in tens of MB.
struct op_record {
  std::int32_t kernel = 0; ///< index into the kernel names
  std::int32_t track = 0;  ///< index into the (device, stream) tracks
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

double median(std::vector<double>& values) {
  if (values.empty())
    return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

} // namespace

analysis_outputs analyze_application(const stages::profile_report& report,
                                     const analysis_inputs& inputs) {
  analysis_outputs out;
  analysis::analysis_sources sources;
  sources.report = &report;
  sources.notes = inputs.notes;

  const rocpd::reader files = rocpd::reader::open(inputs.timeline);
  // Device and stream names per (database, id), for the tracks.
  std::map<std::pair<std::size_t, std::int64_t>, std::string> device_name, stream_name;
  for (const auto& agent : files.agents()) {
    if (agent.type != "GPU")
      continue;
    device_name[{agent.database, agent.id}] =
        "GPU " + std::to_string(agent.logical_index) + " (" + agent.name + ")";
    if (!sources.compute_units && agent.extdata.is_object() && agent.extdata.contains("cu_count") &&
        agent.extdata["cu_count"].is_number())
      sources.compute_units = agent.extdata["cu_count"].get<double>();
  }
  for (const auto& stream : files.streams())
    stream_name[{stream.database, stream.id}] = stream.name;

  std::vector<std::string> kernel_names;
  std::unordered_map<std::string, std::int32_t> kernel_index;
  std::vector<std::string> track_names;
  std::map<std::tuple<std::size_t, std::int64_t, std::int64_t>, std::int32_t> track_index;
  std::vector<op_record> ops;
  ops.reserve(files.dispatch_count());
  files.for_each_dispatch([&](const rocpd::dispatch_row& row) {
    auto k = kernel_index.find(std::string(row.kernel_name));
    if (k == kernel_index.end()) {
      k = kernel_index
              .emplace(std::string(row.kernel_name), static_cast<std::int32_t>(kernel_names.size()))
              .first;
      kernel_names.emplace_back(row.kernel_name);
    }
    const auto key = std::make_tuple(row.database, row.agent_id, row.stream_id);
    auto t = track_index.find(key);
    if (t == track_index.end()) {
      const auto device = device_name.find({row.database, row.agent_id});
      const auto stream = stream_name.find({row.database, row.stream_id});
      std::string name =
          (device != device_name.end() ? device->second : "agent " + std::to_string(row.agent_id)) +
          " / " +
          (stream != stream_name.end() ? stream->second
                                       : "stream " + std::to_string(row.stream_id));
      if (files.paths().size() > 1)
        name = files.paths()[row.database].filename().string() + ": " + name;
      t = track_index.emplace(key, static_cast<std::int32_t>(track_names.size())).first;
      track_names.push_back(std::move(name));
    }
    ops.push_back({k->second, t->second, row.start_ns, row.end_ns});
  });

  // How long each dispatch's stream sat idle just before it: the median per kernel name (a median,
  // so one long host pause does not make a kernel look launch-bound).
  std::vector<std::size_t> order(ops.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(ops[a].track, ops[a].start_ns, a) < std::tie(ops[b].track, ops[b].start_ns, b);
  });
  std::vector<std::vector<double>> idle(kernel_names.size());
  std::int64_t first_start = ops.empty() ? 0 : ops.front().start_ns, last_end = first_start;
  for (std::size_t n = 0; n < order.size(); ++n) {
    const op_record& op = ops[order[n]];
    first_start = std::min(first_start, op.start_ns);
    last_end = std::max(last_end, op.end_ns);
    if (n > 0 && ops[order[n - 1]].track == op.track)
      idle[static_cast<std::size_t>(op.kernel)].push_back(
          static_cast<double>(std::max<std::int64_t>(0, op.start_ns - ops[order[n - 1]].end_ns)));
  }
  if (!ops.empty())
    sources.makespan_ns = static_cast<double>(last_end - first_start);
  for (std::size_t k = 0; k < kernel_names.size(); ++k) {
    analysis::kernel_findings& f = sources.kernels[kernel_names[k]];
    if (!idle[k].empty())
      f.mean_idle_before_ns = median(idle[k]);
  }
  if (inputs.counters.empty())
    sources.notes.push_back("no counters: the roofline and the compute and memory classes need a "
                            "counter pass (rocm-perf profile --counters roofline)");

  out.analysis =
      analysis::build_application_analysis(sources, analysis::bottleneck_thresholds::defaults());

  if (inputs.want_timeline)
    out.ops.reserve(ops.size());
  for (const op_record& op : inputs.want_timeline ? ops : std::vector<op_record>{}) {
    analysis::timeline_op t;
    t.name = kernel_names[static_cast<std::size_t>(op.kernel)];
    const std::string& track = track_names[static_cast<std::size_t>(op.track)];
    const auto slash = track.rfind(" / ");
    t.device = track.substr(0, slash);
    t.stream = slash == std::string::npos ? track : track.substr(slash + 3);
    t.start_ns = op.start_ns;
    t.end_ns = op.end_ns;
    out.ops.push_back(std::move(t));
  }

  analysis::html_report_input& page = out.page;
  page.title = report.command ? report.command->front() : "the traced application";
  page.notes = out.analysis.notes;
  for (const auto& k : out.analysis.kernels) {
    analysis::html_kernel_row row;
    row.kernel = k.name;
    row.dispatches = k.dispatches;
    row.total_ns = k.total_ns;
    row.share = k.share;
    row.critical_path_share = k.critical_path_share;
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
