// Kernel isolation and VA-faithful replay (issue 14) on a real GPU: `rocm-perf isolate` captures a
// dispatch of examples/cuda/pointer_table.cu (a multi-stream program whose kernel reaches every
// buffer through pointers stored in device memory), `rocm-perf replay` replays it in a fresh
// process at the original addresses and reproduces its output bit-exactly; replayed at other
// addresses (--relocate: pointer parameters translated, stored pointers not) it fails
// verification. A program with managed memory live is refused, a kernel that never ran is not
// found. The replay times from CUPTI's kernel records by default (as the tracer times the
// application), with event pairs or batches on request, and falls back to events where CUPTI
// cannot be loaded. Skips without an NVIDIA GPU or the CUDA build (capture library, replay
// program).

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu/cuda_programs.hpp"
#include "workers/capture/capture_run.hpp"
#include "workers/lanes/replay/served_replay_lane.hpp"
#include "workers/replay/replay_run.hpp"

namespace rpl {
namespace {

namespace fs = std::filesystem;
using rpl::testing::temp_dir;

/// gather_scale with one stray write per segment: `out[n]` (a float past the end) by default, or
/// `stray` (e.g. "seg.out[-1]"). Below, with the test that uses it first.
fs::path build_stray(const fs::path& dir, const std::string& stray = "seg.out[seg.n]");

class capture_replay : public ::testing::Test {
protected:
  void SetUp() override {
    if (!workers::nvidia_gpu_present())
      GTEST_SKIP() << "no NVIDIA GPU (/dev/nvidia0 and /proc/driver/nvidia are absent)";
    std::vector<std::string> tried;
    rocm_perf_ = rpl::testing::find_rocm_perf(tried);
    const auto bin = rocm_perf_.parent_path();
    std::error_code ec;
    if (rocm_perf_.empty() ||
        !fs::exists(bin.parent_path() / "lib" / "librpl_cuda_capture.so", ec) ||
        !fs::exists(bin / "rpl-replay-cuda", ec))
      GTEST_SKIP() << "no CUDA build of rocm-perf with librpl_cuda_capture.so and rpl-replay-cuda "
                      "(configure with -DRPL_BUILD_CUDA=ON); looked at "
                   << nlohmann::json(tried).dump();
    app_ = rpl::testing::first_executable({bin / "pointer_table"}, tried);
    if (app_.empty())
      GTEST_SKIP() << "no pointer_table (examples/cuda) beside rocm-perf";
  }

  workers::child_outcome
  rocm_perf(std::vector<std::string> args,
            std::vector<std::pair<std::string, std::string>> environment = {}) {
    workers::child_options child;
    child.argv = {rocm_perf_.string()};
    child.argv.insert(child.argv.end(), args.begin(), args.end());
    for (auto& [name, value] : environment)
      child.environment.emplace_back(name, value);
    child.max_output_bytes = 4 << 20;
    return workers::run_child(child, std::chrono::minutes(3));
  }

  /// optimize's replay lane (rpl-replay-cuda --serve) on gather_scale captured at `elements`
  /// floats, measuring the stray candidate (one write a float past an output, or at `stray`):
  /// refused as memory:out_of_bounds on `side`; red_zones_ says whether the lane had red zones.
  void expect_stray_write_refused(const std::string& elements,
                                  const std::string& stray = "seg.out[seg.n]",
                                  const std::string& side = "after") {
    temp_dir dir;
    const auto stray_cubin = build_stray(dir.path(), stray);
    if (stray_cubin.empty())
      GTEST_SKIP() << "no /usr/local/cuda/bin/nvcc to build the candidate";
    const auto out = dir / "capture";
    const auto captured =
        rocm_perf({"isolate", "--kernel", "gather_scale", "--dispatch", "2", "--out", out.string(),
                   "--", app_.string(), "--rounds", "4", "--elements", elements});
    ASSERT_EQ(captured.exit_code, 0) << captured.output;
    workers::served_replay_lane_options o;
    o.capture = out;
    o.program = rocm_perf_.parent_path() / "rpl-replay-cuda";
    workers::served_replay_lane lane(o);
    messages::measure_request request;
    request.argv = {stray_cubin.string()};
    request.runs = 3;
    request.timeout_ms = 60000;
    request.fixed_count = true;
    const auto refused = lane.measure(request);
    EXPECT_EQ(refused.status, messages::measure_status::wrong_result) << refused.reason;
    EXPECT_EQ(refused.finding, "memory:out_of_bounds") << refused.reason;
    EXPECT_EQ(lane.last_reply().violation.side, side) << refused.reason;
    std::cout << elements << " floats, " << stray
              << ": placement: " << (lane.last_reply().red_zones ? "red zones" : "no red zones")
              << "; " << refused.reason << "\n";
    red_zones_ = lane.last_reply().red_zones;
  }

