// pipeline: three kernels in a row on one stream, the application of `rocm-perf optimize --top K
// -- APP` (docs/optimize.md). Unlike multistream.cu it holds no stream with a host function, so
// each kernel's dispatch can be captured on its own (`rocm-perf isolate`) and replayed.
//
//   pl_transpose  a 32 x 32 shared-memory tile transpose whose column reads of the tile all hit
//                 one bank (the textbook case for padding the tile by one column)
//   pl_scale      out = a * in, memory bound: nothing in its source limits it
//   pl_row_sum    one thread per row sums its row
//
// Usage: pipeline [--size N] [--reps R]   (N x N floats, default 4096; each kernel R times, default
// 5). Checks every result on the host. Exits 0 when all verify, 1 on a wrong result or a CUDA
// error, 2 on bad arguments.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    const cudaError_t rpl_err_ = (call);                                                           \
    if (rpl_err_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "pipeline: %s failed: %s\n", #call, cudaGetErrorString(rpl_err_));      \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

constexpr int tile_dim = 32;
constexpr int tile_rows = 8;

extern "C" __global__ void
pl_transpose(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[tile_dim][tile_dim];
  int x = static_cast<int>(blockIdx.x) * tile_dim + static_cast<int>(threadIdx.x);
  int y = static_cast<int>(blockIdx.y) * tile_dim + static_cast<int>(threadIdx.y);
  for (int j = 0; j < tile_dim; j += tile_rows) {
    if (x < cols && y + j < rows) {
      tile[threadIdx.y + j][threadIdx.x] = in[static_cast<size_t>(y + j) * cols + x];
    }
  }
  __syncthreads();
  x = static_cast<int>(blockIdx.y) * tile_dim + static_cast<int>(threadIdx.x);
  y = static_cast<int>(blockIdx.x) * tile_dim + static_cast<int>(threadIdx.y);
  for (int j = 0; j < tile_dim; j += tile_rows) {
    if (x < rows && y + j < cols) {
      out[static_cast<size_t>(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
  }
}

extern "C" __global__ void
pl_scale(float* __restrict__ out, const float* __restrict__ in, float a, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    out[i] = a * in[i];
  }
}

extern "C" __global__ void
pl_row_sum(const float* __restrict__ in, float* __restrict__ sums, int rows, int cols) {
  const int row = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (row >= rows) {
    return;
  }
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) {
    sum += in[static_cast<size_t>(row) * cols + c];
  }
  sums[row] = sum;
}

int main(int argc, char** argv) {
  int size = 4096, reps = 5;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--size") == 0 && has_value) {
      size = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--reps") == 0 && has_value) {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: pipeline [--size N] [--reps R]\n");
      return 2;
    }
  }
  if (size < 1 || size > 32768 || reps < 1 || reps > 1000) {
    std::fprintf(stderr, "pipeline: --size must be 1..32768 and --reps 1..1000\n");
    return 2;
  }
  const size_t n = static_cast<size_t>(size) * size;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) {
    host[i] = static_cast<float>((i * 2654435761u) % 1000u) / 1000.0f;
  }
  float *in = nullptr, *t = nullptr, *s = nullptr, *sums = nullptr;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&t, n * sizeof(float)));
  CHECK(cudaMalloc(&s, n * sizeof(float)));
  CHECK(cudaMalloc(&sums, size * sizeof(float)));
  CHECK(cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  const dim3 tblock(tile_dim, tile_rows);
  const dim3 tgrid((size + tile_dim - 1) / tile_dim, (size + tile_dim - 1) / tile_dim);
  for (int r = 0; r < reps; ++r) {
    pl_transpose<<<tgrid, tblock>>>(in, t, size, size);
    pl_scale<<<1024, 256>>>(s, t, 2.0f, n);
    pl_row_sum<<<(size + 255) / 256, 256>>>(s, sums, size, size);
  }
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> got_t(n), got_sums(size);
  CHECK(cudaMemcpy(got_t.data(), t, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(got_sums.data(), sums, size * sizeof(float), cudaMemcpyDeviceToHost));
  for (int r = 0; r < size; ++r) {
    double expected = 0.0;
    for (int c = 0; c < size; ++c) {
      const float v = host[static_cast<size_t>(c) * size + r];
      if (got_t[static_cast<size_t>(r) * size + c] != v) {
        std::fprintf(stderr, "pipeline: transpose wrong at (%d, %d)\n", r, c);
        return 1;
      }
      expected += 2.0 * v;
    }
    if (std::fabs(got_sums[r] - expected) > 1e-3 * (1.0 + std::fabs(expected))) {
      std::fprintf(stderr, "pipeline: row sum %d is %f, expected %f\n", r, got_sums[r], expected);
      return 1;
    }
  }
  std::printf("pipeline %d x %d, %d reps: verified\n", size, size, reps);
  CHECK(cudaFree(in));
  CHECK(cudaFree(t));
  CHECK(cudaFree(s));
  CHECK(cudaFree(sums));
  return 0;
}
