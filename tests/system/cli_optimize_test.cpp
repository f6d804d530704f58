// `rocm-perf optimize` as a user runs it, on this machine (no GPU): bad input is refused with a
// named error and exit 2 before any process starts, and --rollback restores files byte for byte.
// The loop itself runs on fakes in tests/integration/engine_optimize_kernel_optimizer_test.cpp
// and on a GPU in tests/gpu/optimize_test.cpp.

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "workers/source/clang_source.hpp"
#include "workers/source/source_patch.hpp"

namespace rpl {
namespace {

using rpl::testing::run_rocm_perf;
using rpl::testing::source_dir;
namespace fs = std::filesystem;

std::vector<std::string> gemm_args() {
  const auto cuda = source_dir / "examples" / "cuda";
  return {"optimize",
          "--source",
          (cuda / "gemm.cu").string(),
          "--kernel",
          "rpl_sgemm_tiled",
          "--launch",
          (cuda / "gemm.launch.json").string(),
          "--build-template",
          "nvcc -cubin -arch=sm_90 -DTILE_M={TILE_M} -DTILE_N={TILE_N} -DTILE_K={TILE_K} "
          "-DTHREAD_M={THREAD_M} -DTHREAD_N={THREAD_N} gemm.cu -o {OUT}",
          "--param",
          "TILE_M=64",
          "--param",
          "TILE_N=64",
          "--param",
          "TILE_K=16",
          "--param",
          "THREAD_M=4",
          "--param",
          "THREAD_N=4"};
}

void expect_bad_input(std::vector<std::string> args, const std::string& says) {
  const auto out = run_rocm_perf(args);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find(says), std::string::npos) << out.output;
}

TEST(cli_optimize, a_kernel_not_in_the_source_is_bad_input) {
  std::string why;
  if (!workers::libclang_available(why)) {
    GTEST_SKIP() << "finding a kernel in its source needs libclang: " << why;
  }
  rpl::testing::temp_dir dir;
  auto args = gemm_args();
  // A launch file for a kernel gemm.cu does not define.
  auto launch = rpl::testing::read_text(source_dir / "examples/cuda/gemm.launch.json");
  launch.replace(launch.find("\"kernel\": \"rpl_sgemm_tiled\""),
                 std::string("\"kernel\": \"rpl_sgemm_tiled\"").size(),
                 "\"kernel\": \"rpl_sgemm_missing\"");
  rpl::testing::write_file(dir / "missing.launch.json", launch);
  args[4] = "rpl_sgemm_missing";
  args[6] = (dir / "missing.launch.json").string();
  args.insert(args.end(), {"--out", (dir / "out").string()});
  expect_bad_input(args, "no __global__ function of that name is defined in gemm.cu");
}

TEST(cli_optimize, other_bad_input_is_named_with_exit_2) {
  rpl::testing::temp_dir dir;
  auto args = gemm_args();
  args.insert(args.end(), {"--out", (dir / "out").string()});

  auto other_kernel = args;
  other_kernel[4] = "rpl_sgemm_reference";
  expect_bad_input(other_kernel, "launches kernel 'rpl_sgemm_tiled', not --kernel");

  auto llm = args;
  llm.insert(llm.end(), {"--proposer", "llm"});
  expect_bad_input(llm, "needs --llm-endpoint URL and --llm-model NAME");

  auto param = args;
  param.insert(param.end(), {"--param", "TILE_M"});
  expect_bad_input(param, "expected NAME=VALUE");

  auto missing = args;
  missing[2] = (dir / "nope.cu").string();
  expect_bad_input(missing, "cannot be read");

  auto no_launch = args;
  no_launch.erase(no_launch.begin() + 5, no_launch.begin() + 7);
  expect_bad_input(no_launch, "needs --launch FILE");

  auto devices = args;
  devices.insert(devices.end(), {"--devices", "0,x"});
  expect_bad_input(devices, "is not a device index");

  auto listen = args;
  listen.insert(listen.end(), {"--listen", "tcp://127.0.0.1:5599"});
  expect_bad_input(listen, "--listen, --curve-keys and --allow-keys go together");

  expect_bad_input({"optimize", "--proposer", "magic"}, "--proposer");
}

TEST(cli_optimize, rollback_restores_applied_files_byte_for_byte) {
  rpl::testing::temp_dir dir;
  const std::string original = "line one\r\nno newline at the end";
  rpl::testing::write_file(dir / "k.cu", original);
  fs::permissions(dir / "k.cu", fs::perms(0640));
  const auto applied =
      workers::apply_with_backup({{dir / "k.cu", original, "patched\n"}}, dir / "out" / "backup");
  ASSERT_TRUE(applied.ok) << applied.error;
  ASSERT_EQ(rpl::testing::read_text(dir / "k.cu"), "patched\n");

  const auto out = run_rocm_perf({"optimize", "--rollback", (dir / "out").string()});
  EXPECT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(rpl::testing::read_text(dir / "k.cu"), original);
  EXPECT_EQ(fs::status(dir / "k.cu").permissions() & fs::perms::all, fs::perms(0640));
  // Idempotent, and says so.
  const auto again = run_rocm_perf({"optimize", "--rollback", (dir / "out").string()});
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(rpl::testing::read_text(dir / "k.cu"), original);
  // Nothing to roll back: a named error.
  const auto none = run_rocm_perf({"optimize", "--rollback", (dir / "nothing").string()});
  EXPECT_NE(none.exit_code, 0);
}

} // namespace
} // namespace rpl
