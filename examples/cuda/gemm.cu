// Tiled single-precision GEMM C = A * B (row-major, M x K times K x N), the CUDA kernel the
// autotuner tunes. Each block computes a TILE_M x TILE_N tile of C, staging TILE_K-deep panels of
// A and B in shared memory; each thread accumulates THREAD_M x THREAD_N outputs in registers.
// Every tunable is a compile-time macro, so each point of examples/cuda/space.json is one build:
//
//   nvcc -O3 -arch=sm_90 -DTILE_M=64 -DTILE_N=64 -DTILE_K=16 -DTHREAD_M=4 -DTHREAD_N=4 gemm.cu -o g
//   ./g --size 2048
//
// With the autotuner:
//   rocm-perf autotune --space examples/cuda/space.json --source examples/cuda/gemm.cu
//     --build-template "nvcc -O3 -arch=sm_90 -DTILE_M={TILE_M} -DTILE_N={TILE_N} -DTILE_K={TILE_K}
//                       -DTHREAD_M={THREAD_M} -DTHREAD_N={THREAD_N} gemm.cu -o {OUT}"
//     --cmd-template "{BIN} --size 2048"
//
// Usage: gemm [--size N | --m M --n N --k K] [--reps R] [--json]
// Checks C against a naive GPU kernel (|c - ref| <= 1e-3 * (1 + |ref|) everywhere), then prints the
// median kernel time over R timed runs (CUDA events, after one warm-up run). Exits 0 when C
// verifies, 1 on a wrong result or a CUDA error, 2 on bad arguments.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#ifndef TILE_M
#define TILE_M 64
#endif
#ifndef TILE_N
#define TILE_N 64
#endif
#ifndef TILE_K
#define TILE_K 16
#endif
#ifndef THREAD_M
#define THREAD_M 4
#endif
#ifndef THREAD_N
#define THREAD_N 4
#endif

// Invalid combinations fail at compile time, on purpose: the autotuner records them as `invalid`
// (build failed) and carries on.
static_assert(TILE_M > 0 && TILE_N > 0 && TILE_K > 0, "tile sizes must be positive");
static_assert(THREAD_M > 0 && THREAD_N > 0, "THREAD_M and THREAD_N must be positive");
static_assert(TILE_M % THREAD_M == 0, "THREAD_M must divide TILE_M");
static_assert(TILE_N % THREAD_N == 0, "THREAD_N must divide TILE_N");
static_assert((TILE_M / THREAD_M) * (TILE_N / THREAD_N) <= 1024,
              "a block has (TILE_M / THREAD_M) * (TILE_N / THREAD_N) threads: at most 1024");
static_assert(
    (TILE_M / THREAD_M) * (TILE_N / THREAD_N) >= 32,
    "a block needs at least one full warp: (TILE_M / THREAD_M) * (TILE_N / THREAD_N) >= 32");
static_assert(
    (TILE_M + TILE_N) * TILE_K * sizeof(float) <= 48 * 1024,
    "the A and B panels need (TILE_M + TILE_N) * TILE_K * 4 bytes of static shared memory: "
    "at most 48 KiB");
static_assert(THREAD_M * THREAD_N <= 256,
              "more than 256 accumulators per thread cannot stay in registers");

