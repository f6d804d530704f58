#pragma once
/// The vector-load rewrite's corpus (stages/optimize/loop_vectorizer.hpp): loop shapes written for
/// the tests, each a kernel `k` whose last `for` loop the rewrite must take, and shapes it must
/// refuse with their reason; and the one program that runs every shape's original and rewritten
/// kernel over many sizes, aligned and misaligned, on a few grids, comparing every array bit for
/// bit. The host test (tests/integration/stages_optimize_loop_vectorizer_compiled_test.cpp)
/// compiles it with the host's C++ compiler, the CUDA thread geometry emulated; the GPU test
/// (tests/gpu/vector_corpus_test.cpp) with nvcc, run on the device.

#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "stages/optimize/loop_vectorizer.hpp"

namespace rpl::testing {

/// A kernel `k(parameters) { body }`. The program calls it with `call`, an argument list over the
/// harness's names: `out`, `out2`, `io`, `in`, `in2` (element pointers, all rows * n + 8 elements,
/// each initialised differently; every one is compared afterwards), `a` (the element 3), `key`
/// (unsigned), `n` (size_t: the size, or the row width of a 2-D shape) and `rows` (size_t: 1, or
/// 3 for a 2-D shape).
struct vector_shape {
  std::string name;
  std::string element; ///< the arrays' element type
  std::string parameters;
  std::string body;
  std::string call;
  bool two_d = false; ///< rows of n elements, launched with y geometry too

