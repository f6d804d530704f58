// multistream: a small CUDA application for checking the CUPTI tracer (workers/tracers/cupti)
// against the program's own CUDA-event timings.
//
// Four non-blocking streams run distinctly named kernels of different lengths (a short one and
// spins calibrated to about 0.5, 0.7, 1 and 2 ms), with an H2D copy, cross-stream dependencies
// through cudaStreamWaitEvent, a D2H copy, and stream/event/device synchronization. Every kernel
// launch is bracketed by cudaEventRecord on its stream, and its cudaEventElapsedTime is reported.
// Kernels are either short (< 50 us) or long (>= ~0.5 ms), never near the 100 us line, and each
// long kernel's blocks fit on the GPU next to the others (grid = SMs / 4 blocks of 1024 threads),
// so a kernel never waits for another stream's blocks between its start event and its start; and
// each phase is enqueued while the streams are held by a host function (gate_close), so no start
// event runs ahead of its kernel's launch call: event time and traced GPU time agree within a few
// microseconds.
//
// Usage: multistream [--json] [--rounds N] [--device D] [--all-devices] [--child]
//   --json         print {"kernels": [{"name", "stream", "device", "event_ms"}, ...],
//                  "total_kernel_event_ms": ..., ...} on stdout (nothing else goes to stdout)
//   --rounds N     repeat the multi-stream phase N times (default 2)
//   --device D     the device to use (default 0)
//   --all-devices  also run one spin kernel on every other visible device (multi-GPU tracing)
//   --child        at the end, fork + exec this program once more (/proc/self/exe --as-child), so
//                  a tracer writes one database per process; the child's output goes to stderr
// Exit: 0 results verified, 1 wrong result or CUDA error, 2 bad arguments.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/types.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    const cudaError_t rpl_err_ = (call);                                                           \
    if (rpl_err_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "multistream: %s failed at %s:%d: %s\n", #call, __FILE__, __LINE__,     \
                   cudaGetErrorString(rpl_err_));                                                  \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

// ---------------------------------------------------------------------------------------------
// Kernels. extern "C" keeps the names CUPTI reports identical to the names printed here.

__host__ __device__ inline std::uint32_t spin(std::uint32_t x, int iters) {
  for (int i = 0; i < iters; ++i) {
    x = x * 1664525u + 1013904223u;
    x ^= x >> 15;
  }
  return x;
}

#define RPL_SPIN_KERNEL(NAME)                                                                      \
  extern "C" __global__ void __launch_bounds__(1024, 2)                                            \
      NAME(std::uint32_t* out, const std::uint32_t* in, int n, int iters) {                        \
    const int i = blockIdx.x * blockDim.x + threadIdx.x;                                           \
    if (i < n) {                                                                                   \
      out[i] = spin(in[i] ^ static_cast<std::uint32_t>(i), iters);                                 \
    }                                                                                              \
  }

RPL_SPIN_KERNEL(ms_calibrate)
RPL_SPIN_KERNEL(ms_spin_a)     // ~0.5 ms
RPL_SPIN_KERNEL(ms_spin_b)     // ~1 ms
RPL_SPIN_KERNEL(ms_spin_c)     // ~2 ms
RPL_SPIN_KERNEL(ms_spin_d)     // ~0.7 ms
RPL_SPIN_KERNEL(ms_peer_spin)  // ~0.5 ms, on the other devices (--all-devices)
RPL_SPIN_KERNEL(ms_child_spin) // ~0.5 ms, in the child process (--child)

extern "C" __global__ void ms_scale(std::uint32_t* out, const std::uint32_t* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = in[i] * 3u + 1u;
  }
}

extern "C" __global__ void
ms_combine(std::uint32_t* out, const std::uint32_t* a, const std::uint32_t* b, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = a[i] ^ b[i];
  }
}

extern "C" __global__ void ms_tiny(std::uint32_t* out, int n, std::uint32_t salt) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = static_cast<std::uint32_t>(i) * 2u + salt;
  }
}

