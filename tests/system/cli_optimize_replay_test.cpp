// `rocm-perf optimize --replay DIR --kernel NAME --source FILE` and `--source-dir`, as a user
// types them: a folder that is no capture, a capture of another kernel, a capture of the HSA
// backend, and options that exclude each other are bad input (exit 2), named with a fix, before
// any process starts. Optimizing a capture needs a GPU (tests/gpu/optimize_test.cpp).
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stages/capture/capture_manifest.hpp"
#include "support/test_support.hpp"

namespace rpl {
namespace {

namespace fs = std::filesystem;
using rpl::testing::run_rocm_perf;
using rpl::testing::temp_dir;
using rpl::testing::write_file;

/// A capture folder whose dispatch.json names `kernel` (only the manifest: the checks read no
/// more before they refuse).
fs::path
replay_capture(const temp_dir& dir, const std::string& kernel, const std::string& backend) {
  stages::capture::dispatch_manifest m;
  m.backend = backend;
  m.kernel = kernel;
  m.device_name = "NVIDIA H200";
  m.arch = "sm_90";
  m.params = {{0, 8}, {8, 4}};
  m.granularity = 2u << 20;
  const fs::path capture = dir / ("capture-" + backend);
  fs::create_directories(capture);
  write_file(capture / "dispatch.json", stages::capture::to_json(m).dump(2));
  return capture;
}

std::vector<std::string> replay_args(const temp_dir& dir, const fs::path& capture) {
  write_file(dir / "k.cu", "__global__ void alpha(float* x, int n) { x[n] = 1; }\n");
  return {"optimize",
          "--replay",
          capture.string(),
          "--kernel",
          "alpha",
          "--source",
          (dir / "k.cu").string(),
          "--build-template",
          "nvcc -cubin -arch=sm_90 k.cu -o {OUT}",
          "--out",
          (dir / "out").string()};
}

void expect_refused(const std::vector<std::string>& args, const std::string& says) {
  const auto out = run_rocm_perf(args);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find(says), std::string::npos) << out.output;
}

TEST(cli_optimize_replay, a_folder_that_is_no_capture_is_bad_input) {
  temp_dir dir;
  fs::create_directories(dir / "empty");
  expect_refused(replay_args(dir, dir / "empty"),
                 "--replay " + (dir / "empty").string() +
                     ": not a capture (no dispatch.json there); fix: capture the dispatch with "
                     "rocm-perf isolate");
  write_file(dir / "empty" / "dispatch.json", "{\"format\": \"something else\"}");
  expect_refused(replay_args(dir, dir / "empty"), "not a rocm-perf capture");
}

TEST(cli_optimize_replay, a_capture_of_another_kernel_is_bad_input) {
  temp_dir dir;
  auto args = replay_args(dir, replay_capture(dir, "_Z4betaPfi", "cuda"));
  expect_refused(args, "is a capture of kernel _Z4betaPfi (beta(float*, int)), not --kernel "
                       "alpha; fix:");
}

TEST(cli_optimize_replay, an_hsa_capture_is_bad_input) {
  temp_dir dir;
  expect_refused(replay_args(dir, replay_capture(dir, "_Z5alphaPfi", "hsa")),
                 "optimize replays CUDA captures only");
}

TEST(cli_optimize_replay, options_that_exclude_replay_are_bad_input) {
  temp_dir dir;
  const auto capture = replay_capture(dir, "_Z5alphaPfi", "cuda");
  auto with_launch = replay_args(dir, capture);
  write_file(dir / "k.launch.json", "{}");
  with_launch.insert(with_launch.end(), {"--launch", (dir / "k.launch.json").string()});
  expect_refused(with_launch, "--replay excludes --launch and -- APP");
  auto two_kernels = replay_args(dir, capture);
  two_kernels.insert(two_kernels.end(), {"--kernel", "beta"});
  expect_refused(two_kernels, "optimizes one kernel: pass exactly one --kernel NAME");
  expect_refused({"optimize", "--source-dir", dir.path().string(), "--build-template", "nvcc"},
                 "--source-dir " + dir.path().string() + " needs the application after --");
}

} // namespace
} // namespace rpl
