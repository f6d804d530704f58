// coalescing_app: two kernels that move the same bytes, for tests/gpu/uncoalesced_class_test.cpp
// (analyze's "memory: uncoalesced" class from Nsight Compute's counters).
//
//   row_gather   out[t] = in[(t % rows) * cols + t / rows]: neighbouring threads read addresses a
//                row apart (4 KiB here), one 32-byte sector each, so a warp's load request needs
//                32 sectors; the stores are coalesced.
//   unit_copy    out[t] = in[t]: a warp's request needs 4 sectors.
//
// A 4,096 x 4,096 float matrix (64 MiB each way), each kernel launched 3 times.
// Exit 77 when there is no CUDA device; 1 on a CUDA error.

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

namespace {

constexpr unsigned rows = 4096;
constexpr unsigned cols = 4096;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "coalescing_app: %s failed: %s (%s)\n", what, cudaGetErrorName(status),
                 cudaGetErrorString(status));
    std::exit(1);
  }
}

__global__ void row_gather(const float* in, float* out) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < rows * cols)
    out[t] = in[(t % rows) * cols + t / rows];
}

__global__ void unit_copy(const float* in, float* out) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < rows * cols)
    out[t] = in[t];
}

} // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "coalescing_app: no CUDA device\n");
    return 77;
  }
  const size_t bytes = sizeof(float) * rows * cols;
  float* in = nullptr;
  float* out = nullptr;
  check(cudaMalloc(&in, bytes), "cudaMalloc");
  check(cudaMalloc(&out, bytes), "cudaMalloc");
  check(cudaMemset(in, 0, bytes), "cudaMemset");
  const unsigned block = 256;
  const unsigned grid = rows * cols / block;
  for (int i = 0; i < 3; ++i) {
    row_gather<<<grid, block>>>(in, out);
    check(cudaGetLastError(), "row_gather");
    unit_copy<<<grid, block>>>(in, out);
    check(cudaGetLastError(), "unit_copy");
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  check(cudaFree(in), "cudaFree");
  check(cudaFree(out), "cudaFree");
  return 0;
}
