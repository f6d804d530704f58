// The artifact guard on real compiler output: one source, compiled by nvcc (cubins) and by hipcc
// (gfx90a code objects) in five variants chosen by -D macros. ctest runs each test in a process
// of its own, so the variants are kept in the build tree, keyed by the compiler (path, size, time)
// and what is compiled: compiled once per build, not once per test (14 tests x 6 compiles cost
// about 140 s of CI per build). Skips, saying why, where a compiler is not installed.

#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <system_error>
#include <unistd.h>

#include <gtest/gtest.h>

#include "stages/optimize/artifact_guard.hpp"
#include "support/test_support.hpp"
#include "workers/process/find_program.hpp"

namespace rpl::stages::optimize {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

/// `scale` is extern "C", so a parameter type change keeps its symbol; `tiled` is mangled.
constexpr const char* kernels_source = R"(
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#endif
__constant__ float coeffs[16];
#ifdef WITH_GLOBAL
__device__ float scratch[4];
#endif
#ifdef LONG_PARAM
extern "C" __global__ void scale(float* x, long long n) {
#else
extern "C" __global__ void scale(float* x, int n) {
#endif
#ifdef LOOP2
  for (int i = threadIdx.x; i < n; i += 2 * blockDim.x) {
    x[i] *= coeffs[i % 16];
    if (i + blockDim.x < n) x[i + blockDim.x] *= coeffs[(i + blockDim.x) % 16];
  }
#else
  for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] *= coeffs[i % 16];
#endif
#ifdef WITH_GLOBAL
  scratch[threadIdx.x % 4] = x[0];
#endif
}
__global__ void tiled(const float* a, float* b, char c, double d) {
  b[threadIdx.x] = a[threadIdx.x] * c + d;
}
#ifdef EXTRA
__global__ void extra(float* x) { x[threadIdx.x] = 1.0f; }
#endif
)";

const std::vector<std::pair<std::string, std::string>> variants = {
    {"base", "-DBASE"},       {"loop", "-DLOOP2"},  {"global", "-DWITH_GLOBAL"},
    {"long", "-DLONG_PARAM"}, {"extra", "-DEXTRA"}, {"host", "-DBASE"}};

/// Every variant's artifact bytes for one compiler, or why there are none.
struct compiled {
  std::string compiler, skip_reason, error;
  std::map<std::string, std::string> artifacts;
  std::span<const std::byte> operator[](const std::string& variant) const {
    return std::as_bytes(std::span<const char>(artifacts.at(variant)));
  }
};

/// A device-only artifact (cubin, bare code object), or for `host` the host object file that
/// embeds it (`.nv_fatbin`, `.hip_fatbin`).
std::vector<std::string> compile_argv(const std::string& compiler,
                                      const std::string& variant,
                                      const std::string& define,
                                      const std::string& output) {
  const bool host = variant == "host";
  if (compiler.ends_with("nvcc")) {
    return {compiler, host ? "-c" : "-cubin", "-arch=sm_90", define, "k.cu", "-o", output};
  }
  if (host) {
    return {compiler, "--offload-arch=gfx90a", define, "-c", "k.hip", "-o", output};
  }
  return {compiler,
          "--offload-arch=gfx90a",
          "--cuda-device-only",
          "--no-gpu-bundle-output",
          define,
          "-c",
          "k.hip",
          "-o",
          output};
}

/// Where one compiler's variants are kept: build/tests/artifact-guard-fixtures/<key>, the key a
/// hash of the compiler file's identity and every compile's arguments and source.
fs::path fixture_cache(const std::string& compiler) {
  std::error_code ec;
  std::string identity = compiler + '\n' + kernels_source;
  identity += std::to_string(fs::file_size(compiler, ec)) + '\n';
  identity += std::to_string(fs::last_write_time(compiler, ec).time_since_epoch().count()) + '\n';
  for (const auto& [name, define] : variants) {
    for (const auto& word : compile_argv(compiler, name, define, name + ".bin")) {
      identity += word + ' ';
    }
  }
  const auto key = std::hash<std::string>{}(identity);
  return fs::path(RPL_BINARY).parent_path().parent_path() / "tests" / "artifact-guard-fixtures" /
         (fs::path(compiler).filename().string() + "-" + std::to_string(key));
}

compiled read_variants(const std::string& compiler, const fs::path& dir) {
  compiled out;
  out.compiler = compiler;
  for (const auto& [name, define] : variants) {
    out.artifacts[name] = rpl::testing::read_text(dir / (name + ".bin"));
  }
  return out;
}

