// A compile-bound GPU kernel for bench/compile_scaling.sh: template recursion and a fully unrolled
// loop make each device-only compile take about a second; VARIANT (from the space) makes every
// configuration a distinct build. Compiled as HIP (hipcc -x hip), CUDA (nvcc -x cu) or C++ (g++).
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#elif !defined(__CUDACC__)
// A host compiler (the bench's g++ mode): stand-ins for what the GPU languages provide.
#define __global__
#define __device__
struct rpl_dim3 {
  unsigned x;
};
static rpl_dim3 blockIdx, blockDim, threadIdx;
#endif

#ifndef VARIANT
#define VARIANT 0
#endif
#ifndef DEPTH
#define DEPTH 160
#endif
#ifndef UNROLL
#define UNROLL 256
#endif

template <int N> struct poly {
  __device__ static float at(float x) {
    return poly<N - 1>::at(x) * x + static_cast<float>((N * 7 + VARIANT) % 13) * 0.25f;
  }
};
template <> struct poly<0> {
  __device__ static float at(float) { return 1.0f + VARIANT; }
};

extern "C" __global__ void compile_bound(float* out, const float* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
#pragma unroll
  for (int j = 0; j < UNROLL; ++j)
    acc += poly<DEPTH>::at(in[(i + j * (VARIANT + 1)) % n]);
  if (i < n)
    out[i] = acc;
}
