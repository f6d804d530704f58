#pragma once
/// How long each dispatch's stream sat idle just before it, per kernel name: the median (so one
/// long host pause does not make a kernel look launch-bound). Copies are not counted.

#include <map>
#include <string>

#include "stages/trace/rocpd_timeline.hpp"

namespace rpl::stages::analysis {

/// By kernel name; a name with no dispatch after another on its stream is absent.
std::map<std::string, double> median_idle_before_ns(const rocpd::timeline& timeline);

} // namespace rpl::stages::analysis