  std::string kernel() const { return "__global__ void k(" + parameters + ") {\n" + body + "}\n"; }
};

/// A kernel the rewrite must refuse, and a part of the reason it must give.
struct refused_vector_shape {
  std::string name;
  std::string parameters;
  std::string body;
  std::string reason;
};

inline const std::string corpus_grid_start = "blockIdx.x * blockDim.x + threadIdx.x";
inline const std::string corpus_grid_step = "blockDim.x * gridDim.x";

inline std::vector<vector_shape> vector_corpus() {
  const std::string rows_loop =
      "  for (int row = blockIdx.y * blockDim.y + threadIdx.y; row < rows; "
      "row += blockDim.y * gridDim.y) {\n";
  return {
      {"scale_float_size_t_casts", "float",
       "float* __restrict__ out, const float* __restrict__ in, float a, size_t n",
       "  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;\n"
       "       i += static_cast<size_t>(gridDim.x) * blockDim.x) {\n"
       "    out[i] = a * in[i];\n  }\n",
       "out, in, a, n"},
      {"axpy_double_int_index_one_statement", "double",
       "double* y, const double* x, double a, int n",
       "  for (int i = threadIdx.x + blockIdx.x * blockDim.x; i < n; i += blockDim.x * gridDim.x)\n"
       "    y[i] += a * x[i];\n",
       "io, in, a, static_cast<int>(n)"},
      {"square_int_c_casts_with_a_local", "int", "int* out, const int* in, size_t n",
       "  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
       "       i += (size_t)gridDim.x * blockDim.x) {\n"
       "    const int v = in[i];\n    out[i] = v * v + 1;\n  }\n",
       "out, in, n"},
      {"hash_unsigned_index_locals_over_statements", "unsigned",
       "unsigned* out, const unsigned* in, unsigned key, unsigned n",
       "  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * "
       "gridDim.x) {\n"
       "    unsigned v = in[i] ^ key;\n    v ^= v >> 16;\n    v *= 0x45d9f3bu;\n"
       "    v ^= v >> 16;\n    out[i] = v;\n  }\n",
       "out, in, key, static_cast<unsigned>(n)"},
      {"long_index_long_casts", "float", "float* out, const float* in, long n",
       "  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;\n"
       "       i += (long)blockDim.x * gridDim.x) {\n"
       "    out[i] = in[i] * in[i] - 1.0f;\n  }\n",
       "out, in, static_cast<long>(n)"},
      {"hoisted_const_int_stride", "float", "float* out, const float* in, const float* in2, int n",
       "  const int stride = blockDim.x * gridDim.x;\n"
       "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {\n"
       "    out[i] = in[i] + in2[i];\n  }\n",
       "out, in, in2, static_cast<int>(n)"},
      {"hoisted_index_and_grid_first_stride", "double",
       "double* out, const double* in, double a, size_t n",
       "  const size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
       "  size_t stride = (size_t)gridDim.x * blockDim.x;\n"
       "  for (size_t i = tid; i < n; i += stride) {\n"
       "    double x = in[i];\n    double y = x * x;\n    y = y * a + x;\n    out[i] = y - x;\n"
       "  }\n",
       "out, in, a, n"},
      {"unsigned_stride_threadidx_first", "int",
       "int* out, const int* in, const int* in2, unsigned n",
       "  unsigned stride = gridDim.x * blockDim.x;\n"
       "  for (unsigned i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += stride)\n"
       "    out[i] = in[i] * 3 - in2[i] + (int)(gridDim.x + blockDim.x + threadIdx.y);\n",
       "out, in, in2, static_cast<unsigned>(n)"},
      {"two_outputs_without_restrict", "float",
       "float* out, float* out2, const float* in, const float* in2, float a, int n",
       "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) "
       "{\n"
       "    const float v = a * in[i] + in2[i];\n    out[i] = v;\n    out2[i] = v * v;\n  }\n",
       "out, out2, in, in2, a, static_cast<int>(n)"},
      {"in_place_unsigned_int_index", "float", "float* io, float a, unsigned int n",
       "  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
       "       i += gridDim.x * blockDim.x) {\n"
       "    io[i] = io[i] * a + 1.0f;\n  }\n",
       "io, a, static_cast<unsigned>(n)"},
      {"xorshift_two_outputs_hoisted_stride", "unsigned",
       "unsigned* __restrict__ out, unsigned* __restrict__ out2, const unsigned* __restrict__ "
       "in, unsigned key, int n",
       "  const int stride = gridDim.x * blockDim.x;\n"
       "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {\n"
       "    unsigned x = in[i];\n    x ^= x << 13;\n    x ^= x >> 17;\n    x ^= x << 5;\n"
       "    out[i] = x + key;\n    out2[i] = x ^ key;\n  }\n",
       "out, out2, in, key, static_cast<int>(n)"},
      {"negate_static_cast_start_parenthesised_step", "double",
       "double* out, const double* in, size_t n",
       "  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;\n"
       "       i += (gridDim.x * blockDim.x))\n"
       "    out[i] = -in[i];\n",
       "out, in, n"},
      {"branchless_abs_difference_int", "int", "int* out, const int* in, const int* in2, int n",
       "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) "
       "{\n"
       "    const int d = in[i] - in2[i];\n    const int m = d >> 31;\n    out[i] = (d ^ m) - m;\n"
       "  }\n",
       "out, in, in2, static_cast<int>(n)"},
      {"clamp_with_calls", "float", "float* out, const float* in, float a, int n",
       "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)\n"
       "    out[i] = fminf(fmaxf(in[i], -a), a);\n",
       "out, in, a, static_cast<int>(n)"},
      {"shifted_read_one_offset", "float", "float* out, const float* in, int n",
       "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)\n"
       "    out[i] = 2.0f * in[i + 4];\n",
       "out, in, static_cast<int>(n)"},
      {"two_d_rows_offset_e_plus_i", "float",
       "float* out, const float* in, float a, int rows, int width",
       rows_loop +
           "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < width; i += blockDim.x * "
           "gridDim.x) {\n"
           "      out[row * width + i] = a * in[row * width + i] + (float)row;\n    }\n  }\n",
       "out, in, a, static_cast<int>(rows), static_cast<int>(n)", true},
      {"two_d_rows_offset_i_plus_e_hoisted_stride", "double",
       "double* io, const double* in, size_t rows, size_t width",
       "  const size_t stride = (size_t)blockDim.x * gridDim.x;\n"
       "  for (size_t row = blockIdx.y * (size_t)blockDim.y + threadIdx.y; row < rows;\n"
       "       row += (size_t)blockDim.y * gridDim.y) {\n"
       "    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < width; i += "
       "stride) {\n"
       "      const double v = in[i + row * width];\n"
       "      io[i + row * width] = io[i + row * width] * 0.5 + v;\n    }\n  }\n",
       "io, in, rows, n", true},
      {"two_d_row_pointers", "int", "int* out, const int* in, int rows, int width",
       "  const int stride = gridDim.x * blockDim.x;\n" + rows_loop +
           "    const int* __restrict__ src = in + (size_t)row * width;\n"
           "    int* __restrict__ dst = out + (size_t)row * width;\n"
           "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < width; i += stride) {\n"
           "      const int v = src[i];\n      dst[i] = v + v / 3;\n    }\n  }\n",
       "out, in, static_cast<int>(rows), static_cast<int>(n)", true},
  };
}

inline std::vector<refused_vector_shape> refused_vector_corpus() {
  const std::string params = "float* out, float* out2, const float* in, const float* in2, int n";
  const auto loop = [](const std::string& body, const std::string& step = corpus_grid_step) {
    return "  for (int i = " + corpus_grid_start + "; i < n; i += " + step + ") {\n    " + body +
           "\n  }\n";
  };
  return {
      {"an_atomic", params, loop("atomicAdd(&out[i], in[i]);"), "the loop body calls atomicAdd"},
      {"control_flow", params, loop("if (in[i] > 0.0f) out[i] = in[i];"),
       "the loop body has control flow (`if`)"},
      {"a_conditional_expression", params, loop("out[i] = in[i] > 0.0f ? in[i] : in2[i];"),
       "control flow (`?`)"},
      {"a_barrier", params, loop("out[i] = in[i];\n    __syncthreads();"),
       "barrier or fence (`__syncthreads`)"},
      {"a_directive", params, loop("\n#pragma unroll\n    out[i] = in[i];"),
       "preprocessor directive"},
      {"a_shuffle", params, loop("out[i] = __shfl_down_sync(0xffffffffu, in[i], 1);"),
       "warp-level `__shfl_down_sync`"},
      {"thread_geometry_in_the_body", params, loop("out[i] = in[i] + threadIdx.x;"),
       "reads `threadIdx.x`"},
      {"a_lane_computed_before_the_loop", params,
       "  const int lane = threadIdx.x % 32;\n" + loop("out[i] = in[i] + lane;"),
       "reads `lane`, which depends on the thread's x index"},
      {"a_thread_dependent_row_offset", params,
       "  const int t = blockIdx.x;\n" + loop("out[t + i] = in[t + i];"),
       "the offset of `out[t + i]` reads `t`, which depends on the thread's x index"},
      {"an_enclosing_loop_index_from_the_thread", params,
       "  for (int j = threadIdx.x; j < 64; j += 32) {\n" + loop("out[i] = in[i] * j;") + "  }\n",
       "reads `j`, which depends on the thread's x index"},
      {"the_index_as_a_value", params, loop("out[i] = in[i] * i;"),
       "the index `i` is used other than as a subscript of a pointer"},
      {"two_offsets_of_one_array", params, loop("out[i] = in[i] + in[i + 1];"),
       "`in` is accessed at two offsets"},
      {"a_subscript_other_than_the_forms", params, loop("out[i] = in[2 * i];"),
       "a subscript other than i, E + i or i + E"},
      {"mixed_element_types", "double* out, const float* in, int n", loop("out[i] = in[i];"),
       "arrays of different element types"},
      {"a_block_stride", params, loop("out[i] = in[i];", "blockDim.x"),
       "its step `blockDim.x` is not the grid's x size"},
      {"a_stride_written_before_the_loop", params,
       "  int stride = blockDim.x * gridDim.x;\n  stride *= 2;\n" +
           loop("out[i] = in[i];", "stride"),
       "its step `stride` is not the grid's x size"},
      {"a_read_after_another_array_is_written", params,
       loop("out[i] = in[i];\n    out2[i] = in2[i];"),
       "`in2` is read after `out` is written and they may be the same array"},
      {"a_bound_the_body_writes", params, loop("out[i] = in[i];\n    n = 0;"),
       "the loop body declares or writes `n`"},
      {"nothing_written", "float* out, const float* in, float a, int n", loop("a += in[i];"),
       "nothing is written at the index"},
  };
}

/// `type name, type name` as parameter_info values (no commas inside a type).
inline std::vector<stages::optimize::parameter_info> corpus_parameters(std::string_view list) {
  std::vector<stages::optimize::parameter_info> out;
  for (std::size_t from = 0; from < list.size();) {
    const std::size_t comma = std::min(list.find(',', from), list.size());
    std::string_view p = list.substr(from, comma - from);
    while (!p.empty() && std::isspace(static_cast<unsigned char>(p.front())) != 0) {
      p.remove_prefix(1);
    }
    while (!p.empty() && std::isspace(static_cast<unsigned char>(p.back())) != 0) {
      p.remove_suffix(1);
    }
    std::size_t name = p.size();
    while (name > 0 &&
           (std::isalnum(static_cast<unsigned char>(p[name - 1])) != 0 || p[name - 1] == '_')) {
      --name;
    }
    out.push_back({std::string(p.substr(0, name)), std::string(p.substr(name))});
    from = comma + 1;
  }
  return out;
}

/// The rewrite of a kernel's last `for` loop, the function's body opening its scope.
inline stages::optimize::vectorize_outcome vectorize_corpus_kernel(const std::string& kernel,
                                                                   const std::string& parameters) {
  return stages::optimize::vectorize_grid_stride_loop(
      kernel, kernel.rfind("for ("), corpus_parameters(parameters), kernel.find('{'));
}

/// The kernel with its last loop rewritten; empty (with `why`) when the rewrite refused it.
inline std::string vectorized_corpus_kernel(const vector_shape& shape, std::string& why) {
  const std::string kernel = shape.kernel();
  const auto outcome = vectorize_corpus_kernel(kernel, shape.parameters);
  if (!outcome.rewrite) {
    why = outcome.refusal;
    return {};
  }
  std::string out = kernel;
  out.replace(outcome.rewrite->replaced.begin,
              outcome.rewrite->replaced.end - outcome.rewrite->replaced.begin,
              outcome.rewrite->replacement);
  return out;
}

enum class corpus_target { host, cuda };

/// The program's part before the shapes: the launch (emulated on the host: every thread of the
/// grid in turn, the vector types counting their copies), buffers, and the comparison of one
/// shape's original and rewritten kernels, printing "ok NAME" or "FAIL NAME: ...".
inline std::string corpus_prelude(corpus_target target) {
  std::string s = R"(#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstddef>
#include <type_traits>
#include <vector>
using std::size_t;
struct corpus_grid { unsigned gx, bx, gy, by; };
)";
  if (target == corpus_target::host) {
    s += R"(static long vector_copies = 0;
#define VECTOR(name, T, ...)                                                                   \
  struct name {                                                                                \
    T __VA_ARGS__;                                                                             \
    name() = default;                                                                          \
    name(const name& o) { std::memcpy(this, &o, sizeof o); ++vector_copies; }                 \
    name& operator=(const name& o) { std::memcpy(this, &o, sizeof o); ++vector_copies; return *this; } \
  };
VECTOR(float4, float, x, y, z, w)
VECTOR(int4, int, x, y, z, w)
VECTOR(uint4, unsigned, x, y, z, w)
VECTOR(double2, double, x, y)
struct geometry { unsigned x = 0, y = 0, z = 0; };
static geometry blockIdx, blockDim, threadIdx, gridDim;
#define __global__
#define __restrict__
template <class F> void emulate(const corpus_grid& g, F f) {
  gridDim.x = g.gx; gridDim.y = g.gy; blockDim.x = g.bx; blockDim.y = g.by;
  for (unsigned by = 0; by < g.gy; ++by) for (unsigned bx = 0; bx < g.gx; ++bx)
    for (unsigned ty = 0; ty < g.by; ++ty) for (unsigned tx = 0; tx < g.bx; ++tx) {
      blockIdx.x = bx; blockIdx.y = by; threadIdx.x = tx; threadIdx.y = ty; f();
    }
}
#define RPL_LAUNCH(g, kernel, ...) emulate(g, [&] { kernel(__VA_ARGS__); })
static std::vector<size_t> corpus_sizes() {
  std::vector<size_t> out;
  for (size_t n = 0; n <= 1003; ++n) out.push_back(n);
  return out;
}
static const corpus_grid grids_1d[] = {{1, 1, 1, 1}, {3, 5, 1, 1}, {2, 32, 1, 1}, {7, 3, 1, 1}};
static const corpus_grid grids_2d[] = {{1, 1, 1, 1}, {3, 5, 2, 1}, {2, 32, 1, 2}, {1, 4, 3, 3}};
template <class T> T* device_alloc(size_t n) {
  return static_cast<T*>(std::aligned_alloc(256, (n * sizeof(T) + 255) / 256 * 256));
}
template <class T> void device_free(T* p) { std::free(p); }
static void upload(void* to, const void* from, size_t bytes) { std::memcpy(to, from, bytes); }
static void download(void* to, const void* from, size_t bytes) { std::memcpy(to, from, bytes); }
static const char* launch_error() { return nullptr; }
static const bool count_vector_copies = true;
)";
  } else {
    s += R"(#include <cuda_runtime.h>
static long vector_copies = 0;
#define RPL_LAUNCH(g, kernel, ...) \
  kernel<<<dim3((g).gx, (g).gy), dim3((g).bx, (g).by)>>>(__VA_ARGS__)
static std::vector<size_t> corpus_sizes() {
  return {0, 1, 2, 3, 4, 5, 7, 8, 9, 63, 64, 65, 1003, (size_t(1) << 20) + 3};
}
static const corpus_grid grids_1d[] = {{1, 32, 1, 1}, {3, 64, 1, 1}, {7, 33, 1, 1},
                                       {132, 256, 1, 1}};
static const corpus_grid grids_2d[] = {{1, 32, 1, 1}, {2, 64, 3, 2}, {5, 33, 2, 4},
                                       {66, 128, 2, 2}};
template <class T> T* device_alloc(size_t n) {
  void* p = nullptr;
  if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess) { std::printf("FAIL cudaMalloc\n"); std::exit(2); }
  return static_cast<T*>(p);
}
template <class T> void device_free(T* p) { cudaFree(p); }
static void upload(void* to, const void* from, size_t bytes) {
  cudaMemcpy(to, from, bytes, cudaMemcpyHostToDevice);
}
static void download(void* to, const void* from, size_t bytes) {
  cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToHost);
}
static const char* launch_error() {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}
static const bool count_vector_copies = false;
)";
  }
  s += R"(template <class T> T corpus_value(size_t i, unsigned salt) {
  const int v = static_cast<int>((i * 2654435761u + salt * 40503u) % 2001u) - 1000;
  if (std::is_floating_point<T>::value) return static_cast<T>(v) / static_cast<T>(16);
  return static_cast<T>(v);
}
/// Runs `launch(variant, grid, out, out2, io, in, in2, a, key, n, rows)` for the original (0) and
/// the rewrite (1) on the same inputs; 0 when every array ends the same, bit for bit.
template <class T, class L> int run_shape(const char* name, size_t rows, L launch) {
  const std::vector<size_t> sizes = corpus_sizes();
  size_t largest = 0;
  for (size_t n : sizes) largest = n > largest ? n : largest;
  const size_t capacity = rows * largest + 8 + 1;
  const size_t width = 16 / sizeof(T);
  T* dev[5];
  for (T*& d : dev) d = device_alloc<T>(capacity);
  std::vector<T> init[5], result[2][5];
  for (int j = 0; j < 5; ++j) {
    init[j].resize(capacity);
    result[0][j].resize(capacity);
    result[1][j].resize(capacity);
  }
  const corpus_grid* grids = rows > 1 ? grids_2d : grids_1d;
  int failed = 0;
  for (size_t n : sizes) for (size_t shift = 0; shift < 2 && !failed; ++shift)
  for (int gi = 0; gi < 4 && !failed; ++gi) {
    const corpus_grid& g = grids[gi];
    const size_t total = rows * n + 8;
    for (int j = 0; j < 5; ++j)
      for (size_t e = 0; e < total; ++e) init[j][e] = corpus_value<T>(e, static_cast<unsigned>(j));
    long copies[2];
    for (int variant = 0; variant < 2; ++variant) {
      for (int j = 0; j < 5; ++j) upload(dev[j] + shift, init[j].data(), total * sizeof(T));
      const long before = vector_copies;
      launch(variant, g, dev[0] + shift, dev[1] + shift, dev[2] + shift, dev[3] + shift,
             dev[4] + shift, static_cast<T>(3), 0x9e3779b9u, n, rows);
      if (const char* error = launch_error()) {
        std::printf("FAIL %s: %s at n=%zu shift=%zu grid=%ux%u,%ux%u\n", name, error, n, shift,
                    g.gx, g.bx, g.gy, g.by);
        return 1;
      }
      copies[variant] = vector_copies - before;
      for (int j = 0; j < 5; ++j)
        download(result[variant][j].data(), dev[j] + shift, total * sizeof(T));
    }
    static const char* names[5] = {"out", "out2", "io", "in", "in2"};
    for (int j = 0; j < 5 && !failed; ++j) {
      if (std::memcmp(result[0][j].data(), result[1][j].data(), total * sizeof(T)) == 0) continue;
      size_t e = 0;
      while (std::memcmp(&result[0][j][e], &result[1][j][e], sizeof(T)) == 0) ++e;
      std::printf("FAIL %s: `%s` differs at element %zu for n=%zu shift=%zu grid=%ux%u,%ux%u\n",
                  name, names[j], e, n, shift, g.gx, g.bx, g.gy, g.by);
      failed = 1;
    }
    bool expected = false; // some row's base 16-byte aligned (the buffers are), and a vector long
    for (size_t r = 0; r < rows; ++r) expected = expected || ((shift + r * n) % width == 0 && n >= width);
    if (!failed && count_vector_copies && (copies[0] != 0 || (copies[1] != 0) != expected)) {
      std::printf("FAIL %s: vector copies original %ld, rewrite %ld (expected %s) at n=%zu "
                  "shift=%zu\n", name, copies[0], copies[1], expected ? "some" : "none", n, shift);
      failed = 1;
    }
  }
  for (T* d : dev) device_free(d);
  if (!failed) std::printf("ok %s\n", name);
  return failed;
}
)";
  return s;
}