// ---------------------------------------------------------------------------------------------

namespace {

struct timed_launch {
  std::string name;
  int stream = 0;
  int device = 0;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  double ms = 0;
};

std::vector<timed_launch> g_launches;

/// Holds a stream until the host has enqueued a whole phase. Without it the GPU runs ahead of the
/// host: a start event executes the moment it is enqueued on an idle stream, while the host is
/// still inside cudaLaunchKernel (slower under a tracer), and the event time of that kernel
/// includes the launch latency (measured: 10-15 us). Held back, every start event is followed
/// directly by its kernel on the GPU. The hold is a host function that waits for a flag: no
/// kernel, so nothing extra appears among the traced kernels.
std::atomic<int> g_gate_open{1};

void CUDART_CB gate_wait(void*) {
  while (g_gate_open.load(std::memory_order_acquire) == 0) {
    std::this_thread::yield();
  }
}

void gate_close(cudaStream_t stream) {
  g_gate_open.store(0, std::memory_order_release);
  CHECK(cudaLaunchHostFunc(stream, gate_wait, nullptr));
}

void gate_open() {
  g_gate_open.store(1, std::memory_order_release);
}

/// Brackets one launch with events on `stream`; `launch` enqueues the kernel.
template <typename F>
void timed(const char* name, int stream_index, int device, cudaStream_t stream, F launch) {
  timed_launch t;
  t.name = name;
  t.stream = stream_index;
  t.device = device;
  CHECK(cudaEventCreate(&t.start));
  CHECK(cudaEventCreate(&t.stop));
  CHECK(cudaEventRecord(t.start, stream));
  launch();
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(t.stop, stream));
  g_launches.push_back(t);
}

void collect_times() {
  for (timed_launch& t : g_launches) {
    if (t.start == nullptr) {
      continue;
    }
    CHECK(cudaSetDevice(t.device));
    CHECK(cudaEventSynchronize(t.stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, t.start, t.stop));
    t.ms = ms;
    CHECK(cudaEventDestroy(t.start));
    CHECK(cudaEventDestroy(t.stop));
    t.start = t.stop = nullptr;
  }
}

std::vector<std::uint32_t> make_input(int n, std::uint32_t seed) {
  std::vector<std::uint32_t> v(static_cast<std::size_t>(n));
  std::uint32_t x = seed;
  for (auto& e : v) {
    x = x * 1103515245u + 12345u;
    e = x;
  }
  return v;
}

int sm_count(int device) {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return std::max(1, sms);
}

/// Forces module loading of every kernel now (CUDA loads lazily at first launch, which would
/// otherwise land between a start event and its kernel).
void preload_kernels() {
  cudaFuncAttributes attr{};
  CHECK(cudaFuncGetAttributes(&attr, ms_calibrate));
  CHECK(cudaFuncGetAttributes(&attr, ms_spin_a));
  CHECK(cudaFuncGetAttributes(&attr, ms_spin_b));
  CHECK(cudaFuncGetAttributes(&attr, ms_spin_c));
  CHECK(cudaFuncGetAttributes(&attr, ms_spin_d));
  CHECK(cudaFuncGetAttributes(&attr, ms_peer_spin));
  CHECK(cudaFuncGetAttributes(&attr, ms_child_spin));
  CHECK(cudaFuncGetAttributes(&attr, ms_scale));
  CHECK(cudaFuncGetAttributes(&attr, ms_combine));
  CHECK(cudaFuncGetAttributes(&attr, ms_tiny));
}

