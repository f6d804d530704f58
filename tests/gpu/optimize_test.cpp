// `rocm-perf optimize` on a real NVIDIA GPU, as a user runs it: the rule proposer on
// examples/cuda/gemm.cu (with an LLM endpoint that hangs: it must end that proposer only), the
// anti-cheat catalogue (each cheat a scripted "LLM" answer, each rejected by the guard named for
// it), an LLM compile error repaired within two rounds, and a remote LLM proposer (`worker
// propose --kind llm` started by hand, connected to `--listen` over CurveZMQ with its own keys
// and the only copy of the API key). The LLM is tests/tools/scripted_llm_server.py, a test double
// that answers from a script. Skips without an NVIDIA GPU, rpl-kernel-lane, nvcc, python3 or
// libclang.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cuda_programs.hpp"
#include "stages/optimize/unified_diff.hpp"
#include "support/test_support.hpp"
#include "workers/devices/nvidia_gpu.hpp"
#include "workers/lanes/kernel/kernel_lane.hpp"
#include "workers/process/child_process.hpp"
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
  /// With `key`: the server answers 401 unless a request carries it (`--require-key`); the key is
  /// put in the server's environment only, not in this process's.
  scripted_server(const fs::path& dir, const nlohmann::json& steps, const std::string& key = {}) {
    write_file(dir / "steps.json", steps.dump());
    const fs::path port_file = dir / "port";
    const std::string script =
        (examples_dir() / ".." / ".." / "tests" / "tools" / "scripted_llm_server.py")
            .lexically_normal()
            .string();
    const std::string steps_path = (dir / "steps.json").string();
    const std::string port_path = port_file.string();
    const std::string log_path = (dir / "requests.jsonl").string();
    std::vector<std::string> args = {"python3",     script,    "--script", steps_path,
                                     "--port-file", port_path, "--log",    log_path};
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::string(*e).rfind("RPL_LLM_API_KEY=", 0) != 0) {
        env.emplace_back(*e);
      }
    }
    if (!key.empty()) {
      args.emplace_back("--require-key");
      env.push_back("RPL_LLM_API_KEY=" + key);
    }
    // Built before fork: the child only execs.
    std::vector<char*> argv, envp;
    for (auto& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    for (auto& e : env) {
      envp.push_back(e.data());
    }
    envp.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      execvpe("python3", argv.data(), envp.data());
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

  /// gemm.cu with rpl_sgemm_tiled calling a private copy of sgemm_tile whose A panel has one
  /// padding element per row (the rule proposer's bank-conflict change; sgemm_tile itself is
  /// shared with sgemm_tiled, so the source guard allows only a copy that the target alone calls).
  /// `edits` change the copy further (text → replacement, each found once); `before` and `after`
  /// go around the call in the kernel's body. The padding makes it faster, so that a cheat built
  /// on it reaches every guard, the sanitizer pass included.
  std::string padded_a_panel(const std::vector<std::pair<std::string, std::string>>& edits = {},
                             const std::string& before = "",
                             const std::string& after = "") const {
    const auto begin = gemm_.find("__device__ __forceinline__ void sgemm_tile(");
    const auto end = gemm_.find("\n}\n", begin);
    EXPECT_NE(begin, std::string::npos);
    EXPECT_NE(end, std::string::npos);
    std::string copy = gemm_.substr(begin, end + 3 - begin);
    std::vector<std::pair<std::string, std::string>> all = {
        {"void sgemm_tile(", "void rpl_sgemm_tile_padded("},
        {"__shared__ float as[TILE_K][TILE_M];", "__shared__ float as[TILE_K][TILE_M + 1];"}};
    all.insert(all.end(), edits.begin(), edits.end());
    for (const auto& [from, to] : all) {
      const auto at = copy.find(from);
      EXPECT_NE(at, std::string::npos) << from;
      if (at != std::string::npos) {
        copy.replace(at, from.size(), to);
      }
    }
    std::string text = tiled_body(before + "  rpl_sgemm_tile_padded(a, b, c, m, n, k);\n" + after);
    const auto kernel = text.find("extern \"C\" __global__ void __launch_bounds__(block_threads)\n"
                                  "    rpl_sgemm_tiled");
    EXPECT_NE(kernel, std::string::npos);
    text.insert(kernel, copy + "\n");
    return text;
  }

public:
  nlohmann::json run(std::vector<std::string> args,
                     int& exit_code,
                     std::vector<std::pair<std::string, std::optional<std::string>>> env = {}) {
    workers::child_options options;
    options.argv = std::move(args);
    options.environment = std::move(env);
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

public:
  const std::string& arch() const { return arch_; }
  const fs::path& rocm_perf() const { return rocm_perf_; }
  /// A scripted endpoint answering `content` once, for the test's lifetime.
  void serve(const fs::path& dir, const std::string& content) {
    server_ =
        std::make_unique<scripted_server>(dir, nlohmann::json::array({{{"content", content}}}));
    ASSERT_TRUE(server_->ok());
  }
  std::string endpoint() const { return server_ ? server_->endpoint() : std::string(); }

protected:
  fs::path rocm_perf_;
  fs::path examples_;
  std::string gemm_;
  std::string arch_;
  std::unique_ptr<scripted_server> server_;
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
  const auto report = run({rocm_perf_.string(),
                           "optimize",
                           "--source",
                           (examples_ / "pipeline.cu").string(),
                           "--kernel",
                           "pl_scale",
                           "--launch",
                           (examples_ / "pl_scale.launch.json").string(),
                           "--build-template",
                           "nvcc -cubin -arch=" + arch_ + " pipeline.cu -o {OUT}",
                           "--arch",
                           arch_,
                           "--out",
                           (dir.path() / "out").string(),
                           "--json",
                           "--iterations",
                           "2",
                           "--rounds",
                           "6",
                           "--runs-per-round",
                           "3",
                           "--tune-budget",
                           "3"},
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

TEST_F(OptimizeGpu, memory_race_and_input_cheats_are_rejected_by_the_lanes_checks_and_sanitizer) {
  // Each cheat rides on the padded A panel (1.2x faster), so nothing but its flaw stops it. The
  // guards that may catch it, first the expected one (a race or a stale read shows in the outputs
  // only now and then: validation may see it before the sanitizer does).
  const std::string first_block = "blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0";
  const std::vector<std::pair<std::string, std::pair<std::string, std::vector<std::string>>>>
      cheats = {
          {"a write past the end, every output right",
           {padded_a_panel({}, "",
                           "  if (" + first_block +
                               ") c[static_cast<long long>(m) * n + 1] = 0.0f;\n"),
            {"memory:out_of_bounds"}}},
          {"a read past the end",
           {padded_a_panel({}, "  const float rpl_past = a[static_cast<long long>(m) * k + 3];\n",
                           "  if (rpl_past == 12345.0f) c[0] = 1.0f;\n"),
            {"sanitizer:memcheck"}}},
          {"an input overwritten",
           {padded_a_panel({}, "", "  if (" + first_block + ") const_cast<float*>(b)[0] = 0.5f;\n"),
            {"inputs_modified"}}},
          {"a removed barrier",
           {padded_a_panel({{"      }\n    }\n    __syncthreads();\n  }", "      }\n    }\n  }"}}),
            {"sanitizer:racecheck", "validation:launch_size", "nondeterministic",
             "validation:smaller_size", "validation:odd_size", "validation:tiny_size",
             "validation:misaligned"}}},
          // Both panels: a stale A element meets a zeroed B element (and the reverse) only where
          // the other panel keeps its zero fill, which makes the product 0 and the outputs right
          // unless the stale value is NaN or infinite (docs/optimize.md: not caught).
          {"stale shared memory at the edges",
           {padded_a_panel(
                {{"as[kk][r] = (gr < m && gk < k) ? a[static_cast<long long>(gr) * k + gk] "
                  ": 0.0f;",
                  "if (gr < m && gk < k) as[kk][r] = a[static_cast<long long>(gr) * k + gk];"},
                 {"bs[kk][cc] = (gk < k && gc < n) ? b[static_cast<long long>(gk) * n + gc] "
                  ": 0.0f;",
                  "if (gk < k && gc < n) bs[kk][cc] = b[static_cast<long long>(gk) * n + gc];"}}),
            {"validation:odd_size", "nondeterministic", "sanitizer:initcheck",
             "validation:tiny_size", "validation:misaligned", "validation:smaller_size"}}},
          // Outputs cached by pointer: a block whose first outputs already look computed (not
          // zero, small like a 2048-term sum of products of [-1, 1] values; poison is up to 1000)
          // skips its work. Right from every fresh buffer, far faster in the timed launches.
          {"skipping the work when the outputs look computed",
           {padded_a_panel({}, R"(  __shared__ int rpl_done;
  if (threadIdx.x == 0) {
    const long long r = static_cast<long long>(blockIdx.y) * TILE_M;
    const long long q = static_cast<long long>(blockIdx.x) * TILE_N;
    int computed = 0;
    for (int i = 0; i < 8; ++i) {
      const float v = (r + i < m && q + i < n) ? c[(r + i) * n + q + i] : 0.0f;
      computed += (v != 0.0f && fabsf(v) < 100.0f) ? 1 : 0;
    }
    rpl_done = computed == 8;
  }
  __syncthreads();
  if (rpl_done) return;
)"),
            {"timed_phase"}}},
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
    const auto& a = attempts[i];
    const auto& allowed = cheats[i].second.second;
    EXPECT_EQ(a["verdict"], "rejected") << cheats[i].first << ": " << a.dump(2);
    const std::string guard = a.value("guard", "");
    EXPECT_NE(std::find(allowed.begin(), allowed.end(), guard), allowed.end())
        << cheats[i].first << ": " << a.dump(2);
    std::cout << "cheat '" << cheats[i].first << "': " << a["stage"].get<std::string>() << " / "
              << guard << ": " << a.value("detail", "").substr(0, 300) << "\n";
  }
  EXPECT_EQ(report["kernels"][0]["status"], "unchanged");
}

TEST_F(OptimizeGpu, the_padded_panel_is_accepted_after_a_clean_sanitizer_pass) {
  // The right change of the catalogue's cheats: accepted, every tool clean, its time recorded.
  rpl::testing::temp_dir dir;
  scripted_server server(
      dir.path(), nlohmann::json::array({{{"content", answer(stages::optimize::make_unified_diff(
                                                          gemm_, padded_a_panel(), "gemm.cu"))}}}));
  ASSERT_TRUE(server.ok());
  auto args = gemm_args(dir / "out");
  args.insert(args.end(),
              {"--proposer", "llm", "--llm-endpoint", server.endpoint(), "--llm-model", "scripted",
               "--iterations", "1", "--rounds", "6", "--runs-per-round", "3"});
  int exit_code = -1;
  const auto report = run(args, exit_code);
  ASSERT_EQ(exit_code, 0) << report.dump(2);
  const auto& a = report["kernels"][0]["attempts"][0];
  ASSERT_EQ(a["verdict"], "accepted") << a.dump(2);
  EXPECT_TRUE(a.value("sanitizer_checked", false)) << a.dump(2);
  for (const auto& c : a["validation"]) {
    std::cout << "padded panel: " << c.value("case", "") << ": " << c.value("status", "")
              << (c.contains("seconds") ? " in " + std::to_string(c["seconds"].get<double>()) + " s"
                                        : std::string())
              << "\n";
    EXPECT_NE(c.value("status", ""), "finding") << c.dump(2);
  }
  std::cout << "padded panel speed-up " << a.value("speedup", 0.0) << "\n";
}

/// A small application for optimize's application mode: slow_scale iterates acc = acc / 2 + v
/// 4096 times, where 64 already reach its fixed point (2v, bit for bit), so `body` (the loop and
/// what follows it) with 64 is the same output, far sooner.
std::string converging_app(const std::string& body) {
  return R"(#include <cmath>
#include <cstdio>
#include <vector>
__global__ void slow_scale(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = in[i];
    float acc = 0.0f;
)" + body +
         R"(  }
}
int main() {
  const int n = 1 << 20;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i % 1000) / 1000.0f;
  float* in = nullptr;
  float* out = nullptr;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  for (int r = 0; r < 4; ++r) slow_scale<<<(n + 255) / 256, 256>>>(in, out, n);
  cudaMemcpy(host.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost);
  float expected = 0.0f; // the same iteration on the host (fmaf is exact IEEE on both)
  for (int r = 0; r < 4096; ++r) expected = std::fmaf(expected, 0.5f, 999 / 1000.0f);
  const bool right = host[999] == expected;
  std::printf("slow_scale: %s\n", right ? "right" : "WRONG");
  return right && cudaGetLastError() == cudaSuccess ? 0 : 1;
}
)";
}

