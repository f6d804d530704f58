// The static screen on real AMDGPU code objects, with no GPU: Debian's hipcc builds a HIP kernel
// for gfx90a (its __launch_bounds__ and static LDS are compile-time parameters), and the screen
// reads the code object's metadata note. First alone (screen_candidate), then inside an autotune
// session driven through the tuning graph with a fake lane: the refused candidates are invalid
// with "static screen: ...", are stored so, and never reach the lane; with the screen off they
// all do. Skips, saying so, where hipcc is not installed.

#include <atomic>
#include <filesystem>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/autotune/autotune_inputs.hpp"
#include "engine/autotune/autotune_session.hpp"
#include "engine/autotune/candidate_screen.hpp"
#include "engine/graph/tuning_graph.hpp"
#include "support/fake_compile_service.hpp"
#include "support/fake_lane.hpp"
#include "support/test_support.hpp"
#include "workers/process/child_process.hpp"

namespace rpl::engine {
namespace {

namespace fs = std::filesystem;

const char* const kernel_source = R"(#include <hip/hip_runtime.h>
extern "C" __global__ void __launch_bounds__(BOUND) rpl_scale(const float* in, float* out, int n) {
  __shared__ float tile[LDS / 4];
  extern __shared__ float dynamic_tile[];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x % (LDS / 4)] = i < n ? in[i] : 0.0f;
  dynamic_tile[threadIdx.x] = 1.0f;
  __syncthreads();
  if (i < n) out[i] = tile[(threadIdx.x + 1) % (LDS / 4)] * dynamic_tile[0];
}
)";

const char* const launch_file = R"({
  "kernel": "rpl_scale",
  "problem": {"N": 65536},
  "grid": ["N / BLOCK"],
  "block": ["BLOCK"],
  "shared_memory": "DYN",
  "args": [
    {"name": "in", "kind": "buffer", "type": "f32", "count": "N"},
    {"name": "out", "kind": "buffer", "type": "f32", "count": "N"},
    {"name": "n", "kind": "scalar", "type": "i32", "value": "N"}
  ]
})";

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string word; in >> word;)
    out.push_back(word);
  return out;
}

bool hipcc_present() {
  workers::child_options o;
  o.argv = {"hipcc", "--version"};
  return workers::run_child(o, std::chrono::seconds(60)).succeeded();
}

std::string hipcc_build(const std::string& defines) {
  return "hipcc --offload-arch=gfx90a --cuda-device-only --no-gpu-bundle-output " + defines +
         " -c k.hip -o {OUT}";
}

/// Runs a build request for real: the sources into a fresh folder, {OUT} a file there.
messages::compile_reply compile_for_real(const messages::compile_request& request,
                                         const fs::path& root) {
  static std::atomic<int> counter{0};
  const fs::path dir = root / ("job" + std::to_string(counter++));
  fs::create_directories(dir);
  for (const auto& source : request.sources)
    rpl::testing::write_file(dir / source.name, source.content);
  workers::child_options o;
  o.cwd = dir;
  for (auto word : request.argv)
    o.argv.push_back(word == "{OUT}" ? (dir / "out.hsaco").string() : word);
  const auto outcome = workers::run_child(o, std::chrono::seconds(120));
  messages::compile_reply reply;
  reply.output = outcome.output;
  if (!outcome.succeeded()) {
    reply.status = messages::compile_status::failed;
    reply.error = "hipcc failed";
    return reply;
  }
  const auto bytes = rpl::testing::read_text(dir / "out.hsaco");
  reply.status = messages::compile_status::ok;
  reply.exit_code = 0;
  reply.artifact.assign(bytes.begin(), bytes.end());
  reply.has_artifact = true;
  return reply;
}

class candidate_screen_test : public ::testing::Test {
protected:
  void SetUp() override {
    if (!hipcc_present())
      GTEST_SKIP() << "hipcc is not installed (Debian's hipcc builds the gfx90a code objects)";
    rpl::testing::write_file(dir_ / "k.hip", kernel_source);
  }

