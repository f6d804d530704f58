// The capture format (stages/capture): dispatch.json and memory_regions.json round trips, checked
// against docs/schema/capture-*.schema.json; malformed manifests rejected with the file, the
// problem and a fix; reservation ranges widened to the granularity and merged; output comparison
// bit-exact and within a float tolerance.
#include <cstring>

#include <gtest/gtest.h>

#include "stages/capture/aql_dispatch.hpp"
#include "stages/capture/capture_manifest.hpp"
#include "stages/capture/output_compare.hpp"
#include "stages/capture/red_zones.hpp"
#include "stages/capture/va_ranges.hpp"
#include "stages/capture/walk_zones.hpp"
#include "support/json_schema.hpp"

namespace rpl::stages::capture {
namespace {

constexpr std::uint64_t mib2 = 2u << 20;

dispatch_manifest sample() {
  dispatch_manifest m;
  m.backend = "cuda";
  m.kernel = "_Z12gather_scalePK7segmentif";
  m.dispatch_index = 3;
  m.device_name = "NVIDIA H100 80GB HBM3";
  m.arch = "sm_90";
  m.grid = {528, 1, 1};
  m.block = {256, 1, 1};
  m.params = {{0, 8}, {8, 4}, {12, 4}};
  m.code_object_file = "code_object.cubin";
  m.granularity = mib2;
  m.command = {"pointer_table", "--rounds", "6"};
  m.driver_pools = {{0x7f397c000000, 0x204000000, 0}, {0x7f3950001000, 0x1bfff000, 0x7f3950000000}};
  m.pid = 4242;
  return m;
}

template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const capture_error& error) {
    return error.what();
  }
  return {};
}

TEST(capture_manifest, a_dispatch_round_trips_and_follows_its_schema) {
  const auto json = to_json(sample());
  EXPECT_EQ(rpl::testing::schema_errors(json, "capture-dispatch.schema.json"),
            std::vector<std::string>{});
  const auto back = dispatch_from_json(json, "d.json");
  EXPECT_EQ(back.kernel, sample().kernel);
  EXPECT_EQ(back.grid, sample().grid);
  EXPECT_EQ(back.params.size(), 3u);
  EXPECT_EQ(back.params[2].offset, 12u);
  EXPECT_EQ(back.granularity, mib2);
  EXPECT_EQ(back.command, sample().command);
  ASSERT_EQ(back.driver_pools.size(), 2u);
  EXPECT_EQ(back.driver_pools[1].base, 0x7f3950001000u);
  EXPECT_EQ(back.driver_pools[1].size, 0x1bfff000u);
  EXPECT_EQ(back.driver_pools[1].hint, 0x7f3950000000u);
  EXPECT_EQ(kernarg_bytes(back.params), 16u);
}

TEST(capture_manifest, regions_round_trip_sorted_and_follow_their_schema) {
  const std::vector<memory_region> regions = {
      {0x7f0000400000, 4096, before_file_name(0x7f0000400000), after_file_name(0x7f0000400000)},
      {0x7f0000200000, 64, before_file_name(0x7f0000200000), ""}};
  const auto json = regions_to_json(regions);
  EXPECT_EQ(rpl::testing::schema_errors(json, "capture-regions.schema.json"),
            std::vector<std::string>{});
  EXPECT_EQ(json["regions"][0]["base"], "0x7f0000400000");
  EXPECT_TRUE(json["regions"][1]["after_file"].is_null());
  const auto back = regions_from_json(json, "r.json");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].base, 0x7f0000200000u); // sorted by address
  EXPECT_EQ(back[1].after_file, "after/region_0x7f0000400000.bin");
}

TEST(capture_manifest, malformed_manifests_name_the_file_the_problem_and_a_fix) {
  auto json = to_json(sample());
  json["format_version"] = 2;
  EXPECT_NE(error_of([&] {
              dispatch_from_json(json, "cap/dispatch.json");
            }).find("cap/dispatch.json: format_version 2, but this rocm-perf reads version 1"),
            std::string::npos);
  json = to_json(sample());
  json.erase("grid");
  EXPECT_NE(error_of([&] { dispatch_from_json(json, "d.json"); }).find("missing \"grid\"; fix:"),
            std::string::npos);
  json = to_json(sample());
  json["block"] = {256, 0, 1};
  EXPECT_NE(error_of([&] { dispatch_from_json(json, "d.json"); }).find("three positive numbers"),
            std::string::npos);
  json = to_json(sample());
  json["kernarg"] = "../../etc/passwd";
  EXPECT_NE(error_of([&] { dispatch_from_json(json, "d.json"); }).find("not a file name inside"),
            std::string::npos);
  json = to_json(sample());
  json["granularity"] = 3000;
  EXPECT_NE(error_of([&] { dispatch_from_json(json, "d.json"); }).find("not a power of two"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              dispatch_from_json(nlohmann::json::array(), "d.json");
            }).find("not a rocm-perf capture"),
            std::string::npos);

  auto regions = regions_to_json({{0x1000, 0x2000, before_file_name(0x1000), ""},
                                  {0x2000, 0x100, before_file_name(0x2000), ""}});
  EXPECT_NE(error_of([&] {
              regions_from_json(regions, "r.json");
            }).find("regions 0x1000 and 0x2000 overlap"),
            std::string::npos);
  regions = regions_to_json({{0x1000, 16, before_file_name(0x1000), ""}});
  regions["regions"][0]["base"] = "0xzz";
  EXPECT_NE(error_of([&] { regions_from_json(regions, "r.json"); }).find("is not an address"),
            std::string::npos);
  regions["regions"][0]["base"] = "0x10000000000000000";
  EXPECT_NE(error_of([&] { regions_from_json(regions, "r.json"); }).find("not an address"),
            std::string::npos);
}

