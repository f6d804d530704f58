#pragma once
/// The rule proposer's transforms: small, well-known source changes to one kernel, each a unified
/// diff that passes the source guard (source_guard.hpp) by construction. In priority order (a run
/// on a time budget may not reach the last ones):
///   1. one padding element per row of a two-dimensional `__shared__` array that every use indexes
///      in both dimensions (bank conflicts), per array and for all of a function's arrays;
///   2. 16-byte vector loads and stores in a grid-stride loop that touches arrays only at its
///      index (loop_vectorizer.hpp: alignment checked at run time, a tail loop for any size);
///   3. `__launch_bounds__(block_threads)` on a kernel without launch bounds; a minimum of 2
///      blocks per multiprocessor added to launch bounds with a single argument;
///   4. `#pragma unroll N` (N = 2, 4, 8) before each loop of the target region that has no unroll
///      pragma yet, one proposal per loop and N, and one per function and N for all such loops
///      of a function that has two or more.
/// Loops in a device function that other kernels share are changed in a copy of the function
/// (`<name>_rpl_<kernel>`, placed before its first caller in the region) that only the target
/// kernel calls, so the other kernels keep their code.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "messages/proposal.hpp"
#include "stages/optimize/source_model.hpp"

namespace rpl::stages::optimize {

/// The proposals for `kernel` of the source `text` (parsed into `model`), whose diffs name
/// `source_name`; those whose id is in `skip_ids` (already tried) are left out. Empty when the
/// kernel is not defined or nothing applies.
std::vector<messages::proposal> rule_proposals(const source_model& model,
                                               std::string_view text,
                                               std::string_view source_name,
                                               std::string_view kernel,
                                               std::uint32_t block_threads,
                                               const std::vector<std::string>& skip_ids);

} // namespace rpl::stages::optimize
