#pragma once
// The kernels of pointer_table.cu, apart so that `autotune --replay` can build gather_scale alone
// (pointer_table_kernel.cu, -DGATHER_UNROLL=N -cubin) and time each build on a captured dispatch:
// the same name and parameter list as the captured kernel, the same results.

struct segment {
  const float* in;
  float* out;
  int n;
  float scale;
};

constexpr int segments = 4;
constexpr int terms = 48; // polynomial terms per element: enough work to be compute-bound

__host__ __device__ float value_of(float x, float scale) {
  float acc = 0.0f;
  float p = 1.0f;
  for (int k = 0; k < terms; ++k) {
    acc = fmaf(p, 1.0f / (k + 1), acc);
    p = p * x * 0.999f;
  }
  return acc * scale;
}

__global__ void fill_segment(float* in, int n, int seed) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    in[i] = 0.25f + 0.5f * static_cast<float>((i * 2654435761u + seed) % 1000u) / 1000.0f;
  }
}

// Without GATHER_UNROLL the compiler chooses (pointer_table's own build).
#define RPL_PRAGMA(x) _Pragma(#x)
#ifdef GATHER_UNROLL
#define RPL_UNROLL(n) RPL_PRAGMA(unroll n)
#else
#define RPL_UNROLL(n)
#endif

// value_of on the device, its loop unrolled GATHER_UNROLL times (when defined): the same operations in the same
// order, so every unroll factor gives the same bits (what autotune --replay checks).
__device__ float device_value_of(float x, float scale) {
  float acc = 0.0f;
  float p = 1.0f;
  RPL_UNROLL(GATHER_UNROLL)
  for (int k = 0; k < terms; ++k) {
    acc = fmaf(p, 1.0f / (k + 1), acc);
    p = p * x * 0.999f;
  }
  return acc * scale;
}

// Every pointer it follows comes from `table`, which lives in device memory.
__global__ void gather_scale(const segment* table, int count, float round) {
  for (int s = 0; s < count; ++s) {
    const segment seg = table[s];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < seg.n; i += gridDim.x * blockDim.x) {
      seg.out[i] = device_value_of(seg.in[i], seg.scale) + round;
    }
  }
}