const std::string slow_loop = "    for (int r = 0; r < 4096; ++r) acc = fmaf(acc, 0.5f, v);\n"
                              "    out[i] = acc;\n";

/// optimize -- ./slow --top 1 --app-build --apply, the scripted LLM proposing `change` (the loop
/// and what follows it). Returns the report; `source` is the file as the run left it.
nlohmann::json run_app_mode(OptimizeGpu& test,
                            const fs::path& dir,
                            const std::string& change,
                            std::string& source,
                            int& exit_code);

TEST_F(OptimizeGpu, a_read_past_the_end_accepted_on_the_replay_is_refused_in_the_application) {
  // The replay lane cannot run under compute-sanitizer and does not see reads: the faster loop
  // with a read past `in` is accepted there. The application pass (--app-build: the application
  // rebuilt with the change, run under memcheck watching slow_scale) finds the read, refuses the
  // change, and --apply leaves the source as it was.
  rpl::testing::temp_dir dir;
  std::string source;
  int exit_code = -1;
  const auto report = run_app_mode(*this, dir.path(),
                                   "    const float rpl_past = in[n + 3];\n"
                                   "    for (int r = 0; r < 64; ++r) acc = fmaf(acc, 0.5f, v);\n"
                                   "    out[i] = rpl_past == 12345.0f ? 0.0f : acc;\n",
                                   source, exit_code);
  ASSERT_EQ(exit_code, 0) << report.dump(2);
  EXPECT_EQ(source, converging_app(slow_loop)) << "--apply wrote a change with a finding";
  const auto& k = report["kernels"][0];
  EXPECT_EQ(k["status"], "unchanged") << k.dump(2);
  ASSERT_FALSE(k["attempts"].empty());
  const auto& a = k["attempts"][0];
  EXPECT_EQ(a["verdict"], "rejected") << a.dump(2);
  EXPECT_EQ(a["stage"], "sanitizer") << a.dump(2);
  EXPECT_EQ(a["guard"], "sanitizer:memcheck") << a.dump(2);
  EXPECT_NE(a.value("detail", "").find("Invalid __global__ read"), std::string::npos) << a.dump(2);
  const auto& application = report["application"];
  EXPECT_TRUE(application["sanitizer"]["refused"].contains("slow_scale")) << application.dump(2);
  EXPECT_EQ(application.value("not_rebuilt", ""),
            "every accepted change was refused by the sanitizer pass: the application was not "
            "rebuilt");
  std::cout << "refused in the application: " << a.value("detail", "").substr(0, 300) << "\n";
}

