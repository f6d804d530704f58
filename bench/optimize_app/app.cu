// optimize_app: four kernels of a made-up signal and data pipeline, the application of
// `rocm-perf optimize --top 4 -- ./app 5` (issue 37; bench/optimize_app/README.md). Written for
// this benchmark, not taken from examples/. Each kernel is sized for 50-200 us per dispatch on one
// NVIDIA H200 (HBM3e, 4.8 TB/s peak; a scalar streaming kernel reaches about 3-4 TB/s of it); the
// arithmetic is next to each size below.
//
//   hash_keys         grid-stride, size_t index, stride hoisted, a local temporary over seven
//                     statements (the shape the vector-load rule is being extended to)
//   corner_turn       32 x 32 shared-memory tile transpose of complex samples (float2) with a
//                     window; the tile's column reads all hit one bank pair (padding helps)
//   scale_accumulate  y = a * x + y, grid-stride with an int index (the vector-load rule's shape
//                     today)
//   byte_histogram    256-bin byte histogram, shared-memory atomics, then one global atomic per
//                     bin and block (atomics: no vector rewrite; maybe nothing helps)
//
// Usage: app [ITERATIONS]   (default 5, 1..1000). Each iteration launches the four kernels once,
// in that order, on the default stream. Inputs are deterministic (a counter hash, no clock). The
// host checks every result (the hashes, the histogram and y in full; the transpose at 1 in 61
// elements), prints a checksum per kernel and each kernel's median time (CUDA events), and exits
// 0 when all verify, 1 on a wrong result or a CUDA error, 2 on a bad argument.
//
// Build: nvcc -O3 -arch=sm_90 app.cu -o app
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define APP_CHECK(call)                                                                            \
  do {                                                                                             \
    const cudaError_t app_err_ = (call);                                                           \
    if (app_err_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "optimize_app: %s failed: %s\n", #call, cudaGetErrorString(app_err_));  \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

// hash_keys: 40,000,000 keys. Reads 4 B and writes 4 B per key: 320 MB a dispatch,
// 67 us at 4.8 TB/s, 80-107 us at the 3-4 TB/s a scalar 4-byte loop reaches. About ten integer
// operations a key, 0.4 G in all: far under the GPU's integer rate, so memory bound.
// Not a multiple of 4, so a vector rewrite's tail loop runs. Checked on an H200 (2026-11-29, the
// app alone, CUDA events): 105.8 us, 3.0 TB/s.
constexpr std::size_t hash_count = 40000000;

// corner_turn: 2,048 pulses x 6,144 range gates of float2 (12,582,912 samples). Reads 8 B and
// writes 8 B a sample (the 24 KB window stays in cache): 201 MB, 42 us at 4.8 TB/s, about 60 us at
// the 3.4 TB/s a padded tile transpose reaches (examples/cuda/pipeline.cu's pl_transpose: 134 MB in
// 39.9 us padded, 83.0 us unpadded on an H200). Unpadded, every column read of the tile is a
// 32-way conflict (32 lanes, one bank pair), the same 32 wavefronts a warp instruction as
// pl_transpose's float tile, whose 16.8 M elements took 83.0 us: 62 us for these 12.6 M, on top
// of or overlapping the 60 us of memory traffic, so 65-120 us. Checked on an H200 (2026-11-29):
// 71.8 us, and 53.3 us with the tile padded by hand to [32][33] (1.33x).
constexpr int ct_pulses = 2048;
constexpr int ct_gates = 6144;
constexpr int ct_tile = 32;
constexpr int ct_rows = 8; // a 32 x 8 block walks the 32 x 32 tile in 4 steps

// scale_accumulate: 30,000,000 floats. Reads x and y, writes y: 12 B an element, 360 MB, 75 us at
// 4.8 TB/s, 90-120 us at 3-4 TB/s. Not a multiple of 4 (a vector rewrite's tail runs). Checked on
// an H200 (2026-11-29): 105.4 us, 3.4 TB/s.
constexpr int axpy_count = 30000000;
constexpr float axpy_a = 0.5f;

// byte_histogram: 160 Mi bytes (41,943,040 words). Reading them is 168 MB, 35 us at 4.8 TB/s; the
// limit is the 167.8 M shared-memory atomics, one a byte: about 1.27 M an SM on 132 SMs. At about
// 8 lanes a clock an SM (a warp's 32 bins spread over 32 banks, a few lanes sharing one) and
// 1.98 GHz that is 80 us; twice as fast or twice as slow gives 40-160 us. The least certain of the
// four: the run_gpu.sh `app` step prints the measured median before optimize runs. Checked on an
// H200 (2026-11-29): 88.4 us, atomics bound as estimated (168 MB in 88 us is 1.9 TB/s).
constexpr std::size_t hist_words = std::size_t{40} * 1024 * 1024;
constexpr int hist_bins = 256;

constexpr int stream_block = 256;
constexpr int stream_blocks_per_sm = 8; // 8 x 256 = 2,048 threads, a full H200 SM

__global__ void hash_keys(const unsigned* __restrict__ keys,
                          unsigned* __restrict__ hashed,
                          unsigned seed,
                          std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    // lowbias32 (Chris Wellons' hash prospector) over the seeded key, as a hash join's build side
    // would hash its keys before partitioning.
    unsigned v = keys[i] ^ seed;
    v ^= v >> 16;
    v *= 0x7feb352du;
    v ^= v >> 15;
    v *= 0x846ca68bu;
    v ^= v >> 16;
    hashed[i] = v;
  }
}

__global__ void corner_turn(const float2* __restrict__ in,
                            const float* __restrict__ window,
                            float2* __restrict__ out,
                            int pulses,
                            int gates) {
  __shared__ float2 tile[ct_tile][ct_tile];
  int gate = static_cast<int>(blockIdx.x) * ct_tile + static_cast<int>(threadIdx.x);
  int pulse = static_cast<int>(blockIdx.y) * ct_tile + static_cast<int>(threadIdx.y);
  for (int j = 0; j < ct_tile; j += ct_rows) {
    if (gate < gates && pulse + j < pulses) {
      const float2 s = in[static_cast<std::size_t>(pulse + j) * gates + gate];
      const float w = window[gate];
      tile[threadIdx.y + j][threadIdx.x] = make_float2(s.x * w, s.y * w);
    }
  }
  __syncthreads();
  // Gate-major out: a warp writes 32 consecutive pulses of one gate, reading a column of the tile.
  pulse = static_cast<int>(blockIdx.y) * ct_tile + static_cast<int>(threadIdx.x);
  gate = static_cast<int>(blockIdx.x) * ct_tile + static_cast<int>(threadIdx.y);
  for (int j = 0; j < ct_tile; j += ct_rows) {
    if (pulse < pulses && gate + j < gates) {
      out[static_cast<std::size_t>(gate + j) * pulses + pulse] = tile[threadIdx.x][threadIdx.y + j];
    }
  }
}

__global__ void
scale_accumulate(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    y[i] = a * x[i] + y[i];
  }
}

