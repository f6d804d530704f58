// dynamic_smem_app: kernels launched with dynamic shared memory, for
// tests/gpu/profile_dynamic_smem_test.cpp (profile's occupancy counts the launch's dynamic shared
// memory, as cudaOccupancyMaxActiveBlocksPerMultiprocessor does).
//
// One kernel per size (dyn_smem<TAG>, so that profile reports each apart): 128 threads per block,
// 0, 1, 16, 48 and 100 KiB of dynamic shared memory (above 48 KiB through
// cudaFuncAttributeMaxDynamicSharedMemorySize), and static_smem_dyn<TAG> with 8 KiB static plus 40
// KiB dynamic. Each is launched 3 times.
//
//   dynamic_smem_app           launches them (run it under rocm-perf profile --backend cuda)
//   dynamic_smem_app --query   launches nothing; prints one JSON line per kernel:
//     {"kernel": "dyn_smem<16>", "block": 128, "regs": r, "static_smem": s, "dynamic_smem": d,
//      "blocks_per_sm": n, "device": "sm_90"}
//
// Exit 77 when there is no CUDA device; 1 on a CUDA error.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "dynamic_smem_app: %s failed: %s (%s)\n", what, cudaGetErrorName(status),
                 cudaGetErrorString(status));
    std::exit(1);
  }
}

/// Touches its dynamic shared memory, so the launch really uses it.
template <int TAG> __global__ void dyn_smem(float* out, unsigned floats) {
  extern __shared__ float buffer[];
  if (floats == 0) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = static_cast<float>(TAG);
    return;
  }
  for (unsigned i = threadIdx.x; i < floats; i += blockDim.x)
    buffer[i] = static_cast<float>(i + TAG);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = buffer[(threadIdx.x * 7u) % floats];
}

/// 8 KiB of static shared memory, and dynamic on top.
template <int TAG> __global__ void static_smem_dyn(float* out, unsigned floats) {
  __shared__ float fixed[2048];
  extern __shared__ float buffer[];
  fixed[threadIdx.x] = static_cast<float>(threadIdx.x);
  for (unsigned i = threadIdx.x; i < floats; i += blockDim.x)
    buffer[i] = static_cast<float>(i + TAG);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] =
      fixed[(threadIdx.x * 3u) % 2048u] + buffer[(threadIdx.x * 7u) % floats];
}

using kernel_fn = void (*)(float*, unsigned);

struct launch {
  const char* name;
  kernel_fn fn;
  std::size_t dynamic_bytes;
};

} // namespace

int main(int argc, char** argv) {
  const bool query = argc > 1 && std::strcmp(argv[1], "--query") == 0;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "dynamic_smem_app: no CUDA device; skipping\n");
    return 77;
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const std::string device = "sm_" + std::to_string(prop.major * 10 + prop.minor);

  const std::vector<launch> launches{
      {"dyn_smem<0>", dyn_smem<0>, 0},
      {"dyn_smem<1>", dyn_smem<1>, 1024},
      {"dyn_smem<16>", dyn_smem<16>, 16 * 1024},
      {"dyn_smem<48>", dyn_smem<48>, 48 * 1024},
      {"dyn_smem<100>", dyn_smem<100>, 100 * 1024},
      {"static_smem_dyn<40>", static_smem_dyn<40>, 40 * 1024},
  };
  constexpr int block = 128;
  constexpr int grid = 264; // two waves of blocks on 132 SMs; any size works
  float* out = nullptr;
  check(cudaMalloc(&out, grid * block * sizeof(float)), "cudaMalloc");
  for (const launch& l : launches) {
    // Above 48 KiB a kernel must opt in; harmless below.
    check(cudaFuncSetAttribute(l.fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(l.dynamic_bytes)),
          "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
    if (query) {
      cudaFuncAttributes attributes{};
      check(cudaFuncGetAttributes(&attributes, l.fn), "cudaFuncGetAttributes");
      int blocks_per_sm = -1;
      check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, l.fn, block,
                                                          l.dynamic_bytes),
            "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
      std::printf("{\"kernel\": \"%s\", \"block\": %d, \"regs\": %d, \"static_smem\": %zu, "
                  "\"dynamic_smem\": %zu, \"blocks_per_sm\": %d, \"device\": \"%s\"}\n",
                  l.name, block, attributes.numRegs, attributes.sharedSizeBytes, l.dynamic_bytes,
                  blocks_per_sm, device.c_str());
      continue;
    }
    unsigned floats = static_cast<unsigned>(l.dynamic_bytes / sizeof(float));
    void* args[] = {&out, &floats};
    for (int rep = 0; rep < 3; ++rep)
      check(cudaLaunchKernel(reinterpret_cast<const void*>(l.fn), dim3(grid), dim3(block), args,
                             l.dynamic_bytes, nullptr),
            l.name);
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  check(cudaFree(out), "cudaFree");
  return 0;
}