TEST_F(OptimizeGpu, a_right_change_is_sanitizer_checked_in_the_application_and_applied) {
  rpl::testing::temp_dir dir;
  std::string source;
  int exit_code = -1;
  const std::string fast = "    for (int r = 0; r < 64; ++r) acc = fmaf(acc, 0.5f, v);\n"
                           "    out[i] = acc;\n";
  const auto report = run_app_mode(*this, dir.path(), fast, source, exit_code);
  ASSERT_EQ(exit_code, 0) << report.dump(2);
  const auto& k = report["kernels"][0];
  ASSERT_EQ(k["status"], "improved") << k.dump(2);
  const auto& a = k["attempts"][0];
  EXPECT_TRUE(a.value("sanitizer_checked", false)) << a.dump(2);
  for (const auto& c : a["validation"])
    if (c.value("scope", "") == "application")
      std::cout << "application pass: " << c.value("case", "") << ": " << c.value("status", "")
                << " in " << c.value("seconds", 0.0) << " s\n";
  EXPECT_EQ(source, converging_app(fast)) << "--apply wrote the accepted change";
  EXPECT_GT(report["application"].value("gpu_time_speedup", 0.0), 1.5)
      << report["application"].dump(2);
  std::cout << "application pass: " << report["application"]["sanitizer"].dump() << "\n";
}

