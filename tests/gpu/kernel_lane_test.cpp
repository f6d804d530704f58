// The kernel lane on a real NVIDIA GPU: rpl-kernel-lane loads cubins of examples/cuda/gemm.cu
// (two configurations, built here with nvcc) and launches them as examples/cuda/gemm.launch.json
// says. Checks that the samples are positive, the outputs verify against the reference kernel,
// the second candidate allocates nothing, a missing symbol is refused without a restart, a wrong
// kernel is caught, and a kernel that faults costs exactly one restart.
//
// Skips without an NVIDIA GPU, or without rpl-kernel-lane (configure with CUDA on). Needs nvcc
// ($CUDACXX, /usr/local/cuda/bin/nvcc or PATH) and the sources (examples/cuda/ under
// $RPL_SOURCE_DIR, the working directory, or the source tree this was built from).

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "stages/search/launch_spec.hpp"
#include "stages/search/space.hpp"
#include "support/test_support.hpp"
#include "workers/devices/nvidia_gpu.hpp"
#include "workers/lanes/kernel/kernel_lane.hpp"

namespace rpl::workers {
namespace {

namespace fs = std::filesystem;
using messages::kernel_lane_status;
using messages::measure_status;

bool executable(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

/// rpl-kernel-lane next to this test (bundles, the build tree's ../bin), else where it was built.
fs::path find_lane() {
  const fs::path found = default_kernel_lane_program("cuda");
  if (executable(found))
    return found;
#ifdef RPL_KERNEL_LANE
  if (executable(RPL_KERNEL_LANE))
    return RPL_KERNEL_LANE;
#endif
  return {};
}

fs::path find_nvcc() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("CUDACXX"); env != nullptr && *env != '\0')
    candidates.emplace_back(env);
  candidates.emplace_back("/usr/local/cuda/bin/nvcc");
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string dirs = path;
    for (std::size_t start = 0; start <= dirs.size();) {
      const std::size_t end = std::min(dirs.find(':', start), dirs.size());
      candidates.push_back(fs::path(dirs.substr(start, end - start)) / "nvcc");
      start = end + 1;
    }
  }
  for (const auto& candidate : candidates)
    if (executable(candidate))
      return candidate;
  return {};
}

/// The folder holding examples/cuda/gemm.cu and gemm.launch.json.
fs::path find_examples() {
  std::vector<fs::path> roots;
  if (const char* env = std::getenv("RPL_SOURCE_DIR"); env != nullptr && *env != '\0')
    roots.emplace_back(env);
  roots.push_back(fs::current_path());
  roots.push_back(testing::source_dir);
  for (const auto& root : roots)
    if (fs::is_regular_file(root / "examples/cuda/gemm.cu") &&
        fs::is_regular_file(root / "examples/cuda/gemm.launch.json"))
      return root / "examples/cuda";
  return {};
}

const char* const faulty_kernels = R"(
// Same parameters as gemm.cu's kernels, so gemm.launch.json's arguments fit.
extern "C" __global__ void rpl_fault(const float*, const float*, float* c, int, int, int) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *reinterpret_cast<volatile int*>(16) = 1;
}
extern "C" __global__ void rpl_wrong(const float*, const float*, float* c, int m, int n, int) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (long long)m * n) c[i] = 1.0f;
}
)";

class KernelLaneGpu : public ::testing::Test {
protected:
  void SetUp() override {
    if (!nvidia_gpu_present())
      GTEST_SKIP() << "no NVIDIA GPU (/dev/nvidia0 and /proc/driver/nvidia are absent)";
    lane_ = find_lane();
    if (lane_.empty())
      GTEST_SKIP() << "no NVIDIA GPU build: rpl-kernel-lane was not built (configure with CUDA on)";
    nvcc_ = find_nvcc();
    ASSERT_FALSE(nvcc_.empty()) << "an NVIDIA GPU is here but nvcc is not ($CUDACXX, "
                                   "/usr/local/cuda/bin/nvcc, PATH): the check cannot build cubins";
    examples_ = find_examples();
    ASSERT_FALSE(examples_.empty()) << "examples/cuda/gemm.cu not found: run from the repository "
                                       "root or set RPL_SOURCE_DIR";
    arch_ = local_nvidia_arch();
    if (arch_.empty())
      arch_ = "sm_90";
    spec_ = stages::load_launch_spec(examples_ / "gemm.launch.json");
    stages::check_launch_names(spec_, stages::load_space(examples_ / "space.json").names);
  }