  static nlohmann::json json_of(const std::string& output) {
    const auto start = output.find("{\n");
    return start == std::string::npos ? nlohmann::json()
                                      : nlohmann::json::parse(output.substr(start), nullptr, false);
  }

  fs::path rocm_perf_;
  fs::path app_;
  bool red_zones_ = false;
};

TEST_F(capture_replay, a_dispatch_replays_bit_exactly_at_its_addresses_and_fails_elsewhere) {
  temp_dir dir;
  const auto out = dir / "capture";
  const auto captured =
      rocm_perf({"isolate", "--kernel", "gather_scale", "--dispatch", "3", "--out", out.string(),
                 "--", app_.string(), "--rounds", "6", "--elements", "1048576"});
  ASSERT_EQ(captured.exit_code, 0) << captured.output;
  EXPECT_NE(captured.output.find("captured _Z12gather_scale"), std::string::npos)
      << captured.output;
  const auto manifest = nlohmann::json::parse(rpl::testing::read_text(out / "dispatch.json"));
  EXPECT_EQ(manifest["dispatch_index"], 3);
  EXPECT_EQ(manifest["params"].size(), 3u);
  const auto regions = nlohmann::json::parse(rpl::testing::read_text(out / "memory_regions.json"));
  // 4 inputs, 4 outputs and the table; dispatch 3 changes the outputs (round 2's values + 1).
  ASSERT_EQ(regions["regions"].size(), 9u) << regions.dump(1);
  int written = 0;
  for (const auto& r : regions["regions"])
    written += r["after_file"].is_string() ? 1 : 0;
  EXPECT_EQ(written, 4);

  const auto replayed = rocm_perf({"replay", out.string(), "--iterations", "10", "--json"});
  ASSERT_EQ(replayed.exit_code, 0) << replayed.output;
  const auto doc = json_of(replayed.output);
  ASSERT_TRUE(doc.is_object()) << replayed.output;
  EXPECT_EQ(doc["addresses"], "original");
  EXPECT_TRUE(doc["verification"]["passed"].get<bool>());
  EXPECT_EQ(doc["verification"]["mode"], "bit-exact");
  EXPECT_GT(doc["timing"]["median_ns"].get<double>(), 0.0);
  EXPECT_EQ(doc["timing"]["samples_ns"].size(), 10u);

  // At other addresses, translating only the table pointer parameter: the stored pointers lead
  // to the zeroed original ranges, and the outputs are not what the capture saw.
  const auto relocated = rocm_perf({"replay", out.string(), "--relocate", "--json"});
  EXPECT_EQ(relocated.exit_code, 3) << relocated.output;
  const auto moved = json_of(relocated.output);
  ASSERT_TRUE(moved.is_object()) << relocated.output;
  EXPECT_EQ(moved["addresses"], "relocated");
  EXPECT_EQ(moved["translated_parameters"], 1);
  EXPECT_FALSE(moved["verification"]["passed"].get<bool>());
  EXPECT_GE(moved["verification"]["mismatched_regions"].size(), 1u);
}

TEST_F(capture_replay, managed_memory_is_refused_and_a_missing_kernel_is_not_found) {
  temp_dir dir;
  const auto refused = rocm_perf({"isolate", "--kernel", "gather_scale", "--out",
                                  (dir / "managed").string(), "--json", "--", app_.string(),
                                  "--rounds", "2", "--elements", "65536", "--managed"});
  EXPECT_EQ(refused.exit_code, 3) << refused.output;
  EXPECT_EQ(json_of(refused.output)["status"], "refused") << refused.output;
  EXPECT_NE(refused.output.find("managed allocations are live"), std::string::npos);

  const auto missing =
      rocm_perf({"isolate", "--kernel", "no_such_kernel", "--out", (dir / "missing").string(), "--",
                 app_.string(), "--rounds", "2", "--elements", "65536"});
  EXPECT_EQ(missing.exit_code, 3) << missing.output;
  EXPECT_NE(missing.output.find("0 of a kernel matching 'no_such_kernel'"), std::string::npos)
      << missing.output;

  // Dispatch 5 of a kernel launched twice does not exist either.
  const auto beyond = rocm_perf({"isolate", "--kernel", "gather", "--dispatch", "5", "--out",
                                 (dir / "beyond").string(), "--", app_.string(), "--rounds", "2",
                                 "--elements", "65536"});
  EXPECT_EQ(beyond.exit_code, 3) << beyond.output;
  EXPECT_NE(beyond.output.find("2 of a kernel matching 'gather'"), std::string::npos)
      << beyond.output;
}

TEST_F(capture_replay, analyze_times_the_captured_dispatch_next_to_its_in_app_time) {
  temp_dir dir;
  const std::vector<std::string> app = {app_.string(), "--rounds", "8", "--elements", "1048576"};
  // One run: its 8 dispatches are the in-application figure.
  std::vector<std::string> profile = {"profile", "--backend",          "cuda", "--runs", "1",
                                      "--out",   (dir / "p").string(), "--"};
  profile.insert(profile.end(), app.begin(), app.end());
  const auto profiled = rocm_perf(profile);
  ASSERT_EQ(profiled.exit_code, 0) << profiled.output;
  std::vector<std::string> isolate = {"isolate", "--kernel", "gather_scale",       "--dispatch",
                                      "4",       "--out",    (dir / "c").string(), "--"};
  isolate.insert(isolate.end(), app.begin(), app.end());
  ASSERT_EQ(rocm_perf(isolate).exit_code, 0);
  const auto analyzed = rocm_perf({"analyze", (dir / "p" / "traces").string(), "--replay",
                                   (dir / "c").string(), "--replay-iterations", "10"});
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.output;
  EXPECT_NE(analyzed.output.find("isolated replay of gather_scale(segment const*, int, float)"),
            std::string::npos)
      << analyzed.output;
  EXPECT_NE(analyzed.output.find("in the application: median"), std::string::npos);
  EXPECT_NE(analyzed.output.find("over 8 dispatches"), std::string::npos) << analyzed.output;
  // Like with like: both sides from kernel activity records.
  EXPECT_NE(analyzed.output.find("timed: application: GPU start/end of 8 dispatches from the "
                                 "trace (CUPTI kernel activity records)"),
            std::string::npos)
      << analyzed.output;
  EXPECT_NE(analyzed.output.find("replay: CUPTI kernel activity records of 10 launches"),
            std::string::npos)
      << analyzed.output;
}

TEST_F(capture_replay, launches_are_timed_from_cupti_kernel_records_by_default) {
  temp_dir dir;
  const auto out = dir / "capture";
  ASSERT_EQ(rocm_perf({"isolate", "--kernel", "gather_scale", "--dispatch", "2", "--out",
                       out.string(), "--", app_.string(), "--rounds", "4", "--elements", "1048576"})
                .exit_code,
            0);
  auto timing_of = [&](std::vector<std::string> args,
                       std::vector<std::pair<std::string, std::string>> environment = {}) {
    std::vector<std::string> all = {"replay", out.string(), "--iterations", "30", "--json"};
    all.insert(all.end(), args.begin(), args.end());
    const auto r = rocm_perf(all, std::move(environment));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto doc = json_of(r.output);
    return doc.is_object() ? doc["timing"] : nlohmann::json();
  };
  const auto cupti = timing_of({});
  ASSERT_TRUE(cupti.is_object());
  EXPECT_EQ(cupti["method"], "cupti_kernel_activity") << cupti.dump(1);
  EXPECT_FALSE(cupti.contains("requested")) << cupti.dump(1);
  ASSERT_EQ(cupti["samples_ns"].size(), 30u);
  for (const auto& ns : cupti["samples_ns"])
    EXPECT_GT(ns.get<std::int64_t>(), 0);
  // One record per launch, the 3 warm-ups told apart; the outputs restored before each.
  EXPECT_EQ(cupti["cupti_records"]["timed"], 30);
  EXPECT_EQ(cupti["cupti_records"]["warmup"], 3);
  EXPECT_EQ(cupti["restored_regions"], 4);

  const auto events = timing_of({"--timing", "events"});
  ASSERT_TRUE(events.is_object());
  EXPECT_EQ(events["method"], "events_per_launch");
  // The same kernel: an event pair only adds to the kernel's span.
  const double kernel_ns = cupti["median_ns"].get<double>();
  const double events_ns = events["median_ns"].get<double>();
  EXPECT_GT(kernel_ns, 0.5 * events_ns);
  EXPECT_LT(kernel_ns, 1.05 * events_ns);

  // gather_scale reads its inputs and writes its outputs: a batch repeats the same work.
  const auto batch = timing_of({"--timing", "batch"});
  ASSERT_TRUE(batch.is_object());
  EXPECT_EQ(batch["method"], "events_per_batch");
  EXPECT_EQ(batch["batch_size"], 10);
  EXPECT_EQ(batch["restored_regions"], 0);

  // CUPTI not loadable: events, saying why.
  const auto fallback =
      timing_of({}, {{"RPL_CUPTI_LIBRARY", (dir / "no-such-libcupti.so").string()}});
  ASSERT_TRUE(fallback.is_object());
  EXPECT_EQ(fallback["method"], "events_per_launch");
  EXPECT_EQ(fallback["requested"], "cupti_kernel_activity");
  EXPECT_NE(fallback.value("fallback_reason", std::string()).find("CUPTI could not be loaded"),
            std::string::npos)
      << fallback.dump(1);
  EXPECT_EQ(fallback["samples_ns"].size(), 30u);
}

TEST_F(capture_replay, autotune_times_each_candidate_on_the_captured_dispatch) {
  const fs::path nvcc = "/usr/local/cuda/bin/nvcc";
  std::error_code ec;
  if (!fs::exists(nvcc, ec))
    GTEST_SKIP() << "no " << nvcc << " to build the candidates";
  temp_dir dir;
  const auto out = dir / "capture";
  const auto captured =
      rocm_perf({"isolate", "--kernel", "gather_scale", "--dispatch", "2", "--out", out.string(),
                 "--", app_.string(), "--rounds", "4", "--elements", "1048576"});
  ASSERT_EQ(captured.exit_code, 0) << captured.output;
  const auto examples = rpl::testing::source_dir / "examples" / "cuda";
  const auto db = dir / "r.db";
  const auto tuned = rocm_perf(
      {"autotune", "--space", (examples / "pointer_table.space.json").string(), "--source",
       (examples / "pointer_table_kernel.cu").string(), "--source",
       (examples / "pointer_table_kernel.cuh").string(), "--build-template",
       nvcc.string() +
           " -arch=sm_90 -cubin -DGATHER_UNROLL={GATHER_UNROLL} pointer_table_kernel.cu -o {OUT}",
       "--cmd-template", "{BIN}", "--replay", out.string(), "--runs", "5", "--db", db.string(),
       "--json"});
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  // Every unroll factor computes the same bits, so all five are verified and measured.
  EXPECT_EQ(rpl::testing::query_int(db, "SELECT COUNT(*) FROM candidates WHERE status='ok'"), 5)
      << tuned.output;
  const auto doc = json_of(tuned.output);
  ASSERT_TRUE(doc.is_object()) << tuned.output;
  EXPECT_FALSE(doc["winner"].is_null()) << tuned.output;
}

/// gather_scale as pointer_table_kernel.cuh has it (the same bits), and one float more past the
/// end of every output, built into DIR/stray.cubin; empty when nvcc is missing.
fs::path build_stray(const fs::path& dir, const std::string& stray) {
  const fs::path nvcc = "/usr/local/cuda/bin/nvcc";
  std::error_code ec;
  if (!fs::exists(nvcc, ec))
    return {};
  const std::string source = R"(struct segment { const float* in; float* out; int n; float scale; };
__device__ float device_value_of(float x, float scale) {
  float acc = 0.0f;
  float p = 1.0f;
  for (int k = 0; k < 48; ++k) {
    acc = fmaf(p, 1.0f / (k + 1), acc);
    p = p * x * 0.999f;
  }
  return acc * scale;
}
__global__ void gather_scale(const segment* table, int count, float round) {
  for (int s = 0; s < count; ++s) {
    const segment seg = table[s];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < seg.n; i += gridDim.x * blockDim.x)
      seg.out[i] = device_value_of(seg.in[i], seg.scale) + round;
    if (blockIdx.x == 0 && threadIdx.x == 0)
      )" + stray + R"( = 0.0f;
  }
}
)";
  const std::string name = stray == "seg.out[seg.n]" ? "stray" : "stray_before";
  rpl::testing::write_file(dir / (name + ".cu"), source);
  workers::child_options build;
  build.argv = {nvcc.string(), "-arch=sm_90",
                "-cubin",      (dir / (name + ".cu")).string(),
                "-o",          (dir / (name + ".cubin")).string()};
  EXPECT_EQ(workers::run_child(build, std::chrono::minutes(2)).exit_code, 0);
  return dir / (name + ".cubin");
}

