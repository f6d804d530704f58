// How much the kept translation units save optimize's source guard: each parse of a proposal's
// text cold (every unit disposed of first: the headers parsed again) against the same parse right
// after the original's (the kept unit reparsed, its precompiled preamble reused).
//
//   build/bin/parse_reuse [FILE.cu] [KERNEL] [ROUNDS]
//
// Default: examples/cuda/gemm.cu, rpl_sgemm_tiled, 5 rounds over the rule proposals' texts. Prints
// the median milliseconds per parse of each way and their ratio (baseline: the cold parse). The
// host's CUDA headers are used where libclang finds them, else the built-in stand-in (which the
// output names); exit 3 when libclang cannot be loaded.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "stages/optimize/rule_transforms.hpp"
#include "stages/optimize/unified_diff.hpp"
#include "workers/source/clang_source.hpp"

namespace {

using namespace rpl;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double parse_ms(const std::string& text, const std::string& name) {
  std::string error;
  const auto start = std::chrono::steady_clock::now();
  const auto model = workers::parse_source(text, name, "cuda", {}, error);
  const auto end = std::chrono::steady_clock::now();
  if (!error.empty() || model.declarations.empty()) {
    std::fprintf(stderr, "parse_reuse: %s did not parse: %s\n", name.c_str(), error.c_str());
    std::exit(1);
  }
  return std::chrono::duration<double, std::milli>(end - start).count();
}

} // namespace

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 ? argv[1] : std::string(RPL_SOURCE_ROOT) + "/examples/cuda/gemm.cu";
  const std::string kernel = argc > 2 ? argv[2] : "rpl_sgemm_tiled";
  const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  std::ifstream in(path, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (text.empty()) {
    std::fprintf(stderr, "parse_reuse: cannot read %s; fix: name a CUDA source\n", path.c_str());
    return 2;
  }
  if (std::string why; !workers::libclang_available(why)) {
    std::fprintf(stderr, "parse_reuse: %s\n", why.c_str());
    return 3;
  }
  const std::string name = path.substr(path.find_last_of('/') + 1);
  std::string error;
  const auto original = workers::parse_source(text, name, "cuda", {}, error);
  std::vector<std::string> texts;
  for (const auto& p : stages::optimize::rule_proposals(original, text, name, kernel, 256, {})) {
    if (const auto patched = stages::optimize::apply_unified_diff(text, p.diff); patched.ok) {
      texts.push_back(patched.text);
    }
  }
  if (texts.empty()) {
    texts.push_back(text + "\n// an edit after the preamble\n");
  }
  std::vector<double> cold, kept;
  for (int r = 0; r < rounds; ++r) {
    for (const std::string& t : texts) {
      workers::forget_parsed_units();
      cold.push_back(parse_ms(t, name));
      parse_ms(text, name); // the original, as the guard parses it before each proposal
      kept.push_back(parse_ms(t, name));
    }
  }
  workers::forget_parsed_units();
  const double c = median(cold), k = median(kept);
  std::printf("parse_reuse: %s (%zu proposal texts x %d rounds; %s)\n", path.c_str(), texts.size(),
              rounds,
              original.error_count() == 0 ? "no parse errors" : "with parse errors (stand-in?)");
  std::printf("  cold parse (baseline)   %8.1f ms median\n", c);
  std::printf("  kept unit reparsed      %8.1f ms median\n", k);
  std::printf("  ratio kept/cold         %8.3f\n", c > 0 ? k / c : 0.0);
  return 0;
}