  /// Builds gemm.cu as a cubin for one configuration (TILE_M, TILE_N, TILE_K, THREAD_M, THREAD_N).
  fs::path build_gemm(const std::vector<int>& tiles) {
    const char* names[] = {"TILE_M", "TILE_N", "TILE_K", "THREAD_M", "THREAD_N"};
    std::vector<std::string> argv = {nvcc_.string(), "-cubin", "-arch=" + arch_};
    std::string stem = "gemm";
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      argv.push_back("-D" + std::string(names[i]) + "=" + std::to_string(tiles[i]));
      stem += "_" + std::to_string(tiles[i]);
    }
    const fs::path out = dir_ / (stem + ".cubin");
    argv.insert(argv.end(), {(examples_ / "gemm.cu").string(), "-o", out.string()});
    compile(argv);
    return out;
  }

  fs::path build_faulty() {
    testing::write_file(dir_ / "faulty.cu", faulty_kernels);
    const fs::path out = dir_ / "faulty.cubin";
    compile({nvcc_.string(), "-cubin", "-arch=" + arch_, (dir_ / "faulty.cu").string(), "-o",
             out.string()});
    return out;
  }

  void compile(const std::vector<std::string>& argv) {
    child_options options;
    options.argv = argv;
    const child_outcome outcome = run_child(options, std::chrono::minutes(3));
    ASSERT_TRUE(outcome.succeeded()) << argv.back() << ": nvcc " << describe_exit(outcome) << "\n"
                                     << outcome.output;
  }

  messages::measure_request request(const fs::path& cubin, const std::vector<int>& tiles) {
    stages::configuration config;
    const char* names[] = {"TILE_M", "TILE_N", "TILE_K", "THREAD_M", "THREAD_N"};
    for (std::size_t i = 0; i < tiles.size(); ++i)
      config.params.emplace_back(names[i], std::int64_t{tiles[i]});
    const stages::launch_resolution resolved = stages::resolve_launch(spec_, config);
    EXPECT_TRUE(resolved.ok()) << resolved.error;
    messages::measure_request r;
    r.candidate_key = cubin.filename().string();
    r.argv = {cubin.string()};
    r.runs = 20;
    r.warmup = 3;
    r.timeout_ms = 60000;
    r.launch = resolved.launch;
    return r;
  }

  kernel_lane_options options() const {
    kernel_lane_options o;
    o.program = lane_;
    o.device = 0;
    return o;
  }

  fs::path lane_;
  fs::path nvcc_;
  fs::path examples_;
  std::string arch_;
  stages::launch_spec spec_;
  testing::temp_dir dir_;
};

double median_ms(std::vector<std::int64_t> samples) {
  std::sort(samples.begin(), samples.end());
  return samples.empty() ? 0.0 : static_cast<double>(samples[samples.size() / 2]) / 1e6;
}