TEST_F(capture_replay, a_candidate_writing_past_an_output_is_found_in_the_red_zones) {
  temp_dir dir;
  if (build_stray(dir.path()).empty())
    GTEST_SKIP() << "no /usr/local/cuda/bin/nvcc to build the candidate";
  const auto out = dir / "capture";
  // 1,000,000 floats: each allocation ends short of its granule, leaving a red zone.
  const auto captured =
      rocm_perf({"isolate", "--kernel", "gather_scale", "--dispatch", "2", "--out", out.string(),
                 "--", app_.string(), "--rounds", "4", "--elements", "1000000"});
  ASSERT_EQ(captured.exit_code, 0) << captured.output;
  const auto honest = rocm_perf({"replay", out.string(), "--iterations", "3", "--json"});
  ASSERT_EQ(honest.exit_code, 0) << honest.output;
  const auto clean = json_of(honest.output);
  ASSERT_TRUE(clean.is_object()) << honest.output;
  // In this process's own reservations the zones are the reserved bytes outside every region;
  // after the allocation walk (the bytes between allocations are the allocator's), the walk's
  // own bytes next to a region: the up to 4 KiB it asks past each region of over 1 MiB (all
  // eight buffers here), the 512-byte step's rest past the table, the allocations it keeps
  // beside them (stages/capture/walk_zones.hpp).
  std::cout << "placement: " << clean["placement"] << ", red zones " << clean["red_zones"] << "\n";
  EXPECT_GT(clean["red_zones"]["zones"].get<int>(), 0) << clean.dump(1);
  EXPECT_TRUE(clean["red_zones"]["violation"].is_null()) << clean.dump(1);

  const auto stray_cubin = build_stray(dir.path());
  ASSERT_FALSE(stray_cubin.empty());
  workers::replay::replay_run_options run;
  run.program = rocm_perf_.parent_path() / "rpl-replay-cuda";
  run.capture = out;
  run.iterations = 3;
  run.code_object = stray_cubin;
  const auto stray = workers::replay::run_replay(run);
  EXPECT_EQ(stray.exit_code, 3) << stray.message;
  const auto& doc = stray.document;
  ASSERT_TRUE(doc.is_object()) << stray.message;
  EXPECT_TRUE(doc["verification"]["passed"].get<bool>()) << "every region is right";
  const auto& v = doc["red_zones"]["violation"];
  ASSERT_TRUE(v.is_object()) << doc.dump(1);
  EXPECT_EQ(v["side"], "after");
  // The first byte past one of the four outputs (n = 1,000,000 - s x 125,000 floats): which one
  // is reported first depends on the zones' order in the placement.
  const auto offset = v["offset"].get<std::int64_t>();
  EXPECT_TRUE(offset % 500000 == 0 && offset >= 2500000 && offset <= 4000000) << v.dump();
  EXPECT_EQ(v["changed"].get<int>() % 4, 0);
  std::cout << "red zones: " << v["message"].get<std::string>() << "\n";
}