/// Milliseconds per spin iteration for a grid of `blocks` x 1024 threads, from the slope between
/// two short runs (both well under 100 us, so they never count as "long" kernels).
double calibrate(int device, int blocks, std::uint32_t* d_out, const std::uint32_t* d_in, int n) {
  const int lo = 512, hi = 2048;
  const std::size_t first = g_launches.size();
  gate_close(nullptr);
  for (int rep = 0; rep < 2; ++rep) { // the first pair warms the clocks up
    timed("ms_calibrate", 0, device, nullptr,
          [&] { ms_calibrate<<<blocks, 1024>>>(d_out, d_in, n, lo); });
    timed("ms_calibrate", 0, device, nullptr,
          [&] { ms_calibrate<<<blocks, 1024>>>(d_out, d_in, n, hi); });
  }
  gate_open();
  CHECK(cudaDeviceSynchronize());
  collect_times();
  const double t_lo = g_launches[first + 2].ms, t_hi = g_launches[first + 3].ms;
  double per_iter = (t_hi - t_lo) / (hi - lo);
  if (!(per_iter > 0)) {
    per_iter = t_hi / hi; // noisy slope: fall back to the plain ratio
  }
  if (!(per_iter > 0)) {
    per_iter = 1e-5;
  }
  return per_iter;
}

int iters_for(double target_ms, double ms_per_iter) {
  const double it = target_ms / ms_per_iter;
  return static_cast<int>(std::min(std::max(it, 64.0), 5.0e7));
}

bool check_spin(const char* what,
                const std::vector<std::uint32_t>& got,
                const std::vector<std::uint32_t>& in,
                int iters,
                int n) {
  const int samples = 200;
  for (int s = 0; s < samples; ++s) {
    const int i = static_cast<int>((static_cast<long long>(s) * 7919 + 13) % n);
    const std::uint32_t want =
        spin(in[static_cast<std::size_t>(i)] ^ static_cast<std::uint32_t>(i), iters);
    if (got[static_cast<std::size_t>(i)] != want) {
      std::fprintf(stderr, "multistream: %s mismatch at %d: got %u, want %u\n", what, i,
                   got[static_cast<std::size_t>(i)], want);
      return false;
    }
  }
  return true;
}

/// One spin kernel on `device`, on its own stream, verified. `name` must be ms_peer_spin or
/// ms_child_spin.
bool single_spin(int device, bool child, double target_ms) {
  CHECK(cudaSetDevice(device));
  preload_kernels();
  const int blocks = std::max(1, sm_count(device) / 4);
  const int n = blocks * 1024;
  const std::vector<std::uint32_t> h_in =
      make_input(n, child ? 99u : 77u + static_cast<std::uint32_t>(device));
  std::uint32_t *d_in = nullptr, *d_out = nullptr;
  CHECK(cudaMalloc(&d_in, sizeof(std::uint32_t) * static_cast<std::size_t>(n)));
  CHECK(cudaMalloc(&d_out, sizeof(std::uint32_t) * static_cast<std::size_t>(n)));
  CHECK(cudaMemcpy(d_in, h_in.data(), sizeof(std::uint32_t) * static_cast<std::size_t>(n),
                   cudaMemcpyHostToDevice));
  const double per_iter = calibrate(device, blocks, d_out, d_in, n);
  const int iters = iters_for(target_ms, per_iter);
  cudaStream_t stream = nullptr;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  gate_close(stream);
  if (child) {
    timed("ms_child_spin", 0, device, stream,
          [&] { ms_child_spin<<<blocks, 1024, 0, stream>>>(d_out, d_in, n, iters); });
  } else {
    timed("ms_peer_spin", 0, device, stream,
          [&] { ms_peer_spin<<<blocks, 1024, 0, stream>>>(d_out, d_in, n, iters); });
  }
  gate_open();
  CHECK(cudaStreamSynchronize(stream));
  std::vector<std::uint32_t> h_out(static_cast<std::size_t>(n));
  CHECK(cudaMemcpy(h_out.data(), d_out, sizeof(std::uint32_t) * static_cast<std::size_t>(n),
                   cudaMemcpyDeviceToHost));
  collect_times();
  const bool ok = check_spin(child ? "ms_child_spin" : "ms_peer_spin", h_out, h_in, iters, n);
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  return ok;
}

void usage() {
  std::fprintf(stderr,
               "usage: multistream [--json] [--rounds N] [--device D] [--all-devices] [--child]\n");
}

