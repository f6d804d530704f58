#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/optimize/rule_transforms.hpp"
#include "stages/optimize/source_guard.hpp"
#include "stages/optimize/unified_diff.hpp"
#include "support/sanitizers.hpp"
#include "workers/source/clang_source.hpp"

namespace rpl::workers {
namespace {

namespace so = stages::optimize;

std::string read_example(const std::string& name) {
  std::ifstream in(std::string(RPL_SOURCE_DIR) + "/examples/cuda/" + name, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

#define RPL_REQUIRE_LIBCLANG()                                                                     \
  do {                                                                                             \
    std::string why_;                                                                              \
    if (!libclang_available(why_)) {                                                               \
      GTEST_SKIP() << why_;                                                                        \
    }                                                                                              \
  } while (0)

const so::declaration* find(const so::source_model& model, const std::string& name) {
  for (const so::declaration& d : model.declarations) {
    if (d.name == name && d.is_definition) {
      return &d;
    }
  }
  return nullptr;
}

so::source_model parse_ok(const std::string& text, const std::string& name) {
  std::string error;
  so::source_model model = parse_source(text, name, "cuda", {}, error);
  EXPECT_EQ(error, "");
  return model;
}

TEST(clang_source, parses_gemm_kernels_device_functions_and_loops) {
  RPL_REQUIRE_LIBCLANG();
  const std::string text = read_example("gemm.cu");
  ASSERT_FALSE(text.empty());
  const so::source_model model = parse_ok(text, "gemm.cu");
  const so::declaration* tile = find(model, "sgemm_tile");
  const so::declaration* tiled = find(model, "rpl_sgemm_tiled");
  const so::declaration* reference = find(model, "sgemm_reference");
  const so::declaration* main_fn = find(model, "main");
  ASSERT_NE(tile, nullptr);
  ASSERT_NE(tiled, nullptr);
  ASSERT_NE(reference, nullptr);
  ASSERT_NE(main_fn, nullptr);
  EXPECT_EQ(tile->kind, so::decl_kind::device_function);
  EXPECT_EQ(tiled->kind, so::decl_kind::kernel);
  EXPECT_EQ(main_fn->kind, so::decl_kind::host_function);
  EXPECT_EQ(tiled->mangled_name, "rpl_sgemm_tiled");
  EXPECT_TRUE(tiled->has_launch_bounds);
  EXPECT_FALSE(reference->has_launch_bounds);
  EXPECT_EQ(tiled->tokens.front(), "extern"); // `extern "C"` belongs to the declaration
  ASSERT_EQ(tiled->parameters.size(), 6u);
  EXPECT_EQ(tiled->parameters[0].name, "a");
  EXPECT_EQ(tiled->calls, std::vector<std::string>{"sgemm_tile"});
  EXPECT_EQ(text.at(tile->body_offset), '{');
  // Loops: 12 in sgemm_tile, the k0 loop and the two staging loops without an unroll pragma.
  ASSERT_EQ(tile->loops.size(), 12u);
  int without_pragma = 0;
  for (const so::loop_info& loop : tile->loops) {
    EXPECT_EQ(text.substr(loop.keyword_offset, 3), "for");
    without_pragma += loop.has_unroll_pragma ? 0 : 1;
  }
  EXPECT_EQ(without_pragma, 3);
  EXPECT_EQ(tile->loops[2].depth, 0u);
  EXPECT_EQ(tile->loops[3].depth, 1u);
  // Every kernel's body parsed: the kernels and device functions hold no error.
  for (const so::diagnostic_info& d : model.diagnostics) {
    EXPECT_FALSE(d.is_error && d.file == "gemm.cu" && d.line < 200)
        << d.line << ":" << d.column << " " << d.message;
  }
  bool include_seen = false;
  for (const so::directive_info& d : model.directives) {
    include_seen = include_seen || (d.is_include && d.text == "#include <cuda_runtime.h>");
  }
  EXPECT_TRUE(include_seen);
}

TEST(clang_source, parses_macro_kernels_of_multistream_and_stream_copy) {
  RPL_REQUIRE_LIBCLANG();
  const so::source_model ms = parse_ok(read_example("multistream.cu"), "multistream.cu");
  const so::declaration* spin_a = find(ms, "ms_spin_a");
  ASSERT_NE(spin_a, nullptr);
  EXPECT_EQ(spin_a->kind, so::decl_kind::kernel);
  EXPECT_TRUE(spin_a->from_macro);
  EXPECT_EQ(spin_a->calls, std::vector<std::string>{"spin"});
  const so::declaration* spin = find(ms, "spin");
  ASSERT_NE(spin, nullptr);
  EXPECT_EQ(spin->kind, so::decl_kind::host_device_function);
  ASSERT_NE(find(ms, "ms_scale"), nullptr);

  const so::source_model sc = parse_ok(read_example("stream_copy.cu"), "stream_copy.cu");
  const so::declaration* copy = find(sc, "stream_copy");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->kind, so::decl_kind::kernel);
  ASSERT_EQ(copy->loops.size(), 1u);
  EXPECT_FALSE(copy->loops[0].has_unroll_pragma);
}

TEST(clang_source, parses_a_hip_source) {
  RPL_REQUIRE_LIBCLANG();
  const std::string text = R"(#include <hip/hip_runtime.h>

__device__ float twice(float x) { return 2.0f * x; }

__global__ void vadd(const float* a, const float* b, float* c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    c[i] = twice(a[i]) + b[i];
  }
}

int main() {
  float* d = nullptr;
  hipMalloc(&d, 1024);
  hipLaunchKernelGGL(vadd, dim3(4), dim3(256), 0, 0, d, d, d, 256);
  return 0;
}
)";
  std::string error;
  const so::source_model model = parse_source(text, "vadd.hip", "hip", {"-DN=4", "-O3"}, error);
  ASSERT_EQ(error, "");
  const so::declaration* vadd = find(model, "vadd");
  ASSERT_NE(vadd, nullptr);
  EXPECT_EQ(vadd->kind, so::decl_kind::kernel);
  EXPECT_EQ(vadd->calls, std::vector<std::string>{"twice"});
  ASSERT_EQ(vadd->loops.size(), 1u);
  EXPECT_EQ(find(model, "twice")->kind, so::decl_kind::device_function);
}

TEST(clang_source, kernels_parse_when_host_code_does_not) {
  RPL_REQUIRE_LIBCLANG();
  const std::string text = R"(#include <cuda_runtime.h>
__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }
int main() { undeclared_call(1); return 0; }
)";
  const so::source_model model = parse_ok(text, "broken.cu");
  const so::declaration* k = find(model, "k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->kind, so::decl_kind::kernel);
  EXPECT_GE(model.error_count(), 1u);
}