TEST_F(capture_replay, the_long_lived_replay_lane_refuses_a_write_past_an_output) {
  // 1,048,576 floats: 4 MiB allocations, whole granules, which the allocation walk (our H200s')
  // places side by side as the application had them; a write one float past an output lands in
  // the region next door and is out of bounds.
  expect_stray_write_refused("1048576");
}

TEST_F(capture_replay, the_long_lived_replay_lane_refuses_a_write_into_an_outputs_slack) {
  // 1,000,000 floats: 4,000,000-byte allocations, which leave slack in their granule. The walk
  // asks for up to 4 KiB more within the same 64 KiB (the allocator consumes the same), so the
  // driver reports those bytes as the region's allocation and they are a red zone: the write one
  // float past the output lands there (before 2026-11-29 it was accepted: docs/optimize.md).
  expect_stray_write_refused("1000000");
}

TEST_F(capture_replay, the_long_lived_replay_lane_refuses_a_write_into_a_small_outputs_slack) {
  // 1,000 floats: 4,000-byte allocations, which the allocator carves in 512-byte steps (4,096
  // bytes each). The walk asks for the whole step, so the 96 bytes past each output are the
  // region's own allocation and a red zone (until the walk's zones of 2026-11-29, a write there was
  // accepted).
  expect_stray_write_refused("1000");
  EXPECT_TRUE(red_zones_) << "the walk left red zones";
}

TEST_F(capture_replay, the_long_lived_replay_lane_refuses_a_write_before_an_output) {
  // out[-1]: at 1,000 floats it lands in the slack of the input allocated just before (a red
  // zone); at 1,024 floats (whole 512-byte steps) in that input's last float, the region next
  // door, which stands in for one.
  expect_stray_write_refused("1000", "seg.out[-1]", "before");
  expect_stray_write_refused("1024", "seg.out[-1]", "before");
}

} // namespace
} // namespace rpl
