// norm_stencil: a small two-stream CUDA application for the replay-fidelity benchmark
// (bench/replay_fidelity/run.sh --app norm_stencil). It is not one of examples/cuda (the replay was
// developed on examples/cuda/pointer_table.cu): its kernels, sizes and streams were written for
// this benchmark, to give one kernel of 20-100 us and one of 0.2-1 ms on an H100.
//
// Every input is produced on the device (nv_hash_fill). Then, --steps times:
//   main stream:  ns_layernorm  x[rows][cols] -> y (one warp per row, gamma and beta), ~128 MB of
//                 traffic at the defaults: the short kernel;
//   side stream:  ns_row_energy y -> energy[rows] (sum of squares per row), after an event of the
//                 main stream, and the main stream waits for it in turn;
//   main stream:  ns_stencil    u[step % 2] -> u[(step + 1) % 2], a radius-4 star stencil (17
//                 points) over an n x n grid, ~800 MB of traffic at the defaults: the long kernel.
// So the kernels never overlap (each one's in-application time is its own), and each one reads
// nothing it writes. At the end the host prints a checksum of energy and of a grid row.
//
// Usage: norm_stencil [--steps N] [--rows R] [--cols C] [--n N]
//   defaults: 20 steps, 16384 rows of 1024 columns (64 MiB each for x and y), a 10240 x 10240 grid
//   (400 MiB per copy). C must be a multiple of 32 and at most 2048.
// Exit: 0 done, 1 a CUDA error or a non-finite result, 2 bad arguments.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    const cudaError_t ns_err_ = (call);                                                            \
    if (ns_err_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "norm_stencil: %s failed at %s:%d: %s\n", #call, __FILE__, __LINE__,    \
                   cudaGetErrorString(ns_err_));                                                   \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

// The kernels have external linkage, so a capture's code object names them as the trace does and
// the replay finds them by their mangled names.
constexpr int radius = 4;
constexpr int max_per_lane = 64; // 2048 columns / 32 lanes

__device__ static float hash_unit(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t h = (i + 0x9e3779b97f4a7c15ull * (seed + 1)) * 0xbf58476d1ce4e5b9ull;
  h ^= h >> 31;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 29;
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f); // [0, 1)
}

__global__ void
nv_hash_fill(float* out, std::size_t count, std::uint32_t seed, float lo, float hi) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = lo + (hi - lo) * hash_unit(i, seed);
  }
}

/// One warp per row: the row stays in registers between the mean, the variance and the output.
__global__ void ns_layernorm(const float* __restrict__ x,
                             float* __restrict__ y,
                             const float* __restrict__ gamma,
                             const float* __restrict__ beta,
                             int rows,
                             int cols) {
  const int warps_per_block = blockDim.x / 32;
  const int row = blockIdx.x * warps_per_block + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) {
    return;
  }
  const float* in = x + static_cast<std::size_t>(row) * cols;
  float v[max_per_lane];
  const int per_lane = cols / 32;
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < max_per_lane; ++k) {
    if (k < per_lane) {
      v[k] = in[k * 32 + lane];
      sum += v[k];
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  }
  const float mean = sum / static_cast<float>(cols);
  float squares = 0.0f;
#pragma unroll
  for (int k = 0; k < max_per_lane; ++k) {
    if (k < per_lane) {
      const float d = v[k] - mean;
      squares += d * d;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    squares += __shfl_xor_sync(0xffffffffu, squares, offset);
  }
  const float inv = rsqrtf(squares / static_cast<float>(cols) + 1e-5f);
  float* out = y + static_cast<std::size_t>(row) * cols;
#pragma unroll
  for (int k = 0; k < max_per_lane; ++k) {
    if (k < per_lane) {
      const int c = k * 32 + lane;
      out[c] = (v[k] - mean) * inv * gamma[c] + beta[c];
    }
  }
}

/// Sum of squares of each row of y, one block per row.
__global__ void ns_row_energy(const float* __restrict__ y, float* __restrict__ energy, int cols) {
  __shared__ float partial[32];
  const float* in = y + static_cast<std::size_t>(blockIdx.x) * cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    s += in[c] * in[c];
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    s += __shfl_xor_sync(0xffffffffu, s, offset);
  }
  if (threadIdx.x % 32 == 0) {
    partial[threadIdx.x / 32] = s;
  }
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) {
      s += __shfl_xor_sync(0xffffffffu, s, offset);
    }
    if (threadIdx.x == 0) {
      energy[blockIdx.x] = s;
    }
  }
}

/// A radius-4 star stencil (an eighth-order Laplacian, as in wave-propagation codes), one point per
/// thread; the border keeps its value.
__global__ void ns_stencil(const float* __restrict__ u, float* __restrict__ next, int n) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= n || y >= n) {
    return;
  }
  const std::size_t at = static_cast<std::size_t>(y) * n + x;
  if (x < radius || y < radius || x >= n - radius || y >= n - radius) {
    next[at] = u[at];
    return;
  }
  const float c[radius + 1] = {-205.0f / 72, 8.0f / 5, -1.0f / 5, 8.0f / 315, -1.0f / 560};
  float lap = 2.0f * c[0] * u[at];
#pragma unroll
  for (int r = 1; r <= radius; ++r) {
    lap += c[r] * (u[at - r] + u[at + r] + u[at - static_cast<std::size_t>(r) * n] +
                   u[at + static_cast<std::size_t>(r) * n]);
  }
  next[at] = u[at] + 0.1f * lap;
}