__global__ void byte_histogram(const unsigned* __restrict__ words,
                               std::size_t n_words,
                               unsigned* __restrict__ bins) {
  __shared__ unsigned local[hist_bins];
  for (int b = static_cast<int>(threadIdx.x); b < hist_bins; b += static_cast<int>(blockDim.x)) {
    local[b] = 0;
  }
  __syncthreads();
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n_words;
       i += stride) {
    const unsigned w = words[i];
    atomicAdd(&local[w & 0xffu], 1u);
    atomicAdd(&local[(w >> 8) & 0xffu], 1u);
    atomicAdd(&local[(w >> 16) & 0xffu], 1u);
    atomicAdd(&local[w >> 24], 1u);
  }
  __syncthreads();
  for (int b = static_cast<int>(threadIdx.x); b < hist_bins; b += static_cast<int>(blockDim.x)) {
    atomicAdd(&bins[b], local[b]);
  }
}

namespace {

/// splitmix64 of a counter: deterministic inputs with no state to carry between buffers.
std::uint64_t counter_hash(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// A value in [-1, 1) from the low 24 bits of a hash: exact in a float.
float unit_float(std::uint64_t h) {
  return static_cast<float>(static_cast<std::int32_t>(h & 0xffffffu) - 0x800000) / 8388608.0f;
}

unsigned host_hash(unsigned key, unsigned seed) {
  unsigned v = key ^ seed;
  v ^= v >> 16;
  v *= 0x7feb352du;
  v ^= v >> 15;
  v *= 0x846ca68bu;
  v ^= v >> 16;
  return v;
}

/// The host's copies of every input, and what the histogram must count.
struct inputs {
  std::vector<unsigned> keys;
  std::vector<float2> samples;
  std::vector<float> window;
  std::vector<float> x;
  std::vector<float> y;
  std::vector<unsigned> words;
  std::vector<std::uint64_t> counts; // the histogram of `words`' bytes, once
};

inputs make_inputs() {
  inputs in;
  in.keys.resize(hash_count);
  for (std::size_t i = 0; i < hash_count; ++i) {
    in.keys[i] = static_cast<unsigned>(counter_hash(i));
  }
  const std::size_t samples = static_cast<std::size_t>(ct_pulses) * ct_gates;
  in.samples.resize(samples);
  for (std::size_t i = 0; i < samples; ++i) {
    const std::uint64_t h = counter_hash(i + (std::uint64_t{1} << 40));
    in.samples[i] = make_float2(unit_float(h), unit_float(h >> 32));
  }
  in.window.resize(ct_gates);
  for (int g = 0; g < ct_gates; ++g) { // a Hann window over the range gates
    const double phase = 2.0 * 3.14159265358979323846 * g / (ct_gates - 1);
    in.window[static_cast<std::size_t>(g)] = static_cast<float>(0.5 - 0.5 * std::cos(phase));
  }
  in.x.resize(axpy_count);
  in.y.resize(axpy_count);
  for (std::size_t i = 0; i < in.x.size(); ++i) {
    const std::uint64_t h = counter_hash(i + (std::uint64_t{2} << 40));
    in.x[i] = unit_float(h);
    in.y[i] = unit_float(h >> 32);
  }
  // Bytes of a triangular distribution (the mean of two uniform bytes), like the intensities of
  // an image: some bins far fuller than others, as real histograms are.
  in.words.resize(hist_words);
  in.counts.assign(hist_bins, 0);
  for (std::size_t i = 0; i < hist_words; ++i) {
    const std::uint64_t h = counter_hash(i + (std::uint64_t{3} << 40));
    unsigned w = 0;
    for (int b = 0; b < 4; ++b) {
      const unsigned byte =
          static_cast<unsigned>(((h >> (16 * b)) & 0xffu) + ((h >> (16 * b + 8)) & 0xffu)) >> 1;
      ++in.counts[byte];
      w |= byte << (8 * b);
    }
    in.words[i] = w;
  }
  return in;
}

/// Device buffers, named as the kernels' parameters.
struct buffers {
  unsigned* keys = nullptr;
  unsigned* hashed = nullptr;
  float2* samples = nullptr;
  float* window = nullptr;
  float2* turned = nullptr;
  float* x = nullptr;
  float* y = nullptr;
  unsigned* words = nullptr;
  unsigned* bins = nullptr;
};

/// A device copy of `bytes` bytes of host memory (no templates in this file: plain for libclang).
void* upload(const void* host, std::size_t bytes) {
  void* device = nullptr;
  APP_CHECK(cudaMalloc(&device, bytes));
  APP_CHECK(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  return device;
}

void download(void* host, const void* device, std::size_t bytes) {
  APP_CHECK(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
}

buffers make_buffers(const inputs& in) {
  buffers d;
  d.keys = static_cast<unsigned*>(upload(in.keys.data(), in.keys.size() * sizeof(unsigned)));
  APP_CHECK(cudaMalloc(&d.hashed, hash_count * sizeof(unsigned)));
  d.samples = static_cast<float2*>(upload(in.samples.data(), in.samples.size() * sizeof(float2)));
  d.window = static_cast<float*>(upload(in.window.data(), in.window.size() * sizeof(float)));
  APP_CHECK(cudaMalloc(&d.turned, in.samples.size() * sizeof(float2)));
  d.x = static_cast<float*>(upload(in.x.data(), in.x.size() * sizeof(float)));
  d.y = static_cast<float*>(upload(in.y.data(), in.y.size() * sizeof(float)));
  d.words = static_cast<unsigned*>(upload(in.words.data(), in.words.size() * sizeof(unsigned)));
  APP_CHECK(cudaMalloc(&d.bins, hist_bins * sizeof(unsigned)));
  // Counts accumulate over the iterations (no memset between them): the check knows how many.
  APP_CHECK(cudaMemset(d.bins, 0, hist_bins * sizeof(unsigned)));
  return d;
}

void free_buffers(const buffers& d) {
  for (void* p :
       {static_cast<void*>(d.keys), static_cast<void*>(d.hashed), static_cast<void*>(d.samples),
        static_cast<void*>(d.window), static_cast<void*>(d.turned), static_cast<void*>(d.x),
        static_cast<void*>(d.y), static_cast<void*>(d.words), static_cast<void*>(d.bins)}) {
    APP_CHECK(cudaFree(p));
  }
}

constexpr unsigned hash_seed = 0x5eed1234u;
constexpr int kernel_count = 4;
const char* const kernel_names[kernel_count] = {"hash_keys", "corner_turn", "scale_accumulate",
                                                "byte_histogram"};

/// Launches the four kernels `iterations` times; returns each launch's time (ms), by kernel.
std::vector<std::vector<float>> run_kernels(const buffers& d, int iterations) {
  int device = 0, sms = 0;
  APP_CHECK(cudaGetDevice(&device));
  APP_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int stream_grid = sms * stream_blocks_per_sm;
  const dim3 ct_block(ct_tile, ct_rows);
  const dim3 ct_grid((ct_gates + ct_tile - 1) / ct_tile, (ct_pulses + ct_tile - 1) / ct_tile);
  std::vector<cudaEvent_t> events(static_cast<std::size_t>(iterations) * kernel_count * 2);
  for (auto& e : events) {
    APP_CHECK(cudaEventCreate(&e));
  }
  std::size_t e = 0;
  for (int it = 0; it < iterations; ++it) {
    APP_CHECK(cudaEventRecord(events[e++]));
    hash_keys<<<stream_grid, stream_block>>>(d.keys, d.hashed, hash_seed, hash_count);
    APP_CHECK(cudaEventRecord(events[e++]));
    APP_CHECK(cudaEventRecord(events[e++]));
    corner_turn<<<ct_grid, ct_block>>>(d.samples, d.window, d.turned, ct_pulses, ct_gates);
    APP_CHECK(cudaEventRecord(events[e++]));
    APP_CHECK(cudaEventRecord(events[e++]));
    scale_accumulate<<<stream_grid, stream_block>>>(axpy_count, axpy_a, d.x, d.y);
    APP_CHECK(cudaEventRecord(events[e++]));
    APP_CHECK(cudaEventRecord(events[e++]));
    byte_histogram<<<stream_grid, stream_block>>>(d.words, hist_words, d.bins);
    APP_CHECK(cudaEventRecord(events[e++]));
  }
  APP_CHECK(cudaGetLastError());
  APP_CHECK(cudaDeviceSynchronize());
  std::vector<std::vector<float>> ms(kernel_count);
  for (std::size_t i = 0; i < events.size(); i += 2) {
    float t = 0.0f;
    APP_CHECK(cudaEventElapsedTime(&t, events[i], events[i + 1]));
    ms[(i / 2) % kernel_count].push_back(t);
  }
  for (auto& ev : events) {
    APP_CHECK(cudaEventDestroy(ev));
  }
  return ms;
}

float median_us(std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  return 1000.0f * ms[ms.size() / 2];
}

/// Each check prints its kernel's line and returns whether the outputs are right.
bool check_hashes(const inputs& in, const buffers& d, float us) {
  std::vector<unsigned> got(hash_count);
  download(got.data(), d.hashed, got.size() * sizeof(unsigned));
  std::uint64_t sum = 0;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < hash_count; ++i) {
    wrong += got[i] != host_hash(in.keys[i], hash_seed);
    sum += got[i];
  }
  std::printf("  %-17s %10zu keys           median %8.2f us  checksum %016llx%s\n", kernel_names[0],
              hash_count, us, static_cast<unsigned long long>(sum), wrong ? "  WRONG" : "");
  if (wrong) {
    std::fprintf(stderr, "optimize_app: hash_keys: %zu of %zu hashes wrong\n", wrong, hash_count);
  }
  return wrong == 0;
}

bool check_corner_turn(const inputs& in, const buffers& d, float us) {
  std::vector<float2> got(in.samples.size());
  download(got.data(), d.turned, got.size() * sizeof(float2));
  double sum = 0.0;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    sum += static_cast<double>(got[i].x) + got[i].y;
    if (i % 61 != 0) {
      continue;
    }
    const std::size_t gate = i / ct_pulses, pulse = i % ct_pulses;
    const float2 s = in.samples[pulse * ct_gates + gate];
    const float w = in.window[gate];
    wrong += got[i].x != s.x * w || got[i].y != s.y * w;
  }
  std::printf("  %-17s %4d x %4d float2   median %8.2f us  checksum %.6e%s\n", kernel_names[1],
              ct_pulses, ct_gates, us, sum, wrong ? "  WRONG" : "");
  if (wrong) {
    std::fprintf(stderr, "optimize_app: corner_turn: %zu sampled elements wrong\n", wrong);
  }
  return wrong == 0;
}

bool check_scale_accumulate(const inputs& in, const buffers& d, int iterations, float us) {
  std::vector<float> got(in.y.size());
  download(got.data(), d.y, got.size() * sizeof(float));
  double sum = 0.0;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    float expected = in.y[i];
    for (int it = 0; it < iterations; ++it) {
      expected = axpy_a * in.x[i] + expected;
    }
    // The device may fuse the multiply-add and the host not: a tolerance, not equality.
    wrong += std::fabs(got[i] - expected) > 1e-5f * (1.0f + std::fabs(expected));
    sum += got[i];
  }
  std::printf("  %-17s %10d floats         median %8.2f us  checksum %.6e%s\n", kernel_names[2],
              axpy_count, us, sum, wrong ? "  WRONG" : "");
  if (wrong) {
    std::fprintf(stderr, "optimize_app: scale_accumulate: %zu of %d elements wrong\n", wrong,
                 axpy_count);
  }
  return wrong == 0;
}

bool check_histogram(const inputs& in, const buffers& d, int iterations, float us) {
  std::vector<unsigned> got(hist_bins);
  download(got.data(), d.bins, got.size() * sizeof(unsigned));
  std::uint64_t total = 0;
  int wrong = 0;
  for (int b = 0; b < hist_bins; ++b) {
    wrong += got[static_cast<std::size_t>(b)] !=
             in.counts[static_cast<std::size_t>(b)] * static_cast<std::uint64_t>(iterations);
    total += got[static_cast<std::size_t>(b)];
  }
  std::printf("  %-17s %10zu bytes          median %8.2f us  checksum %llu%s\n", kernel_names[3],
              hist_words * 4, us, static_cast<unsigned long long>(total), wrong ? "  WRONG" : "");
  if (wrong) {
    std::fprintf(stderr, "optimize_app: byte_histogram: %d of %d bins wrong\n", wrong, hist_bins);
  }
  return wrong == 0;
}

} // namespace

