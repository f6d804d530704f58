// occupancy_probe: asks the CUDA runtime how many blocks of many kernel variants fit on one SM
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor) and prints one JSON line per combination, for
// tests/gpu/occupancy_vs_runtime_test.cpp to compare with the occupancy model
// (stages/hardware/occupancy_model.hpp).
//
// The variants cover registers per thread (register-heavy bodies with N live float accumulators,
// and __launch_bounds__ caps), static shared memory (0, 1, 8, 20, 40 KiB), dynamic shared memory
// (0 .. the opt-in maximum, set with cudaFuncAttributeMaxDynamicSharedMemorySize) and block sizes
// 32 .. 1024, so that each limiter (registers, shared memory, warps, blocks per SM) binds
// somewhere. The kernels are never launched: only their compiled attributes (cudaFuncGetAttributes:
// numRegs, sharedSizeBytes, maxThreadsPerBlock) matter.
//
// Output on stdout, one line each:
//   {"kernel": ..., "block": b, "regs": r, "static_smem": s, "dynamic_smem": d,
//    "blocks_per_sm": n, "device": "sm_90", "name": "<prop.name>", ...}
// Notes go to stdout between the JSON lines (one stream, so they never split a line); errors to
// stderr. Exit codes: 0 done, 77 no CUDA device (skip), 1 a CUDA error.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cuda_runtime.h>

namespace {

void check(cudaError_t status, const char* what, const char* file, int line) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "occupancy_probe: %s failed at %s:%d: %s (%s)\n", what, file, line,
                 cudaGetErrorName(status), cudaGetErrorString(status));
    std::exit(1);
  }
}

#define RPL_CUDA_CHECK(expr) check((expr), #expr, __FILE__, __LINE__)

/// Shared memory of STATIC_BYTES bytes (none for 0), touched so the compiler keeps it.
template <int STATIC_BYTES> struct static_smem {
  __device__ static float touch(float v) {
    __shared__ float buffer[STATIC_BYTES / sizeof(float)];
    constexpr unsigned count = STATIC_BYTES / sizeof(float);
    buffer[threadIdx.x % count] = v;
    __syncthreads();
    return buffer[(threadIdx.x + 1) % count];
  }
};
template <> struct static_smem<0> {
  __device__ static float touch(float v) { return v; }
};

/// N float accumulators that stay live across a loop: about N registers per thread (the
/// compiler caps it at 255, or at what __launch_bounds__ allows, spilling the rest).
template <int N> __device__ float accumulate(const float* in, int iterations) {
  float acc[N];
#pragma unroll
  for (int i = 0; i < N; ++i)
    acc[i] = in[threadIdx.x + i];
  for (int k = 0; k < iterations; ++k) {
    const float x = in[k];
#pragma unroll
    for (int i = 0; i < N; ++i)
      acc[i] = fmaf(acc[i], x, acc[(i + 1) % N]);
  }
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < N; ++i)
    sum += acc[i] * static_cast<float>(i + 1);
  return sum;
}

/// Dynamic shared memory, touched only when the launch gives some.
__device__ float touch_dynamic(float v, unsigned dynamic_floats) {
  extern __shared__ float dynamic_buffer[];
  if (dynamic_floats == 0)
    return v;
  dynamic_buffer[threadIdx.x % dynamic_floats] = v;
  __syncthreads();
  return dynamic_buffer[(threadIdx.x + 3) % dynamic_floats];
}

template <int N, int STATIC_BYTES>
__global__ void heavy(float* out, const float* in, int iterations, unsigned dynamic_floats) {
  float v = accumulate<N>(in, iterations);
  v = static_smem<STATIC_BYTES>::touch(v);
  v = touch_dynamic(v, dynamic_floats);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

template <int MAX_THREADS, int MIN_BLOCKS, int N>
__global__ void __launch_bounds__(MAX_THREADS, MIN_BLOCKS)
    bounded(float* out, const float* in, int iterations, unsigned dynamic_floats) {
  float v = accumulate<N>(in, iterations);
  v = touch_dynamic(v, dynamic_floats);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

using kernel_fn = void (*)(float*, const float*, int, unsigned);

struct variant {
  std::string name;
  kernel_fn fn;
  bool sweep_dynamic; ///< also sweep dynamic shared memory (else dynamic = 0 only)
  bool launch_bounds; ///< declared with __launch_bounds__
};

std::string json_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else {
      out += c;
    }
  }
  return out;
}

} // namespace

#define RPL_HEAVY(N, S)                                                                            \
  variant {                                                                                        \
    "heavy_n" #N "_s" #S, heavy<N, S>, true, false                                                 \
  }
#define RPL_HEAVY_FIXED(N, S)                                                                      \
  variant {                                                                                        \
    "heavy_n" #N "_s" #S, heavy<N, S>, false, false                                                \
  }
#define RPL_BOUNDED(T, B, N)                                                                       \
  variant {                                                                                        \
    "bounded_t" #T "_b" #B "_n" #N, bounded<T, B, N>, true, true                                   \
  }

