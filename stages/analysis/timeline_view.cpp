#include "stages/analysis/timeline_view.hpp"

#include <cstdint>
#include <string>

namespace rpl::stages::analysis {

std::vector<timeline_op> timeline_ops(const rocpd::timeline& timeline,
                                      const critical_path_result& path) {
  std::vector<timeline_op> ops;
  ops.reserve(timeline.ops.size());
  for (std::uint32_t i = 0; i < timeline.ops.size(); ++i) {
    const auto& op = timeline.ops[i];
    timeline_op t;
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
    ops.push_back(std::move(t));
  }
  return ops;
}

std::vector<timeline_flow> timeline_flows(const critical_path_result& path) {
  std::vector<timeline_flow> flows;
  for (const auto& e : path.cross_edges)
    flows.push_back({e.from, e.to, "stream_wait"});
  return flows;
}

} // namespace rpl::stages::analysis