nlohmann::json run_app_mode(OptimizeGpu& test,
                            const fs::path& dir,
                            const std::string& change,
                            std::string& source,
                            int& exit_code) {
  const fs::path nvcc = "/usr/local/cuda/bin/nvcc";
  std::error_code ec;
  if (!fs::exists(nvcc, ec)) {
    ADD_FAILURE() << "no " << nvcc << " to build the application";
    return {};
  }
  const fs::path tree = dir / "app";
  fs::create_directories(tree);
  const std::string original = converging_app(slow_loop);
  rpl::testing::write_file(tree / "slow.cu", original);
  const std::string arch = test.arch();
  workers::child_options build;
  build.argv = {nvcc.string(),           "-O3", "-arch=" + arch, (tree / "slow.cu").string(), "-o",
                (tree / "slow").string()};
  EXPECT_EQ(workers::run_child(build, std::chrono::minutes(2)).exit_code, 0);
  test.serve(dir, answer(stages::optimize::make_unified_diff(original, converging_app(change),
                                                             "slow.cu")));
  auto report = test.run({test.rocm_perf().string(),
                          "optimize",
                          "--top",
                          "1",
                          "--source",
                          (tree / "slow.cu").string(),
                          "--build-template",
                          "nvcc -cubin -arch=" + arch + " {SOURCE} -o {OUT}",
                          "--app-build",
                          nvcc.string() + " -O3 -arch=" + arch + " slow.cu -o slow",
                          "--proposer",
                          "llm",
                          "--llm-endpoint",
                          test.endpoint(),
                          "--llm-model",
                          "scripted",
                          "--iterations",
                          "1",
                          "--rounds",
                          "6",
                          "--runs-per-round",
                          "3",
                          "--apply",
                          "--out",
                          (dir / "out").string(),
                          "--json",
                          "--",
                          (tree / "slow").string()},
                         exit_code);
  source = rpl::testing::read_text(tree / "slow.cu");
  return report;
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

TEST_F(OptimizeGpu, a_remote_llm_proposer_over_curve_is_asked_and_its_change_measured) {
  // The engine listens with CurveZMQ and starts no LLM proposer of its own (no --llm-endpoint);
  // the proposer is started by hand, as on another host, with its keys, its endpoint and the only
  // copy of the API key.
  const std::string api_key = "sk-remote-gpu-test-41d7e0";
  rpl::testing::temp_dir dir;
  for (const char* who : {"engine", "proposer"}) {
    workers::child_options keys;
    keys.argv = {rocm_perf_.string(), "keys", "generate", (dir / who).string()};
    const auto made = workers::run_child(keys, std::chrono::seconds(30));
    ASSERT_EQ(made.exit_code, 0) << made.output;
  }
  write_file(dir / "allow",
             read_text(dir / "proposer" / "public.key").substr(0, 40) + " remote-llm\n");
  const std::string padded = padded_a_panel();
  scripted_server server(
      dir.path(),
      nlohmann::json::array(
          {{{"content", answer(stages::optimize::make_unified_diff(gemm_, padded, "gemm.cu"))}}}),
      api_key);
  ASSERT_TRUE(server.ok());
  // A port that was free a moment ago (the engine is another process: it binds it itself).
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(rpl::testing::free_port());

  workers::child_options proposer_options;
  proposer_options.argv = {rocm_perf_.string(),
                           "worker",
                           "propose",
                           "--kind",
                           "llm",
                           "--connect",
                           endpoint,
                           "--reconnect-ms",
                           "200",
                           "--reconnect-max-ms",
                           "1000",
                           "--curve-keys",
                           (dir / "proposer").string(),
                           "--server-key",
                           (dir / "engine" / "public.key").string(),
                           "--llm-endpoint",
                           server.endpoint(),
                           "--llm-model",
                           "remote-scripted",
                           "--llm-timeout-s",
                           "60"};
  proposer_options.environment = {{"RPL_LLM_API_KEY", api_key}};
  proposer_options.max_output_bytes = 1 << 20;
  auto proposer = workers::child_process::spawn(proposer_options);
  ASSERT_TRUE(proposer.launched());

  auto args = gemm_args(dir / "out");
  args.insert(args.end(),
              {"--proposer", "llm", "--listen", endpoint, "--curve-keys", (dir / "engine").string(),
               "--allow-keys", (dir / "allow").string(), "--llm-timeout-s", "60", "--iterations",
               "1", "--rounds", "11", "--runs-per-round", "5"});
  int exit_code = -1;
  const auto report = run(args, exit_code, {{"RPL_LLM_API_KEY", std::nullopt}});
  ::kill(proposer.pid(), SIGTERM);
  const auto proposer_outcome = proposer.finish();
  ASSERT_EQ(exit_code, 0) << report.dump(2) << "\nproposer:\n" << proposer_outcome.output;
  const auto& k = report["kernels"][0];
  std::cout << "gemm rpl_sgemm_tiled, remote proposer: " << k["status"] << " "
            << k.value("final_comparison", nlohmann::json::object()).value("summary", "") << "\n";
  EXPECT_TRUE(k["proposer_errors"].empty()) << k["proposer_errors"].dump();
  const auto& attempts = k["attempts"];
  ASSERT_EQ(attempts.size(), 1u) << attempts.dump(2) << "\nproposer:\n" << proposer_outcome.output;
  const auto& a = attempts[0];
  // From the remote process: its model name, and its worker id (host:pid).
  EXPECT_EQ(a["proposer"], "llm:remote-scripted") << a.dump(2);
  const std::string worker = a.value("worker", "");
  ASSERT_NE(worker.rfind(':'), std::string::npos) << a.dump(2);
  EXPECT_EQ(std::stoi(worker.substr(worker.rfind(':') + 1)), proposer.pid()) << a.dump(2);
  // Through every guard and validation to the measurement.
  EXPECT_TRUE(a["stage"] == "measurement" || a["stage"] == "accepted") << a.dump(2);
  EXPECT_TRUE(a["verdict"] == "accepted" || a["verdict"] == "slower" ||
              a["verdict"] == "within_noise")
      << a.dump(2);
  EXPECT_FALSE(a["measurement"].is_null()) << a.dump(2);
  EXPECT_GT(a["speedup"].get<double>(), 0.0) << a.dump(2);
  if (k["status"] == "improved") {
    const auto patched = stages::optimize::apply_unified_diff(
        gemm_, read_text(dir / "out" / "rpl_sgemm_tiled.diff"));
    ASSERT_TRUE(patched.ok) << patched.error;
    EXPECT_EQ(patched.text, padded);
  }
  // The scripted LLM was asked once, with the key that only the proposer's process had.
  const auto log = read_text(dir / "requests.jsonl");
  EXPECT_NE(log.find("\"authorization_ok\": true"), std::string::npos) << log;
  EXPECT_EQ(log.find("\"authorization_ok\": false"), std::string::npos) << log;
}

} // namespace
} // namespace rpl
