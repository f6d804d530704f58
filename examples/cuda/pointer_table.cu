// pointer_table: a multi-stream CUDA application whose main kernel reads and writes only through
// pointers stored in device memory, for `rocm-perf isolate` / `rocm-perf replay` (the replay must
// put every allocation back at its original address: a replay that moves them and translates only
// the kernel's parameters fails verification).
//
// Four segments, each an input and an output allocation of its own (different sizes), are
// described by a table in device memory ({in, out, n, scale} per segment). Two streams fill the
// inputs (fill_segment), the main stream waits on their events, and then launches
// gather_scale(table, segments, round) --rounds times: each output element is a polynomial of an
// input element reached through the table, plus the round (so every dispatch changes the outputs).
// The host checks a sample of each output.
//
// Usage: pointer_table [--rounds N] [--elements N] [--managed]
//   (default 10 rounds, 8 Mi elements in segment 0; --managed also keeps a managed allocation
//   live, which a capture must refuse)
// Exit: 0 verified, 1 wrong result or CUDA error, 2 bad arguments.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    const cudaError_t rpl_err_ = (call);                                                           \
    if (rpl_err_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "pointer_table: %s failed at %s:%d: %s\n", #call, __FILE__, __LINE__,   \
                   cudaGetErrorString(rpl_err_));                                                  \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

#include "pointer_table_kernel.cuh"

int main(int argc, char** argv) {
  int rounds = 10;
  int elements = 8 << 20;
  bool managed = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--managed") {
      managed = true;
    } else if ((a == "--rounds" || a == "--elements") && i + 1 < argc) {
      const int v = std::atoi(argv[++i]);
      if (v <= 0) {
        std::fprintf(stderr, "pointer_table: %s needs a positive number\n", a.c_str());
        return 2;
      }
      (a == "--rounds" ? rounds : elements) = v;
    } else {
      std::fprintf(stderr, "usage: pointer_table [--rounds N] [--elements N] [--managed]\n");
      return 2;
    }
  }
  cudaStream_t main_stream, fill_a, fill_b;
  CHECK(cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&fill_a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&fill_b, cudaStreamNonBlocking));
  float* unified = nullptr;
  if (managed) {
    CHECK(cudaMallocManaged(&unified, 1 << 20));
  }
  segment host_table[segments];
  std::vector<float*> outs(segments);
  for (int s = 0; s < segments; ++s) {
    const int n = elements - s * (elements / 8); // different sizes
    float* in = nullptr;
    float* out = nullptr;
    CHECK(cudaMalloc(&in, sizeof(float) * n));
    CHECK(cudaMalloc(&out, sizeof(float) * n));
    CHECK(cudaMemsetAsync(out, 0, sizeof(float) * n, main_stream));
    host_table[s] = {in, out, n, 1.0f + 0.5f * s};
    outs[s] = out;
    fill_segment<<<264, 256, 0, s % 2 == 0 ? fill_a : fill_b>>>(in, n, s);
    CHECK(cudaGetLastError());
  }
  segment* table = nullptr;
  CHECK(cudaMalloc(&table, sizeof host_table));
  CHECK(cudaMemcpyAsync(table, host_table, sizeof host_table, cudaMemcpyHostToDevice, main_stream));
  cudaEvent_t filled_a, filled_b;
  CHECK(cudaEventCreateWithFlags(&filled_a, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&filled_b, cudaEventDisableTiming));
  CHECK(cudaEventRecord(filled_a, fill_a));
  CHECK(cudaEventRecord(filled_b, fill_b));
  CHECK(cudaStreamWaitEvent(main_stream, filled_a, 0));
  CHECK(cudaStreamWaitEvent(main_stream, filled_b, 0));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (int r = 0; r < rounds; ++r) {
    gather_scale<<<sms * 4, 256, 0, main_stream>>>(table, segments, static_cast<float>(r));
    CHECK(cudaGetLastError());
  }
  CHECK(cudaStreamSynchronize(main_stream));
  // A sample of every segment, against the host's arithmetic.
  for (int s = 0; s < segments; ++s) {
    const int n = host_table[s].n;
    for (int i : {0, n / 3, n - 1}) {
      float got = 0;
      CHECK(cudaMemcpy(&got, outs[s] + i, sizeof got, cudaMemcpyDeviceToHost));
      const float x = 0.25f + 0.5f * static_cast<float>((i * 2654435761u + s) % 1000u) / 1000.0f;
      const float want = value_of(x, host_table[s].scale) + static_cast<float>(rounds - 1);
      if (std::fabs(got - want) > 1e-4f * std::fabs(want)) {
        std::fprintf(stderr, "pointer_table: segment %d element %d is %g, expected %g\n", s, i, got,
                     want);
        return 1;
      }
    }
  }
  std::printf("pointer_table: %d rounds over %d segments verified\n", rounds, segments);
  return 0;
}