TEST(clang_source, rejects_an_unknown_language_naming_the_fix) {
  RPL_REQUIRE_LIBCLANG();
  std::string error;
  parse_source("int x;", "x.f90", "fortran", {}, error);
  EXPECT_NE(error.find("fortran"), std::string::npos);
  EXPECT_NE(error.find("fix:"), std::string::npos);
}

/// Every rule proposal for `kernel` applies, reparses and passes the source guard.
void expect_proposals_pass_guard(const std::string& file,
                                 const std::string& kernel,
                                 std::uint32_t block,
                                 std::size_t expected) {
  const std::string text = read_example(file);
  const so::source_model before = parse_ok(text, file);
  const std::vector<messages::proposal> proposals =
      so::rule_proposals(before, text, file, kernel, block, {});
  EXPECT_EQ(proposals.size(), expected) << file << " " << kernel;
  const char* dump = std::getenv("RPL_DUMP_PROPOSALS"); // a folder: write each patched source
  for (const messages::proposal& p : proposals) {
    const so::patch_result patched = so::apply_unified_diff(text, p.diff);
    ASSERT_TRUE(patched.ok) << p.id << ": " << patched.error;
    const so::source_model after = parse_ok(patched.text, file);
    const auto findings = so::check_source(before, text, after, patched.text, kernel);
    for (const so::guard_finding& f : findings) {
      ADD_FAILURE() << p.id << ": " << f.guard << ": " << f.detail;
    }
    if (dump != nullptr) {
      std::string name = p.id;
      for (char& c : name) {
        c = (c == ':' ? '_' : c);
      }
      std::ofstream(std::string(dump) + "/" + kernel + "_" + name + ".cu") << patched.text;
    }
  }
}