compiled compile_variants(const std::string& compiler) {
  const fs::path kept = fixture_cache(compiler);
  if (fs::exists(kept / "complete")) {
    return read_variants(compiler, kept);
  }
  compiled out;
  out.compiler = compiler;
  // Compiled beside the cache and renamed into place whole, so that a test running at the same
  // time never reads half a set; the one that loses the rename drops its copy.
  const fs::path sub = kept.string() + ".tmp" + std::to_string(::getpid());
  fs::remove_all(sub);
  fs::create_directories(sub);
  rpl::testing::write_file(sub / "k.cu", kernels_source);
  rpl::testing::write_file(sub / "k.hip", kernels_source);
  std::vector<std::pair<std::string, std::future<workers::child_outcome>>> running;
  for (const auto& [name, define] : variants) {
    workers::child_options options;
    options.argv = compile_argv(compiler, name, define, name + ".bin");
    options.cwd = sub;
    options.max_output_bytes = 1 << 16;
    running.emplace_back(name, std::async(std::launch::async, [options] {
                           return workers::run_child(options, std::chrono::minutes(5));
                         }));
  }
  for (auto& [name, outcome] : running) {
    const auto result = outcome.get();
    if (!result.succeeded() || !fs::exists(sub / (name + ".bin"))) {
      out.error += compiler + " failed on variant " + name + ":\n" + result.output + "\n";
      continue;
    }
    out.artifacts[name] = rpl::testing::read_text(sub / (name + ".bin"));
  }
  if (out.error.empty()) {
    rpl::testing::write_file(sub / "complete", "");
    std::error_code ec;
    fs::rename(sub, kept, ec);
  }
  fs::remove_all(sub);
  return out;
}

/// The compiled variants of `tool` (nvcc or hipcc), compiled on first use.
const compiled& fixtures(const std::string& tool) {
  static std::mutex mutex;
  static std::map<std::string, compiled> cache;
  const std::lock_guard lock(mutex);
  if (const auto found = cache.find(tool); found != cache.end()) {
    return found->second;
  }
  std::optional<fs::path> compiler;
  if (tool == "nvcc") {
    for (const char* candidate : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"}) {
      if (fs::exists(candidate)) {
        compiler = candidate;
        break;
      }
    }
  } else {
    compiler = workers::find_on_path(tool);
  }
  if (!compiler) {
    compiled missing;
    missing.skip_reason = tool == "nvcc"
                              ? "nvcc not found (/usr/local/cuda/bin/nvcc): the CUDA toolkit is "
                                "not installed; skipping"
                              : "hipcc is not on PATH (Debian: apt-get install hipcc); skipping";
    return cache[tool] = missing;
  }
  return cache[tool] = compile_variants(compiler->string());
}

class artifact_guard : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    const auto& f = fixtures(GetParam());
    if (!f.skip_reason.empty()) {
      GTEST_SKIP() << f.skip_reason;
    }
    ASSERT_TRUE(f.error.empty()) << f.error;
  }
  std::vector<artifact_finding> check(const std::string& variant,
                                      std::string_view kernel = "") const {
    const auto& f = fixtures(GetParam());
    return check_artifact(f["base"], f[variant], kernel, variant);
  }
};

std::string describe(const std::vector<artifact_finding>& findings) {
  std::string text;
  for (const auto& f : findings) {
    text += f.guard + ": " + f.detail + "\n";
  }
  return text;
}

TEST_P(artifact_guard, identical_artifacts_have_no_findings) {
  const auto findings = check("base", "scale");
  EXPECT_TRUE(findings.empty()) << describe(findings);
  const auto names = kernel_names(fixtures(GetParam())["base"], "base");
  EXPECT_TRUE(names.error.empty()) << names.error;
  EXPECT_EQ(names.names.size(), 2u);
  EXPECT_NE(std::find(names.names.begin(), names.names.end(), "scale"), names.names.end());
}

TEST_P(artifact_guard, a_loop_change_has_no_findings) {
  const auto findings = check("loop");
  EXPECT_TRUE(findings.empty()) << describe(findings);
}

TEST_P(artifact_guard, a_new_device_global_is_new_global) {
  const auto findings = check("global", "scale");
  ASSERT_EQ(findings.size(), 1u) << describe(findings);
  EXPECT_EQ(findings[0].guard, "new_global");
  EXPECT_NE(findings[0].detail.find("new device variable scratch (16 bytes"), std::string::npos)
      << findings[0].detail;
}