struct options {
  bool json = false, all_devices = false, spawn_child = false, as_child = false;
  int rounds = 2, device = 0;
};

/// Reads the command line into `opt`; false (after a message) when it is not valid. A bad number
/// exits with 2 right away, like any other bad argument.
bool parse_args(int argc, char** argv, options& opt) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](int& out) {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || v < 0 || v > 1000) {
        std::fprintf(stderr, "multistream: bad value '%s' for %s\n", argv[i], a.c_str());
        std::exit(2);
      }
      out = static_cast<int>(v);
    };
    if (a == "--json")
      opt.json = true;
    else if (a == "--all-devices")
      opt.all_devices = true;
    else if (a == "--child")
      opt.spawn_child = true;
    else if (a == "--as-child")
      opt.as_child = true;
    else if (a == "--rounds")
      value(opt.rounds);
    else if (a == "--device")
      value(opt.device);
    else {
      usage();
      return false;
    }
  }
  if (opt.rounds < 1) {
    std::fprintf(stderr, "multistream: --rounds must be at least 1\n");
    return false;
  }
  return true;
}

/// The child of --child: one verified spin kernel, a line on stdout (the parent's stderr).
int run_as_child(int device) {
  const bool ok = single_spin(device, true, 0.5);
  collect_times();
  std::printf("multistream child pid %d: %s, ms_child_spin %.3f ms\n", static_cast<int>(getpid()),
              ok ? "ok" : "WRONG RESULT", g_launches.empty() ? 0.0 : g_launches.back().ms);
  return ok ? 0 : 1;
}

/// Elements of each stream's ms_tiny output (short: well under 50 us).
constexpr int tiny_n = 4096;

/// Everything the multi-stream phase uses on the main device: sizes, calibrated iteration counts,
/// buffers, streams and events. setup_phase fills it in, free_phase releases it.
struct phase {
  int device = 0;
  cudaDeviceProp prop{};
  int blocks = 0;
  int n = 0;
  std::size_t bytes = 0;
  std::vector<std::uint32_t> input;
  // Pinned host buffers, so the copies are truly asynchronous.
  std::uint32_t *h_in = nullptr, *h_c = nullptr, *h_out = nullptr, *h_tiny = nullptr;
  std::uint32_t *d_in = nullptr, *d_a = nullptr, *d_b = nullptr, *d_c = nullptr, *d_d = nullptr,
                *d_e = nullptr, *d_out = nullptr, *d_tiny = nullptr;
  double per_iter = 0;
  int it_a = 0, it_b = 0, it_c = 0, it_d = 0;
  cudaStream_t s[4] = {};
  cudaEvent_t copied = nullptr, scaled = nullptr, b_done = nullptr, c_done = nullptr,
              s3_done = nullptr, released = nullptr;
};

/// Selects `device`, allocates and fills the buffers, calibrates the spins and creates the streams
/// and events.
void setup_phase(int device, phase& p) {
  p.device = device;
  CHECK(cudaSetDevice(device));
  preload_kernels();
  CHECK(cudaGetDeviceProperties(&p.prop, device));
  p.blocks = std::max(1, sm_count(device) / 4);
  p.n = p.blocks * 1024;
  p.bytes = sizeof(std::uint32_t) * static_cast<std::size_t>(p.n);

  CHECK(cudaMallocHost(&p.h_in, p.bytes));
  CHECK(cudaMallocHost(&p.h_c, p.bytes));
  CHECK(cudaMallocHost(&p.h_out, p.bytes));
  CHECK(cudaMallocHost(&p.h_tiny, sizeof(std::uint32_t) * tiny_n));
  p.input = make_input(p.n, 12345u);
  std::memcpy(p.h_in, p.input.data(), p.bytes);

  for (std::uint32_t** d : {&p.d_in, &p.d_a, &p.d_b, &p.d_c, &p.d_d, &p.d_e, &p.d_out}) {
    CHECK(cudaMalloc(d, p.bytes));
  }
  CHECK(cudaMalloc(&p.d_tiny, sizeof(std::uint32_t) * 4 * tiny_n));
  CHECK(cudaMemcpy(p.d_in, p.h_in, p.bytes, cudaMemcpyHostToDevice)); // for the calibration

  p.per_iter = calibrate(device, p.blocks, p.d_a, p.d_in, p.n);
  p.it_a = iters_for(0.5, p.per_iter);
  p.it_b = iters_for(1.0, p.per_iter);
  p.it_c = iters_for(2.0, p.per_iter);
  p.it_d = iters_for(0.7, p.per_iter);

  for (cudaStream_t& st : p.s) {
    CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  }
  for (cudaEvent_t* e : {&p.copied, &p.scaled, &p.b_done, &p.c_done, &p.s3_done, &p.released}) {
    CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  }
}