TEST_F(KernelLaneGpu, measures_and_verifies_two_gemm_configurations) {
  const std::vector<int> small = {64, 64, 16, 4, 4};
  const std::vector<int> large = {128, 128, 16, 8, 8};
  const fs::path a = build_gemm(small);
  const fs::path b = build_gemm(large);
  kernel_lane lane(options());

  const auto first = lane.measure(request(a, small));
  ASSERT_EQ(first.status, measure_status::ok) << first.reason;
  const messages::kernel_lane_reply first_reply = lane.last_reply();
  const auto second = lane.measure(request(b, large));
  ASSERT_EQ(second.status, measure_status::ok) << second.reason;
  const messages::kernel_lane_reply& second_reply = lane.last_reply();

  for (const auto* result : {&first, &second}) {
    ASSERT_EQ(result->samples_ns.size(), 20u);
    for (const auto ns : result->samples_ns) {
      EXPECT_GT(ns, 0);
      EXPECT_LT(ns, 1'000'000'000) << "a 2048^3 SGEMM takes milliseconds, not seconds";
    }
  }
  EXPECT_TRUE(first_reply.verified) << "C was compared with rpl_sgemm_reference";
  EXPECT_TRUE(second_reply.verified);
  EXPECT_EQ(first_reply.warmup_launches, 3u);
  EXPECT_GT(first_reply.allocations, 0u);
  EXPECT_EQ(second_reply.allocations, 0u) << "the steady state allocates nothing";
  EXPECT_EQ(lane.starts(), 1u);
  EXPECT_FALSE(lane.device().name.empty());
  EXPECT_EQ(lane.device().uuid.rfind("GPU-", 0), 0u) << lane.device().uuid;
  EXPECT_GT(lane.device().sm_clock_khz, 0);
  EXPECT_EQ(lane.device().arch, arch_);
  EXPECT_EQ(first.device_uuid, lane.device().uuid);

  std::cout << "kernel lane: " << lane.device().name << " (" << lane.device().uuid << ", "
            << lane.device().sm_clock_khz / 1000 << " MHz): gemm 2048^3 64x64x16/4x4 median "
            << median_ms(first.samples_ns) << " ms, 128x128x16/8x8 median "
            << median_ms(second.samples_ns) << " ms; setup " << second_reply.setup_ns / 1000000
            << " ms, sampling " << second_reply.sampling_ns / 1000000 << " ms\n";
}

TEST_F(KernelLaneGpu, refuses_a_missing_symbol_catches_a_wrong_kernel_and_restarts_after_a_fault) {
  const std::vector<int> tiles = {64, 64, 16, 4, 4};
  const fs::path gemm = build_gemm(tiles);
  const fs::path faulty = build_faulty();
  kernel_lane lane(options());
  ASSERT_EQ(lane.measure(request(gemm, tiles)).status, measure_status::ok);

  auto missing = request(gemm, tiles);
  missing.launch->symbol = "rpl_no_such_kernel";
  const auto refused = lane.measure(missing);
  EXPECT_EQ(refused.status, measure_status::launch_failed);
  EXPECT_EQ(lane.last_reply().status, kernel_lane_status::symbol_not_found) << refused.reason;
  EXPECT_EQ(lane.last_reply().error_name, "CUDA_ERROR_NOT_FOUND") << refused.reason;

  auto wrong = request(faulty, tiles);
  wrong.launch->symbol = "rpl_wrong";
  wrong.launch->grid = {2048 * 2048 / 256, 1, 1};
  wrong.launch->block = {256, 1, 1};
  const auto wrong_result = lane.measure(wrong);
  EXPECT_EQ(lane.last_reply().status, kernel_lane_status::wrong_result) << wrong_result.reason;
  EXPECT_EQ(lane.starts(), 1u) << "neither failure costs a restart";

  auto fault = request(faulty, tiles);
  fault.launch->symbol = "rpl_fault";
  const auto faulted = lane.measure(fault);
  EXPECT_EQ(faulted.status, measure_status::crashed) << faulted.reason;
  EXPECT_EQ(lane.last_reply().status, kernel_lane_status::kernel_fault) << faulted.reason;
  EXPECT_EQ(lane.last_reply().error_name, "CUDA_ERROR_ILLEGAL_ADDRESS") << faulted.reason;
  EXPECT_TRUE(lane.last_reply().lane_exiting);

  const auto after = lane.measure(request(gemm, tiles));
  EXPECT_EQ(after.status, measure_status::ok) << after.reason;
  EXPECT_TRUE(lane.last_reply().verified);
  EXPECT_EQ(lane.starts(), 2u) << "the fault cost exactly one restart";
}

} // namespace
} // namespace rpl::workers
