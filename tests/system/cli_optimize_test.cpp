// `rocm-perf optimize` as a user runs it, on this machine (no GPU): bad input is refused with a
// named error and exit 2 before any process starts, --listen with keys for a remote LLM proposer
// is good input (and without a GPU fails later, saying why), and --rollback restores files byte
// for byte.
// The loop itself runs on fakes in tests/integration/engine_optimize_kernel_optimizer_test.cpp
// and on a GPU in tests/gpu/optimize_test.cpp.

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.hpp"
#include "workers/devices/nvidia_gpu.hpp"
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
  expect_bad_input(missing, "nope.cu: cannot read the file (No such file or directory); fix:");

  auto no_launch = args;
  no_launch.erase(no_launch.begin() + 5, no_launch.begin() + 7);
  expect_bad_input(no_launch, "needs --launch FILE");

  auto devices = args;
  devices.insert(devices.end(), {"--devices", "0,x"});
  expect_bad_input(devices, "is not a device index");

  auto listen = args;
  listen.insert(listen.end(), {"--listen", "tcp://127.0.0.1:5599"});
  expect_bad_input(listen, "--listen, --curve-keys and --allow-keys go together");

  // With --listen the LLM proposer may be remote, but an endpoint without a model is still half
  // of a local one.
  auto half_llm = listen;
  half_llm.insert(half_llm.end(), {"--proposer", "llm", "--llm-endpoint", "http://127.0.0.1:9/v1"});
  expect_bad_input(half_llm, "needs --llm-endpoint URL and --llm-model NAME");

  expect_bad_input({"optimize", "--proposer", "magic"}, "--proposer");
}

TEST(cli_optimize, an_llm_proposer_may_be_remote_with_listen_and_keys) {
  // `--proposer llm` with no --llm-endpoint: the LLM proposer is a `worker propose --kind llm`
  // on another host, admitted by its key. That is good input; what comes next needs a GPU
  // (tests/gpu/optimize_test.cpp runs it with a remote proposer), and without one the run fails
  // (exit 1) saying why, not as bad input.
  std::string why;
  if (!workers::libclang_available(why)) {
    GTEST_SKIP() << "finding a kernel in its source needs libclang: " << why;
  }
  rpl::testing::temp_dir dir;
  for (const char* who : {"engine", "proposer"}) {
    const auto keys = run_rocm_perf({"keys", "generate", (dir / who).string()});
    ASSERT_EQ(keys.exit_code, 0) << keys.output;
  }
  rpl::testing::write_file(dir / "allow", rpl::testing::read_text(dir / "proposer" / "public.key"));
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(rpl::testing::free_port());
  auto args = gemm_args();
  args.insert(args.end(), {"--proposer", "llm", "--listen", endpoint, "--curve-keys",
                           (dir / "engine").string(), "--allow-keys", (dir / "allow").string(),
                           "--out", (dir / "out").string(), "--iterations", "1", "--llm-timeout-s",
                           "1", "--rounds", "6", "--runs-per-round", "1", "--json"});
  const auto out = run_rocm_perf(args);
  EXPECT_NE(out.exit_code, 2) << out.output;
  EXPECT_EQ(out.output.find("needs --llm-endpoint"), std::string::npos) << out.output;
  // It says where remote proposers connect, and that it starts no LLM proposer itself.
  EXPECT_NE(out.output.find("listening on " + endpoint + " (CURVE)"), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("LLM proposals come from remote `worker propose --kind llm` "
                            "processes connecting to " +
                            endpoint),
            std::string::npos)
      << out.output;
  const auto report = nlohmann::json::parse(rpl::testing::read_text(dir / "out" / "report.json"));
  const auto& kernel = report["kernels"][0];
  if (!workers::nvidia_gpu_present()) {
    // The original kernel cannot be measured: a failed run whose reason names the step (the
    // lane, with the driver's missing library, or the build where nvcc is missing).
    EXPECT_EQ(out.exit_code, 1) << out.output;
    EXPECT_EQ(kernel["status"], "failed") << kernel.dump(2);
    const auto error = kernel["error"].get<std::string>();
    EXPECT_TRUE(error.find("could not be run on the lane") != std::string::npos ||
                error.find("does not build with --build-template") != std::string::npos)
        << error;
  } else {
    // No remote proposer came: the LLM proposer is left out of the iteration, and says why.
    EXPECT_EQ(out.exit_code, 0) << out.output;
    EXPECT_NE(kernel["proposer_errors"].dump().find("no proposer worker of that kind"),
              std::string::npos)
        << kernel.dump(2);
  }
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
