#pragma once
/// The order of an exhaustive sweep that a prior run of the same space informs: the configurations
/// it measured, fastest median first, then the rest in space order. Measuring the likely best
/// first gives racing (stages/statistics/race_rule.hpp) its tightest bound from the first
/// candidates on, so every slower one is raced after a handful of launches instead of being
/// sampled to the noise target while the bound is still loose (issue 29: on the H100 GEMM, a
/// warm sweep in space order spent 0.65 s on one noisy configuration measured 15th, before the
/// best was known). Every configuration is still measured; only the order changes.

#include <cstddef>
#include <map>
#include <vector>

namespace rpl::stages {

/// A permutation of [0, space_size): the indices of `prior_ns` (index -> the prior run's median;
/// indices at or past space_size and values that are not finite and positive are ignored) by
/// ascending median, ties by index, then every other index in ascending order.
std::vector<std::size_t> prior_first_order(std::size_t space_size,
                                           const std::map<std::size_t, double>& prior_ns);

} // namespace rpl::stages
