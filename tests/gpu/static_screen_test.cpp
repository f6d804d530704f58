// The static screen against the device: autotune with the kernel lane over a CUDA kernel whose
// registers (LIVE values kept live, -maxrregcount=255) times the block size, or whose dynamic
// shared memory, the device refuses for some configurations. Run once with the screen: the
// refused configurations are invalid with "static screen: ..." and never reach the lane
// (measure_status not_run, no samples). Run once with --no-static-screen: every configuration
// goes to the lane, and the set the device refuses to launch must be exactly the screened set;
// the others are measured in both runs.
//
// Skips without an NVIDIA GPU, rocm-perf, rpl-kernel-lane (configure with CUDA on) or nvcc.
// Runs from the build tree or a bundle (scripts/bundle: tests/ beside bin/).

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu/cuda_programs.hpp"
#include "support/test_support.hpp"
#include "workers/devices/nvidia_gpu.hpp"
#include "workers/lanes/kernel/kernel_lane.hpp"
#include "workers/process/child_process.hpp"

namespace rpl::testing {
namespace {

namespace fs = std::filesystem;

// LIVE loaded values are all live at once (each is used in every round), so ptxas needs about
// LIVE registers per thread: LIVE 16 fits any block, LIVE 200 only small ones.
const char* const kernel_source = R"(
extern "C" __global__ void rpl_pressure(const float* in, float* out, int n) {
  extern __shared__ float dynamic_tile[];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v[LIVE];
#pragma unroll
  for (int j = 0; j < LIVE; ++j) v[j] = in[(i + j * 977) % n];
  float acc = 0.0f;
#pragma unroll
  for (int r = 1; r < 4; ++r) {
#pragma unroll
    for (int j = 0; j < LIVE; ++j) acc = fmaf(acc, v[(j + r) % LIVE], v[j]);
  }
  if (n < 0) dynamic_tile[threadIdx.x] = acc; // never true: the dynamic memory is only reserved
  out[i] = acc;
}
)";

const char* const launch_file = R"({
  "kernel": "rpl_pressure",
  "problem": {"N": 262144},
  "grid": ["N / BLOCK"],
  "block": ["BLOCK"],
  "shared_memory": "DYN",
  "args": [
    {"name": "in", "kind": "buffer", "type": "f32", "count": "N",
     "init": {"random": {"seed": 1, "min": -1, "max": 1}}},
    {"name": "out", "kind": "buffer", "type": "f32", "count": "N"},
    {"name": "n", "kind": "scalar", "type": "i32", "value": "N"}
  ]
})";

// 232448 bytes is sm_90's opt-in maximum per block; 233472 is one KiB over it.
const char* const space_file =
    R"({"params": {"LIVE": [16, 200], "BLOCK": [256, 512, 1024], "DYN": [0, 232448, 233472]}})";

fs::path find_nvcc() {
  std::vector<std::string> tried;
  const char* env = std::getenv("CUDACXX");
  std::vector<fs::path> candidates = {env != nullptr ? fs::path(env) : fs::path(),
                                      "/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"};
  return first_executable(candidates, tried);
}

/// One candidate as stored: its configuration, measure status and reason.
struct stored {
  std::string status;
  std::string measure_status;
  std::string reason;
  long long samples = 0;
};

/// "BLOCK=256 DYN=0 LIVE=16" -> what the run stored.
std::map<std::string, stored> read_run(const fs::path& db) {
  std::map<std::string, stored> out;
  const auto rows = query_texts(
      db, "SELECT c.params_json || char(31) || c.status || char(31) || "
          "coalesce(c.measure_status, '') || char(31) || coalesce(c.reason, '') || char(31) || "
          "(SELECT COUNT(*) FROM measurements m WHERE m.run_id = c.run_id AND m.key = c.key) "
          "FROM candidates c");
  for (const auto& row : rows) {
    std::vector<std::string> fields;
    std::stringstream in(row);
    for (std::string f; std::getline(in, f, '\x1f');)
      fields.push_back(f);
    if (fields.size() < 5)
      continue;
    const auto params = nlohmann::json::parse(fields[0]);
    std::string name;
    for (const auto& [k, v] : params.items())
      name += (name.empty() ? "" : " ") + k + "=" + v.dump();
    out[name] = stored{fields[1], fields[2], fields[3], std::stoll(fields[4])};
  }
  return out;
}