  /// A code object of rpl_scale for gfx90a.
  fs::path build(int bound, int lds) {
    messages::compile_request request;
    request.sources = {{"k.hip", kernel_source}};
    request.argv =
        words(hipcc_build("-DBOUND=" + std::to_string(bound) + " -DLDS=" + std::to_string(lds)));
    const auto reply = compile_for_real(request, dir_.path());
    EXPECT_EQ(reply.status, messages::compile_status::ok) << reply.output;
    const fs::path out = dir_ / ("k_" + std::to_string(bound) + "_" + std::to_string(lds));
    rpl::testing::write_file(out, std::string(reply.artifact.begin(), reply.artifact.end()));
    return out;
  }

  static messages::kernel_launch launch(std::uint32_t block, std::uint32_t dynamic) {
    messages::kernel_launch l;
    l.symbol = "rpl_scale";
    l.block.x = block;
    l.grid.x = 65536 / block;
    l.shared_bytes = dynamic;
    return l;
  }

  rpl::testing::temp_dir dir_;
};

TEST_F(candidate_screen_test, reads_the_code_object_and_refuses_what_gfx90a_would) {
  const fs::path bounded = build(256, 40960);
  const messages::compile_reply no_resources; // hipcc reports none: the code object speaks
  const auto fine = screen_candidate(no_resources, bounded, launch(256, 0), "");
  EXPECT_TRUE(fine.refusal.empty()) << fine.refusal;
  EXPECT_TRUE(fine.skipped.empty()) << fine.skipped;
  EXPECT_EQ(fine.record["arch"], "gfx90a");
  EXPECT_EQ(fine.record["resources"]["max_flat_workgroup_size"], 256);
  EXPECT_EQ(fine.record["resources"]["static_lds_bytes"], 40960);
  EXPECT_GT(fine.record["occupancy"].get<double>(), 0.0);
  // The model strategy's static features: VGPRs, LDS (static + dynamic), scratch, occupancy.
  ASSERT_TRUE(fine.features.has_value());
  EXPECT_EQ((*fine.features)[0], fine.record["resources"]["vgpr_count"].get<double>());
  EXPECT_EQ((*fine.features)[1], 40960.0);
  EXPECT_EQ((*fine.features)[3], fine.record["occupancy"].get<double>());

  const auto too_big = screen_candidate(no_resources, bounded, launch(512, 0), "");
  EXPECT_NE(too_big.refusal.find("static screen: a workgroup of 512 threads > the kernel's "
                                 ".max_flat_workgroup_size of 256"),
            std::string::npos)
      << too_big.refusal;

  const auto lds = screen_candidate(no_resources, bounded, launch(128, 32768), "");
  EXPECT_NE(lds.refusal.find("LDS of 73728 bytes per workgroup (40960 static + 32768 dynamic) > "
                             "the 65536"),
            std::string::npos)
      << lds.refusal;

  // Without a launch (timing lanes) nothing is screened, and the reason says why.
  const auto whole = screen_candidate(no_resources, bounded, std::nullopt, "");
  EXPECT_TRUE(whole.refusal.empty());
  EXPECT_TRUE(whole.record.is_null());
  EXPECT_FALSE(whole.features.has_value());
  EXPECT_NE(whole.skipped.find("launch geometry is unknown"), std::string::npos);

  // An artifact that is not a code object, with no compiler report: let through, said why.
  rpl::testing::write_file(dir_ / "text", "not a code object");
  const auto text = screen_candidate(no_resources, dir_ / "text", launch(256, 0), "");
  EXPECT_TRUE(text.refusal.empty());
  EXPECT_NE(text.skipped.find("not an AMDGPU code object"), std::string::npos) << text.skipped;
}

TEST_F(candidate_screen_test, matches_the_launch_files_name_to_reported_names) {
  EXPECT_TRUE(kernel_name_matches("rpl_scale", "rpl_scale"));
  EXPECT_TRUE(kernel_name_matches("_Z9rpl_scalePKfPfi", "rpl_scale"));
  EXPECT_FALSE(kernel_name_matches("_Z10rpl_scale2PKfPfi", "rpl_scale"));
  EXPECT_FALSE(kernel_name_matches("rpl_scale2", "rpl_scale"));
}

