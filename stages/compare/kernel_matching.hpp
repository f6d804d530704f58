#pragma once
/// Which launches of BASE and NEW are the same kernel. By name first; when a name has one launch
/// shape on each side, the two are matched even if the shape changed (a new block size is a reason
/// the kernel changed, shown as such); when either side launches the name with several shapes,
/// launches are matched by (grid, block), and a shape only one side has is `new` or `gone`.

#include <vector>

#include "stages/compare/launch_samples.hpp"

namespace rpl::stages::compare {

struct launch_match {
  const launch_samples* base = nullptr; ///< null: new in NEW
  const launch_samples* next = nullptr; ///< null: gone from NEW
  /// The name has several shapes on a side, so the match is by shape (the rows show it).
  bool by_shape = false;
};

/// Every launch of both sides, once: matched pairs, then BASE's unmatched (`gone`), then NEW's
/// (`new`), each group in its side's order.
std::vector<launch_match> match_launches(const std::vector<launch_samples>& base,
                                         const std::vector<launch_samples>& next);

} // namespace rpl::stages::compare
