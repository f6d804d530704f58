// Compiles real HIP kernels with Debian's hipcc for three AMDGPU targets and checks that
// read_code_objects agrees with `llvm-readelf --notes` on every kernel, for bare code objects,
// offload bundles, object files, executables and a multi-target shared library.

#include <cstdlib>
#include <future>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "stages/hardware/code_object_metadata.hpp"
#include "support/test_support.hpp"

namespace rpl::stages {
namespace {

namespace fs = std::filesystem;

const char* const kernels_source = R"hip(
#include <hip/hip_runtime.h>

__global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void lds_small(float* out) {
  __shared__ float tile[64];
  tile[threadIdx.x % 64] = out[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % 64];
}

__global__ void lds_several(double* out, const int* in) {
  __shared__ double a[2048];
  __shared__ int b[512];
  __shared__ char c[100];
  a[threadIdx.x] = in[threadIdx.x];
  b[threadIdx.x % 512] = in[threadIdx.x] * 2;
  c[threadIdx.x % 100] = static_cast<char>(in[threadIdx.x]);
  __syncthreads();
  out[threadIdx.x] = a[2047 - threadIdx.x] + b[511 - threadIdx.x % 512] + c[99 - threadIdx.x % 100];
}

__global__ void register_pressure(const float* in, float* out, int n) {
  float acc[96];
#pragma unroll
  for (int k = 0; k < 96; ++k) acc[k] = in[threadIdx.x + k];
  for (int it = 0; it < n; ++it) {
#pragma unroll
    for (int k = 0; k < 96; ++k) acc[k] = acc[k] * acc[(k + 1) % 96] + in[it];
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 96; ++k) s += acc[k] * (k + 1);
  out[threadIdx.x] = s;
}

__global__ void scratch_array(const int* idx, float* out, int n) {
  float local[512];
  for (int k = 0; k < 512; ++k) local[k] = out[k * 7 % n];
  float s = 0.f;
  for (int k = 0; k < n; ++k) s += local[idx[k] & 511];
  out[threadIdx.x] = s;
}

__global__ void __launch_bounds__(1024) spill_under_bounds(const float* in, float* out, int n) {
  float acc[200];
#pragma unroll
  for (int k = 0; k < 200; ++k) acc[k] = in[threadIdx.x * 200 + k];
  for (int it = 0; it < n; ++it) {
#pragma unroll
    for (int k = 0; k < 200; ++k) acc[k] = acc[k] * acc[(k + 7) % 200] + in[it];
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 200; ++k) s += acc[k] * (k + 1);
  out[threadIdx.x] = s;
}

__global__ void __launch_bounds__(128, 2) bounded(float* out) {
  out[blockIdx.x * 128 + threadIdx.x] *= 2.0f;
}

struct params { int a; double b; char c[3]; };

__global__ void many_args(char c, short s, int i, long long l, float f, double d, unsigned u,
                          const float* __restrict__ p, double* q, params prm, bool flag, int* r) {
  if (flag) q[threadIdx.x] = c + s + i + l + f + d + u + p[threadIdx.x] + prm.a + prm.b + prm.c[1];
  r[0] = 1;
}

template <int N, typename T>
__global__ void scale(T* data, T factor) {
#pragma unroll
  for (int k = 0; k < N; ++k) data[threadIdx.x * N + k] *= factor;
}
template __global__ void scale<4, float>(float*, float);
template __global__ void scale<16, double>(double*, double);

__global__ void dynamic_lds(float* out) {
  extern __shared__ float dyn[];
  dyn[threadIdx.x] = out[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = dyn[blockDim.x - 1 - threadIdx.x];
}

__global__ void reduce(const float* in, float* out) {
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int off = warpSize / 2; off > 0; off /= 2) v += __shfl_down(v, off);
  if (threadIdx.x % warpSize == 0) atomicAdd(out, v);
}

__global__ void uses_agprs(float* out) {
  float v = out[threadIdx.x];
#if defined(__gfx90a__) || defined(__gfx940__)
  // Accumulation registers exist only on CDNA; clobbering a7 makes the kernel report 8 AGPRs.
  asm volatile("v_accvgpr_write_b32 a7, %0" :: "v"(v) : "a7");
  asm volatile("v_accvgpr_read_b32 %0, a7" : "=v"(v));
#endif
  out[threadIdx.x] = v * 2.f;
}
)hip";

const char* const main_source = R"hip(
#include "kernels.hip"
int main() {
  float* d = nullptr;
  hipLaunchKernelGGL(axpy, dim3(1), dim3(1), 0, 0, 1.0f, d, d, 0);
  return 0;
}
)hip";