TEST(clang_source, rule_proposals_for_gemm_pass_the_source_guard) {
  RPL_REQUIRE_LIBCLANG();
  // sgemm_tile's two shared panels padded, each and both, in a copy of it; launch bounds with a
  // minimum of 2 blocks; unroll knobs for its 3 loops (in the copy).
  expect_proposals_pass_guard("gemm.cu", "rpl_sgemm_tiled", 256, 5);
  // sgemm_naive is shared by two kernels too: its loop's knob in a copy; sgemm_reference has no
  // launch bounds.
  expect_proposals_pass_guard("gemm.cu", "sgemm_reference", 256, 2);
}

TEST(clang_source, rule_proposals_for_multistream_pass_the_source_guard) {
  RPL_REQUIRE_LIBCLANG();
  expect_proposals_pass_guard("multistream.cu", "ms_scale", 256, 1);
  expect_proposals_pass_guard("multistream.cu", "ms_combine", 256, 1);
  // A macro-made kernel whose loop is in a host-device function: nothing to propose.
  expect_proposals_pass_guard("multistream.cu", "ms_spin_a", 1024, 0);
  expect_proposals_pass_guard("stream_copy.cu", "stream_copy", 256, 2);
}

TEST(clang_source, a_vector_load_proposal_for_pipeline_passes_the_source_guard) {
  RPL_REQUIRE_LIBCLANG();
  // pl_scale's grid-stride loop: float4 loads and stores, launch bounds, an unroll knob.
  expect_proposals_pass_guard("pipeline.cu", "pl_scale", 256, 3);
  const std::string text = read_example("pipeline.cu");
  const auto proposals =
      so::rule_proposals(parse_ok(text, "pipeline.cu"), text, "pipeline.cu", "pl_scale", 256, {});
  ASSERT_FALSE(proposals.empty());
  EXPECT_EQ(proposals.front().id.rfind("rule:vector:L", 0), 0U) << proposals.front().id;
  EXPECT_NE(proposals.front().id.find(":float4"), std::string::npos);
}

/// Everything of a model the guards and rules read, as text, so two parses compare whole.
std::string summary(const so::source_model& model) {
  std::string out;
  for (const so::declaration& d : model.declarations) {
    out += d.qualified_name + " " + d.mangled_name + " k" +
           std::to_string(static_cast<int>(d.kind)) + " [" + std::to_string(d.range.begin) + "," +
           std::to_string(d.range.end) + ") l" + std::to_string(d.line) + " def" +
           std::to_string(d.is_definition) + " t" + std::to_string(d.tokens.size()) + " body" +
           std::to_string(d.body_offset) + " lb" + std::to_string(d.has_launch_bounds) + " ret " +
           d.return_type + " (";
    for (const so::parameter_info& p : d.parameters) {
      out += p.type + " " + p.name + ",";
    }
    out += ") calls";
    for (const std::string& c : d.calls) {
      out += " " + c;
    }
    for (const so::loop_info& l : d.loops) {
      out += " loop@" + std::to_string(l.keyword_offset) + "/" + std::to_string(l.depth) +
             (l.has_unroll_pragma ? "u" : "");
    }
    out += "\n";
  }
  out += std::to_string(model.directives.size()) + " directives, " +
         std::to_string(model.tokens.size()) + " tokens\n";
  for (const so::diagnostic_info& d : model.diagnostics) {
    out += d.file + ":" + std::to_string(d.line) + ":" + std::to_string(d.column) + " " +
           (d.is_error ? "error " : "") + d.message + "\n";
  }
  return out;
}