namespace {

int positive(const char* flag, const char* text) {
  const long v = std::strtol(text, nullptr, 10);
  if (v <= 0 || v > (1 << 30)) {
    std::fprintf(stderr, "norm_stencil: %s needs a positive number, not '%s'\n", flag, text);
    std::exit(2);
  }
  return static_cast<int>(v);
}

} // namespace

int main(int argc, char** argv) {
  int steps = 20;
  int rows = 16384;
  int cols = 1024;
  int n = 10240;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 < argc && (a == "--steps" || a == "--rows" || a == "--cols" || a == "--n")) {
      const int v = positive(argv[i], argv[i + 1]);
      ++i;
      (a == "--steps" ? steps : a == "--rows" ? rows : a == "--cols" ? cols : n) = v;
    } else {
      std::fprintf(stderr, "usage: norm_stencil [--steps N] [--rows R] [--cols C] [--n N]\n");
      return 2;
    }
  }
  if (cols % 32 != 0 || cols > 32 * max_per_lane || n <= 2 * radius) {
    std::fprintf(stderr, "norm_stencil: --cols must be a multiple of 32 up to %d, --n over %d\n",
                 32 * max_per_lane, 2 * radius);
    return 2;
  }
  cudaStream_t main_stream, side_stream;
  CHECK(cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&side_stream, cudaStreamNonBlocking));
  cudaEvent_t normalized, measured;
  CHECK(cudaEventCreateWithFlags(&normalized, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&measured, cudaEventDisableTiming));

  const std::size_t matrix = static_cast<std::size_t>(rows) * cols;
  const std::size_t grid = static_cast<std::size_t>(n) * n;
  float *x, *y, *gamma, *beta, *energy, *u[2];
  CHECK(cudaMalloc(&x, matrix * sizeof(float)));
  CHECK(cudaMalloc(&y, matrix * sizeof(float)));
  CHECK(cudaMalloc(&gamma, cols * sizeof(float)));
  CHECK(cudaMalloc(&beta, cols * sizeof(float)));
  CHECK(cudaMalloc(&energy, rows * sizeof(float)));
  CHECK(cudaMalloc(&u[0], grid * sizeof(float)));
  CHECK(cudaMalloc(&u[1], grid * sizeof(float)));

  // Inputs, made on the device: the side stream fills the grid while the main one fills the rest.
  nv_hash_fill<<<1024, 256, 0, main_stream>>>(x, matrix, 1, -2.0f, 2.0f);
  nv_hash_fill<<<4, 256, 0, main_stream>>>(gamma, cols, 2, 0.5f, 1.5f);
  nv_hash_fill<<<4, 256, 0, main_stream>>>(beta, cols, 3, -0.1f, 0.1f);
  nv_hash_fill<<<2048, 256, 0, side_stream>>>(u[0], grid, 4, 0.0f, 1.0f);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(measured, side_stream));
  CHECK(cudaStreamWaitEvent(main_stream, measured, 0));

  const int warps_per_block = 8;
  const dim3 norm_grid((rows + warps_per_block - 1) / warps_per_block);
  const dim3 stencil_block(32, 8);
  const dim3 stencil_grid((n + 31) / 32, (n + 7) / 8);
  for (int step = 0; step < steps; ++step) {
    ns_layernorm<<<norm_grid, 32 * warps_per_block, 0, main_stream>>>(x, y, gamma, beta, rows,
                                                                      cols);
    CHECK(cudaEventRecord(normalized, main_stream));
    CHECK(cudaStreamWaitEvent(side_stream, normalized, 0));
    ns_row_energy<<<rows, 256, 0, side_stream>>>(y, energy, cols);
    CHECK(cudaEventRecord(measured, side_stream));
    CHECK(cudaStreamWaitEvent(main_stream, measured, 0));
    ns_stencil<<<stencil_grid, stencil_block, 0, main_stream>>>(u[step % 2], u[(step + 1) % 2], n);
    CHECK(cudaGetLastError());
  }
  CHECK(cudaStreamSynchronize(main_stream));
  CHECK(cudaStreamSynchronize(side_stream));

  std::vector<float> e(rows);
  std::vector<float> line(n);
  CHECK(cudaMemcpy(e.data(), energy, rows * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(line.data(), u[steps % 2] + static_cast<std::size_t>(n / 2) * n,
                   n * sizeof(float), cudaMemcpyDeviceToHost));
  double energy_sum = 0;
  double line_sum = 0;
  for (const float v : e) {
    energy_sum += v;
  }
  for (const float v : line) {
    line_sum += v;
  }
  if (!std::isfinite(energy_sum) || !std::isfinite(line_sum)) {
    std::fprintf(stderr, "norm_stencil: a non-finite result\n");
    return 1;
  }
  // A row of layernorm output has mean ~beta and variance ~gamma^2: energy ~ cols per row.
  std::printf("norm_stencil: %d steps; energy %.6g (%.4f per column), grid row %.6g\n", steps,
              energy_sum, energy_sum / (static_cast<double>(rows) * cols), line_sum);
  for (float* p : {x, y, gamma, beta, energy, u[0], u[1]}) {
    CHECK(cudaFree(p));
  }
  return 0;
}
