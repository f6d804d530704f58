#pragma once
/// The verdict on one kernel, from its median ratio's interval and the noise band:
///
///   t = max(--noise, the measured noise between runs)
///   same       the whole interval lies inside [1 - t, 1 + t]
///   slower     the interval lies above 1 (it excludes "no change") and the ratio is above 1 + t
///   faster     the interval lies below 1 and the ratio is below 1 - t
///   ambiguous  anything else: the interval crosses an edge of the band (more dispatches or runs
///              would tell), or a side has too few dispatches for an interval
///   new, gone  the kernel (or launch shape) is on one side only
///
/// A change that is real but inside the noise band is `same`; one outside the band whose interval
/// still reaches 1 is `ambiguous`, never a winner (the project's verdict vocabulary, design §2).

#include <cstdint>
#include <string_view>
#include <vector>

#include "stages/compare/median_ratio.hpp"

namespace rpl::stages::compare {

/// Numbered as the JSON's strings are listed in docs/schema/compare.schema.json.
enum class kernel_verdict : std::uint8_t {
  same = 0,
  faster = 1,
  slower = 2,
  ambiguous = 3,
  added = 4,   ///< "new": only in NEW
  removed = 5, ///< "gone": only in BASE
};

/// "same", "faster", "slower", "ambiguous", "new", "gone".
std::string_view verdict_name(kernel_verdict verdict);

/// The verdict for a matched kernel; `noise` is t above (a fraction, 0.02 for 2 %).
kernel_verdict judge(const ratio_interval& interval, double noise);

/// The measured noise of one side: the largest relative distance of a run's median from the
/// median of the run medians (0 with fewer than two runs).
double run_noise(const std::vector<double>& run_medians_ns);

} // namespace rpl::stages::compare
