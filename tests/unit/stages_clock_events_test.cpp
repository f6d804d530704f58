// NVML's clocks-event reasons (stages/hardware/clock_events.hpp): names, and when a measurement
// counts as throttled.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/hardware/clock_events.hpp"

namespace rpl::stages {
namespace {

TEST(stages_clock_events, names_every_set_bit_and_unknown_ones_by_value) {
  EXPECT_TRUE(clock_event_names(0).empty());
  EXPECT_EQ(clock_event_names(clock_event::gpu_idle | clock_event::sw_power_cap),
            (std::vector<std::string>{"gpu_idle", "sw_power_cap"}));
  EXPECT_EQ(clock_event_names(0x40 | 0x1000),
            (std::vector<std::string>{"hw_thermal_slowdown", "unknown_0x1000"}));
}

TEST(stages_clock_events, idle_and_user_settings_are_not_throttling_limits_are) {
  using namespace clock_event;
  EXPECT_FALSE(is_throttled(gpu_idle, 0, 0, 0)) << "idle between candidates";
  EXPECT_FALSE(is_throttled(applications_clocks_setting | sync_boost | display_clock_setting,
                            applications_clocks_setting, 0, 0));
  EXPECT_FALSE(is_throttled(0, 0, -1, -1)) << "unknown violation time is not a violation";
  for (const std::uint64_t bit : {sw_power_cap, hw_slowdown, sw_thermal_slowdown,
                                  hw_thermal_slowdown, hw_power_brake_slowdown}) {
    EXPECT_TRUE(is_throttled(bit, 0, 0, 0)) << bit;
    EXPECT_TRUE(is_throttled(gpu_idle, bit, -1, -1)) << bit;
  }
  EXPECT_TRUE(is_throttled(0, 0, 1, -1)) << "power violation time during the measurement";
  EXPECT_TRUE(is_throttled(0, 0, -1, 5)) << "thermal violation time during the measurement";
}

} // namespace
} // namespace rpl::stages
