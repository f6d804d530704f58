// bench/compare/gpu_app.cu: the application of issue 38's GPU check of `rocm-perf compare`.
// Four kernels of 50-200 us on an H200, each launched 40 times, interleaved on one stream:
//   scale_k    out = a * in over 32 Mi floats (memory bound)
//   stencil_k  a 3-point stencil over the same arrays (memory bound)
//   spin_k     a chain of FMAs per thread (compute bound), SPIN_ITERS iterations
//   reduce_k   a block sum of 32 Mi floats with one atomic per block
// Built with -DSLOW_PCT=10, spin_k runs 10 % more iterations (and so takes about 10 % longer):
// "a build where one kernel was made 10 % slower on purpose". The output checksum is printed.
// Exit 77 without a CUDA device, 1 on a CUDA error.

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#ifndef SLOW_PCT
#define SLOW_PCT 0
#endif

namespace {

constexpr unsigned n = 32u << 20;
constexpr int spin_iters = 16384 * (100 + SLOW_PCT) / 100;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "gpu_app: %s failed: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

__global__ void scale_k(const float* in, float* out, float a) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = a * in[i];
}

__global__ void stencil_k(const float* in, float* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i + 1 < n)
    out[i] = 0.25f * in[i - 1] + 0.5f * in[i] + 0.25f * in[i + 1];
}

__global__ void spin_k(float* out, int iters) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = static_cast<float>(i & 1023) * 1e-3f;
  float y = 1.0f;
  for (int k = 0; k < iters; ++k) {
    x = fmaf(x, 0.999f, 0.001f);
    y = fmaf(y, x, 0.5f);
  }
  out[i] = x + y;
}

__global__ void reduce_k(const float* in, float* sum) {
  __shared__ float part[256];
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  part[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    atomicAdd(sum, part[0]);
}

} // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "gpu_app: no CUDA device\n");
    return 77;
  }
  float *a = nullptr, *b = nullptr, *spin = nullptr, *sum = nullptr;
  check(cudaMalloc(&a, sizeof(float) * n), "cudaMalloc");
  check(cudaMalloc(&b, sizeof(float) * n), "cudaMalloc");
  check(cudaMalloc(&spin, sizeof(float) * 132 * 4 * 256), "cudaMalloc");
  check(cudaMalloc(&sum, sizeof(float)), "cudaMalloc");
  check(cudaMemset(a, 0, sizeof(float) * n), "cudaMemset");
  check(cudaMemset(sum, 0, sizeof(float)), "cudaMemset");
  const unsigned block = 256, grid = n / block;
  for (int r = 0; r < 40; ++r) {
    scale_k<<<grid, block>>>(a, b, 1.5f);
    stencil_k<<<grid, block>>>(b, a);
    spin_k<<<132 * 4, block>>>(spin, spin_iters);
    reduce_k<<<grid, block>>>(a, sum);
  }
  check(cudaGetLastError(), "launch");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  float host = 0;
  check(cudaMemcpy(&host, sum, sizeof host, cudaMemcpyDeviceToHost), "cudaMemcpy");
  std::printf("gpu_app: SLOW_PCT=%d spin_iters=%d checksum %g\n", SLOW_PCT, spin_iters, host);
  return 0;
}
