// The vector-load rewrite compiled and run: a grid-stride kernel and its rewrite, compiled by the
// host's C++ compiler with the CUDA thread geometry emulated (every thread of a small grid run in
// turn, grid sizes that are and are not multiples of the vector width), write the same bytes for
// sizes around the vector width, with aligned and misaligned arrays; the aligned runs take the
// vector path (its 16-byte copies are counted) and the misaligned ones the original loop.

#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/optimize/loop_vectorizer.hpp"
#include "support/test_support.hpp"

namespace rpl::stages::optimize {
namespace {

struct kernel_case {
  std::string name;
  std::string element;
  std::string parameters; ///< as written
  std::vector<parameter_info> parsed;
  std::string loop;
  std::string call; ///< arguments, from `out`, `in`, `a`, `n`
};

void PrintTo(const kernel_case& c, std::ostream* os) {
  *os << c.name;
}

const std::string prelude = R"(#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <cstring>
#include <cstddef>
#include <vector>
static long vector_copies = 0;
#define VECTOR(name, T, ...)                                                                   \
  struct name {                                                                                \
    T __VA_ARGS__;                                                                             \
    name() = default;                                                                          \
    name(const name& o) { std::memcpy(this, &o, sizeof o); ++vector_copies; }                 \
    name& operator=(const name& o) { std::memcpy(this, &o, sizeof o); ++vector_copies; return *this; } \
  };
VECTOR(float4, float, x, y, z, w)
VECTOR(int4, int, x, y, z, w)
VECTOR(double2, double, x, y)
struct geometry { unsigned x = 0; };
static geometry blockIdx, blockDim, threadIdx, gridDim;
#define __global__
#define __restrict__
using std::size_t;
)";

std::string harness(const kernel_case& c, const std::string& original, const std::string& vector) {
  std::string s = prelude;
  s += "namespace original {\n" + original + "\n}\nnamespace vectorized {\n" + vector + "\n}\n";
  s += "template <class K> void launch(K kernel, unsigned blocks, unsigned threads, " + c.element +
       "* out, const " + c.element + "* in, " + c.element +
       " a, size_t n) {\n"
       "  gridDim.x = blocks; blockDim.x = threads;\n"
       "  for (unsigned b = 0; b < blocks; ++b)\n"
       "    for (unsigned t = 0; t < threads; ++t) { blockIdx.x = b; threadIdx.x = t; kernel(" +
       c.call + "); }\n}\n";
  s += "int main() {\n"
       "  const size_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 61, 64, 1000, 1001, 1003};\n"
       "  const unsigned grids[][2] = {{1, 1}, {3, 5}, {2, 32}, {7, 3}};\n"
       "  for (size_t n : sizes) for (size_t shift : {0, 1}) for (auto& g : grids) {\n"
       "    alignas(16) static unsigned char store[3][1 << 15];\n"
       "    " +
       c.element + "* in = reinterpret_cast<" + c.element +
       "*>(store[0]) + shift;\n"
       "    " +
       c.element + "* o1 = reinterpret_cast<" + c.element +
       "*>(store[1]) + shift;\n"
       "    " +
       c.element + "* o2 = reinterpret_cast<" + c.element +
       "*>(store[2]) + shift;\n"
       "    for (size_t i = 0; i < n + 4; ++i) { in[i] = (" +
       c.element +
       ")(i * 7 % 13 + 1);"
       " o1[i] = o2[i] = (" +
       c.element +
       ")(i % 5 + 2); }\n"
       "    const long before = vector_copies;\n"
       "    launch(original::k, g[0], g[1], o1, in, 3, n);\n"
       "    if (vector_copies != before) { std::printf(\"original copied vectors\\n\"); return 1; "
       "}\n"
       "    launch(vectorized::k, g[0], g[1], o2, in, 3, n);\n"
       "    if (std::memcmp(o1, o2, (n + 4) * sizeof *o1) != 0) {\n"
       "      std::printf(\"differ at n=%zu shift=%zu grid=%ux%u\\n\", n, shift, g[0], g[1]); "
       "return 1; }\n"
       "    const bool vector_path = vector_copies != before;\n"
       "    if (vector_path != (shift == 0 && n >= 4 * sizeof(float) / sizeof *in)) {\n"
       "      std::printf(\"vector path %d at n=%zu shift=%zu\\n\", vector_path, n, shift); return "
       "1; }\n"
       "  }\n"
       "  std::printf(\"same\\n\");\n  return 0;\n}\n";
  return s;
}

class loop_vectorizer_compiled : public ::testing::TestWithParam<kernel_case> {};

TEST_P(loop_vectorizer_compiled, writes_the_same_bytes_as_the_original) {
  if (std::system("command -v c++ >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no host C++ compiler (c++) to compile the rewrite with";
  }
  const kernel_case& c = GetParam();
  const std::string original = "__global__ void k(" + c.parameters + ") {\n" + c.loop + "}\n";
  const auto v = vectorize_grid_stride_loop(original, original.find("for"), c.parsed);
  ASSERT_TRUE(v.has_value()) << original;
  std::string vector = original;
  vector.replace(v->replaced.begin, v->replaced.end - v->replaced.begin, v->replacement);

  rpl::testing::temp_dir dir;
  rpl::testing::write_file(dir.path() / "k.cpp", harness(c, original, vector));
  const std::string exe = (dir.path() / "k").string();
  const std::string compile = "c++ -std=c++17 -O1 -fno-strict-aliasing -w -o " + exe + " " +
                              (dir.path() / "k.cpp").string() + " > " + exe + ".log 2>&1";
  ASSERT_EQ(std::system(compile.c_str()), 0) << rpl::testing::read_text(exe + ".log") << "\n"
                                             << vector;
  const int rc = std::system((exe + " > " + exe + ".out 2>&1").c_str());
  EXPECT_EQ(rc, 0) << rpl::testing::read_text(exe + ".out") << "\n" << vector;
  EXPECT_EQ(rpl::testing::read_text(exe + ".out"), "same\n");
}

INSTANTIATE_TEST_SUITE_P(
    kernels,
    loop_vectorizer_compiled,
    ::testing::Values(
        kernel_case{"scale_float",
                    "float",
                    "float* __restrict__ out, const float* __restrict__ in, float a, size_t n",
                    {{"float *__restrict", "out"},
                     {"const float *__restrict", "in"},
                     {"float", "a"},
                     {"size_t", "n"}},
                    "  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; "
                    "i < n;\n       i += static_cast<size_t>(gridDim.x) * blockDim.x) {\n"
                    "    out[i] = a * in[i];\n  }\n",
                    "out, in, a, n"},
        kernel_case{"axpy_double",
                    "double",
                    "double* y, const double* x, double a, int n",
                    {{"double *", "y"}, {"const double *", "x"}, {"double", "a"}, {"int", "n"}},
                    "  for (int i = threadIdx.x + blockIdx.x * blockDim.x; i < n; "
                    "i += blockDim.x * gridDim.x)\n    y[i] += a * x[i];\n",
                    "out, in, a, static_cast<int>(n)"},
        kernel_case{"square_int",
                    "int",
                    "int* out, const int* in, size_t n",
                    {{"int *", "out"}, {"const int *", "in"}, {"size_t", "n"}},
                    "  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; "
                    "i += (size_t)gridDim.x * blockDim.x) {\n"
                    "    const int v = in[i];\n    out[i] = v * v + 1;\n  }\n",
                    "out, in, n"}),
    [](const ::testing::TestParamInfo<kernel_case>& test) { return test.param.name; });

} // namespace
} // namespace rpl::stages::optimize
