#include "stages/hardware/clock_events.hpp"

#include <cstdio>
#include <utility>

namespace rpl::stages {

std::vector<std::string> clock_event_names(std::uint64_t reasons) {
  static constexpr std::pair<std::uint64_t, const char*> known[] = {
      {clock_event::gpu_idle, "gpu_idle"},
      {clock_event::applications_clocks_setting, "applications_clocks_setting"},
      {clock_event::sw_power_cap, "sw_power_cap"},
      {clock_event::hw_slowdown, "hw_slowdown"},
      {clock_event::sync_boost, "sync_boost"},
      {clock_event::sw_thermal_slowdown, "sw_thermal_slowdown"},
      {clock_event::hw_thermal_slowdown, "hw_thermal_slowdown"},
      {clock_event::hw_power_brake_slowdown, "hw_power_brake_slowdown"},
      {clock_event::display_clock_setting, "display_clock_setting"}};
  std::vector<std::string> names;
  for (const auto& [bit, name] : known) {
    if ((reasons & bit) != 0) {
      names.emplace_back(name);
      reasons &= ~bit;
    }
  }
  for (std::uint64_t bit = 1; reasons != 0; bit <<= 1) {
    if ((reasons & bit) != 0) {
      char text[32];
      std::snprintf(text, sizeof text, "unknown_0x%llx", static_cast<unsigned long long>(bit));
      names.emplace_back(text);
      reasons &= ~bit;
    }
  }
  return names;
}

bool is_throttled(std::uint64_t reasons_before,
                  std::uint64_t reasons_after,
                  std::int64_t power_violation_ns,
                  std::int64_t thermal_violation_ns) {
  return ((reasons_before | reasons_after) & clock_event::slowing) != 0 || power_violation_ns > 0 ||
         thermal_violation_ns > 0;
}

} // namespace rpl::stages
