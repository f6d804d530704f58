#pragma once
/// Which builds of a sweep take longest, learned while it runs, so that the compile workers get
/// the longest first (longest processing time first): the sweep's last compiles are then short
/// ones and the workers finish together, instead of a few long builds (the big tiles of a GEMM,
/// which a space lists last) running on after the others are done. On an H100 host the 183 GEMM
/// builds took 0.74 to 3.65 s each, and in space order the sweep ended 2.5 s after its compile
/// bound.
///
/// The estimate for a configuration is the mean of the compile times of its k nearest compiled
/// neighbours, by Euclidean distance over the linear features of space_features.hpp (each
/// parameter scaled to [-1, 1]); with nothing compiled yet it is 0 for every configuration, so the
/// order stays the search's own until the first builds are in.

#include <cstddef>
#include <vector>

#include <Eigen/Dense>

#include "stages/search/param_value.hpp"

namespace rpl::stages {

class compile_cost_model {
public:
  explicit compile_cost_model(const std::vector<configuration>& configs, std::size_t k = 3);

  /// Configuration `index` compiled in `seconds` (a repeat replaces nothing: both count).
  void observe(std::size_t index, double seconds);
  /// Expected compile seconds of configuration `index` (0 while nothing is known, or for an
  /// index outside the space).
  double expected(std::size_t index) const;
  std::size_t observed() const { return seconds_.size(); }

private:
  Eigen::MatrixXd x_; ///< one row per configuration: the linear features
  std::size_t k_;
  std::vector<std::size_t> indices_; ///< observed configurations, in order
  std::vector<double> seconds_;
  mutable std::vector<double> cache_;           ///< by index, as of cache_seen_ observations
  mutable std::vector<std::size_t> cache_seen_; ///< observations the cached value reflects
};

} // namespace rpl::stages