/// An autotune session over BLOCK x DYN, through the tuning graph with hipcc for real and a fake
/// lane that measures anything: returns how many candidates reached the lane.
std::size_t run_session(const autotune_options& o, const fs::path& root) {
  // validate_inputs wants an NVIDIA GPU for --launch: the kernel lane's launch is set by hand.
  auto inputs = validate_inputs(o);
  inputs.lane_kind = "kernel";
  inputs.launch = stages::load_launch_spec(root / "k.launch.json");
  stages::check_launch_names(*inputs.launch, inputs.space.names);
  std::function<void(const autotune_progress&)> no_progress;
  std::atomic<bool> stop{false};
  autotune_session session(o, inputs, no_progress, stop);
  session.open();
  rpl::testing::fake_compile_service compiler(
      [&root](const messages::compile_request& r) { return compile_for_real(r, root); });
  auto lane = std::make_unique<rpl::testing::fake_lane>("fake0");
  lane->otherwise([](const messages::measure_request&) {
    messages::measure_result result;
    result.status = messages::measure_status::ok;
    result.samples_ns = {1000, 1001, 1002};
    return result;
  });
  auto* fake = lane.get();
  std::vector<std::unique_ptr<lane_worker>> lanes;
  lanes.push_back(std::make_unique<lane_worker>(std::move(lane), -1));
  {
    tuning_graph graph(session, compiler, lanes);
    graph.run(2);
  }
  return fake->calls();
}

TEST_F(candidate_screen_test, autotune_marks_refused_candidates_invalid_before_any_lane) {
  rpl::testing::write_file(dir_ / "space.json",
                           R"({"params": {"BLOCK": [128, 256, 512], "DYN": [0, 32768]}})");
  rpl::testing::write_file(dir_ / "k.launch.json", launch_file);
  autotune_options o;
  o.space_file = dir_ / "space.json";
  o.sources = {dir_ / "k.hip"};
  o.build_template = hipcc_build("-DBOUND=256 -DLDS=40960 -DBLOCK={BLOCK} -DDYN={DYN}");
  o.cmd_template = "{BIN}";
  o.allowed_compilers = {"hipcc"};
  o.db = dir_ / "screened.db";
  o.finalists = 0;

  // BLOCK 512 is over the kernel's __launch_bounds__(256); DYN 32768 on top of 40960 static bytes
  // is over gfx90a's 64 KiB. Only BLOCK 128 and 256 without dynamic LDS launch.
  EXPECT_EQ(run_session(o, dir_.path()), 2u);
  const auto reasons = rpl::testing::query_texts(
      o.db, "SELECT c.reason FROM candidates c WHERE c.status != 'ok' ORDER BY c.reason");
  ASSERT_EQ(reasons.size(), 4u);
  for (const auto& reason : reasons)
    EXPECT_EQ(reason.rfind("static screen: ", 0), 0u) << reason;
  EXPECT_EQ(rpl::testing::query_int(
                o.db, "SELECT COUNT(*) FROM candidates WHERE reason LIKE '%max_flat_workgroup%'"),
            2);
  EXPECT_EQ(rpl::testing::query_int(
                o.db, "SELECT COUNT(*) FROM candidates WHERE reason LIKE '%LDS of 73728 bytes%'"),
            2);
  // What the screen read and the theoretical occupancy are stored with the artifact.
  for (const auto& text :
       rpl::testing::query_texts(o.db, "SELECT resources_json FROM artifacts ORDER BY key")) {
    const auto resources = nlohmann::json::parse(text);
    ASSERT_EQ(resources.size(), 1u) << text;
    EXPECT_EQ(resources[0]["screen"]["arch"], "gfx90a") << text;
    EXPECT_TRUE(resources[0]["screen"].contains("occupancy")) << text;
  }

  // With the screen off, every built candidate goes to the lane.
  o.static_screen = false;
  o.db = dir_ / "unscreened.db";
  EXPECT_EQ(run_session(o, dir_.path()), 6u);
}

} // namespace
} // namespace rpl::engine
