// The vector-load rewrite on a real NVIDIA GPU: every shape of the corpus (tests/support/
// vector_corpus.hpp), its original kernel and its rewrite, compiled by nvcc for the GPU present
// (sm_90 when its architecture cannot be read) into one program that runs both on sizes 0 to 9,
// 63 to 65, 1003 and 2^20 + 3, with aligned and misaligned (one element) arrays, on 1-D grids (and
// 2-D grids for the 2-D shapes), and compares every array bit for bit. Where the toolkit has
// cuobjdump, the rewritten kernels are also checked to load or store 16 bytes at once (`.128`).
//
// Skips without an NVIDIA GPU. Needs nvcc ($CUDACXX, /usr/local/cuda/bin/nvcc or PATH) where a
// GPU is present. The host test (integration/stages_optimize_loop_vectorizer_compiled_test.cpp)
// runs the same corpus on the CPU in CI.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "support/vector_corpus.hpp"
#include "workers/devices/nvidia_gpu.hpp"
#include "workers/process/child_process.hpp"

namespace rpl::testing {
namespace {

namespace fs = std::filesystem;

/// nvcc: $CUDACXX, /usr/local/cuda/bin/nvcc, else the first on PATH; empty when none is.
fs::path corpus_nvcc() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("CUDACXX"); env != nullptr && *env != '\0')
    candidates.emplace_back(env);
  candidates.emplace_back("/usr/local/cuda/bin/nvcc");
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    const std::string dirs = path;
    for (std::size_t start = 0; start <= dirs.size();) {
      const std::size_t end = std::min(dirs.find(':', start), dirs.size());
      candidates.push_back(fs::path(dirs.substr(start, end - start)) / "nvcc");
      start = end + 1;
    }
  }
  std::error_code ec;
  for (const auto& candidate : candidates)
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  return {};
}

workers::child_outcome run_corpus_step(const std::vector<std::string>& argv) {
  workers::child_options options;
  options.argv = argv;
  options.max_output_bytes = std::size_t{1} << 24; // cuobjdump's listing of every kernel
  return workers::run_child(options, std::chrono::minutes(5));
}

TEST(vector_corpus_gpu, original_and_rewrite_write_the_same_bits_on_the_device) {
  if (!workers::nvidia_gpu_present())
    GTEST_SKIP() << "no NVIDIA GPU (/dev/nvidia0 and /proc/driver/nvidia are absent)";
  const fs::path nvcc = corpus_nvcc();
  ASSERT_FALSE(nvcc.empty()) << "an NVIDIA GPU is here but nvcc is not ($CUDACXX, "
                                "/usr/local/cuda/bin/nvcc, PATH): the corpus cannot be compiled";
  std::string arch = workers::local_nvidia_arch();
  if (arch.empty())
    arch = "sm_90";

  const std::vector<vector_shape> shapes = vector_corpus();
  std::vector<std::string> rewritten;
  for (const vector_shape& shape : shapes) {
    std::string why;
    rewritten.push_back(vectorized_corpus_kernel(shape, why));
    ASSERT_FALSE(rewritten.back().empty()) << shape.name << ": " << why;
  }
  temp_dir dir;
  const fs::path source = dir.path() / "corpus.cu";
  const fs::path program = dir.path() / "corpus";
  write_file(source, corpus_program(shapes, rewritten, corpus_target::cuda));
  const auto compiled = run_corpus_step(
      {nvcc.string(), "-std=c++17", "-arch=" + arch, "-o", program.string(), source.string()});
  ASSERT_TRUE(compiled.succeeded()) << "nvcc " << workers::describe_exit(compiled) << "\n"
                                    << compiled.output << "\n"
                                    << read_text(source);
  const auto ran = run_corpus_step({program.string()});
  EXPECT_TRUE(ran.succeeded()) << workers::describe_exit(ran) << "\n" << ran.output;
  for (const vector_shape& shape : shapes)
    EXPECT_NE(ran.output.find("ok " + shape.name + "\n"), std::string::npos) << shape.name << "\n"
                                                                             << ran.output;

  // The rewrite's point: 16-byte accesses in every rewritten kernel (cuobjdump beside nvcc).
  const fs::path cuobjdump = nvcc.parent_path() / "cuobjdump";
  std::error_code ec;
  if (!fs::is_regular_file(cuobjdump, ec)) {
    std::cout << "no cuobjdump beside " << nvcc << ": the 16-byte accesses are not checked\n";
    return;
  }
  const auto sass = run_corpus_step({cuobjdump.string(), "-sass", program.string()});
  ASSERT_TRUE(sass.succeeded()) << sass.output;
  for (const vector_shape& shape : shapes) {
    // A function's listing: from its "Function : <mangled>" line to the next one.
    const std::string mangled =
        std::to_string(7 + shape.name.size()) + "corpus_" + shape.name + "10vectorized1k";
    const std::size_t at = sass.output.find(mangled);
    ASSERT_NE(at, std::string::npos) << shape.name << ": no rewritten kernel in the SASS";
    const std::size_t end = sass.output.find("Function : ", at);
    const std::string listing = sass.output.substr(at, end == std::string::npos ? end : end - at);
    EXPECT_NE(listing.find(".128"), std::string::npos)
        << shape.name << ": the rewritten kernel has no 16-byte load or store\n"
        << listing;
  }
}

} // namespace
} // namespace rpl::testing
