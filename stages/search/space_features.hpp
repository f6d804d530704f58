#pragma once
/// The features a surrogate model sees for each configuration of a space, from its parameter
/// values alone: for a numeric parameter with more than one value, its value scaled to [-1, 1]
/// (log2 first when every value is positive and the largest is at least 4 times the smallest:
/// block sizes, tile sizes), its square (more than two values), and the products of every two
/// numeric parameters (interactions: the tile of a block); for a text parameter, one column per
/// value but the first (one-hot). Parameters with one value give nothing.

#include <string>
#include <vector>

#include <Eigen/Dense>

#include "stages/search/param_value.hpp"

namespace rpl::stages {

struct feature_matrix {
  /// One row per configuration; the columns in order of complexity: first the linear terms (the
  /// scaled numeric values and the one-hot columns), then the squares, then the products, so a
  /// model with few points can use a prefix.
  Eigen::MatrixXd x;
  std::vector<std::string> names; ///< one per column: "log2(block_size_x)", "tile*unroll", ...
  std::size_t linear = 0;         ///< how many columns are linear terms
};

/// The features of `configs` (all with the same parameters, in the same order).
feature_matrix space_features(const std::vector<configuration>& configs);

} // namespace rpl::stages