/// Enqueues one round on the four streams, waits for it, and copies the short kernels' output
/// back into h_tiny.
void run_round(const phase& p, std::uint32_t salt) {
  const cudaStream_t* s = p.s;
  const int blocks = p.blocks, n = p.n, device = p.device;
  // Hold all four streams until the whole round is enqueued (see gate_close).
  gate_close(s[0]);
  CHECK(cudaEventRecord(p.released, s[0]));
  for (int k = 1; k < 4; ++k) {
    CHECK(cudaStreamWaitEvent(s[k], p.released, 0));
  }
  // A short kernel on every stream first.
  for (int k = 0; k < 4; ++k) {
    timed("ms_tiny", k, device, s[k], [&] {
      ms_tiny<<<(tiny_n + 255) / 256, 256, 0, s[k]>>>(p.d_tiny + k * tiny_n, tiny_n,
                                                      salt + static_cast<std::uint32_t>(k));
    });
  }
  // Stream 0: H2D copy, then a short scale kernel.
  CHECK(cudaMemcpyAsync(p.d_in, p.h_in, p.bytes, cudaMemcpyHostToDevice, s[0]));
  CHECK(cudaEventRecord(p.copied, s[0]));
  timed("ms_scale", 0, device, s[0],
        [&] { ms_scale<<<blocks, 1024, 0, s[0]>>>(p.d_a, p.d_in, n); });
  CHECK(cudaEventRecord(p.scaled, s[0]));
  // Stream 1: waits for the scale, then ~1 ms.
  CHECK(cudaStreamWaitEvent(s[1], p.scaled, 0));
  timed("ms_spin_b", 1, device, s[1],
        [&] { ms_spin_b<<<blocks, 1024, 0, s[1]>>>(p.d_b, p.d_a, n, p.it_b); });
  CHECK(cudaEventRecord(p.b_done, s[1]));
  // Stream 2: waits for the copy, then ~2 ms.
  CHECK(cudaStreamWaitEvent(s[2], p.copied, 0));
  timed("ms_spin_c", 2, device, s[2],
        [&] { ms_spin_c<<<blocks, 1024, 0, s[2]>>>(p.d_c, p.d_in, n, p.it_c); });
  CHECK(cudaEventRecord(p.c_done, s[2]));
  // Stream 3: waits for the copy, ~0.5 ms, then for stream 1, combines, ~0.7 ms.
  CHECK(cudaStreamWaitEvent(s[3], p.copied, 0));
  timed("ms_spin_a", 3, device, s[3],
        [&] { ms_spin_a<<<blocks, 1024, 0, s[3]>>>(p.d_d, p.d_in, n, p.it_a); });
  CHECK(cudaStreamWaitEvent(s[3], p.b_done, 0));
  timed("ms_combine", 3, device, s[3],
        [&] { ms_combine<<<blocks, 1024, 0, s[3]>>>(p.d_e, p.d_b, p.d_d, n); });
  timed("ms_spin_d", 3, device, s[3],
        [&] { ms_spin_d<<<blocks, 1024, 0, s[3]>>>(p.d_out, p.d_e, n, p.it_d); });
  CHECK(cudaEventRecord(p.s3_done, s[3]));
  // Stream 0: waits for streams 2 and 3, copies the results back.
  CHECK(cudaStreamWaitEvent(s[0], p.c_done, 0));
  CHECK(cudaStreamWaitEvent(s[0], p.s3_done, 0));
  CHECK(cudaMemcpyAsync(p.h_c, p.d_c, p.bytes, cudaMemcpyDeviceToHost, s[0]));
  CHECK(cudaMemcpyAsync(p.h_out, p.d_out, p.bytes, cudaMemcpyDeviceToHost, s[0]));
  gate_open();
  CHECK(cudaEventSynchronize(p.s3_done));
  CHECK(cudaStreamSynchronize(s[0]));
  CHECK(cudaDeviceSynchronize());
  // A synchronous D2H copy of the short kernels' output.
  CHECK(cudaMemcpy(p.h_tiny, p.d_tiny + 3 * tiny_n, sizeof(std::uint32_t) * tiny_n,
                   cudaMemcpyDeviceToHost));
}