#define CHECK(call)                                                                                \
  do {                                                                                             \
    const cudaError_t rpl_err_ = (call);                                                           \
    if (rpl_err_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "gemm: %s failed at %s:%d: %s\n", #call, __FILE__, __LINE__,            \
                   cudaGetErrorString(rpl_err_));                                                  \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

namespace {

constexpr int block_rows = TILE_M / THREAD_M; // threads along M
constexpr int block_cols = TILE_N / THREAD_N; // threads along N
constexpr int block_threads = block_rows * block_cols;

} // namespace

/// The tuned kernel's body. Thread (ty, tx) owns rows ty + i * block_rows and columns
/// tx + j * block_cols of the tile: neighbouring threads read neighbouring B columns (no bank
/// conflicts) and the same A element (a broadcast). Inlined into both entry points below.
__device__ __forceinline__ void sgemm_tile(const float* __restrict__ a,
                                           const float* __restrict__ b,
                                           float* __restrict__ c,
                                           int m,
                                           int n,
                                           int k) {
  __shared__ float as[TILE_K][TILE_M]; // A panel, transposed: as[kk][row]
  __shared__ float bs[TILE_K][TILE_N]; // B panel: bs[kk][col]
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % block_cols;
  const int ty = tid / block_cols;
  const int row0 = static_cast<int>(blockIdx.y) * TILE_M;
  const int col0 = static_cast<int>(blockIdx.x) * TILE_N;

  float acc[THREAD_M][THREAD_N];
#pragma unroll
  for (int i = 0; i < THREAD_M; ++i) {
#pragma unroll
    for (int j = 0; j < THREAD_N; ++j) {
      acc[i][j] = 0.0f;
    }
  }

  for (int k0 = 0; k0 < k; k0 += TILE_K) {
    // Stage the panels; out-of-range elements are zero, so any M, N, K works.
    for (int idx = tid; idx < TILE_M * TILE_K; idx += block_threads) {
      const int r = idx / TILE_K, kk = idx % TILE_K;
      const int gr = row0 + r, gk = k0 + kk;
      as[kk][r] = (gr < m && gk < k) ? a[static_cast<long long>(gr) * k + gk] : 0.0f;
    }
    for (int idx = tid; idx < TILE_K * TILE_N; idx += block_threads) {
      const int kk = idx / TILE_N, cc = idx % TILE_N;
      const int gk = k0 + kk, gc = col0 + cc;
      bs[kk][cc] = (gk < k && gc < n) ? b[static_cast<long long>(gk) * n + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE_K; ++kk) {
      float av[THREAD_M], bv[THREAD_N];
#pragma unroll
      for (int i = 0; i < THREAD_M; ++i) {
        av[i] = as[kk][ty + i * block_rows];
      }
#pragma unroll
      for (int j = 0; j < THREAD_N; ++j) {
        bv[j] = bs[kk][tx + j * block_cols];
      }
#pragma unroll
      for (int i = 0; i < THREAD_M; ++i) {
#pragma unroll
        for (int j = 0; j < THREAD_N; ++j) {
          acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < THREAD_M; ++i) {
    const int gr = row0 + ty + i * block_rows;
#pragma unroll
    for (int j = 0; j < THREAD_N; ++j) {
      const int gc = col0 + tx + j * block_cols;
      if (gr < m && gc < n) {
        c[static_cast<long long>(gr) * n + gc] = acc[i][j];
      }
    }
  }
}

/// The tuned kernel, as this program launches it.
__global__ void __launch_bounds__(block_threads) sgemm_tiled(const float* __restrict__ a,
                                                             const float* __restrict__ b,
                                                             float* __restrict__ c,
                                                             int m,
                                                             int n,
                                                             int k) {
  sgemm_tile(a, b, c, m, n, k);
}

/// The reference's body: one thread per element of C, plain k loop.
__device__ __forceinline__ void
sgemm_naive(const float* a, const float* b, float* c, int m, int n, int k) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (row < m && col < n) {
    float sum = 0.0f;
    for (int kk = 0; kk < k; ++kk) {
      sum = fmaf(a[static_cast<long long>(row) * k + kk], b[static_cast<long long>(kk) * n + col],
                 sum);
    }
    c[static_cast<long long>(row) * n + col] = sum;
  }
}

/// The reference, as this program launches it (16 x 16 threads per block).
__global__ void sgemm_reference(const float* a, const float* b, float* c, int m, int n, int k) {
  sgemm_naive(a, b, c, m, n, k);
}

// Unmangled entry points for the kernel lane (examples/cuda/gemm.launch.json), which loads
// `nvcc -cubin` code objects and launches kernels by symbol: the same code as the two kernels
// above, under names that C++ does not mangle.
extern "C" __global__ void __launch_bounds__(block_threads)
    rpl_sgemm_tiled(const float* __restrict__ a,
                    const float* __restrict__ b,
                    float* __restrict__ c,
                    int m,
                    int n,
                    int k) {
  sgemm_tile(a, b, c, m, n, k);
}

extern "C" __global__ void
rpl_sgemm_reference(const float* a, const float* b, float* c, int m, int n, int k) {
  sgemm_naive(a, b, c, m, n, k);
}

namespace {

void fill(std::vector<float>& v, unsigned seed) {
  unsigned x = seed;
  for (float& e : v) {
    x = x * 1664525u + 1013904223u;
    e = static_cast<float>((x >> 8) & 0xffff) / 32768.0f - 1.0f; // [-1, 1)
  }
}

int parse_int(const char* flag, const char* text, int lo, int hi) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) {
    std::fprintf(stderr, "gemm: bad value '%s' for %s (expected %d..%d)\n", text, flag, lo, hi);
    std::exit(2);
  }
  return static_cast<int>(v);
}

} // namespace

int main(int argc, char** argv) {
  int m = 2048, n = 2048, k = 2048, reps = 10;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--json") {
      json = true;
    } else if ((a == "--size" || a == "--m" || a == "--n" || a == "--k" || a == "--reps") &&
               has_value) {
      const int v =
          parse_int(a.c_str(), argv[++i], a == "--reps" ? 1 : 1, a == "--reps" ? 10000 : 32768);
      if (a == "--size")
        m = n = k = v;
      else if (a == "--m")
        m = v;
      else if (a == "--n")
        n = v;
      else if (a == "--k")
        k = v;
      else
        reps = v;
    } else {
      std::fprintf(stderr, "usage: gemm [--size N | --m M --n N --k K] [--reps R] [--json]\n");
      return 2;
    }
  }

  std::vector<float> ha(static_cast<std::size_t>(m) * k), hb(static_cast<std::size_t>(k) * n);
  fill(ha, 1u);
  fill(hb, 2u);
  float *da = nullptr, *db = nullptr, *dc = nullptr, *dref = nullptr;
  CHECK(cudaMalloc(&da, ha.size() * sizeof(float)));
  CHECK(cudaMalloc(&db, hb.size() * sizeof(float)));
  CHECK(cudaMalloc(&dc, static_cast<std::size_t>(m) * n * sizeof(float)));
  CHECK(cudaMalloc(&dref, static_cast<std::size_t>(m) * n * sizeof(float)));
  CHECK(cudaMemcpy(da, ha.data(), ha.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, hb.data(), hb.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dc, 0xff,
                   static_cast<std::size_t>(m) * n * sizeof(float))); // NaN: unwritten shows

  const dim3 grid((n + TILE_N - 1) / TILE_N, (m + TILE_M - 1) / TILE_M);
  const dim3 block(block_threads);
  const dim3 ref_block(16, 16);
  const dim3 ref_grid((n + 15) / 16, (m + 15) / 16);

  sgemm_reference<<<ref_grid, ref_block>>>(da, db, dref, m, n, k);
  CHECK(cudaGetLastError());
  sgemm_tiled<<<grid, block>>>(da, db, dc, m, n, k); // warm-up, and the result we check
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  std::vector<float> hc(static_cast<std::size_t>(m) * n), href(hc.size());
  CHECK(cudaMemcpy(hc.data(), dc, hc.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(href.data(), dref, href.size() * sizeof(float), cudaMemcpyDeviceToHost));
  std::size_t bad = 0, first_bad = 0;
  double max_err = 0;
  for (std::size_t i = 0; i < hc.size(); ++i) {
    const double err = std::fabs(static_cast<double>(hc[i]) - href[i]);
    const bool wrong = !(err <= 1e-3 * (1.0 + std::fabs(static_cast<double>(href[i])))); // NaN too
    if (wrong && bad++ == 0)
      first_bad = i;
    if (!std::isnan(err))
      max_err = std::max(max_err, err);
  }
  if (bad != 0) {
    std::fprintf(stderr,
                 "gemm: WRONG RESULT: %zu of %zu elements differ; first at (%zu, %zu): %g vs %g\n",
                 bad, hc.size(), first_bad / static_cast<std::size_t>(n),
                 first_bad % static_cast<std::size_t>(n), static_cast<double>(hc[first_bad]),
                 static_cast<double>(href[first_bad]));
    return 1;
  }

  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<float> times;
  for (int r = 0; r < reps; ++r) {
    CHECK(cudaEventRecord(start));
    sgemm_tiled<<<grid, block>>>(da, db, dc, m, n, k);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  const double median = reps % 2 == 1 ? times[static_cast<std::size_t>(reps / 2)]
                                      : 0.5 * (times[static_cast<std::size_t>(reps / 2 - 1)] +
                                               times[static_cast<std::size_t>(reps / 2)]);
  const double gflops = 2.0 * m * n * static_cast<double>(k) / (median * 1e-3) / 1e9;
  if (json) {
    std::printf("{\"m\": %d, \"n\": %d, \"k\": %d, \"tile_m\": %d, \"tile_n\": %d, \"tile_k\": %d, "
                "\"thread_m\": %d, \"thread_n\": %d, \"reps\": %d, \"kernel_ms\": %.6f, "
                "\"min_ms\": %.6f, \"gflops\": %.1f, \"max_abs_err\": %.3g}\n",
                m, n, k, TILE_M, TILE_N, TILE_K, THREAD_M, THREAD_N, reps, median,
                static_cast<double>(times.front()), gflops, max_err);
  } else {
    std::printf("gemm %dx%dx%d TILE_M=%d TILE_N=%d TILE_K=%d THREAD_M=%d THREAD_N=%d: "
                "kernel time: %.4f ms (median of %d), %.1f GFLOP/s, max |err| %.3g\n",
                m, n, k, TILE_M, TILE_N, TILE_K, THREAD_M, THREAD_N, median, reps, gflops, max_err);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  for (float* p : {da, db, dc, dref})
    CHECK(cudaFree(p));
  return 0;
}