constexpr std::size_t kernels_per_target = 13;
const std::vector<std::string> targets = {"gfx90a", "gfx940", "gfx1030"};

std::optional<fs::path> find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) {
    return std::nullopt;
  }
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const auto candidate = fs::path(dir.empty() ? "." : dir) / program;
    if (access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

workers::child_outcome run(std::vector<std::string> argv, const fs::path& cwd) {
  workers::child_options options;
  options.argv = std::move(argv);
  options.cwd = cwd;
  options.max_output_bytes = 16 << 20;
  return workers::run_child(options, std::chrono::minutes(3));
}

/// One kernel's entries as `llvm-readelf --notes` prints them (YAML), keys without the dot.
struct readelf_kernel {
  std::map<std::string, std::string> fields;
  std::vector<std::map<std::string, std::string>> args;
};

struct readelf_notes {
  std::string target;
  std::vector<readelf_kernel> kernels;
};

std::string unquote(std::string value) {
  if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') &&
      value.back() == value.front()) {
    return value.substr(1, value.size() - 2);
  }
  return value;
}

/// A deliberately simple reader for the YAML that llvm-readelf prints: kernels start at "  -
/// .key:", kernel keys sit at four spaces, arguments start at "      - .key:" with keys at eight
/// spaces.
readelf_notes parse_readelf(const std::string& text) {
  static const std::regex kernel_start(R"(^  - \.([a-z_]+):\s*(.*)$)");
  static const std::regex kernel_key(R"(^    \.([a-z_]+):\s*(.*)$)");
  static const std::regex arg_start(R"(^      - \.([a-z_]+):\s*(.*)$)");
  static const std::regex arg_key(R"(^        \.([a-z_]+):\s*(.*)$)");
  static const std::regex target(R"(^amdhsa\.target:\s*(.*)$)");
  readelf_notes notes;
  std::stringstream lines(text);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_match(line, m, target)) {
      notes.target = unquote(m[1]);
    } else if (std::regex_match(line, m, kernel_start)) {
      notes.kernels.emplace_back().fields[m[1]] = unquote(m[2]);
    } else if (std::regex_match(line, m, kernel_key) && !notes.kernels.empty()) {
      notes.kernels.back().fields[m[1]] = unquote(m[2]);
    } else if (std::regex_match(line, m, arg_start) && !notes.kernels.empty()) {
      notes.kernels.back().args.emplace_back()[m[1]] = unquote(m[2]);
    } else if (std::regex_match(line, m, arg_key) && !notes.kernels.empty() &&
               !notes.kernels.back().args.empty()) {
      notes.kernels.back().args.back()[m[1]] = unquote(m[2]);
    }
  }
  return notes;
}

std::string field(const std::map<std::string, std::string>& fields,
                  const std::string& key,
                  const std::string& fallback = "0") {
  const auto it = fields.find(key);
  return it == fields.end() ? fallback : it->second;
}

