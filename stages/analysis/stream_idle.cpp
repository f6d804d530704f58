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
  std::map<std::string, double> out;
  for (std::size_t k = 0; k < timeline.names.size(); ++k)
    if (!idle[k].empty())
      out[timeline.names[k]] = median(idle[k]);
  return out;
}

} // namespace rpl::stages::analysis
