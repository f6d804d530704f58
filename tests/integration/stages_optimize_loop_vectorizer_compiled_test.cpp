// The vector-load rewrite compiled and run: every shape of the corpus (tests/support/
// vector_corpus.hpp), its original kernel and its rewrite, in one program compiled by the host's
// C++ compiler with the CUDA thread geometry emulated (every thread of a small grid run in turn, on
// grids that are and are not multiples of the vector width, 2-D grids for the 2-D shapes), writes
// the same bytes into every array for every size n from 0 to 1003, with aligned and misaligned
// arrays; the aligned runs take the vector path (its 16-byte copies are counted) and the
// misaligned ones the original loop. The refused shapes say why. One compiler invocation for all
// shapes keeps the test to a few seconds.

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "support/vector_corpus.hpp"

namespace rpl::testing {
namespace {

TEST(loop_vectorizer_compiled, every_corpus_shape_writes_the_same_bytes_as_the_original) {
  if (std::system("command -v c++ >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no host C++ compiler (c++) to compile the rewrite with";
  }
  const std::vector<vector_shape> shapes = vector_corpus();
  ASSERT_GE(shapes.size(), 15U);
  std::vector<std::string> rewritten;
  for (const vector_shape& shape : shapes) {
    std::string why;
    rewritten.push_back(vectorized_corpus_kernel(shape, why));
    ASSERT_FALSE(rewritten.back().empty()) << shape.name << ": " << why << "\n" << shape.kernel();
  }
  temp_dir dir;
  write_file(dir.path() / "corpus.cpp", corpus_program(shapes, rewritten, corpus_target::host));
  const std::string exe = (dir.path() / "corpus").string();
  const auto started = std::chrono::steady_clock::now();
  const std::string compile = "c++ -std=c++17 -O1 -fno-strict-aliasing -w -o " + exe + " " +
                              (dir.path() / "corpus.cpp").string() + " > " + exe + ".log 2>&1";
  ASSERT_EQ(std::system(compile.c_str()), 0) << read_text(exe + ".log") << "\n"
                                             << read_text(dir.path() / "corpus.cpp");
  const auto compiled = std::chrono::steady_clock::now();
  const int rc = std::system((exe + " > " + exe + ".out 2>&1").c_str());
  const auto ran = std::chrono::steady_clock::now();
  const std::string output = read_text(exe + ".out");
  EXPECT_EQ(rc, 0) << output;
  for (const vector_shape& shape : shapes) {
    EXPECT_NE(output.find("ok " + shape.name + "\n"), std::string::npos) << shape.name << "\n"
                                                                         << output;
  }
  EXPECT_NE(output.find("0 failed\n"), std::string::npos) << output;
  using ms = std::chrono::milliseconds;
  std::cout << "corpus of " << shapes.size() << " shapes: compiled in "
            << std::chrono::duration_cast<ms>(compiled - started).count() << " ms, ran in "
            << std::chrono::duration_cast<ms>(ran - compiled).count() << " ms\n";
}

TEST(loop_vectorizer_compiled, every_refused_shape_says_why) {
  for (const refused_vector_shape& shape : refused_vector_corpus()) {
    const std::string kernel =
        "__global__ void k(" + shape.parameters + ") {\n" + shape.body + "}\n";
    const auto outcome = vectorize_corpus_kernel(kernel, shape.parameters);
    EXPECT_FALSE(outcome.rewrite.has_value()) << shape.name << "\n" << kernel;
    EXPECT_NE(outcome.refusal.find(shape.reason), std::string::npos)
        << shape.name << ": expected \"" << shape.reason << "\" in \"" << outcome.refusal << "\"\n"
        << kernel;
  }
}

} // namespace
} // namespace rpl::testing