class static_screen_gpu : public ::testing::Test {
protected:
  void SetUp() override {
    if (!workers::nvidia_gpu_present())
      GTEST_SKIP() << "no NVIDIA GPU (/dev/nvidia0 and /proc/driver/nvidia are absent)";
    std::vector<std::string> tried;
    rocm_perf_ = find_rocm_perf(tried);
    if (rocm_perf_.empty())
      GTEST_SKIP() << "no rocm-perf; looked at " << nlohmann::json(tried).dump();
    const fs::path lane = rocm_perf_.parent_path() / "rpl-kernel-lane";
    if (!fs::exists(lane) && !fs::exists(workers::default_kernel_lane_program("cuda")))
      GTEST_SKIP() << "no rpl-kernel-lane beside rocm-perf (configure with CUDA on)";
    nvcc_ = find_nvcc();
    ASSERT_FALSE(nvcc_.empty()) << "an NVIDIA GPU is here but nvcc is not ($CUDACXX, "
                                   "/usr/local/cuda/bin/nvcc)";
    arch_ = workers::local_nvidia_arch();
    if (arch_.empty())
      arch_ = "sm_90";
    write_file(dir_ / "k.cu", kernel_source);
    write_file(dir_ / "k.launch.json", launch_file);
    write_file(dir_ / "space.json", space_file);
  }

  /// One autotune run; returns its stored candidates.
  std::map<std::string, stored> autotune(const std::string& db, bool screen) {
    workers::child_options o;
    o.cwd = dir_.path();
    o.max_output_bytes = 1 << 20;
    o.argv = {rocm_perf_.string(),
              "autotune",
              "--space",
              "space.json",
              "--source",
              "k.cu",
              "--build-template",
              nvcc_.string() + " -cubin -arch=" + arch_ +
                  " -maxrregcount=255 -DLIVE={LIVE} -DBLOCK={BLOCK} -DDYN={DYN} k.cu -o {OUT}",
              "--cmd-template",
              "{BIN}",
              "--launch",
              "k.launch.json",
              "--runs",
              "3",
              "--max-candidate-time",
              "1",
              "--finalists",
              "0",
              "--db",
              db,
              "--json"};
    if (!screen)
      o.argv.push_back("--no-static-screen");
    const auto outcome = workers::run_child(o, std::chrono::minutes(8));
    EXPECT_TRUE(outcome.succeeded()) << workers::describe_exit(outcome) << "\n" << outcome.output;
    std::cerr << "autotune " << (screen ? "with" : "without")
              << " the static screen: " << workers::describe_exit(outcome) << "\n";
    return read_run(dir_ / db);
  }

  fs::path rocm_perf_, nvcc_;
  std::string arch_;
  temp_dir dir_;
};

TEST_F(static_screen_gpu, screens_exactly_the_launches_the_device_refuses) {
  const auto screened = autotune("screened.db", true);
  const auto unscreened = autotune("unscreened.db", false);
  ASSERT_EQ(screened.size(), 18u);
  ASSERT_EQ(unscreened.size(), 18u);

  std::set<std::string> by_screen, by_device;
  for (const auto& [config, c] : screened) {
    const bool refused = c.reason.rfind("static screen: ", 0) == 0;
    std::cerr << "screened   " << config << ": " << c.status << " " << c.measure_status << " "
              << c.samples << " samples " << c.reason << "\n";
    if (refused) {
      by_screen.insert(config);
      EXPECT_EQ(c.measure_status, "not_run") << config; // never reached the lane
      EXPECT_EQ(c.samples, 0) << config;
    } else {
      EXPECT_EQ(c.status, "ok") << config << ": " << c.reason;
    }
  }
  for (const auto& [config, c] : unscreened) {
    std::cerr << "unscreened " << config << ": " << c.status << " " << c.measure_status << " "
              << c.samples << " samples " << c.reason << "\n";
    EXPECT_EQ(c.reason.find("static screen"), std::string::npos) << config;
    if (c.status != "ok") {
      by_device.insert(config);
      EXPECT_EQ(c.measure_status, "launch_failed") << config << ": " << c.reason;
    }
  }
  EXPECT_EQ(by_screen, by_device);
  // The space mixes both kinds, for registers and for shared memory alike.
  EXPECT_TRUE(by_screen.count("BLOCK=1024 DYN=0 LIVE=200") == 1);
  EXPECT_TRUE(by_screen.count("BLOCK=256 DYN=233472 LIVE=16") == 1);
  EXPECT_TRUE(by_screen.count("BLOCK=256 DYN=0 LIVE=16") == 0);
  EXPECT_TRUE(by_screen.count("BLOCK=256 DYN=232448 LIVE=16") == 0);
  std::cerr << by_screen.size() << " of 18 configurations screened, " << by_device.size()
            << " refused by the device\n";
}

} // namespace
} // namespace rpl::testing
