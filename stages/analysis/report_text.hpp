#pragma once
/// The terminal form of a profile_report: a summary line (and a "partial trace:" line per reason
/// when the trace may miss activity), the agents and totals, one table row per
/// user kernel (runtime, resources, occupancy), the runtime helpers, how to raise the dominant
/// kernel's occupancy, and the per-agent/queue/stream/process split where there is more than one.

#include <string>

#include "stages/analysis/profile_report.hpp"

namespace rpl::stages {

/// The text `rocm-perf profile` and `analyze` print (the timing backend: the summary and its note
/// only). Every line ends with '\n'.
std::string report_text(const profile_report& report);

} // namespace rpl::stages
