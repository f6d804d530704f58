// `rocm-perf optimize` on a real NVIDIA GPU, as a user runs it: the rule proposer on
// examples/cuda/gemm.cu (with an LLM endpoint that hangs: it must end that proposer only), the
// anti-cheat catalogue (each cheat a scripted "LLM" answer, each rejected by the guard named for
// it), and an LLM compile error repaired within two rounds. The LLM is
// tests/tools/scripted_llm_server.py, a test double that answers from a script. Skips without an
// NVIDIA GPU, rpl-kernel-lane, nvcc, python3 or libclang.

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cuda_programs.hpp"
#include "stages/optimize/unified_diff.hpp"
#include "support/test_support.hpp"
#include "workers/devices/nvidia_gpu.hpp"
#include "workers/lanes/kernel/kernel_lane.hpp"
#include "workers/process/find_program.hpp"
#include "workers/source/clang_source.hpp"

namespace rpl {
namespace {

namespace fs = std::filesystem;
using rpl::testing::read_text;
using rpl::testing::write_file;

fs::path examples_dir() {
  if (const char* dir = std::getenv("RPL_SOURCE_DIR"); dir != nullptr) {
    return fs::path(dir) / "examples" / "cuda";
  }
  if (fs::exists("examples/cuda/gemm.cu")) {
    return fs::absolute("examples/cuda");
  }
  return rpl::testing::source_dir / "examples" / "cuda";
}

/// The scripted endpoint, a child process for the test's lifetime.
class scripted_server {
public:
  scripted_server(const fs::path& dir, const nlohmann::json& steps) {
    write_file(dir / "steps.json", steps.dump());
    const fs::path port_file = dir / "port";
    const std::string script =
        (examples_dir() / ".." / ".." / "tests" / "tools" / "scripted_llm_server.py")
            .lexically_normal()
            .string();
    const std::string steps_path = (dir / "steps.json").string();
    const std::string port_path = port_file.string();
    const std::string log_path = (dir / "requests.jsonl").string();
    pid_ = fork();
    if (pid_ == 0) {
      execlp("python3", "python3", script.c_str(), "--script", steps_path.c_str(), "--port-file",
             port_path.c_str(), "--log", log_path.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 100 && !fs::exists(port_file); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    port_ = read_text(port_file);
    while (!port_.empty() && (port_.back() == '\n' || port_.back() == ' ')) {
      port_.pop_back();
    }
  }
  ~scripted_server() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  std::string endpoint() const { return "http://127.0.0.1:" + port_ + "/v1"; }
  bool ok() const { return !port_.empty(); }

private:
  pid_t pid_ = -1;
  std::string port_;
};

std::string answer(const std::string& diff) {
  return "Here is the change.\n\n```diff\n" + diff + "```\n";
}

class OptimizeGpu : public ::testing::Test {
protected:
  void SetUp() override {
    if (!workers::nvidia_gpu_present()) {
      GTEST_SKIP() << "no NVIDIA GPU (/dev/nvidia0 and /proc/driver/nvidia are absent)";
    }
    std::vector<std::string> tried;
    rocm_perf_ = rpl::testing::find_rocm_perf(tried);
    if (rocm_perf_.empty()) {
      GTEST_SKIP() << "no rocm-perf";
    }
    if (std::string why; !workers::libclang_available(why)) {
      GTEST_SKIP() << "optimize's source guard needs libclang: " << why;
    }
    examples_ = examples_dir();
    gemm_ = read_text(examples_ / "gemm.cu");
    ASSERT_FALSE(gemm_.empty()) << "examples/cuda/gemm.cu not found; set RPL_SOURCE_DIR";
    arch_ = workers::local_nvidia_arch();
    if (arch_.empty()) {
      arch_ = "sm_90";
    }
  }

  std::vector<std::string> gemm_args(const fs::path& out) const {
    return {rocm_perf_.string(),
            "optimize",
            "--source",
            (examples_ / "gemm.cu").string(),
            "--kernel",
            "rpl_sgemm_tiled",
            "--launch",
            (examples_ / "gemm.launch.json").string(),
            "--build-template",
            "nvcc -cubin -arch=" + arch_ +
                " -DTILE_M={TILE_M} -DTILE_N={TILE_N} -DTILE_K={TILE_K} -DTHREAD_M={THREAD_M} "
                "-DTHREAD_N={THREAD_N} gemm.cu -o {OUT}",
            "--param",
            "TILE_M=64",
            "--param",
            "TILE_N=64",
            "--param",
            "TILE_K=16",
            "--param",
            "THREAD_M=4",
            "--param",
            "THREAD_N=4",
            "--arch",
            arch_,
            "--out",
            out.string(),
            "--json"};
  }

  /// gemm.cu with rpl_sgemm_tiled's body replaced (the call line, the kernel's own copy).
  std::string tiled_body(const std::string& body) const {
    std::string text = gemm_;
    const auto kernel = text.find("rpl_sgemm_tiled(const float*");
    const std::string call = "  sgemm_tile(a, b, c, m, n, k);\n";
    const auto at = text.find(call, kernel);
    EXPECT_NE(at, std::string::npos);
    text.replace(at, call.size(), body);
    return text;
  }

  nlohmann::json run(std::vector<std::string> args, int& exit_code) {
    workers::child_options options;
    options.argv = std::move(args);
    options.max_output_bytes = 32 << 20;
    const auto outcome = workers::run_child(options, std::chrono::minutes(9));
    exit_code = outcome.exit_code;
    const auto brace = outcome.output.find("{\n");
    const auto parsed = brace == std::string::npos
                            ? nlohmann::json()
                            : nlohmann::json::parse(outcome.output.substr(brace), nullptr, false);
    if (parsed.is_discarded() || parsed.is_null()) {
      ADD_FAILURE() << "no JSON report; output:\n" << outcome.output;
      return {};
    }
    return parsed;
  }

  fs::path rocm_perf_;
  fs::path examples_;
  std::string gemm_;
  std::string arch_;
};

TEST_F(OptimizeGpu, rule_proposer_on_gemm_with_a_hung_llm_endpoint) {
  rpl::testing::temp_dir dir;
  scripted_server server(dir.path(), nlohmann::json::array({{{"hang_s", 60}}, {{"hang_s", 60}}}));
  ASSERT_TRUE(server.ok());
  auto args = gemm_args(dir / "out");
  args.insert(args.end(), {"--proposer", "both", "--llm-endpoint", server.endpoint(), "--llm-model",
                           "scripted", "--llm-timeout-s", "3", "--iterations", "2", "--rounds",
                           "11", "--runs-per-round", "5", "--tune-budget", "8"});
  int exit_code = -1;
  const auto report = run(args, exit_code);
  ASSERT_EQ(exit_code, 0) << report.dump(2);
  const auto& k = report["kernels"][0];
  std::cout << "gemm rpl_sgemm_tiled: " << k["status"] << " "
            << k.value("final_comparison", nlohmann::json::object()).value("summary", "") << "\n";
  EXPECT_TRUE(k["status"] == "improved" || k["status"] == "unchanged") << k.dump(2);
  bool llm_error = false;
  for (const auto& e : k["proposer_errors"]) {
    llm_error = llm_error || e.get<std::string>().rfind("llm", 0) == 0;
  }
  EXPECT_TRUE(llm_error) << "the hung endpoint is reported: " << k["proposer_errors"].dump();
  int rule_attempts = 0;
  for (const auto& a : k["attempts"]) {
    if (a["proposer"] == "rule") {
      ++rule_attempts;
      EXPECT_NE(a["stage"], "compile") << "every rule proposal compiles: " << a.dump(2);
    }
  }
  EXPECT_GT(rule_attempts, 0) << "the rule proposer went on without the LLM";
  if (k["status"] == "improved") {
    const auto diff = read_text(dir / "out" / "rpl_sgemm_tiled.diff");
    const auto patched = stages::optimize::apply_unified_diff(gemm_, diff);
    EXPECT_TRUE(patched.ok) << patched.error;
    EXPECT_EQ(read_text(examples_ / "gemm.cu"), gemm_) << "no --apply: the file is untouched";
  }
}

TEST_F(OptimizeGpu, vector_loads_and_unroll_knobs_of_pl_scale_validate_and_are_measured) {
  // The rule proposer's float4 rewrite of pipeline.cu's grid-stride pl_scale must compute what
  // the original computes at the launch size, half of it and an odd size (its tail loop), and the
  // unroll knob's configurations are each validated and timed alone.
  rpl::testing::temp_dir dir;
  int exit_code = -1;
  const auto report =
      run({rocm_perf_.string(), "optimize", "--source", (examples_ / "pipeline.cu").string(),
           "--kernel", "pl_scale", "--launch", (examples_ / "pl_scale.launch.json").string(),
           "--build-template", "nvcc -cubin -arch=" + arch_ + " pipeline.cu -o {OUT}", "--arch",
           arch_, "--out", (dir.path() / "out").string(), "--json", "--iterations", "2",
           "--rounds", "6", "--runs-per-round", "3", "--tune-budget", "3"},
          exit_code);
  ASSERT_EQ(exit_code, 0) << report.dump(2);
  const auto& k = report["kernels"][0];
  bool vector_seen = false;
  int configurations = 0;
  for (const auto& a : k["attempts"]) {
    const std::string id = a["proposal_id"];
    if (id.rfind("rule:vector:", 0) == 0) {
      vector_seen = true;
      std::cout << "pl_scale " << id << ": " << a["stage"] << " " << a["verdict"] << " "
                << a["detail"] << "\n";
      EXPECT_TRUE(a["stage"] == "measurement" || a["stage"] == "accepted") << a.dump(2);
      EXPECT_NE(a["validation"].dump().find("odd size"), std::string::npos) << a.dump(2);
    }
    if (a["stage"] == "tuning" && a["verdict"] == "measured") {
      ++configurations;
    }
  }
  EXPECT_TRUE(vector_seen) << k.dump(2);
  EXPECT_EQ(configurations, 3) << k.dump(2);
}

TEST_F(OptimizeGpu, every_cheat_of_the_catalogue_is_rejected_by_its_guard) {
  // name → (source, the guard that must catch it)
  const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> cheats = {
      {"cache in a device variable",
       {tiled_body("  __device__ static int rpl_seen;\n  if (rpl_seen) return;\n"
                   "  sgemm_tile(a, b, c, m, n, k);\n  rpl_seen = 1;\n"),
        "new_global"}},
      {"cache in the output buffer",
       {tiled_body("  if (c[0] != 0.0f) return;\n  sgemm_tile(a, b, c, m, n, k);\n"),
        "validation:launch_size"}},
      {"only the benchmark's tile multiples",
       {tiled_body("  if (m % 64 != 0 || n % 64 != 0 || k % 16 != 0) return;\n"
                   "  sgemm_tile(a, b, c, m, n, k);\n"),
        "validation:odd_size"}},
      {"less work at the timed size",
       {tiled_body("  if (m == 2048 && blockIdx.y >= gridDim.y / 2) return;\n"
                   "  sgemm_tile(a, b, c, m, n, k);\n"),
        "validation:launch_size"}},
      {"the work launched elsewhere",
       {tiled_body("  if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0)\n"
                   "    rpl_sgemm_reference<<<1, 1>>>(a, b, c, m, n, k);\n"),
        "device_launch"}},
      {"the original's output read back",
       {tiled_body("  (void)a; (void)b; (void)c;\n"), "validation:launch_size"}},
      {"a changed signature",
       {[&] {
          std::string text = gemm_;
          const auto kernel = text.find("rpl_sgemm_tiled(const float*");
          const auto at = text.find("int k)", kernel);
          text.replace(at, 6, "long long k)");
          return text;
        }(),
        "signature_changed"}},
      {"a new global",
       {[&] {
          std::string text =
              tiled_body("  rpl_calls = rpl_calls + 1;\n  sgemm_tile(a, b, c, m, n, k);\n");
          const auto at =
              text.find("extern \"C\" __global__ void __launch_bounds__(block_threads)\n"
                        "    rpl_sgemm_tiled");
          text.insert(at, "__device__ int rpl_calls;\n");
          return text;
        }(),
        "new_global"}},
      {"inline assembly",
       {tiled_body("  asm volatile(\"\");\n  sgemm_tile(a, b, c, m, n, k);\n"), "inline_asm"}},
  };
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& [name, cheat] : cheats) {
    steps.push_back(
        {{"content", answer(stages::optimize::make_unified_diff(gemm_, cheat.first, "gemm.cu"))}});
  }
  rpl::testing::temp_dir dir;
  scripted_server server(dir.path(), steps);
  ASSERT_TRUE(server.ok());
  auto args = gemm_args(dir / "out");
  args.insert(args.end(), {"--proposer", "llm", "--llm-endpoint", server.endpoint(), "--llm-model",
                           "scripted", "--iterations", std::to_string(cheats.size()), "--rounds",
                           "6", "--runs-per-round", "3"});
  int exit_code = -1;
  const auto report = run(args, exit_code);
  ASSERT_EQ(exit_code, 0) << report.dump(2);
  const auto& attempts = report["kernels"][0]["attempts"];
  ASSERT_EQ(attempts.size(), cheats.size()) << attempts.dump(2);
  for (std::size_t i = 0; i < cheats.size(); ++i) {
    EXPECT_EQ(attempts[i]["verdict"], "rejected") << cheats[i].first << ": " << attempts[i].dump(2);
    EXPECT_EQ(attempts[i]["guard"], cheats[i].second.second)
        << cheats[i].first << ": " << attempts[i].dump(2);
    std::cout << "cheat '" << cheats[i].first << "': " << attempts[i]["stage"].get<std::string>()
              << " / " << attempts[i]["guard"].get<std::string>() << "\n";
  }
  EXPECT_EQ(report["kernels"][0]["status"], "unchanged");
}

TEST_F(OptimizeGpu, an_llm_compile_error_is_repaired_within_two_rounds) {
  std::string broken = tiled_body("  int rpl_oops = ;\n  sgemm_tile(a, b, c, m, n, k);\n");
  std::string fixed = tiled_body("  sgemm_tile(a, b, c, m, n, k);\n  __syncthreads();\n");
  nlohmann::json steps = nlohmann::json::array(
      {{{"content", answer(stages::optimize::make_unified_diff(gemm_, broken, "gemm.cu"))}},
       {{"content", answer(stages::optimize::make_unified_diff(gemm_, fixed, "gemm.cu"))}}});
  rpl::testing::temp_dir dir;
  scripted_server server(dir.path(), steps);
  ASSERT_TRUE(server.ok());
  auto args = gemm_args(dir / "out");
  args.insert(args.end(),
              {"--proposer", "llm", "--llm-endpoint", server.endpoint(), "--llm-model", "scripted",
               "--iterations", "1", "--rounds", "6", "--runs-per-round", "3"});
  int exit_code = -1;
  const auto report = run(args, exit_code);
  ASSERT_EQ(exit_code, 0) << report.dump(2);
  const auto& attempts = report["kernels"][0]["attempts"];
  ASSERT_GE(attempts.size(), 2u) << attempts.dump(2);
  EXPECT_EQ(attempts[0]["stage"], "compile") << attempts[0].dump(2);
  EXPECT_EQ(attempts[1]["repair_round"], 1);
  EXPECT_NE(attempts[1]["stage"], "compile") << attempts[1].dump(2);
  // The repair request carried the compiler's error.
  const auto log = read_text(dir / "requests.jsonl");
  EXPECT_NE(log.find("rpl_oops"), std::string::npos);
}

} // namespace
} // namespace rpl
