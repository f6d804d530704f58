#include <gtest/gtest.h>

#include "engine/autotune/autotune.hpp"
#include "support/test_support.hpp"

namespace rpl::engine {
namespace {

using namespace std::chrono_literals;

std::string find_nvcc() {
  for (const char* candidate : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"}) {
    if (std::filesystem::exists(candidate)) {
      return candidate;
    }
  }
  return {};
}

TEST(engine_nvcc_compile, workers_return_nvcc_resource_usage_with_the_artifact) {
  const auto nvcc = find_nvcc();
  if (nvcc.empty()) {
    GTEST_SKIP() << "nvcc not found (/usr/local/cuda/bin/nvcc): the CUDA toolkit is not installed";
  }
  rpl::testing::temp_dir dir;
  rpl::testing::write_file(dir / "k.cu", R"(
template <int N> __global__ void accumulate(const float* in, float* out) {
  __shared__ float tile[N];
  float r[8];
  for (int k = 0; k < 8; ++k) r[k] = in[threadIdx.x * 8 + k];
  tile[threadIdx.x % N] = r[0];
  __syncthreads();
  float t = 0;
  for (int k = 0; k < 8; ++k) t += r[k] * tile[(threadIdx.x + k) % N];
  out[threadIdx.x] = t;
}
template __global__ void accumulate<TILE>(const float*, float*);
)");
  rpl::testing::write_file(dir / "space.json", R"({"params": {"TILE": [256, 1024]}})");
  autotune_options o;
  o.space_file = dir / "space.json";
  o.sources = {dir / "k.cu"};
  // An explicit -arch, so the engine adds none whatever GPU this host has.
  o.build_template = nvcc + " -arch=sm_90 -DTILE={TILE} -c k.cu -o {OUT}";
  o.cmd_template = "true {TILE}";
  o.allowed_compilers = {"nvcc", "true"};
  o.compile_workers = 2;
  o.runs = 1;
  o.warmup = 0;
  o.db = dir / "r.db";
  o.heartbeat = 200ms;
  o.worker_executable = rpl::testing::rocm_perf;
  std::atomic<bool> stop{false};
  const auto result = run_autotune(o, {}, stop);
  ASSERT_EQ(result.candidates.size(), 2u);
  for (const auto& c : result.candidates) {
    EXPECT_EQ(c.compile_status, "ok") << c.reason;
  }
  const auto rows =
      rpl::testing::query_texts(o.db, "SELECT resources_json FROM artifacts ORDER BY key");
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& text : rows) {
    const auto resources = nlohmann::json::parse(text);
    ASSERT_EQ(resources.size(), 1u) << text;
    EXPECT_NE(resources[0]["name"].get<std::string>().find("accumulate"), std::string::npos);
    EXPECT_EQ(resources[0]["arch"], "sm_90");
    EXPECT_GT(resources[0]["registers"].get<int>(), 0);
    EXPECT_EQ(resources[0]["barriers"], 1);
  }
  // The static shared memory follows the tile: 256 floats and 1024 floats.
  std::set<long long> shared;
  for (const auto& text : rows) {
    shared.insert(nlohmann::json::parse(text)[0]["shared_bytes"].get<long long>());
  }
  EXPECT_EQ(shared, (std::set<long long>{1024, 4096}));
}

} // namespace
} // namespace rpl::engine
