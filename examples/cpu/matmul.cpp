// Tiled single-precision matrix multiply C = A * B, the CPU kernel of the autotune demo.
//
// The tile sizes and the unroll factor of the innermost (k) loop are compile-time macros, so each
// point of examples/cpu/space.json is a separate build:
//
//   g++ -O2 -std=c++17 -march=native -DTILE_I=32 -DTILE_J=64 -DTILE_K=16 -DUNROLL=4 matmul.cpp -o
//   mm
//   ./mm --n 256
//
// Usage: matmul [--n N] [--reps R]
// Prints the best kernel time over R repetitions and a checksum of C. Exits 0 when C matches a
// naive reference, 1 on a mismatch, 2 on bad arguments.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#ifndef TILE_I
#define TILE_I 32
#endif
#ifndef TILE_J
#define TILE_J 32
#endif
#ifndef TILE_K
#define TILE_K 16
#endif
#ifndef UNROLL
#define UNROLL 1
#endif

// Invalid combinations fail at compile time, on purpose: the autotuner must record them as
// `invalid` (build failed) and carry on.
static_assert(TILE_I > 0 && TILE_J > 0 && TILE_K > 0, "tile sizes must be positive");
static_assert(UNROLL >= 1 && UNROLL <= 8, "UNROLL must be in [1, 8]");
static_assert(TILE_K % UNROLL == 0, "UNROLL must divide TILE_K");
static_assert(TILE_I * TILE_J <= 4096, "a C tile must fit in 16 KiB (TILE_I * TILE_J <= 4096)");

namespace {

constexpr int tile_i = TILE_I;
constexpr int tile_j = TILE_J;
constexpr int tile_k = TILE_K;
constexpr int unroll = UNROLL;

/// C (n x n) = A (n x n) * B (n x n), row-major. Blocks of C of tile_i x tile_j are accumulated in
/// a local buffer over k-panels of depth tile_k; the k loop inside a panel is unrolled by `unroll`.
void matmul_tiled(const float* a, const float* b, float* c, int n) {
  float acc[tile_i][tile_j];
  for (int i0 = 0; i0 < n; i0 += tile_i) {
    const int i_end = i0 + tile_i < n ? i0 + tile_i : n;
    for (int j0 = 0; j0 < n; j0 += tile_j) {
      const int j_end = j0 + tile_j < n ? j0 + tile_j : n;
      const int jn = j_end - j0;
      for (int ii = 0; ii < tile_i; ++ii) {
        for (int jj = 0; jj < tile_j; ++jj) {
          acc[ii][jj] = 0.0f;
        }
      }
      for (int k0 = 0; k0 < n; k0 += tile_k) {
        const int k_end = k0 + tile_k < n ? k0 + tile_k : n;
        for (int i = i0; i < i_end; ++i) {
          float* acc_row = acc[i - i0];
          const float* a_row = a + static_cast<std::size_t>(i) * n;
          int k = k0;
          // Full unrolled steps; the remainder (only when n is not a multiple of tile_k) follows.
          for (; k + unroll <= k_end; k += unroll) {
            for (int u = 0; u < unroll; ++u) {
              const float a_ik = a_row[k + u];
              const float* b_row = b + static_cast<std::size_t>(k + u) * n + j0;
              for (int jj = 0; jj < jn; ++jj) {
                acc_row[jj] += a_ik * b_row[jj];
              }
            }
          }
          for (; k < k_end; ++k) {
            const float a_ik = a_row[k];
            const float* b_row = b + static_cast<std::size_t>(k) * n + j0;
            for (int jj = 0; jj < jn; ++jj) {
              acc_row[jj] += a_ik * b_row[jj];
            }
          }
        }
      }
      for (int i = i0; i < i_end; ++i) {
        std::memcpy(c + static_cast<std::size_t>(i) * n + j0, acc[i - i0],
                    sizeof(float) * static_cast<std::size_t>(jn));
      }
    }
  }
}

/// One entry of the reference product, in double precision.
double
reference_entry(const std::vector<float>& a, const std::vector<float>& b, int n, int i, int j) {
  double sum = 0.0;
  for (int k = 0; k < n; ++k) {
    sum += static_cast<double>(a[static_cast<std::size_t>(i) * n + k]) *
           static_cast<double>(b[static_cast<std::size_t>(k) * n + j]);
  }
  return sum;
}

/// Deterministic fill in [-1, 1): a 32-bit LCG, so every build sees the same inputs.
void fill(std::vector<float>& m, std::uint32_t seed) {
  std::uint32_t state = seed;
  for (float& x : m) {
    state = state * 1664525u + 1013904223u;
    x = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
}

bool parse_positive(const char* text, long max, long& out) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v <= 0 || v > max) {
    return false;
  }
  out = v;
  return true;
}

int usage(const char* msg) {
  std::fprintf(
      stderr,
      "matmul: %s\nusage: matmul [--n N (1..4096, default 256)] [--reps R (1..1000, default 1)]\n",
      msg);
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  long n_arg = 256;
  long reps = 1;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--n") == 0 && has_value) {
      if (!parse_positive(argv[++i], 4096, n_arg)) {
        return usage("--n expects an integer in 1..4096");
      }
    } else if (std::strcmp(argv[i], "--reps") == 0 && has_value) {
      if (!parse_positive(argv[++i], 1000, reps)) {
        return usage("--reps expects an integer in 1..1000");
      }
    } else {
      return usage((std::string_view(argv[i]) == "--n" || std::string_view(argv[i]) == "--reps")
                       ? "option needs a value"
                       : "unknown argument");
    }
  }
  const int n = static_cast<int>(n_arg);
  const std::size_t elems = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  std::vector<float> a(elems), b(elems), c(elems, 0.0f);
  fill(a, 1u);
  fill(b, 2u);

  double best_ms = 0.0;
  for (long r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    matmul_tiled(a.data(), b.data(), c.data(), n);
    const auto t1 = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    if (r == 0 || ms < best_ms) {
      best_ms = ms;
    }
  }

  // Verify every entry for small n; otherwise a deterministic sample of 1024 entries.
  const bool full = n <= 128;
  const std::size_t samples = full ? elems : 1024;
  std::uint32_t state = 12345u;
  for (std::size_t s = 0; s < samples; ++s) {
    int i = 0;
    int j = 0;
    if (full) {
      i = static_cast<int>(s / static_cast<std::size_t>(n));
      j = static_cast<int>(s % static_cast<std::size_t>(n));
    } else {
      state = state * 1664525u + 1013904223u;
      i = static_cast<int>((state >> 8) % static_cast<std::uint32_t>(n));
      state = state * 1664525u + 1013904223u;
      j = static_cast<int>((state >> 8) % static_cast<std::uint32_t>(n));
    }
    const double want = reference_entry(a, b, n, i, j);
    const double got = c[static_cast<std::size_t>(i) * n + j];
    // Float accumulation over n terms of magnitude <= 1: error grows roughly like n * eps.
    const double tolerance = 1e-5 * n + 1e-4 * std::fabs(want);
    if (std::fabs(got - want) > tolerance) {
      std::fprintf(stderr,
                   "matmul: mismatch at C[%d][%d]: got %.6f, expected %.6f (tolerance %.2e)\n", i,
                   j, got, want, tolerance);
      return 1;
    }
  }

  double checksum = 0.0;
  for (float x : c) {
    checksum += x;
  }
  std::printf("matmul n=%d tile=%dx%dx%d unroll=%d: kernel %.3f ms (best of %ld), checksum %.6e\n",
              n, tile_i, tile_j, tile_k, unroll, best_ms, reps, checksum);
  return 0;
}