/// Checks one round's results (after a message on the first mismatch, false).
bool verify_round(const phase& p, std::uint32_t salt) {
  const int n = p.n;
  const std::vector<std::uint32_t>& input = p.input;
  // Verify: c = spin(in ^ i, it_c); out = spin((spin((in*3+1) ^ i, it_b) ^ spin(in ^ i, it_a)) ^
  // i, it_d).
  std::vector<std::uint32_t> c(p.h_c, p.h_c + n), out(p.h_out, p.h_out + n);
  if (!check_spin("ms_spin_c", c, input, p.it_c, n)) {
    return false;
  }
  for (int sample = 0; sample < 200; ++sample) {
    const int i = static_cast<int>((static_cast<long long>(sample) * 104729 + 7) % n);
    const std::uint32_t ui = static_cast<std::uint32_t>(i);
    const std::uint32_t in_i = input[static_cast<std::size_t>(i)];
    const std::uint32_t b = spin((in_i * 3u + 1u) ^ ui, p.it_b);
    const std::uint32_t d = spin(in_i ^ ui, p.it_a);
    const std::uint32_t want = spin((b ^ d) ^ ui, p.it_d);
    if (out[static_cast<std::size_t>(i)] != want) {
      std::fprintf(stderr, "multistream: ms_spin_d mismatch at %d: got %u, want %u\n", i,
                   out[static_cast<std::size_t>(i)], want);
      return false;
    }
  }
  for (int i = 0; i < tiny_n; ++i) {
    if (p.h_tiny[i] != static_cast<std::uint32_t>(i) * 2u + salt + 3u) {
      std::fprintf(stderr, "multistream: ms_tiny mismatch at %d\n", i);
      return false;
    }
  }
  return true;
}

/// Runs `rounds` rounds on the four streams; after the first wrong result the rounds still run
/// (the tracer sees the same kernels) but are no longer verified.
bool run_rounds(const phase& p, int rounds) {
  bool ok = true;
  for (int round = 0; round < rounds; ++round) {
    const std::uint32_t salt = static_cast<std::uint32_t>(round);
    run_round(p, salt);
    ok = ok && verify_round(p, salt);
  }
  return ok;
}

struct child_result {
  int pid = -1;
  int status = -1; // exit code, or 128 + signal
};

/// --child: fork + exec this program with --as-child and wait for it. False when fork or waitpid
/// failed (after a message); a child that failed is reported in `child.status`.
bool run_child(const char* argv0, int device, child_result& child) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("multistream: fork");
    return false;
  }
  if (pid == 0) {
    // The child's stdout goes to stderr, so the parent's stdout stays one JSON document.
    dup2(STDERR_FILENO, STDOUT_FILENO);
    const std::string dev = std::to_string(device);
    char self[PATH_MAX] = {0};
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    const char* path = len > 0 ? self : "/proc/self/exe";
    execl(path, argv0, "--as-child", "--device", dev.c_str(), static_cast<char*>(nullptr));
    std::perror("multistream: exec /proc/self/exe");
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) {
    std::perror("multistream: waitpid");
    return false;
  }
  child.pid = static_cast<int>(pid);
  child.status =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  if (child.status != 0) {
    std::fprintf(stderr, "multistream: the child process %d failed (status %d)\n", child.pid,
                 child.status);
  }
  return true;
}