int main() {
  int device_count = 0;
  const cudaError_t count_status = cudaGetDeviceCount(&device_count);
  if (count_status != cudaSuccess || device_count == 0) {
    std::fprintf(stderr, "occupancy_probe: no CUDA device (%s: %s); skipping\n",
                 count_status == cudaSuccess ? "cudaGetDeviceCount"
                                             : cudaGetErrorName(count_status),
                 count_status == cudaSuccess ? "0 devices" : cudaGetErrorString(count_status));
    return 77;
  }
  RPL_CUDA_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop{};
  RPL_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const std::string device = "sm_" + std::to_string(prop.major * 10 + prop.minor);
  const std::string name = json_escape(prop.name);
  std::fprintf(stdout,
               "occupancy_probe: %s (%s), %d SMs, %zu B shared per SM, %zu B opt-in per block, "
               "%d regs per SM, %d max blocks per SM\n",
               prop.name, device.c_str(), prop.multiProcessorCount, prop.sharedMemPerMultiprocessor,
               prop.sharedMemPerBlockOptin, prop.regsPerMultiprocessor,
               prop.maxBlocksPerMultiProcessor);

  const std::vector<variant> variants{
      // Registers: N live accumulators, no shared memory.
      RPL_HEAVY(1, 0),
      RPL_HEAVY_FIXED(16, 0),
      RPL_HEAVY_FIXED(40, 0),
      RPL_HEAVY(64, 0),
      RPL_HEAVY_FIXED(96, 0),
      RPL_HEAVY(128, 0),
      RPL_HEAVY_FIXED(168, 0),
      RPL_HEAVY(232, 0),
      // Static shared memory, with few and with many registers.
      RPL_HEAVY(1, 1024),
      RPL_HEAVY(1, 8192),
      RPL_HEAVY(1, 20480),
      RPL_HEAVY(1, 40960),
      RPL_HEAVY(64, 1024),
      RPL_HEAVY(64, 8192),
      RPL_HEAVY(64, 20480),
      RPL_HEAVY(64, 40960),
      // __launch_bounds__ caps on a register-hungry body (max threads, min blocks per SM).
      RPL_BOUNDED(1024, 1, 128),
      RPL_BOUNDED(1024, 2, 128),
      RPL_BOUNDED(512, 2, 128),
      RPL_BOUNDED(256, 2, 128),
      RPL_BOUNDED(256, 4, 128),
      RPL_BOUNDED(256, 8, 128),
      RPL_BOUNDED(128, 16, 128),
      RPL_BOUNDED(96, 10, 128),
      RPL_BOUNDED(64, 32, 128),
  };
  const std::vector<int> blocks{32, 64, 96, 128, 256, 512, 768, 1024};
  const std::vector<std::size_t> dynamic_sizes{
      0,          1024,       4 * 1024,   12 * 1024,  16 * 1024, 32 * 1024,
      48 * 1024,  56 * 1024,  57 * 1024,  64 * 1024,  76 * 1024, 100 * 1024,
      113 * 1024, 150 * 1024, 200 * 1024, 226 * 1024, 227 * 1024};

  int lines = 0;
  int skipped = 0;
  for (const variant& v : variants) {
    cudaFuncAttributes attributes{};
    RPL_CUDA_CHECK(cudaFuncGetAttributes(&attributes, v.fn));
    // Allow every dynamic size that still fits beside the static shared memory.
    const std::size_t optin = prop.sharedMemPerBlockOptin;
    const std::size_t max_dynamic =
        optin > attributes.sharedSizeBytes ? optin - attributes.sharedSizeBytes : 0;
    RPL_CUDA_CHECK(cudaFuncSetAttribute(v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(max_dynamic)));
    std::fprintf(stdout,
                 "occupancy_probe: %s: %d regs, %zu B static shared, %zu B local, max %d threads, "
                 "max dynamic %zu B\n",
                 v.name.c_str(), attributes.numRegs, attributes.sharedSizeBytes,
                 attributes.localSizeBytes, attributes.maxThreadsPerBlock, max_dynamic);
    for (const int block : blocks) {
      // A block above the kernel's own limit cannot launch. Under __launch_bounds__ that limit is
      // the kernel's declaration, which the model does not see: not compared. Otherwise it comes
      // from registers (the model must say 0 blocks), so the runtime's answer is kept, unless
      // the runtime refuses the question.
      const bool over_limit = block > attributes.maxThreadsPerBlock;
      if (over_limit && v.launch_bounds) {
        ++skipped;
        continue;
      }
      for (const std::size_t dynamic : dynamic_sizes) {
        if (dynamic > max_dynamic) {
          ++skipped;
          continue;
        }
        if (!v.sweep_dynamic && dynamic != 0)
          continue;
        int blocks_per_sm = -1;
        const cudaError_t status =
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, v.fn, block, dynamic);
        if (over_limit && status != cudaSuccess) {
          std::fprintf(
              stdout, "occupancy_probe: %s block %d (over its limit of %d): %s; not compared\n",
              v.name.c_str(), block, attributes.maxThreadsPerBlock, cudaGetErrorName(status));
          (void)cudaGetLastError();
          ++skipped;
          continue;
        }
        RPL_CUDA_CHECK(status);
        std::printf("{\"kernel\": \"%s\", \"block\": %d, \"regs\": %d, \"static_smem\": %zu, "
                    "\"dynamic_smem\": %zu, \"blocks_per_sm\": %d, \"device\": \"%s\", "
                    "\"name\": \"%s\", \"local_bytes\": %zu, \"max_threads_per_block\": %d}\n",
                    v.name.c_str(), block, attributes.numRegs, attributes.sharedSizeBytes, dynamic,
                    blocks_per_sm, device.c_str(), name.c_str(), attributes.localSizeBytes,
                    attributes.maxThreadsPerBlock);
        ++lines;
      }
    }
  }
  RPL_CUDA_CHECK(cudaGetLastError());
  std::fflush(stdout);
  std::fprintf(stdout, "occupancy_probe: %d combinations printed, %d not launchable (skipped)\n",
               lines, skipped);
  return lines > 0 ? 0 : 1;
}
