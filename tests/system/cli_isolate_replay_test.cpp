// `rocm-perf isolate` and `rocm-perf replay` without a GPU: bad input exits 2 with the input, the
// problem and a fix (a bad regex, an existing --out, a missing or damaged capture, a bad
// --tolerance); an HSA capture is refused by this CUDA-only replay (exit 1); a program that is not
// a CUDA program leaves no capture (exit 3). With a stand-in replay program (RPL_REPLAY_CUDA):
// `replay --timing` and `analyze --replay-timing` reach it, and both say how each side was timed.
// The GPU paths are tests/gpu/capture_replay_test.cpp.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "stages/capture/capture_manifest.hpp"
#include "support/rocpd_fixtures.hpp"
#include "support/test_support.hpp"
#include "workers/capture/capture_directory.hpp"
#include "workers/devices/nvidia_gpu.hpp"
#include "workers/process/child_process.hpp"

namespace rpl {
namespace {

namespace sc = stages::capture;
using rpl::testing::temp_dir;

workers::child_outcome rocm_perf(std::vector<std::string> args) {
  workers::child_options child;
  child.argv = {rpl::testing::rocm_perf.string()};
  child.argv.insert(child.argv.end(), args.begin(), args.end());
  return workers::run_child(child, std::chrono::seconds(60));
}

/// A small capture as the CUDA library writes one (no GPU needed to write it).
void write_capture(const std::filesystem::path& dir, const std::string& backend = "cuda") {
  sc::dispatch_manifest m;
  m.backend = backend;
  m.kernel = "_Z6kernelPf";
  m.arch = "sm_90";
  m.device_name = "test";
  m.params = {{0, 8}};
  m.granularity = 2u << 20;
  const std::uint64_t base = 0x7f0000200000;
  const std::vector<std::uint8_t> bytes(64, 7);
  workers::capture::write_bytes(dir, m.kernarg_file, &base, sizeof base);
  workers::capture::write_text(dir, m.code_object_file, "not a cubin");
  workers::capture::write_bytes(dir, sc::before_file_name(base), bytes.data(), bytes.size());
  workers::capture::write_text(dir, workers::capture::dispatch_file, sc::to_json(m).dump());
  workers::capture::write_text(
      dir, workers::capture::regions_file,
      sc::regions_to_json({{base, 64, sc::before_file_name(base), ""}}).dump());
}

TEST(cli_isolate, bad_input_exits_2_with_the_problem_and_a_fix) {
  temp_dir dir;
  auto r = rocm_perf({"isolate", "--kernel", "(", "--out", (dir / "c").string(), "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--kernel '(' is not a regular expression"), std::string::npos);
  std::filesystem::create_directories(dir / "taken");
  r = rocm_perf({"isolate", "--kernel", "k", "--out", (dir / "taken").string(), "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("already exists; fix: name a new folder, or pass --force"),
            std::string::npos);
  r = rocm_perf({"isolate", "--out", (dir / "c").string(), "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--kernel is required"), std::string::npos) << r.output;
}

TEST(cli_isolate, a_program_that_never_loads_cuda_leaves_no_capture) {
  temp_dir dir;
  const auto r =
      rocm_perf({"isolate", "--kernel", "k", "--out", (dir / "c").string(), "--", "true"});
  // Without a CUDA build the library is missing (1); with it, `true` never loads CUDA (3).
  EXPECT_TRUE(r.exit_code == 3 || r.exit_code == 1) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "c" / "dispatch.json"));
}

TEST(cli_isolate, the_hsa_backend_names_its_library_and_a_program_without_hsa_leaves_nothing) {
  temp_dir dir;
  const auto r = rocm_perf({"isolate", "--backend", "hsa", "--kernel", "k", "--out",
                            (dir / "c").string(), "--", "true"});
  // Built with the HSA headers: `true` never loads the HSA runtime (3); without them: no library
  // (1).
  if (r.exit_code == 1) {
    EXPECT_NE(r.output.find("the HSA capture library (librpl_hsa_capture.so) is not in"),
              std::string::npos)
        << r.output;
  } else {
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_NE(r.output.find("is this a HIP or HSA program?"), std::string::npos) << r.output;
  }
  const auto bad = rocm_perf({"isolate", "--backend", "opencl", "--kernel", "k", "--out",
                              (dir / "d").string(), "--", "true"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}

TEST(cli_replay, missing_and_damaged_captures_are_bad_input) {
  temp_dir dir;
  auto r = rocm_perf({"replay", (dir / "none").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no such capture folder; fix:"), std::string::npos) << r.output;

  write_capture(dir / "c");
  // One byte short: the file and both sizes are named.
  const auto region = dir / "c" / sc::before_file_name(0x7f0000200000);
  std::filesystem::resize_file(region, 63);
  r = rocm_perf({"replay", (dir / "c").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(region.string() + ": missing or not 64 bytes"), std::string::npos)
      << r.output;

  rpl::testing::write_file(dir / "c" / "dispatch.json", "{not json");
  r = rocm_perf({"replay", (dir / "c").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("dispatch.json: not JSON"), std::string::npos) << r.output;

  write_capture(dir / "d");
  r = rocm_perf({"replay", (dir / "d").string(), "--tolerance", "abc"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--tolerance 'abc' is not ABS or ABS,REL"), std::string::npos);
  r = rocm_perf({"replay", (dir / "d").string(), "--iterations", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(cli_replay, an_hsa_capture_needs_the_hsa_replay_which_debians_headers_cannot_build) {
  temp_dir dir;
  write_capture(dir / "h", "hsa");
  const auto r = rocm_perf({"replay", (dir / "h").string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("this is an HSA capture and rpl-replay-hsa was not built"),
            std::string::npos)
      << r.output;
}

TEST(cli_replay, a_capture_the_library_refused_says_why) {
  temp_dir dir;
  write_capture(dir / "r");
  workers::capture::write_text(dir / "r", workers::capture::status_file,
                               R"({"status": "refused", "reason": "managed memory"})");
  const auto r = rocm_perf({"replay", (dir / "r").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("holds no capture (refused: managed memory)"), std::string::npos)
      << r.output;
}

/// A stand-in for rpl-replay-cuda (RPL_REPLAY_CUDA): answers as the real program does by its
/// --timing: cupti by default (or, with STANDIN_NO_CUPTI set, events after a fallback), events, and
/// batch refused as for a kernel that reads what it writes. Its arguments go to args.txt beside it.
constexpr const char* replay_stand_in = R"sh(#!/bin/sh
out=""; timing=""
echo "$@" > "$(dirname "$0")/args.txt"
while [ $# -gt 0 ]; do
  case "$1" in
    --json-out) out=$2; shift 2 ;;
    --timing) timing=$2; shift 2 ;;
    *) shift ;;
  esac
done
case "$timing" in
  batch) echo "rpl-replay-cuda: --timing batch: a second launch without restoring left region 0x7f0000200000 unlike the capture's after-state" >&2; exit 2 ;;
  events) method='"method": "events_per_launch"' ;;
  *) if [ -n "$STANDIN_NO_CUPTI" ]; then
       method='"method": "events_per_launch", "requested": "cupti_kernel_activity", "fallback_reason": "another CUPTI client holds this process"'
     else
       method='"method": "cupti_kernel_activity"'
     fi ;;
esac
printf '{"kernel": "_Z6kernelPf", "device": {"name": "stand-in", "arch": "sm_90"}, "addresses": "original", "regions": 1, "reserved_ranges": 1, "verification": {"passed": true, "mode": "bit-exact", "regions_written": 1, "regions_compared": 1, "mismatched_regions": []}, "timing": {%s, "iterations": 20, "warmup": 3, "restored_regions": 1, "median_ns": 61400.0, "mean_ns": 61400.0, "cv": 0.004, "min_ns": 61000.0, "max_ns": 62000.0, "samples_ns": [61400]}}' "$method" > "$out"
)sh";

workers::child_outcome rocm_perf_with(const std::filesystem::path& replay_program,
                                      std::vector<std::string> args,
                                      bool no_cupti = false) {
  workers::child_options child;
  child.argv = {rpl::testing::rocm_perf.string()};
  child.argv.insert(child.argv.end(), args.begin(), args.end());
  child.environment.emplace_back("RPL_REPLAY_CUDA", replay_program.string());
  if (no_cupti) {
    child.environment.emplace_back("STANDIN_NO_CUPTI", "1");
  }
  return workers::run_child(child, std::chrono::seconds(60));
}

std::filesystem::path write_replay_stand_in(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const auto program = dir / "rpl-replay-cuda";
  rpl::testing::write_file(program, replay_stand_in);
  ::chmod(program.c_str(), 0755);
  return program;
}

TEST(cli_replay, says_how_the_launches_were_timed_and_passes_timing_on) {
  temp_dir dir;
  write_capture(dir / "c");
  const auto program = write_replay_stand_in(dir / "bin");
  auto r = rocm_perf_with(program, {"replay", (dir / "c").string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("median 61.400 us over 20 samples"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("timed by CUPTI kernel activity records of 20 launches (GPU start/end, "
                          "as the tracer reads them); 1 written region restored before each "
                          "launch, outside what is timed"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(rpl::testing::read_text(dir / "bin" / "args.txt").find("--timing"), std::string::npos);

  r = rocm_perf_with(program, {"replay", (dir / "c").string(), "--timing", "events", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(rpl::testing::read_text(dir / "bin" / "args.txt").find("--timing events"),
            std::string::npos);
  EXPECT_NE(r.output.find(R"("method": "events_per_launch")"), std::string::npos) << r.output;

  // CUPTI could not be used: the fallback and its reason are said.
  r = rocm_perf_with(program, {"replay", (dir / "c").string()}, true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--timing cupti was asked for but another CUPTI client holds this "
                          "process"),
            std::string::npos)
      << r.output;

  // Batch timing refused (the kernel reads what it writes): bad input, the program's reason.
  r = rocm_perf_with(program, {"replay", (dir / "c").string(), "--timing", "batch"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--timing batch: a second launch without restoring"), std::string::npos)
      << r.output;

  r = rocm_perf_with(program, {"replay", (dir / "c").string(), "--timing", "clock"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  write_capture(dir / "h", "hsa");
  r = rocm_perf_with(program, {"replay", (dir / "h").string(), "--timing", "events"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--timing is for CUDA captures only"), std::string::npos) << r.output;
}

TEST(cli_analyze_replay, says_how_each_side_was_timed) {
  temp_dir dir;
  rpl::testing::write_process_trace(dir / "t" / "1_results.db", 1, {"kernel(float*)"}, 20, 7);
  write_capture(dir / "c"); // kernel(float*)
  const auto program = write_replay_stand_in(dir / "bin");
  auto r = rocm_perf_with(program, {"analyze", (dir / "t").string(), "--replay",
                                    (dir / "c").string(), "--replay-timing", "events"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(rpl::testing::read_text(dir / "bin" / "args.txt").find("--timing events"),
            std::string::npos);
  EXPECT_NE(r.output.find("isolated replay of kernel(float*)"), std::string::npos) << r.output;
  // The fixture's agents are AMD's (gfx90a): rocprofv3's records.
  EXPECT_NE(r.output.find("timed: application: GPU start/end of 20 dispatches from the trace "
                          "(rocprofv3 kernel dispatch records)\n       replay: a CUDA event pair "
                          "around each of 20 launches"),
            std::string::npos)
      << r.output;
  r = rocm_perf_with(program,
                     {"analyze", (dir / "t").string(), "--replay", (dir / "c").string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("replay: CUPTI kernel activity records of 20 launches"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(rpl::testing::read_text(dir / "bin" / "args.txt").find("--timing"), std::string::npos);
}

TEST(cli_analyze_replay, a_capture_of_a_kernel_the_trace_lacks_is_bad_input) {
  temp_dir dir;
  rpl::testing::write_process_trace(dir / "t" / "1_results.db", 1, {"gemm_kernel"}, 20, 7);
  write_capture(dir / "c"); // kernel(float*)
  auto r = rocm_perf({"analyze", (dir / "t").string(), "--replay", (dir / "c").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--replay: the databases hold no kernel kernel(float*)"),
            std::string::npos)
      << r.output;
  // The report itself was printed first.
  EXPECT_NE(r.output.find("gemm_kernel"), std::string::npos);
  r = rocm_perf({"analyze", (dir / "t").string(), "--replay", (dir / "none").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no such capture folder"), std::string::npos) << r.output;
}

TEST(cli_autotune_replay, a_missing_capture_or_a_second_lane_is_bad_input) {
  temp_dir dir;
  auto args = rpl::testing::remote_sweep_args(dir / "r.db");
  args.insert(args.end(), {"--replay", (dir / "none").string()});
  auto r = rocm_perf(args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--replay: " + (dir / "none").string() + ": no such capture folder"),
            std::string::npos)
      << r.output;
  write_capture(dir / "c");
  args = rpl::testing::remote_sweep_args(dir / "r.db");
  args.insert(args.end(), {"--replay", (dir / "c").string(), "--backend", "cuda"});
  r = rocm_perf(args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--replay with --backend cuda"), std::string::npos) << r.output;
  write_capture(dir / "h", "hsa");
  args = rpl::testing::remote_sweep_args(dir / "r.db");
  args.insert(args.end(), {"--replay", (dir / "h").string()});
  r = rocm_perf(args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("a hsa capture; only CUDA captures are replayed"), std::string::npos)
      << r.output;
}

// With --replay the run template only names the code object ({BIN}, the default) and optionally
// the kernel symbol, so it may be left out: the run gets as far as the replay lane, which here
// lacks rpl-replay-cuda (a build without CUDA) or a GPU: exit 2 naming --replay, never
// --cmd-template.
TEST(cli_autotune_replay, needs_no_cmd_template) {
  if (workers::nvidia_gpu_present())
    GTEST_SKIP() << "this host has an NVIDIA GPU (tests/gpu/ cover the replay lane)";
  temp_dir dir;
  write_capture(dir / "c");
  auto r = rocm_perf({"autotune", "--space", rpl::testing::fixture("space-ok.json").string(),
                      "--source", rpl::testing::fixture("candidate.cpp").string(),
                      "--build-template", rpl::testing::fixture_build_template, "--replay",
                      (dir / "c").string(), "--db", (dir / "r.db").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const bool lane_missing =
      r.output.find("--replay: rpl-replay-cuda was not found beside rocm-perf") !=
          std::string::npos ||
      r.output.find("--replay: no NVIDIA GPU found") != std::string::npos;
  EXPECT_TRUE(lane_missing) << r.output;
  EXPECT_EQ(r.output.find("--cmd-template"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "r.db"));
}

} // namespace
} // namespace rpl