/// Prints every timed launch, as one JSON document (--json) or as text.
void print_report(const options& opt, const phase& p, bool ok, const child_result& child) {
  double total = 0;
  for (const timed_launch& t : g_launches)
    total += t.ms;
  if (opt.json) {
    std::printf(
        "{\"device\": %d, \"device_name\": \"%s\", \"pid\": %d, \"sm_count\": %d, "
        "\"blocks\": %d, \"ms_per_iter\": %.9g, \"rounds\": %d, \"ok\": %s,\n \"kernels\": [",
        opt.device, p.prop.name, static_cast<int>(getpid()), sm_count(opt.device), p.blocks,
        p.per_iter, opt.rounds, ok ? "true" : "false");
    for (std::size_t i = 0; i < g_launches.size(); ++i) {
      const timed_launch& t = g_launches[i];
      std::printf("%s\n  {\"name\": \"%s\", \"stream\": %d, \"device\": %d, \"event_ms\": %.6f}",
                  i == 0 ? "" : ",", t.name.c_str(), t.stream, t.device, t.ms);
    }
    std::printf("],\n \"total_kernel_event_ms\": %.6f", total);
    if (opt.spawn_child) {
      std::printf(",\n \"child\": {\"pid\": %d, \"exit_code\": %d}", child.pid, child.status);
    }
    std::printf("}\n");
  } else {
    for (const timed_launch& t : g_launches) {
      std::printf("%-14s device %d stream %d  %9.4f ms\n", t.name.c_str(), t.device, t.stream,
                  t.ms);
    }
    std::printf("%s: %zu kernels, kernel time: %.4f ms (sum of event times)\n",
                ok ? "ok" : "WRONG RESULT", g_launches.size(), total);
  }
}

void free_phase(const phase& p) {
  for (cudaStream_t st : p.s)
    CHECK(cudaStreamDestroy(st));
  for (cudaEvent_t e : {p.copied, p.scaled, p.b_done, p.c_done, p.s3_done, p.released})
    CHECK(cudaEventDestroy(e));
  for (std::uint32_t* d : {p.d_in, p.d_a, p.d_b, p.d_c, p.d_d, p.d_e, p.d_out, p.d_tiny})
    CHECK(cudaFree(d));
  for (std::uint32_t* h : {p.h_in, p.h_c, p.h_out, p.h_tiny})
    CHECK(cudaFreeHost(h));
}

} // namespace

int main(int argc, char** argv) {
  options opt;
  if (!parse_args(argc, argv, opt)) {
    return 2;
  }

  int device_count = 0;
  CHECK(cudaGetDeviceCount(&device_count));
  if (opt.device >= device_count) {
    std::fprintf(stderr, "multistream: --device %d but only %d devices are visible\n", opt.device,
                 device_count);
    return 2;
  }

  if (opt.as_child) {
    return run_as_child(opt.device);
  }

  phase p;
  setup_phase(opt.device, p);
  bool ok = run_rounds(p, opt.rounds);
  collect_times();

  if (opt.all_devices) {
    for (int d = 0; d < device_count; ++d) {
      if (d != opt.device) {
        ok = single_spin(d, false, 0.5) && ok;
      }
    }
    CHECK(cudaSetDevice(opt.device));
  }

  child_result child;
  if (opt.spawn_child) {
    if (!run_child(argv[0], opt.device, child)) {
      return 1;
    }
    ok = ok && child.status == 0;
  }

  print_report(opt, p, ok, child);
  free_phase(p);
  return ok ? 0 : 1;
}
