// The lane process's device-independent pieces (workers/lanes/kernel/process/): f16 conversion,
// seeded initial contents, output comparison with tolerance, scalar bytes, and the sampling loop
// (batches, the stop criterion seam, the time cap) over a recording device.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "workers/lanes/kernel/process/elements.hpp"
#include "workers/lanes/kernel/process/initial_contents.hpp"
#include "workers/lanes/kernel/process/output_check.hpp"
#include "workers/lanes/kernel/process/sample_loop.hpp"

namespace rpl::workers::kernel_process {
namespace {

using messages::element_type;

TEST(workers_kernel_lane_process, half_conversion_rounds_to_nearest_even) {
  EXPECT_EQ(half_from_float(1.0f), 0x3c00);
  EXPECT_EQ(half_from_float(-2.0f), 0xc000);
  EXPECT_EQ(half_from_float(65504.0f), 0x7bff);
  EXPECT_EQ(half_from_float(70000.0f), 0x7c00) << "overflow is infinity";
  EXPECT_EQ(half_from_float(1.0f + 1.0f / 2048.0f), 0x3c00) << "a tie rounds to even";
  EXPECT_EQ(half_from_float(1.0f + 3.0f / 2048.0f), 0x3c02);
  EXPECT_EQ(half_from_float(std::ldexp(1.0f, -24)), 0x0001) << "the smallest subnormal";
  EXPECT_EQ(half_from_float(0.0f), 0x0000);
  EXPECT_TRUE(std::isnan(float_from_half(half_from_float(std::nanf("")))));
  for (const float value : {0.5f, -3.25f, 1024.0f, 6.1035156e-05f, 5.9604645e-08f})
    EXPECT_EQ(float_from_half(half_from_float(value)), value) << value;
}

TEST(workers_kernel_lane_process, random_contents_are_seeded_in_range_and_portable) {
  messages::buffer_init init;
  init.fill = messages::buffer_fill::random;
  init.seed = 1;
  init.min = -1.0;
  init.max = 1.0;
  const auto a = random_contents(element_type::f32, 1000, init);
  EXPECT_EQ(a, random_contents(element_type::f32, 1000, init));
  init.seed = 2;
  EXPECT_NE(a, random_contents(element_type::f32, 1000, init));
  for (std::size_t i = 0; i < 1000; ++i) {
    const double v = read_element(a.data(), element_type::f32, i);
    EXPECT_GE(v, -1.0);
    EXPECT_LT(v, 1.0);
  }
  // splitmix64(1)'s first draw, scaled: a fixed value on every host and compiler.
  EXPECT_FLOAT_EQ(static_cast<float>(read_element(a.data(), element_type::f32, 0)), 0.13312314f);

  init.min = -3;
  init.max = 3;
  const auto ints = random_contents(element_type::i32, 500, init);
  bool saw_min = false, saw_max = false;
  for (std::size_t i = 0; i < 500; ++i) {
    const double v = read_element(ints.data(), element_type::i32, i);
    EXPECT_GE(v, -3.0);
    EXPECT_LE(v, 3.0) << "integer bounds are inclusive";
    saw_min |= v == -3.0;
    saw_max |= v == 3.0;
  }
  EXPECT_TRUE(saw_min && saw_max);
}

TEST(workers_kernel_lane_process, initial_contents_read_files_and_say_what_is_wrong) {
  testing::temp_dir dir;
  const float values[] = {1.5f, -2.0f, 3.25f};
  testing::write_file(dir / "x.bin",
                      std::string(reinterpret_cast<const char*>(values), sizeof values));
  messages::kernel_arg arg;
  arg.name = "x";
  arg.count = 3;
  arg.init.fill = messages::buffer_fill::file;
  arg.init.path = (dir / "x.bin").string();
  initial_contents contents;
  std::string error;
  const auto* bytes = contents.get(0, arg, error);
  ASSERT_NE(bytes, nullptr) << error;
  EXPECT_EQ(read_element(bytes->data(), element_type::f32, 2), 3.25);
  EXPECT_EQ(contents.get(0, arg, error), bytes) << "unchanged arguments reuse the bytes";

  arg.count = 4;
  EXPECT_EQ(contents.get(0, arg, error), nullptr);
  EXPECT_NE(error.find("has 12 bytes, but 4 f32 elements need 16"), std::string::npos) << error;
  arg.init.path = (dir / "missing.bin").string();
  EXPECT_EQ(contents.get(0, arg, error), nullptr);
  EXPECT_NE(error.find("cannot read"), std::string::npos) << error;

  arg.init.fill = messages::buffer_fill::zeros;
  const auto* zeros = contents.get(1, arg, error);
  ASSERT_NE(zeros, nullptr);
  EXPECT_EQ(*zeros, std::vector<std::byte>(16));
}

TEST(workers_kernel_lane_process, outputs_match_within_tolerance_and_nan_only_matches_nan) {
  const messages::value_tolerance gemm{1e-3, 1e-3};
  EXPECT_TRUE(within_tolerance(100.1, 100.0, gemm)); // 0.1 <= 0.001 + 0.1
  EXPECT_FALSE(within_tolerance(100.2, 100.0, gemm));
  EXPECT_TRUE(within_tolerance(0.0005, 0.0, gemm));
  EXPECT_FALSE(within_tolerance(std::nan(""), 1.0, gemm));
  EXPECT_TRUE(within_tolerance(std::nan(""), std::nan(""), gemm));
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(within_tolerance(inf, inf, {}));
  EXPECT_FALSE(within_tolerance(-inf, inf, gemm));

  messages::kernel_arg arg;
  arg.name = "C";
  arg.type = element_type::f32;
  arg.tolerance = gemm;
  const float expected[] = {1.0f, 2.0f, 3.0f, 4.0f};
  const float got[] = {1.0f, 2.5f, 3.0f, 9.0f};
  auto bytes = [](const float* values) {
    std::vector<std::byte> out(16);
    std::memcpy(out.data(), values, 16);
    return out;
  };
  EXPECT_FALSE(compare_output(arg, bytes(expected), bytes(expected)));
  const auto mismatch = compare_output(arg, bytes(got), bytes(expected));
  ASSERT_TRUE(mismatch);
  EXPECT_EQ(mismatch->buffer, "C");
  EXPECT_EQ(mismatch->index, 1u);
  EXPECT_EQ(mismatch->value, 2.5);
  EXPECT_EQ(mismatch->expected, 2.0);
  EXPECT_EQ(mismatch->count, 2u);
  EXPECT_EQ(mismatch->compared, 4u);

  arg.type = element_type::i64; // integers without a tolerance compare exactly, all 64 bits
  arg.tolerance = {};
  const std::int64_t big[] = {(std::int64_t{1} << 60) + 1};
  const std::int64_t near[] = {std::int64_t{1} << 60};
  std::vector<std::byte> a(8), b(8);
  std::memcpy(a.data(), big, 8);
  std::memcpy(b.data(), near, 8);
  EXPECT_TRUE(compare_output(arg, a, b));
}

TEST(workers_kernel_lane_process, scalars_are_laid_out_as_their_type) {
  messages::kernel_arg arg;
  arg.kind = messages::kernel_arg_kind::scalar;
  arg.type = element_type::i32;
  arg.int_value = -2;
  auto bytes = scalar_bytes(arg);
  std::int32_t i32 = 0;
  std::memcpy(&i32, bytes.data(), 4);
  EXPECT_EQ(i32, -2);
  arg.type = element_type::f16;
  arg.float_value = 1.0;
  bytes = scalar_bytes(arg);
  std::uint16_t half = 0;
  std::memcpy(&half, bytes.data(), 2);
  EXPECT_EQ(half, 0x3c00);
  arg.type = element_type::f64;
  arg.float_value = 0.1;
  bytes = scalar_bytes(arg);
  double f64 = 0;
  std::memcpy(&f64, bytes.data(), 8);
  EXPECT_EQ(f64, 0.1);
}

/// A device that only times: each launch takes `step_ns` on a fake clock; it counts calls.
class timing_device final : public device_api {
public:
  std::int64_t step_ns = 1000;
  bool alternate = false; ///< every other launch takes 3 x step_ns: noise far above any target
  int launches = 0;
  int synchronizations = 0;
  int events_created = 0;
  int fail_at_launch = -1; ///< this launch (0-based) returns an error