int main(int argc, char** argv) {
  // 1000 at most: a histogram bin holds at most 2^32 - 1, and the fullest gets about 1.3 M counts
  // an iteration.
  const int iterations = argc == 2 ? std::atoi(argv[1]) : 5;
  if (argc > 2 || iterations < 1 || iterations > 1000) {
    std::fprintf(stderr, "usage: app [ITERATIONS]   (1..1000, default 5)\n");
    return 2;
  }
  const inputs in = make_inputs();
  const buffers d = make_buffers(in);
  const auto ms = run_kernels(d, iterations);
  cudaDeviceProp prop{};
  int device = 0;
  APP_CHECK(cudaGetDevice(&device));
  APP_CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("optimize_app: %d iterations on %s (%d SMs)\n", iterations, prop.name,
              prop.multiProcessorCount);
  bool ok = check_hashes(in, d, median_us(ms[0]));
  ok = check_corner_turn(in, d, median_us(ms[1])) && ok;
  ok = check_scale_accumulate(in, d, iterations, median_us(ms[2])) && ok;
  ok = check_histogram(in, d, iterations, median_us(ms[3])) && ok;
  free_buffers(d);
  std::printf("optimize_app: %s\n", ok ? "verified" : "WRONG RESULTS");
  return ok ? 0 : 1;
}
