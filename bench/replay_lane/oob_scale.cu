// pipeline.cu's pl_scale with one write past the end of `out` (element n), every element inside n
// right: the out-of-bounds case of issue 36, for the replay lane. extern "C", so the replay finds
// it by this name with the captured parameter list (float*, const float*, float, size_t).
#include <cstddef>

extern "C" __global__ void
oob_scale(float* __restrict__ out, const float* __restrict__ in, float a, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = a * in[i];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    out[n] = 1.0f; // one element past the end
  }
}
