// A device-to-device copy kernel, the memory-bound reference of the roofline checks: each of
// `--reps` launches of `stream_copy` reads and writes `--mib` MiB of floats once (grid-stride,
// float4 loads and stores), so its DRAM traffic is 2 x size per launch and its arithmetic
// intensity is zero. The copy is verified after the last launch.
//
// Usage: stream_copy [--mib N] [--reps R]   (default 512 MiB, 10 launches)
// Prints "stream_copy N MiB x R: median kernel time T ms (CUDA events), B GB/s". Exits 0 when the
// copy verifies, 1 on a wrong result or a CUDA error, 2 on bad arguments.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

extern "C" __global__ void
stream_copy(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

#define CHECK(call)                                                                                \
  do {                                                                                             \
    const cudaError_t e = (call);                                                                  \
    if (e != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "stream_copy: %s: %s\n", #call, cudaGetErrorString(e));                 \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

int main(int argc, char** argv) {
  long mib = 512, reps = 10;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--mib") == 0 && has_value)
      mib = std::strtol(argv[++i], nullptr, 10);
    else if (std::strcmp(argv[i], "--reps") == 0 && has_value)
      reps = std::strtol(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: stream_copy [--mib N] [--reps R]\n");
      return 2;
    }
  }
  if (mib < 1 || mib > 16384 || reps < 1 || reps > 10000) {
    std::fprintf(stderr, "stream_copy: --mib 1..16384 and --reps 1..10000\n");
    return 2;
  }
  const size_t bytes = static_cast<size_t>(mib) << 20;
  const size_t n4 = bytes / sizeof(float4);
  std::vector<float> host(bytes / sizeof(float));
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = static_cast<float>(i % 9973);
  float4 *in = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&in, bytes));
  CHECK(cudaMalloc(&out, bytes));
  CHECK(cudaMemcpy(in, host.data(), bytes, cudaMemcpyHostToDevice));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int threads = 256, blocks = sms * 8;
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (long r = 0; r < reps; ++r) {
    CHECK(cudaEventRecord(start));
    stream_copy<<<blocks, threads>>>(in, out, n4);
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaGetLastError());
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  std::vector<float> back(host.size());
  CHECK(cudaMemcpy(back.data(), out, bytes, cudaMemcpyDeviceToHost));
  if (std::memcmp(back.data(), host.data(), bytes) != 0) {
    std::fprintf(stderr, "stream_copy: the copy differs from its source\n");
    return 1;
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  std::printf("stream_copy %ld MiB x %ld: median kernel time %.4f ms (CUDA events), %.1f GB/s\n",
              mib, reps, median, 2.0 * static_cast<double>(bytes) / (median * 1e-3) / 1e9);
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  return 0;
}
