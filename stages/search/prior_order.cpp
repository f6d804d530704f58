#include "stages/search/prior_order.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace rpl::stages {

std::vector<std::size_t> prior_first_order(std::size_t space_size,
                                           const std::map<std::size_t, double>& prior_ns) {
  std::vector<std::pair<double, std::size_t>> known;
  std::vector<bool> placed(space_size, false);
  for (const auto& [index, ns] : prior_ns) {
    if (index < space_size && std::isfinite(ns) && ns > 0.0) {
      known.emplace_back(ns, index);
      placed[index] = true;
    }
  }
  std::sort(known.begin(), known.end());
  std::vector<std::size_t> order;
  order.reserve(space_size);
  for (const auto& [ns, index] : known)
    order.push_back(index);
  for (std::size_t i = 0; i < space_size; ++i)
    if (!placed[i])
      order.push_back(i);
  return order;
}

} // namespace rpl::stages
