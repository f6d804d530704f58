// partial_trace_app: a CUDA program that runs some kernels and then ends badly, for
// tests/gpu/cupti_partial_trace_test.cpp (the CUPTI tracer keeps the trace of a process that
// dies). It launches `--kernels N` launches of `before_end_kernel`, synchronizes, prints
// "partial_trace_app: N kernels done", sleeps `--sleep-ms M` (so that a checkpoint can happen),
// then ends as `--then` says:
//
//   return       returns 0 from main (the normal end)
//   exit         exit(3): exit handlers run, the status says failure
//   _exit        _exit(0): no exit handler runs
//   abort        abort(): SIGABRT
//   segv         a write through a null pointer: SIGSEGV
//   hang         sleeps until killed (profile's --timeout: SIGTERM, then SIGKILL)
//   hang-ignoring-sigterm
//                the same with SIGTERM ignored from the start, so only SIGKILL ends it
//
// Exit 77 when there is no CUDA device; 1 on a CUDA error.

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

#include <cuda_runtime.h>

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "partial_trace_app: %s failed: %s (%s)\n", what, cudaGetErrorName(status),
                 cudaGetErrorString(status));
    std::exit(1);
  }
}

__global__ void before_end_kernel(float* data, int n, int round) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] = data[i] * 0.5f + static_cast<float>(round);
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: partial_trace_app [--kernels N] [--sleep-ms M] --then "
                       "return|exit|_exit|abort|segv|hang|hang-ignoring-sigterm\n");
  std::exit(2);
}

} // namespace

int main(int argc, char** argv) {
  int kernels = 20;
  int sleep_ms = 0;
  std::string then = "return";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--kernels" && i + 1 < argc)
      kernels = std::atoi(argv[++i]);
    else if (arg == "--sleep-ms" && i + 1 < argc)
      sleep_ms = std::atoi(argv[++i]);
    else if (arg == "--then" && i + 1 < argc)
      then = argv[++i];
    else
      usage();
  }
  if (then == "hang-ignoring-sigterm")
    std::signal(SIGTERM, SIG_IGN); // before CUDA starts, so the tracer leaves SIGTERM alone too

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "partial_trace_app: no CUDA device; skipping\n");
    return 77;
  }
  constexpr int n = 1 << 20;
  float* data = nullptr;
  check(cudaMalloc(&data, n * sizeof(float)), "cudaMalloc");
  check(cudaMemset(data, 0, n * sizeof(float)), "cudaMemset");
  for (int k = 0; k < kernels; ++k)
    before_end_kernel<<<(n + 255) / 256, 256>>>(data, n, k);
  check(cudaGetLastError(), "before_end_kernel launch");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::printf("partial_trace_app: %d kernels done, then %s\n", kernels, then.c_str());
  std::fflush(stdout);
  if (sleep_ms > 0)
    usleep(static_cast<useconds_t>(sleep_ms) * 1000);

  if (then == "return")
    return 0;
  if (then == "exit")
    std::exit(3);
  if (then == "_exit")
    _exit(0);
  if (then == "abort")
    std::abort();
  if (then == "segv") {
    volatile int* nowhere = nullptr;
    *nowhere = 1;
    return 4;
  }
  if (then == "hang" || then == "hang-ignoring-sigterm") {
    for (;;)
      pause();
  }
  usage();
}
