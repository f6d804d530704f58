#include "stages/search/compile_cost.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include "stages/search/space_features.hpp"

namespace rpl::stages {

compile_cost_model::compile_cost_model(const std::vector<configuration>& configs, std::size_t k)
    : k_(std::max<std::size_t>(1, k)), cache_(configs.size(), 0.0), cache_seen_(configs.size(), 0) {
  if (configs.empty())
    return;
  const feature_matrix features = space_features(configs);
  x_ = features.x.leftCols(static_cast<Eigen::Index>(features.linear));
}

void compile_cost_model::observe(std::size_t index, double seconds) {
  if (index >= cache_.size() || !(seconds >= 0.0))
    return;
  indices_.push_back(index);
  seconds_.push_back(seconds);
}

double compile_cost_model::expected(std::size_t index) const {
  if (index >= cache_.size() || seconds_.empty())
    return 0.0;
  if (cache_seen_[index] == seconds_.size())
    return cache_[index];
  std::vector<std::pair<double, double>> near; // (squared distance, seconds)
  near.reserve(seconds_.size());
  for (std::size_t i = 0; i < seconds_.size(); ++i) {
    const double d = x_.cols() == 0 ? 0.0
                                    : (x_.row(static_cast<Eigen::Index>(index)) -
                                       x_.row(static_cast<Eigen::Index>(indices_[i])))
                                          .squaredNorm();
    near.emplace_back(d, seconds_[i]);
  }
  const std::size_t k = std::min(k_, near.size());
  std::partial_sort(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(k), near.end());
  double sum = 0.0;
  for (std::size_t i = 0; i < k; ++i)
    sum += near[i].second;
  cache_[index] = sum / static_cast<double>(k);
  cache_seen_[index] = seconds_.size();
  return cache_[index];
}

} // namespace rpl::stages