TEST(capture_addresses, parse_hex_and_decimal_and_print_hex) {
  EXPECT_EQ(parse_address("0x7f3A40000000", "x"), 0x7f3a40000000u);
  EXPECT_EQ(parse_address("4096", "x"), 4096u);
  EXPECT_EQ(hex_address(0x7f3a40000000), "0x7f3a40000000");
  EXPECT_EQ(parse_address("0xffffffffffffffff", "x"), UINT64_MAX);
  EXPECT_FALSE(error_of([] { parse_address("18446744073709551616", "x"); }).empty());
}

TEST(va_ranges, regions_widen_to_the_granularity_and_merge_where_they_share_one) {
  // Two small allocations in one 2 MiB granule, one spanning two granules, one far away.
  const std::vector<memory_region> regions = {{0x7f0000200100, 256, "", ""},
                                              {0x7f0000300000, 4096, "", ""},
                                              {0x7f0000500000, 3u << 20, "", ""},
                                              {0x7f1000000000, 1, "", ""}};
  // The first two share [0x7f0000200000, +2 MiB); the third widens to [0x7f0000400000, +4 MiB),
  // which touches it, so the two become one reservation.
  const auto ranges = reservation_ranges(regions, mib2);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0], (va_range{0x7f0000200000, 3 * mib2}));
  EXPECT_EQ(ranges[1], (va_range{0x7f1000000000, mib2}));
  const auto apart = reservation_ranges({{0x200000, 16, "", ""}, {0x800000, 16, "", ""}}, mib2);
  ASSERT_EQ(apart.size(), 2u);
  // Adjacent granules merge into one reservation.
  const auto touching =
      reservation_ranges({{0x200000, mib2, "", ""}, {0x400000, 16, "", ""}}, mib2);
  ASSERT_EQ(touching.size(), 1u);
  EXPECT_EQ(touching[0], (va_range{0x200000, 2 * mib2}));
  EXPECT_FALSE(error_of([&] { reservation_ranges(regions, 3000); }).empty());
  EXPECT_FALSE(error_of([&] {
                 reservation_ranges({{UINT64_MAX - 10, 100, "", ""}}, mib2);
               }).empty());
  EXPECT_EQ(shifted(regions, mib2)[0].base, 0x7f0000400100u);
}

std::vector<std::uint8_t> floats(std::initializer_list<float> values) {
  std::vector<std::uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.begin(), bytes.size());
  return bytes;
}

TEST(output_compare, bit_exact_counts_bytes_and_a_tolerance_counts_floats) {
  const auto expected = floats({1.0f, 2.0f, 3.0f});
  EXPECT_TRUE(compare_output(expected, expected, std::nullopt).equal());
  const auto close = floats({1.0f, 2.000001f, 3.0f});
  const auto exact = compare_output(expected, close, std::nullopt);
  EXPECT_FALSE(exact.equal());
  EXPECT_EQ(exact.first_mismatch_offset, 4u);
  const auto loose = compare_output(expected, close, float_tolerance{0, 1e-5});
  EXPECT_TRUE(loose.equal());
  const auto far = compare_output(expected, floats({1.0f, 2.1f, 3.5f}), float_tolerance{0, 1e-5});
  EXPECT_EQ(far.mismatched, 2u);
  EXPECT_EQ(far.first_mismatch_offset, 4u);
  // A size difference is a mismatch of every missing byte.
  const auto shorter = compare_output(expected, floats({1.0f, 2.0f}), std::nullopt);
  EXPECT_EQ(shorter.mismatched, 4u);
  EXPECT_EQ(shorter.first_mismatch_offset, 8u);
  EXPECT_EQ(describe(std::nullopt), "bit-exact");
  EXPECT_EQ(describe(float_tolerance{1e-6, 1e-5}), "float32 within abs 1e-06 + rel 1e-05");
}

} // namespace
} // namespace rpl::stages::capture

