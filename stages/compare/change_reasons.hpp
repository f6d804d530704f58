#pragma once
/// Why a kernel's time changed, where the traces say: its resources from the kernel symbols
/// (registers, accumulation registers, scalar registers, LDS/shared memory, scratch), its launch
/// shape, its theoretical occupancy (stages/analysis/kernel_occupancy), and the hardware counters
/// when both sides recorded them (per dispatch, stages/trace/counter_values), each as one sentence:
/// "registers 64 → 96", "occupancy 100 % → 67 % (limited by vgpr)", "block 256 → 128".

#include <map>
#include <string>
#include <vector>

#include "stages/analysis/profile_report.hpp"
#include "stages/compare/launch_samples.hpp"
#include "stages/trace/counter_values.hpp"

namespace rpl::stages::compare {

/// What one side knows about one kernel; any pointer may be null.
struct kernel_evidence {
  const kernel_report* report = nullptr;            ///< its row of the side's profile report
  const launch_samples* launch = nullptr;           ///< the matched launch shape
  const rocpd::kernel_counters* counters = nullptr; ///< its counters, when the side has them
};

/// Counters whose mean per dispatch changed by less than this fraction are not mentioned.
inline constexpr double counter_change_floor = 0.05;
/// At most this many counter sentences, the largest relative changes first.
inline constexpr std::size_t counter_sentences = 3;

/// The sentences, in this order: shape, registers, LDS, scratch, occupancy, counters. Only what
/// differs; empty when nothing the traces hold changed.
std::vector<std::string> change_reasons(const kernel_evidence& base, const kernel_evidence& next);

} // namespace rpl::stages::compare
