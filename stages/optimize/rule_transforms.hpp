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

/// The rules, by the names rule_not_applied uses, in priority order.
inline constexpr std::string_view rule_shared_padding = "shared padding";
inline constexpr std::string_view rule_vector_loads = "vector loads";
inline constexpr std::string_view rule_launch_bounds = "launch bounds";
inline constexpr std::string_view rule_unroll_knobs = "unroll knobs";
inline constexpr std::string_view rule_unroll_pragmas = "unroll pragmas";

/// A rule that looked at the kernel and proposed nothing: its name (one of the `rule_*` names
/// above) and why, one clause ("the loop at line 12: the loop body calls atomicAdd").
struct rule_not_applied {
  std::string rule;
  std::string reason;
};

/// "vector loads: the loop at line 12: the loop body calls atomicAdd": one line for a report.
std::string to_line(const rule_not_applied& entry);

struct rule_transforms_result {
  std::vector<messages::proposal> proposals; ///< most promising first
  /// Every rule that proposed nothing, in priority order; a rule with a proposal is not here.
  std::vector<rule_not_applied> not_applied;
};

/// The proposals for `kernel` of the source `text` (parsed into `model`), whose diffs name
/// `source_name`; those whose id is in `skip_ids` (already tried) are left out, and a rule whose
/// only proposals were left out so says ("already tried: rule:vector:L12:float4"). When the kernel
/// is not defined every rule says so.
rule_transforms_result run_rule_transforms(const source_model& model,
                                           std::string_view text,
                                           std::string_view source_name,
                                           std::string_view kernel,
                                           std::uint32_t block_threads,
                                           const std::vector<std::string>& skip_ids);

/// run_rule_transforms' proposals only. Empty when the kernel is not defined or nothing applies.
std::vector<messages::proposal> rule_proposals(const source_model& model,
                                               std::string_view text,
                                               std::string_view source_name,
                                               std::string_view kernel,
                                               std::uint32_t block_threads,
                                               const std::vector<std::string>& skip_ids);

} // namespace rpl::stages::optimize
