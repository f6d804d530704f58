#pragma once
/// The kernels of an optimize run, taken in turns: one thread per device, each taking the next
/// kernel not yet taken when it is free (in rank order), each kernel's turn given its deadline by
/// the run's budget (run_budget.hpp). A kernel whose turn comes with too little time left, or after
/// an interrupt, is not started: its result is `not_reached` with the reason and no figures. Every
/// result carries the seconds its turn took.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/optimize/kernel_optimizer.hpp"
#include "engine/optimize/run_budget.hpp"

namespace rpl::engine {

/// Optimizes targets[target] on devices[device] within `deadline` (none: no budget), on that
/// device's thread.
using optimize_one_fn = std::function<target_result(
    std::size_t target, std::size_t device, std::optional<run_budget::clock::time_point> deadline)>;

/// A kernel never started: `not_reached`, with `reason`, no figures.
target_result not_reached_result(const std::string& kernel,
                                 const std::filesystem::path& source,
                                 std::string reason);

/// Runs every target in turns (see above). An exception out of `optimize_one` (its lane failed)
/// fails the kernel that device had taken, naming the device; the kernels not yet taken go to the
/// other devices (failed, when none is left).
///
/// `wanted`: at most that many targets are taken, in order; a result `skipped` (its capture
/// failed) frees its place for the next target, so the targets after the first `wanted` are
/// spares. Spares never taken have no result: the vector returned holds the taken targets'
/// results, in target order.
std::vector<target_result> run_kernel_turns(const std::vector<kernel_target>& targets,
                                            const std::vector<int>& devices,
                                            const run_budget& budget,
                                            const std::atomic<bool>& stop,
                                            const optimize_one_fn& optimize_one,
                                            std::size_t wanted = static_cast<std::size_t>(-1));

} // namespace rpl::engine
