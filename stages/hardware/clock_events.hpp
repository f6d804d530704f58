#pragma once
/// NVML's clocks-event reasons (formerly "throttle reasons"): what the bits mean, which of them
/// slow the SM clock below what the work asked for, and when a measurement counts as throttled.
///
/// Source: NVIDIA's nvml.h (CUDA 12/13), nvmlClocksEventReason* (the same bits as the older
/// nvmlClocksThrottleReason*): GpuIdle 0x1, ApplicationsClocksSetting 0x2, SwPowerCap 0x4,
/// HwSlowdown 0x8, SyncBoost 0x10, SwThermalSlowdown 0x20, HwThermalSlowdown 0x40,
/// HwPowerBrakeSlowdown 0x80, DisplayClockSetting 0x100.

#include <cstdint>
#include <string>
#include <vector>

namespace rpl::stages {

namespace clock_event {
inline constexpr std::uint64_t gpu_idle = 0x1;
inline constexpr std::uint64_t applications_clocks_setting = 0x2;
inline constexpr std::uint64_t sw_power_cap = 0x4;
inline constexpr std::uint64_t hw_slowdown = 0x8;
inline constexpr std::uint64_t sync_boost = 0x10;
inline constexpr std::uint64_t sw_thermal_slowdown = 0x20;
inline constexpr std::uint64_t hw_thermal_slowdown = 0x40;
inline constexpr std::uint64_t hw_power_brake_slowdown = 0x80;
inline constexpr std::uint64_t display_clock_setting = 0x100;
/// The reasons that mean the GPU ran slower than the work asked for: power or thermal limits and
/// hardware slowdowns. Idle, a user's application clocks, sync boost and the display clock do not.
inline constexpr std::uint64_t slowing = sw_power_cap | hw_slowdown | sw_thermal_slowdown |
                                         hw_thermal_slowdown | hw_power_brake_slowdown;
} // namespace clock_event

/// The names of the set bits ("gpu_idle", "sw_power_cap", ...; "unknown_0x..." for others).
std::vector<std::string> clock_event_names(std::uint64_t reasons);

/// Throttled: a slowing reason before or after the measurement, or power or thermal violation
/// time during it (a negative time is unknown and does not count).
bool is_throttled(std::uint64_t reasons_before,
                  std::uint64_t reasons_after,
                  std::int64_t power_violation_ns,
                  std::int64_t thermal_violation_ns);

} // namespace rpl::stages