TEST(clang_source, a_kept_unit_reparsed_gives_the_model_of_a_cold_parse) {
  RPL_REQUIRE_LIBCLANG();
  // Each rule proposal for gemm.cu parsed right after the original (the kept unit is reparsed,
  // its preamble reused), and again cold: the same model. So is a text whose start (the preamble:
  // its #include and #define lines) changed, and a text of another name between two of gemm.cu.
  const std::string text = read_example("gemm.cu");
  forget_parsed_units();
  const so::source_model original = parse_ok(text, "gemm.cu");
  std::vector<std::pair<std::string, std::string>> texts;
  for (const auto& p : so::rule_proposals(original, text, "gemm.cu", "rpl_sgemm_tiled", 256, {})) {
    if (p.diff.empty()) {
      continue;
    }
    const auto patched = so::apply_unified_diff(text, p.diff);
    ASSERT_TRUE(patched.ok) << p.id << ": " << patched.error;
    texts.emplace_back(p.id, patched.text);
  }
  ASSERT_GE(texts.size(), 3U);
  if (rpl::testing::under_asan || rpl::testing::under_tsan) {
    // Three proposals take the same paths as all of them; each costs three parses, which took
    // 46 s under TSan for the whole set (libclang itself is not instrumented). The plain build
    // checks every proposal.
    texts.resize(3);
  }
  texts.emplace_back("a new #define at the start",
                     "#define RPL_EXTRA_TILE 8\n" + text +
                         "\n__global__ void rpl_extra(float* x) { x[0] = RPL_EXTRA_TILE; }\n");
  texts.emplace_back("the original again", text);
  for (const auto& [id, after] : texts) {
    const std::string warm = summary(parse_ok(after, "gemm.cu"));
    parse_ok(read_example("stream_copy.cu"), "stream_copy.cu"); // another kept unit between
    forget_parsed_units();
    const std::string cold = summary(parse_ok(after, "gemm.cu"));
    EXPECT_EQ(warm, cold) << id;
    EXPECT_NE(warm.find("rpl_sgemm_tiled"), std::string::npos) << id;
  }
  EXPECT_NE(summary(parse_ok(texts[texts.size() - 2].second, "gemm.cu")).find("rpl_extra"),
            std::string::npos);
}

TEST(clang_source, cheats_on_a_parsed_gemm_are_rejected_by_name) {
  RPL_REQUIRE_LIBCLANG();
  const std::string text = read_example("gemm.cu");
  const so::source_model before = parse_ok(text, "gemm.cu");
  const std::string call = "  sgemm_tile(a, b, c, m, n, k);\n}\n\nextern \"C\" __global__ void\n";
  ASSERT_NE(text.find(call), std::string::npos);
  const auto findings_for = [&](const std::string& inserted, const std::string& at = "") {
    std::string after = text;
    if (at.empty()) {
      after.insert(text.find(call), inserted);
    } else {
      after.insert(text.find(at), inserted);
    }
    const so::source_model model = parse_ok(after, "gemm.cu");
    std::string out;
    for (const so::guard_finding& f :
         so::check_source(before, text, model, after, "rpl_sgemm_tiled")) {
      out += f.guard + " ";
    }
    return out;
  };
  EXPECT_NE(findings_for("  sgemm_reference<<<1, 1>>>(a, b, c, m, n, k);\n").find("device_launch"),
            std::string::npos);
  EXPECT_NE(findings_for("  asm volatile(\"\" ::: \"memory\");\n").find("inline_asm"),
            std::string::npos);
  EXPECT_NE(findings_for("  static int calls = 0;\n").find("new_global"), std::string::npos);
  EXPECT_NE(findings_for("__device__ float cache[256];\n", "extern \"C\" __global__ void "
                                                           "__launch_bounds__")
                .find("new_global"),
            std::string::npos);
  EXPECT_NE(findings_for("#include <cstring>\n", "#include <vector>").find("directive_changed"),
            std::string::npos);
  EXPECT_EQ(findings_for("  const int unused = 0;\n"), "");
}

} // namespace
} // namespace rpl::workers