/// Asserts that every kernel in `object` matches readelf's view, field by field; returns the count.
std::size_t expect_matches(const code_object& object,
                           const readelf_notes& expected,
                           const std::string& context) {
  SCOPED_TRACE(context);
  EXPECT_EQ(object.target, expected.target);
  EXPECT_EQ(object.kernels.size(), expected.kernels.size());
  std::map<std::string, const kernel_metadata*> by_name;
  for (const auto& kernel : object.kernels) {
    by_name[kernel.name] = &kernel;
  }
  std::size_t matched = 0;
  for (const auto& want : expected.kernels) {
    const auto name = field(want.fields, "name", "");
    SCOPED_TRACE(name);
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      ADD_FAILURE() << "kernel " << name << " missing from read_code_objects";
      continue;
    }
    const auto& got = *it->second;
    const auto& f = want.fields;
    EXPECT_EQ(got.symbol, field(f, "symbol", ""));
    EXPECT_EQ(std::to_string(got.vgpr_count), field(f, "vgpr_count"));
    EXPECT_EQ(std::to_string(got.agpr_count), field(f, "agpr_count"));
    EXPECT_EQ(std::to_string(got.sgpr_count), field(f, "sgpr_count"));
    EXPECT_EQ(std::to_string(got.vgpr_spill_count), field(f, "vgpr_spill_count"));
    EXPECT_EQ(std::to_string(got.sgpr_spill_count), field(f, "sgpr_spill_count"));
    EXPECT_EQ(std::to_string(got.wavefront_size), field(f, "wavefront_size", "64"));
    EXPECT_EQ(std::to_string(got.max_flat_workgroup_size), field(f, "max_flat_workgroup_size"));
    EXPECT_EQ(std::to_string(got.group_segment_fixed_size), field(f, "group_segment_fixed_size"));
    EXPECT_EQ(std::to_string(got.private_segment_fixed_size),
              field(f, "private_segment_fixed_size"));
    EXPECT_EQ(std::to_string(got.kernarg_segment_size), field(f, "kernarg_segment_size"));
    EXPECT_EQ(std::to_string(got.kernarg_segment_align), field(f, "kernarg_segment_align"));
    EXPECT_EQ(got.uses_dynamic_stack ? "true" : "false", field(f, "uses_dynamic_stack", "false"));
    EXPECT_EQ(got.args.size(), want.args.size());
    for (std::size_t i = 0; i < std::min(got.args.size(), want.args.size()); ++i) {
      EXPECT_EQ(std::to_string(got.args[i].offset), field(want.args[i], "offset")) << "arg " << i;
      EXPECT_EQ(std::to_string(got.args[i].size), field(want.args[i], "size")) << "arg " << i;
      EXPECT_EQ(got.args[i].value_kind, field(want.args[i], "value_kind", "")) << "arg " << i;
      EXPECT_EQ(got.args[i].address_space, field(want.args[i], "address_space", "")) << "arg " << i;
      EXPECT_EQ(got.args[i].name, field(want.args[i], "name", "")) << "arg " << i;
    }
    ++matched;
  }
  return matched;
}

const kernel_metadata& kernel_named(const code_object& object, const std::string& mangled) {
  for (const auto& kernel : object.kernels) {
    if (kernel.name == mangled) {
      return kernel;
    }
  }
  throw std::runtime_error("no kernel " + mangled + " in " + object.target);
}

const code_object& object_for(const std::vector<code_object>& objects,
                              const std::string& processor) {
  for (const auto& object : objects) {
    if (object.processor == processor) {
      return object;
    }
  }
  throw std::runtime_error("no code object for " + processor);
}