TEST_P(artifact_guard, an_int_parameter_become_long_long_is_parameter_layout_changed) {
  const auto findings = check("long", "scale");
  ASSERT_EQ(findings.size(), 1u) << describe(findings);
  EXPECT_EQ(findings[0].guard, "parameter_layout_changed");
  const auto kind = GetParam() == "nvcc" ? "" : " by_value";
  EXPECT_TRUE(findings[0].detail.starts_with("kernel scale (")) << findings[0].detail;
  EXPECT_NE(findings[0].detail.find("parameter 1: offset 8 size 4" + std::string(kind) +
                                    " became offset 8 size 8" + kind),
            std::string::npos)
      << findings[0].detail;
}

TEST_P(artifact_guard, an_extra_kernel_is_kernel_symbols_changed) {
  const auto findings = check("extra", "scale");
  ASSERT_EQ(findings.size(), 1u) << describe(findings);
  EXPECT_EQ(findings[0].guard, "kernel_symbols_changed");
  EXPECT_NE(findings[0].detail.find("added _Z5extraPf"), std::string::npos) << findings[0].detail;
}

TEST_P(artifact_guard, corrupt_bytes_are_unreadable_with_a_named_error) {
  const auto& f = fixtures(GetParam());
  auto cut = f.artifacts.at("base");
  cut.resize(cut.size() / 3);
  const auto findings =
      check_artifact(f["base"], std::as_bytes(std::span<const char>(cut)), "scale", "candidate 7");
  ASSERT_EQ(findings.size(), 1u) << describe(findings);
  EXPECT_EQ(findings[0].guard, "unreadable");
  EXPECT_TRUE(findings[0].detail.starts_with("candidate 7")) << findings[0].detail;
  EXPECT_NE(findings[0].detail.find("truncated or corrupt, rebuild it"), std::string::npos)
      << findings[0].detail;
}

TEST_P(artifact_guard, a_host_object_reads_like_the_device_code_it_embeds) {
  const auto findings = check("host", "scale");
  EXPECT_TRUE(findings.empty()) << describe(findings);
  const auto& f = fixtures(GetParam());
  const auto from_host = check_artifact(f["host"], f["global"], "scale", "global");
  ASSERT_EQ(from_host.size(), 1u) << describe(from_host);
  EXPECT_EQ(from_host[0].guard, "new_global");
}

INSTANTIATE_TEST_SUITE_P(compilers,
                         artifact_guard,
                         ::testing::Values("nvcc", "hipcc"),
                         [](const ::testing::TestParamInfo<std::string>& test) {
                           return test.param;
                         });

TEST(artifact_guard_nvcc, a_mangled_kernel_whose_parameter_type_changed_is_named_twice) {
  const auto& f = fixtures("nvcc");
  if (!f.skip_reason.empty()) {
    GTEST_SKIP() << f.skip_reason;
  }
  ASSERT_TRUE(f.error.empty()) << f.error;
  // The same change to a C++ kernel renames its symbol: a removed and an added entry, and the
  // layout of the one compared with the other.
  std::string source = kernels_source;
  const std::string before = "__global__ void tiled(const float* a, float* b, char c, double d)";
  source.replace(source.find(before), before.size(),
                 "__global__ void tiled(const float* a, float* b, int c, double d)");
  rpl::testing::temp_dir dir;
  rpl::testing::write_file(dir / "k.cu", source);
  workers::child_options options;
  options.argv = compile_argv(f.compiler, "int", "-DBASE", "int.bin");
  options.cwd = dir.path();
  const auto outcome = workers::run_child(options, std::chrono::minutes(5));
  ASSERT_TRUE(outcome.succeeded()) << outcome.output;
  const auto changed = rpl::testing::read_text(dir / "int.bin");
  const auto findings =
      check_artifact(f["base"], std::as_bytes(std::span<const char>(changed)), "tiled", "int.bin");
  ASSERT_EQ(findings.size(), 2u) << describe(findings);
  EXPECT_EQ(findings[0].guard, "kernel_symbols_changed");
  EXPECT_NE(findings[0].detail.find("added _Z5tiledPKfPfid; removed _Z5tiledPKfPfcd"),
            std::string::npos)
      << findings[0].detail;
  EXPECT_EQ(findings[1].guard, "parameter_layout_changed");
  EXPECT_NE(findings[1].detail.find("kernel _Z5tiledPKfPfcd (sm_90) became _Z5tiledPKfPfid: "
                                    "parameter 2: offset 16 size 1 became offset 16 size 4"),
            std::string::npos)
      << findings[1].detail;
}

} // namespace
} // namespace rpl::stages::optimize