namespace rpl::stages::capture {
namespace {

/// A kernel dispatch as a ROCm queue holds one: 3 dimensions, 256x1x1 workgroups over
/// 1000x4x1 work-items (a partial last workgroup), 4 KiB of LDS, a kernel object and kernarg
/// address of the kind the loader and the kernarg pool give.
aql_dispatch recorded_packet() {
  aql_dispatch d;
  d.header = aql_kernel_dispatch_type | (1u << 8) | (2u << 9) |
             (2u << 11); // barrier, acquire/release system
  d.setup = 3;
  d.workgroup = {256, 1, 1};
  d.grid = {1000, 4, 1};
  d.private_segment_size = 0;
  d.group_segment_size = 4096 + 1024;
  d.kernel_object = 0x7f3a10a4c0c0;
  d.kernarg_address = 0x7f3a14000000;
  d.completion_signal = 0x7f3a1c002280;
  return d;
}

TEST(aql_dispatch, a_packet_round_trips_through_its_64_bytes) {
  const auto bytes = encode_aql_dispatch(recorded_packet());
  ASSERT_TRUE(is_kernel_dispatch(bytes));
  // The layout of the HSA specification: grid_size_x at byte 12, kernel_object at 32.
  std::uint32_t grid_x = 0;
  std::memcpy(&grid_x, bytes.data() + 12, 4);
  EXPECT_EQ(grid_x, 1000u);
  const auto back = decode_aql_dispatch(bytes);
  EXPECT_EQ(back.dimensions(), 3);
  EXPECT_EQ(back.workgroup, (std::array<std::uint16_t, 3>{256, 1, 1}));
  EXPECT_EQ(back.kernel_object, 0x7f3a10a4c0c0u);
  EXPECT_EQ(back.kernarg_address, 0x7f3a14000000u);
  EXPECT_EQ(back.completion_signal, 0x7f3a1c002280u);
  EXPECT_EQ(back.workgroups(), (std::array<std::uint32_t, 3>{4, 4, 1}));
}

TEST(aql_dispatch, other_packets_and_broken_ones_are_refused) {
  auto bytes = encode_aql_dispatch(recorded_packet());
  bytes[0] = 3; // HSA_PACKET_TYPE_BARRIER_AND
  EXPECT_FALSE(is_kernel_dispatch(bytes));
  EXPECT_NE(error_of([&] { decode_aql_dispatch(bytes); }).find("type 3 is not a kernel dispatch"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decode_aql_dispatch(std::span(bytes).first(32)); }).find("of 32 bytes"),
            std::string::npos);
  auto zero = recorded_packet();
  zero.workgroup[1] = 0;
  EXPECT_NE(error_of([&] { decode_aql_dispatch(encode_aql_dispatch(zero)); }).find("dimension 1"),
            std::string::npos);
}

TEST(aql_dispatch, the_manifest_takes_geometry_dynamic_lds_and_every_argument) {
  kernel_metadata k;
  k.name = "_Z4axpyfPKfPfi";
  k.group_segment_fixed_size = 4096;
  k.kernarg_segment_size = 280;
  k.args = {{"", "", 0, 4, "by_value", ""},
            {"", "", 8, 8, "global_buffer", "global"},
            {"", "", 16, 8, "global_buffer", "global"},
            {"", "", 24, 4, "by_value", ""},
            {"", "", 32, 4, "hidden_block_count_x", ""}};
  const auto m = hsa_manifest(recorded_packet(), k, "gfx942");
  EXPECT_EQ(m.backend, "hsa");
  EXPECT_EQ(m.grid, (std::array<std::uint32_t, 3>{4, 4, 1}));
  EXPECT_EQ(m.block, (std::array<std::uint32_t, 3>{256, 1, 1}));
  EXPECT_EQ(m.dynamic_shared_bytes, 1024u);
  ASSERT_EQ(m.params.size(), 5u);
  EXPECT_EQ(m.params[4].offset, 32u);
  EXPECT_EQ(m.code_object_file, "kernel.hsaco");
  k.group_segment_fixed_size = 8192;
  EXPECT_NE(error_of([&] { hsa_manifest(recorded_packet(), k, "gfx942"); }).find("less than"),
            std::string::npos);
}

TEST(red_zones, are_the_reserved_bytes_outside_every_region) {
  const std::vector<memory_region> regions = {{0x200000 + 4096, 1000, "a", "", 0},
                                              {0x200000 + 8192, 8192, "b", "", 1},
                                              {0x400000, 0x200000, "c", "", 2}};
  const std::vector<va_range> ranges = {{0x200000, 0x200000}, {0x400000, 0x200000}};
  const auto zones = red_zones(ranges, regions);
  ASSERT_EQ(zones.size(), 3u) << "c fills its range: no zone there";
  EXPECT_EQ(zones[0], (va_range{0x200000, 4096}));
  EXPECT_EQ(zones[1], (va_range{0x200000 + 5096, 8192 - 5096}));
  EXPECT_EQ(zones[2], (va_range{0x200000 + 16384, 0x200000 - 16384}));
}

TEST(walk_zones, requests_take_the_allocators_own_steps) {
  EXPECT_EQ(walk_request(4), 512u);
  EXPECT_EQ(walk_request(4000), 4096u) << "4000 bytes take 4096 on the H200";
  EXPECT_EQ(walk_request(4096), 4096u) << "a whole step: no slack";
  EXPECT_EQ(walk_request(65540), 66048u);
  EXPECT_EQ(walk_request(1u << 20), 1u << 20);
  EXPECT_EQ(walk_request(4000000), 4004096u) << "4 KiB more, inside the same 64 KiB";
  EXPECT_EQ(walk_request(4u << 20), 4u << 20) << "a whole 64 KiB: nothing more";
  EXPECT_EQ(walk_request((1u << 20) + 4), (1u << 20) + 4 + 4096);
}

TEST(walk_zones, are_the_replays_own_bytes_next_to_a_region) {
  const std::vector<memory_region> regions = {{0x10000, 4000, "a", "", 0},
                                              {0x11000, 4096, "b", "", 1}};
  const std::vector<va_range> owned = {
      {0x10000, 4096},  // a's own allocation: 96 bytes of slack
      {0x11000, 4096},  // b's: none
      {0x12000, 512},   // a claim right after b
      {0x12200, 512},   // the next claim, adjacent: its own zone
      {0xe000, 0x2000}, // a filler ending where a starts: its last 4 KiB
      {0x40000, 512}};  // a claim far away
  const auto zones = walk_red_zones(regions, owned);
  ASSERT_EQ(zones.size(), 4u);
  EXPECT_EQ(zones[0], (va_range{0xf000, 0x1000})) << "before a";
  EXPECT_EQ(zones[1], (va_range{0x10000 + 4000, 96})) << "a's slack";
  EXPECT_EQ(zones[2], (va_range{0x12000, 512})) << "after b";
  EXPECT_EQ(zones[3], (va_range{0x12200, 512})) << "never merged across allocations";
  EXPECT_TRUE(within_reach({0x12200, 512}, regions));
  EXPECT_TRUE(within_reach({0xe000, 0x1001}, regions)) << "its last byte is 4 KiB before a";
  EXPECT_FALSE(within_reach({0xe000, 0x1000}, regions));
  EXPECT_FALSE(within_reach({0x40000, 512}, regions));
  EXPECT_TRUE(within_reach({0x11000, 16}, regions)) << "inside b";
}

TEST(red_zones, the_first_changed_byte_is_named_by_its_nearest_region) {
  const std::vector<memory_region> regions = {{0x1000, 0x100, "a", "", 0},
                                              {0x2000, 0x100, "b", "", 1}};
  const va_range zone{0x1100, 0xf00};
  std::vector<std::uint8_t> now(zone.size);
  for (std::uint64_t i = 0; i < zone.size; ++i) {
    now[i] = red_zone_byte(zone.base + i);
  }
  std::optional<red_zone_violation> found;
  check_red_zone(zone, now, regions, found);
  EXPECT_FALSE(found) << "the pattern as filled";
  now[4] = 0; // a float written right past a's end: bytes 0x1104..0x1107
  now[5] ^= 0xff;
  check_red_zone(zone, now, regions, found);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->region, 0x1000u);
  EXPECT_EQ(found->side, "after");
  EXPECT_EQ(found->offset, 0x104);
  EXPECT_EQ(found->changed, 2u);
  EXPECT_EQ(describe(*found),
            "wrote byte 260 of region 0x1000, past its end (2 bytes of the red zones changed)");
  std::optional<red_zone_violation> before;
  now.assign(now.size(), 0);
  for (std::uint64_t i = 0; i < zone.size; ++i) {
    now[i] = red_zone_byte(zone.base + i);
  }
  now[zone.size - 4] ^= 1; // 4 bytes before b
  check_red_zone(zone, now, regions, before);
  ASSERT_TRUE(before);
  EXPECT_EQ(before->region, 0x2000u);
  EXPECT_EQ(before->side, "before");
  EXPECT_EQ(before->offset, -4);
}

} // namespace
} // namespace rpl::stages::capture