TEST(code_object_metadata_hipcc, matches_llvm_readelf_for_every_kernel_and_container) {
  const auto hipcc = find_on_path("hipcc");
  const auto readelf = find_on_path("llvm-readelf");
  if (!hipcc || !readelf) {
    GTEST_SKIP() << "hipcc and llvm-readelf must be on PATH to compile real AMDGPU code objects "
                    "(Debian: apt-get install hipcc llvm); skipping";
  }
  rpl::testing::temp_dir dir;
  rpl::testing::write_file(dir / "kernels.hip", kernels_source);
  rpl::testing::write_file(dir / "main.hip", main_source);

  // Bare code objects for each target; the bundle path through an executable (gfx90a), a
  // multi-target shared library (all three), a device-only bundle file (gfx940) and a host object
  // file (gfx1030).
  std::vector<std::pair<std::string, std::vector<std::string>>> compiles;
  for (const auto& target : targets) {
    compiles.push_back({target + ".hsaco",
                        {hipcc->string(), "--offload-arch=" + target, "--cuda-device-only",
                         "--no-gpu-bundle-output", "-c", "kernels.hip", "-o", target + ".hsaco"}});
  }
  compiles.push_back(
      {"libkernels.so",
       {hipcc->string(), "--offload-arch=gfx90a", "--offload-arch=gfx940", "--offload-arch=gfx1030",
        "-shared", "-fPIC", "kernels.hip", "-o", "libkernels.so"}});
  compiles.push_back({"app", {hipcc->string(), "--offload-arch=gfx90a", "main.hip", "-o", "app"}});
  compiles.push_back({"device-bundle.o",
                      {hipcc->string(), "--offload-arch=gfx940", "--cuda-device-only", "-c",
                       "kernels.hip", "-o", "device-bundle.o"}});
  compiles.push_back(
      {"host.o", {hipcc->string(), "--offload-arch=gfx1030", "-c", "kernels.hip", "-o", "host.o"}});
  // hipcc is single-threaded: run as many compiles at once as there are cores.
  const std::size_t parallel = std::max(2u, std::thread::hardware_concurrency());
  for (std::size_t first = 0; first < compiles.size(); first += parallel) {
    std::vector<std::future<workers::child_outcome>> running;
    const auto last = std::min(compiles.size(), first + parallel);
    for (std::size_t i = first; i < last; ++i) {
      running.push_back(std::async(std::launch::async, run, compiles[i].second, dir.path()));
    }
    for (std::size_t i = first; i < last; ++i) {
      const auto outcome = running[i - first].get();
      ASSERT_TRUE(outcome.succeeded() && fs::exists(dir / compiles[i].first))
          << "hipcc failed to build " << compiles[i].first << ":\n"
          << outcome.output;
    }
  }

  std::size_t kernels_verified = 0;
  for (const auto& target : targets) {
    SCOPED_TRACE(target);
    const auto notes_run = run({readelf->string(), "--notes", target + ".hsaco"}, dir.path());
    ASSERT_TRUE(notes_run.succeeded()) << notes_run.output;
    const auto expected = parse_readelf(notes_run.output);
    ASSERT_EQ(expected.kernels.size(), kernels_per_target) << notes_run.output;
    ASSERT_NE(expected.target.find(target), std::string::npos) << expected.target;

    // The bare code object.
    const auto bare = read_code_objects(dir / (target + ".hsaco"));
    ASSERT_EQ(bare.size(), 1u);
    EXPECT_EQ(bare[0].processor, target);
    EXPECT_EQ(bare[0].bundle_entry, "");
    kernels_verified += expect_matches(bare[0], expected, target + ".hsaco");

    // The shared library bundles all three targets.
    const auto library = read_code_objects(dir / "libkernels.so");
    ASSERT_EQ(library.size(), targets.size());
    const auto& from_library = object_for(library, target);
    EXPECT_EQ(from_library.bundle_entry.rfind("hipv4-amdgcn-amd-amdhsa--" + target, 0), 0u)
        << from_library.bundle_entry;
    kernels_verified += expect_matches(from_library, expected, "libkernels.so");

    // One more container per target: an executable's .hip_fatbin, a bundle file, a host object.
    const auto other = std::map<std::string, std::string>{
        {"gfx90a", "app"},
        {"gfx940", "device-bundle.o"},
        {"gfx1030",
         "host.o"}}.at(target);
    const auto from_other = read_code_objects(dir / other);
    ASSERT_EQ(from_other.size(), 1u) << other;
    EXPECT_EQ(from_other[0].processor, target);
    kernels_verified += expect_matches(from_other[0], expected, other);

    // The kernels really differ in what they use, so the comparison above means something.
    const auto& object = bare[0];
    const unsigned wave = target == "gfx1030" ? 32 : 64;
    for (const auto& kernel : object.kernels) {
      EXPECT_EQ(kernel.wavefront_size, wave) << kernel.name;
    }
    EXPECT_EQ(kernel_named(object, "_Z11lds_severalPdPKi").group_segment_fixed_size,
              2048u * 8 + 512 * 4 + 100 + 4);
    EXPECT_EQ(kernel_named(object, "_Z9lds_smallPf").group_segment_fixed_size, 256u);
    EXPECT_EQ(kernel_named(object, "_Z11dynamic_ldsPf").group_segment_fixed_size, 0u);
    EXPECT_GE(kernel_named(object, "_Z13scratch_arrayPKiPfi").private_segment_fixed_size, 2048u);
    EXPECT_GT(kernel_named(object, "_Z18spill_under_boundsPKfPfi").vgpr_spill_count, 0u);
    EXPECT_GE(kernel_named(object, "_Z17register_pressurePKfPfi").vgpr_count, 64u);
    EXPECT_EQ(kernel_named(object, "_Z7boundedPf").max_flat_workgroup_size, 128u);
    EXPECT_EQ(kernel_named(object, "_Z9many_argscsixfdjPKfPd6paramsbPi").args.size() >= 12, true);
    EXPECT_EQ(kernel_named(object, "_Z10uses_agprsPf").agpr_count, target == "gfx1030" ? 0u : 8u);
    EXPECT_EQ(to_json(kernel_named(object, "_Z4axpyfPKfPfi")).at("args").size(),
              kernel_named(object, "_Z4axpyfPKfPfi").args.size());
  }
  // 13 kernels x 3 targets x (bare code object + shared library + one other container).
  EXPECT_EQ(kernels_verified, kernels_per_target * targets.size() * 3);
  std::cout << "verified " << kernels_verified << " kernel records against llvm-readelf\n";
}

} // namespace
} // namespace rpl::stages
