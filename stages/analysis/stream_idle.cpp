#include "stages/analysis/stream_idle.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

namespace rpl::stages::analysis {

namespace {

double median(std::vector<double>& values) {
  if (values.empty())
    return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

} // namespace

std::map<std::string, double> median_idle_before_ns(const rocpd::timeline& timeline) {
  // By (track, start, index): the ops by (start, index), then stably by track (counting sort).
  const std::vector<std::uint32_t> by_start = rocpd::ops_by_start(timeline);
  std::vector<std::size_t> offset(timeline.tracks.size() + 1, 0);
  for (const auto& op : timeline.ops)
    ++offset[static_cast<std::size_t>(op.track) + 1];
  for (std::size_t k = 0; k + 1 < offset.size(); ++k)
    offset[k + 1] += offset[k];
  std::vector<std::uint32_t> order(timeline.ops.size());
  for (const std::uint32_t i : by_start)
    order[offset[static_cast<std::size_t>(timeline.ops[i].track)]++] = i;
  std::vector<std::vector<double>> idle(timeline.names.size());
  for (std::size_t n = 1; n < order.size(); ++n) {
    const auto& op = timeline.ops[order[n]];
    const auto& prev = timeline.ops[order[n - 1]];
    if (prev.track == op.track && !op.copy)
      idle[static_cast<std::size_t>(op.name)].push_back(
          static_cast<double>(std::max<std::int64_t>(0, op.start_ns - prev.end_ns)));
  }
  std::map<std::string, double> out;
  for (std::size_t k = 0; k < timeline.names.size(); ++k)
    if (!idle[k].empty())
      out[timeline.names[k]] = median(idle[k]);
  return out;
}

} // namespace rpl::stages::analysis