  device_status open(int, messages::kernel_device&) override { return std::nullopt; }
  device_status load_module(const std::string&, module_handle&) override { return std::nullopt; }
  void unload_module(module_handle) override {}
  device_status find_function(module_handle, const std::string&, function_handle&) override {
    return std::nullopt;
  }
  device_status allocate(std::size_t, device_pointer&) override { return std::nullopt; }
  void release(device_pointer) override {}
  device_status copy_to_device(device_pointer, const void*, std::size_t) override {
    return std::nullopt;
  }
  device_status copy_to_host(void*, device_pointer, std::size_t) override { return std::nullopt; }
  device_status copy_on_device(device_pointer, device_pointer, std::size_t) override {
    return std::nullopt;
  }
  device_status fill_zero(device_pointer, std::size_t) override { return std::nullopt; }
  device_status copy_to_host_queued(void*, device_pointer, std::size_t) override {
    return std::nullopt;
  }
  device_status allocate_host(std::size_t, void*&) override { return std::nullopt; }
  void release_host(void*) override {}
  device_status wait_event(event_handle) override { return std::nullopt; }
  device_status launch(function_handle, const launch_shape&, void**) override {
    if (launches++ == fail_at_launch)
      return device_error{"TEST_ERROR", "refused", false};
    clock_ += alternate && launches % 2 == 0 ? 3 * step_ns : step_ns;
    return std::nullopt;
  }
  device_status synchronize() override {
    ++synchronizations;
    return std::nullopt;
  }
  device_status create_event(event_handle& event) override {
    ++events_created;
    events_.push_back(0);
    event = reinterpret_cast<event_handle>(events_.size());
    return std::nullopt;
  }
  void destroy_event(event_handle) override {}
  device_status record_event(event_handle event) override {
    events_[reinterpret_cast<std::size_t>(event) - 1] = clock_;
    return std::nullopt;
  }
  device_status elapsed_ns(event_handle start, event_handle stop, std::int64_t& ns) override {
    ns = events_[reinterpret_cast<std::size_t>(stop) - 1] -
         events_[reinterpret_cast<std::size_t>(start) - 1];
    return std::nullopt;
  }

private:
  std::int64_t clock_ = 0;
  std::vector<std::int64_t> events_;
};

TEST(workers_kernel_lane_process, a_fixed_count_takes_min_samples_in_one_batch) {
  timing_device device;
  event_pool events(device);
  const messages::kernel_sampling sampling{2, 5, 5, 10000};
  const auto outcome = take_samples(device, events, nullptr, {}, nullptr, sampling, fixed_count());
  EXPECT_FALSE(outcome.error);
  EXPECT_EQ(outcome.samples_ns, (std::vector<std::int64_t>(5, 1000)));
  EXPECT_EQ(outcome.warmups, 2u);
  EXPECT_EQ(device.launches, 7);
  EXPECT_EQ(device.synchronizations, 1) << "the warm-ups are waited for with the first batch";
  EXPECT_FALSE(outcome.time_capped);

  const auto again = take_samples(device, events, nullptr, {}, nullptr, sampling, fixed_count());
  EXPECT_EQ(device.events_created, 10) << "event pairs are reused";
  EXPECT_EQ(again.samples_ns.size(), 5u);
}

TEST(workers_kernel_lane_process, a_criterion_asks_for_more_samples_up_to_max_samples) {
  timing_device device;
  event_pool events(device);
  std::vector<std::size_t> asked_at;
  const stop_criterion until_20 = [&](std::span<const std::int64_t> samples) {
    asked_at.push_back(samples.size());
    return samples.size() >= 20;
  };
  const auto outcome =
      take_samples(device, events, nullptr, {}, nullptr, {0, 4, 100, 10000}, until_20);
  EXPECT_EQ(outcome.samples_ns.size(), 20u);
  EXPECT_EQ(asked_at, (std::vector<std::size_t>{4, 12, 20})) << "min first, then batches of 8";

  const auto capped = take_samples(device, events, nullptr, {}, nullptr, {0, 4, 10, 10000},
                                   [](std::span<const std::int64_t>) { return false; });
  EXPECT_EQ(capped.samples_ns.size(), 10u) << "max_samples bounds the criterion";
  EXPECT_FALSE(capped.time_capped);
}

TEST(workers_kernel_lane_process, the_time_cap_ends_sampling_and_says_so) {
  timing_device device;
  event_pool events(device);
  const auto outcome = take_samples(device, events, nullptr, {}, nullptr, {0, 3, 1000000, 0},
                                    [](std::span<const std::int64_t>) { return false; });
  EXPECT_EQ(outcome.samples_ns.size(), 3u);
  EXPECT_TRUE(outcome.time_capped);
}

TEST(workers_kernel_lane_process, until_quiet_stops_once_the_noise_is_under_target_and_min_time) {
  timing_device device; // every sample 1000 ns: no noise at all
  event_pool events(device);
  messages::kernel_sampling sampling{0, 10, 100000, 10000};
  sampling.max_noise = 0.005;
  sampling.min_time_ns = 50000; // 50 samples of 1000 ns
  stages::sampling_criterion criterion(target_of(sampling));
  const auto outcome =
      take_samples(device, events, nullptr, {}, nullptr, sampling, until_quiet(criterion));
  EXPECT_EQ(criterion.state(), stages::sampling_state::converged);
  EXPECT_EQ(criterion.sample_count(), 51u) << "summed time must exceed min_time";
  EXPECT_EQ(outcome.samples_ns.size(), 58u) << "10, then batches of 8: the batch holding #51";
  EXPECT_EQ(criterion.noise(), 0.0);

  sampling.min_time_ns = 0;
  stages::sampling_criterion quick(target_of(sampling));
  EXPECT_EQ(take_samples(device, events, nullptr, {}, nullptr, sampling, until_quiet(quick))
                .samples_ns.size(),
            10u)
      << "without a minimum time, min_samples quiet samples are enough";
}

TEST(workers_kernel_lane_process, until_quiet_gives_up_on_noise_that_settles_above_target) {
  timing_device device;
  device.alternate = true; // 3000, 1000, 3000, ... : relative noise about 0.5
  event_pool events(device);
  messages::kernel_sampling sampling{0, 10, 100000, 10000};
  sampling.max_noise = 0.005;
  stages::sampling_criterion criterion(target_of(sampling));
  const auto outcome =
      take_samples(device, events, nullptr, {}, nullptr, sampling, until_quiet(criterion));
  EXPECT_EQ(criterion.state(), stages::sampling_state::noise_converged_above_target);
  EXPECT_TRUE(stages::is_noisy(criterion.state()));
  EXPECT_GT(criterion.noise(), 0.4);
  EXPECT_LT(outcome.samples_ns.size(), 1000u) << "it ends long before max_samples";
  EXPECT_FALSE(outcome.time_capped);
}

TEST(workers_kernel_lane_process, the_host_works_alongside_the_first_batch_only) {
  timing_device device;
  event_pool events(device);
  int calls = 0;
  int synchronizations_seen = -1;
  const alongside_work work = [&] {
    ++calls;
    synchronizations_seen = device.synchronizations;
    return true;
  };
  const auto outcome = take_samples(
      device, events, nullptr, {}, nullptr, {1, 4, 20, 10000},
      [](std::span<const std::int64_t> s) { return s.size() >= 20; }, work);
  EXPECT_EQ(outcome.samples_ns.size(), 20u);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(synchronizations_seen, 0) << "before the first batch is waited for";
  EXPECT_EQ(device.launches, 21) << "warm-up and first batch queued before the work";

  const auto stopped = take_samples(
      device, events, nullptr, {}, nullptr, {0, 4, 20, 10000},
      [](std::span<const std::int64_t>) { return false; }, [] { return false; });
  EXPECT_TRUE(stopped.stopped);
  EXPECT_EQ(stopped.samples_ns.size(), 4u) << "no batch after the work said stop";
}

TEST(workers_kernel_lane_process, a_failed_launch_stops_sampling_with_its_error) {
  timing_device device;
  device.fail_at_launch = 3;
  event_pool events(device);
  const auto outcome =
      take_samples(device, events, nullptr, {}, nullptr, {1, 5, 5, 10000}, fixed_count());
  ASSERT_TRUE(outcome.error);
  EXPECT_EQ(outcome.error->name, "TEST_ERROR");
  EXPECT_TRUE(outcome.samples_ns.empty()) << "the failing batch gives no samples";
}

} // namespace
} // namespace rpl::workers::kernel_process
