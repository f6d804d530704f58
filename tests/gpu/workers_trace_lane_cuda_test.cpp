// The trace lane (workers/lanes/trace/) with the CUPTI recorder on examples/cuda/gemm.cu: the
// samples are the GPU durations of sgemm_tiled's timed launches (gemm.cu launches it once as a
// warm-up, dropped by --warmup-dispatches 1, then --reps times). Skips without an NVIDIA GPU, the
// CUPTI tracer or the gemm binary (both built only with -DRPL_BUILD_CUDA=ON).

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "workers/devices/nvidia_gpu.hpp"
#include "workers/lanes/trace/trace_lane.hpp"

namespace rpl::workers {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

/// gemm: $RPL_CUDA_GEMM, else bin/gemm of the build tree this test was built in (the examples'
/// RUNTIME_OUTPUT_DIRECTORY), else next to this executable (a relocated bundle). Empty when none
/// exists; `tried` lists where it looked.
fs::path find_gemm(std::vector<std::string>& tried) {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("RPL_CUDA_GEMM"); env != nullptr && *env != '\0')
    candidates.emplace_back(env);
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(self.parent_path().parent_path() / "bin" / "gemm");
    candidates.push_back(self.parent_path() / "gemm");
  }
  for (const fs::path& candidate : candidates) {
    tried.push_back(candidate.string());
    if (fs::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return {};
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items)
    out += (out.empty() ? "" : ", ") + item;
  return out;
}

TEST(workers_trace_lane_cuda, samples_are_the_timed_gemm_launches_under_cupti) {
  if (!nvidia_gpu_present())
    GTEST_SKIP() << "no NVIDIA GPU (/dev/nvidia0 and /proc/driver/nvidia are absent)";
  const auto tracer = find_cupti_tracer({});
  if (!tracer || !fs::exists(*tracer))
    GTEST_SKIP() << "no CUPTI tracer (librpl_cupti_tracer.so; configure with -DRPL_BUILD_CUDA=ON "
                    "or set RPL_CUPTI_TRACER)";
  std::vector<std::string> tried;
  const fs::path gemm = find_gemm(tried);
  if (gemm.empty())
    GTEST_SKIP() << "no gemm binary (examples/cuda/gemm.cu, built with -DRPL_BUILD_CUDA=ON, or "
                    "set RPL_CUDA_GEMM); looked at: "
                 << join(tried);

  trace_lane_options options;
  options.name = "gpu0";
  options.make_recorder = cupti_recorder_factory({*tracer, 60s, false});
  options.kernel_regex = "sgemm_tiled";
  options.warmup_dispatches = 1;
  trace_lane lane(std::move(options));

  constexpr std::uint32_t runs = 3;
  constexpr int reps = 7;
  messages::measure_request request;
  request.candidate_key = "gemm";
  request.argv = {gemm.string(), "--size", "512", "--reps", std::to_string(reps)};
  request.runs = runs;
  request.warmup = 1;
  request.timeout_ms = 120000;
  const auto result = lane.measure(request);
  ASSERT_EQ(result.status, messages::measure_status::ok) << result.reason;
  EXPECT_TRUE(result.reason.empty());
  ASSERT_EQ(result.samples_ns.size(), runs * static_cast<std::size_t>(reps));
  for (const std::int64_t sample : result.samples_ns) {
    EXPECT_GT(sample, 0);
    EXPECT_LT(sample, 1'000'000'000); // a 512^3 GEMM kernel, not a process
  }

  // With the reference kernel selected as well (launched once, so all warm-up), nothing changes;
  // with no warm-up dispatch dropped, both count: one sample per run, the sum of the medians.
  trace_lane_options both;
  both.make_recorder = cupti_recorder_factory({*tracer, 60s, false});
  both.kernel_regex = "gemm";
  both.warmup_dispatches = 0;
  trace_lane sum_lane(std::move(both));
  request.warmup = 0;
  const auto summed = sum_lane.measure(request);
  ASSERT_EQ(summed.status, messages::measure_status::ok) << summed.reason;
  ASSERT_EQ(summed.samples_ns.size(), runs);
  for (const std::int64_t sample : summed.samples_ns)
    EXPECT_GT(sample, 0);
}

} // namespace
} // namespace rpl::workers