/// The whole program: every shape's original and rewritten kernel (`rewritten`, in the order of
/// `shapes`) run and compared; it prints one line per shape and exits 0 when all are the same.
inline std::string corpus_program(const std::vector<vector_shape>& shapes,
                                  const std::vector<std::string>& rewritten,
                                  corpus_target target) {
  std::string s = corpus_prelude(target);
  std::string runs;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const vector_shape& shape = shapes[i];
    const std::string ns = "corpus_" + shape.name;
    s += "namespace " + ns + " {\nnamespace original {\n" + shape.kernel() +
         "}\nnamespace vectorized {\n" + rewritten[i] + "}\n";
    s += "int run() {\n  using T = " + shape.element + ";\n  return run_shape<T>(\"" + shape.name +
         "\", " + (shape.two_d ? "3" : "1") +
         ", [](int variant, const corpus_grid& g, T* out, T* out2, T* io, T* in, T* in2, T a, "
         "unsigned key, size_t n, size_t rows) {\n"
         "    (void)out; (void)out2; (void)io; (void)in; (void)in2; (void)a; (void)key; "
         "(void)rows;\n"
         "    if (variant == 0) RPL_LAUNCH(g, original::k, " +
         shape.call + ");\n    else RPL_LAUNCH(g, vectorized::k, " + shape.call +
         ");\n  });\n}\n}\n";
    runs += "  failed += " + ns + "::run();\n";
  }
  s += "int main() {\n  int failed = 0;\n" + runs +
       "  std::printf(\"%d failed\\n\", failed);\n  return failed == 0 ? 0 : 1;\n}\n";
  return s;
}

} // namespace rpl::testing
