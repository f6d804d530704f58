#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/optimize/rule_transforms.hpp"
#include "stages/optimize/source_guard.hpp"
#include "stages/optimize/unified_diff.hpp"

namespace rpl::stages::optimize {
namespace {

// A hand-made model of a small source (no libclang in unit tests): a device function `tile`
// shared by kernels `target` and `other`, with two loops, one already unrolled.
const std::string source = R"(#include <cuda_runtime.h>

__device__ void tile(float* x) {
  for (int i = 0; i < 8; ++i) {
    x[i] += 1.0f;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    x[j] *= 2.0f;
  }
  if (x[0] > 0.0f)
    while (x[0] > 1.0f) {
      x[0] -= 1.0f;
    }
}

/// The kernel to tune.
__global__ void target(float* x) {
  for (int k = 0; k < 2; ++k) {
    tile(x + k);
  }
}

__global__ void __launch_bounds__(128) other(float* x) {
  tile(x);
}
)";

std::vector<std::string> body_tokens(std::string_view text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '#') { // a directive inside a body: its tokens
      out.emplace_back("#");
      ++i;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') {
      std::size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) ||
                                 text[j] == '_' || text[j] == '.')) {
        ++j;
      }
      out.emplace_back(text.substr(i, j - i));
      i = j;
    } else {
      out.emplace_back(1, c);
      ++i;
    }
  }
  return out;
}

/// The model of `text`, a variant of `source`: declarations found by their first line.
source_model model_of(const std::string& text) {
  source_model m;
  m.directives = scan_directives(text.substr(0, text.find("__device__")));
  const auto add = [&](const std::string& name, decl_kind kind, const std::string& start,
                       std::vector<std::string> calls) {
    const std::size_t begin = text.find(start);
    if (begin == std::string::npos) {
      return;
    }
    // The body ends at the first "\n}\n" after the start.
    const std::size_t end = text.find("\n}\n", begin) + 2;
    declaration d;
    d.name = d.qualified_name = d.mangled_name = name;
    d.kind = kind;
    d.range = {begin, end};
    d.line = line_of(text, begin);
    d.is_definition = d.has_body = true;
    d.body_offset = text.find('{', begin);
    d.tokens = body_tokens(std::string_view(text).substr(begin, end - begin));
    d.calls = std::move(calls);
    d.parameters = {{"float *", "x"}};
    d.has_launch_bounds =
        text.substr(begin, d.body_offset - begin).find("__launch_bounds__") != std::string::npos;
    // Loops: each "for (" / "while (" at depth by indentation (2 spaces: depth 0).
    for (const std::string keyword : {"for (", "while ("}) {
      for (std::size_t pos = text.find(keyword, d.body_offset); pos < end;
           pos = text.find(keyword, pos + 1)) {
        loop_info loop;
        loop.keyword = keyword.substr(0, keyword.size() - 2);
        loop.keyword_offset = pos;
        loop.line = line_of(text, pos);
        const std::size_t line_begin = text.rfind('\n', pos) + 1;
        loop.depth = static_cast<unsigned>((pos - line_begin) / 2 - 1);
        loop.has_unroll_pragma = unroll_pragma_precedes(text, pos);
        d.loops.push_back(loop);
      }
    }
    std::sort(d.loops.begin(), d.loops.end(), [](const loop_info& a, const loop_info& b) {
      return a.keyword_offset < b.keyword_offset;
    });
    m.declarations.push_back(std::move(d));
  };
  // In source order: the copy (when there is one) comes before the target kernel.
  add("tile", decl_kind::device_function, "__device__ void tile(", {});
  add("tile_rpl_target", decl_kind::device_function, "__device__ void tile_rpl_target(", {});
  const bool copied = text.find("tile_rpl_target(x + k)") != std::string::npos;
  add("target", decl_kind::kernel, "__global__ void", {copied ? "tile_rpl_target" : "tile"});
  add("other", decl_kind::kernel, "__global__ void __launch_bounds__(128) other", {"tile"});
  std::sort(
      m.declarations.begin(), m.declarations.end(),
      [](const declaration& a, const declaration& b) { return a.range.begin < b.range.begin; });
  return m;
}

std::vector<std::string> ids(const std::vector<messages::proposal>& proposals) {
  std::vector<std::string> out;
  for (const messages::proposal& p : proposals) {
    out.push_back(p.id);
  }
  return out;
}

/// What rule_proposals gives for `target` at block 256: the kernel's loop and tile's first loop
/// take knobs; tile's `while` is the body of an `if` (no declaration can go before it): fixed
/// factors, in a copy.
const std::vector<std::string> target_ids_at_256 = {
    "rule:launch-bounds:256", "rule:unroll-knobs:target", "rule:unroll-knobs:tile",
    "rule:unroll:L12:2",      "rule:unroll:L12:4",        "rule:unroll:L12:8"};

TEST(rule_transforms, proposes_launch_bounds_then_knobs_then_unrolls_in_priority_order) {
  const source_model model = model_of(source);
  const auto proposals = rule_proposals(model, source, "k.cu", "target", 256, {});
  ASSERT_EQ(ids(proposals), target_ids_at_256);
  for (const messages::proposal& p : proposals) {
    EXPECT_FALSE(p.title.empty());
    EXPECT_FALSE(p.rationale.empty());
    EXPECT_EQ(p.diff.rfind("--- a/k.cu\n+++ b/k.cu\n", 0), 0u) << p.diff;
    EXPECT_EQ(p.tunables.empty(), p.id.rfind("rule:unroll-knobs:", 0) != 0) << p.id;
  }
}

TEST(rule_transforms, an_unroll_knob_goes_in_place_and_compiles_to_the_code_as_it_was) {
  const source_model model = model_of(source);
  const auto proposals = rule_proposals(model, source, "k.cu", "target", 0, {});
  ASSERT_FALSE(proposals.empty());
  ASSERT_EQ(proposals[0].id, "rule:unroll-knobs:target");
  ASSERT_EQ(proposals[0].tunables.size(), 1U);
  const messages::tunable_macro& knob = proposals[0].tunables[0];
  EXPECT_EQ(knob.name, "RPL_UNROLL_L19");
  EXPECT_EQ(knob.default_value, 0);
  EXPECT_EQ(knob.values, (std::vector<std::int64_t>{0, 1, 2, 4, 8}));
  const patch_result patched = apply_unified_diff(source, proposals[0].diff);
  ASSERT_TRUE(patched.ok) << patched.error;
  EXPECT_NE(patched.text.find("(float* x) {\n#ifndef RPL_UNROLL_L19\n#define RPL_UNROLL_L19 0\n"
                              "#endif\n#if RPL_UNROLL_L19 > 0\n  constexpr int rpl_unroll_L19 = "
                              "RPL_UNROLL_L19;\n#pragma unroll rpl_unroll_L19\n#endif\n"
                              "  for (int k = 0"),
            std::string::npos)
      << patched.text;
  // A knobbed loop gets no knob and no fixed factor again; tile's loops still get theirs.
  const auto again = rule_proposals(model_of(patched.text), patched.text, "k.cu", "target", 0, {});
  EXPECT_EQ(ids(again), (std::vector<std::string>{"rule:unroll-knobs:tile", "rule:unroll:L12:2",
                                                  "rule:unroll:L12:4", "rule:unroll:L12:8"}));
  for (const auto& p : again) {
    EXPECT_NE(p.id, "rule:unroll-knobs:target");
    EXPECT_EQ(p.id.find(":L19:"), std::string::npos) << p.id;
  }
}

TEST(rule_transforms, loops_of_a_shared_function_change_in_a_copy_that_passes_the_guard) {
  const source_model before = model_of(source);
  const auto proposals = rule_proposals(before, source, "k.cu", "target", 0, {});
  for (const char* id : {"rule:unroll:L12:4", "rule:unroll-knobs:tile"}) {
    const auto it = std::find_if(proposals.begin(), proposals.end(),
                                 [&](const messages::proposal& p) { return p.id == id; });
    ASSERT_NE(it, proposals.end()) << id;
    const patch_result patched = apply_unified_diff(source, it->diff);
    ASSERT_TRUE(patched.ok) << patched.error;
    const std::string& after = patched.text;
    // The copy sits above the kernel's comment; only the target calls it; `tile` is unchanged.
    const std::size_t copy = after.find("__device__ void tile_rpl_target(float* x) {\n");
    EXPECT_LT(copy, after.find("/// The kernel to tune.")) << id;
    EXPECT_NE(after.find(std::string(id) == "rule:unroll:L12:4"
                             ? "  if (x[0] > 0.0f)\n    #pragma unroll 4\n    while"
                             : "#pragma unroll rpl_unroll_L4\n#endif\n  for (int i = 0",
                         copy),
              std::string::npos)
        << after;
    EXPECT_NE(after.find("    tile_rpl_target(x + k);"), std::string::npos);
    EXPECT_NE(after.find("  tile(x);\n"), std::string::npos);
    EXPECT_NE(after.find(source.substr(source.find("__device__"), 100)), std::string::npos);
    const source_model model_after = model_of(after);
    const auto findings = check_source(before, source, model_after, after, "target");
    for (const guard_finding& f : findings) {
      ADD_FAILURE() << id << ": " << f.guard << ": " << f.detail;
    }
  }
}

TEST(rule_transforms, every_proposal_passes_the_guard) {
  const source_model before = model_of(source);
  const auto proposals = rule_proposals(before, source, "k.cu", "target", 256, {});
  ASSERT_EQ(ids(proposals), target_ids_at_256); // all of them, not none
  for (const messages::proposal& p : proposals) {
    const patch_result patched = apply_unified_diff(source, p.diff);
    ASSERT_TRUE(patched.ok) << p.id << ": " << patched.error;
    for (const guard_finding& f :
         check_source(before, source, model_of(patched.text), patched.text, "target")) {
      ADD_FAILURE() << p.id << ": " << f.guard << ": " << f.detail;
    }
  }
}

TEST(rule_transforms, single_argument_launch_bounds_get_a_min_blocks_variant) {
  const source_model model = model_of(source);
  const auto proposals = rule_proposals(model, source, "k.cu", "other", 128, {});
  // `other`'s only loops are in `tile`, shared with `target`: copied; and min blocks.
  const auto it = std::find_if(proposals.begin(), proposals.end(), [](const messages::proposal& p) {
    return p.id == "rule:launch-bounds-min-blocks:2";
  });
  ASSERT_NE(it, proposals.end());
  EXPECT_EQ(it, proposals.begin()) << "launch bounds come before the unrolls";
  const patch_result patched = apply_unified_diff(source, it->diff);
  ASSERT_TRUE(patched.ok) << patched.error;
  EXPECT_NE(patched.text.find("__launch_bounds__(128, 2) other"), std::string::npos);
}

TEST(rule_transforms, skips_ids_already_tried_and_unknown_kernels) {
  const source_model model = model_of(source);
  const auto all = rule_proposals(model, source, "k.cu", "target", 256, {});
  const auto rest = rule_proposals(model, source, "k.cu", "target", 256,
                                   {"rule:unroll-knobs:target", "rule:launch-bounds:256"});
  EXPECT_EQ(rest.size() + 2, all.size());
  for (const auto& id : ids(rest)) {
    EXPECT_NE(id, "rule:unroll-knobs:target");
    EXPECT_NE(id, "rule:launch-bounds:256");
  }
  EXPECT_TRUE(rule_proposals(model, source, "k.cu", "missing", 256, {}).empty());
}

TEST(rule_transforms, ids_are_stable_for_the_same_source) {
  const source_model model = model_of(source);
  const auto first = rule_proposals(model, source, "k.cu", "target", 256, {});
  const auto second = rule_proposals(model, source, "k.cu", "target", 256, {});
  ASSERT_EQ(ids(first), target_ids_at_256);
  ASSERT_EQ(first.size(), second.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].id, second[i].id);
    EXPECT_EQ(first[i].diff, second[i].diff);
  }
}

} // namespace
} // namespace rpl::stages::optimize

namespace rpl::stages::optimize {
namespace {

source_model one_kernel(const std::string& text, const std::string& name) {
  source_model m;
  declaration d;
  d.name = d.qualified_name = d.mangled_name = name;
  d.kind = decl_kind::kernel;
  d.range = {0, text.size()};
  d.line = 1;
  d.is_definition = d.has_body = true;
  d.body_offset = text.find('{');
  m.declarations.push_back(d);
  return m;
}

TEST(rule_transforms, pads_a_shared_array_indexed_in_both_dimensions) {
  const std::string text = "__global__ void t(float* x) {\n"
                           "  __shared__ float tile[32][32];\n"
                           "  tile[threadIdx.y][threadIdx.x] = x[threadIdx.x];\n"
                           "  __syncthreads();\n"
                           "  x[threadIdx.x] = tile[threadIdx.x][threadIdx.y];\n"
                           "}\n";
  const auto proposals = rule_proposals(one_kernel(text, "t"), text, "t.cu", "t", 0, {});
  ASSERT_EQ(ids(proposals), std::vector<std::string>{"rule:pad-shared:t:tile"});
  const patch_result patched = apply_unified_diff(text, proposals[0].diff);
  ASSERT_TRUE(patched.ok) << patched.error;
  EXPECT_NE(patched.text.find("__shared__ float tile[32][32 + 1];"), std::string::npos);
  // Padded already: not again.
  EXPECT_TRUE(
      rule_proposals(one_kernel(patched.text, "t"), patched.text, "t.cu", "t", 0, {}).empty());
}

TEST(rule_transforms, does_not_pad_an_array_used_through_a_row_pointer) {
  const std::string text = "__global__ void t(float* x) {\n"
                           "  __shared__ float tile[32][32];\n"
                           "  float* row = tile[threadIdx.y];\n"
                           "  row[threadIdx.x] = x[threadIdx.x];\n"
                           "}\n";
  EXPECT_TRUE(rule_proposals(one_kernel(text, "t"), text, "t.cu", "t", 0, {}).empty());
}

/// A kernel with one grid-stride loop whose body is `body`.
source_model grid_stride_kernel(const std::string& text) {
  source_model m = one_kernel(text, "t");
  declaration& d = m.declarations.front();
  d.parameters = {{"float *", "out"}, {"const float *", "in"}, {"int", "n"}};
  loop_info loop;
  loop.keyword = "for";
  loop.keyword_offset = text.find("for (");
  loop.line = 2;
  d.loops.push_back(loop);
  return m;
}

std::string grid_stride_text(const std::string& body) {
  return "__global__ void t(float* out, const float* in, int n) {\n"
         "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * "
         "gridDim.x) {\n    " +
         body + "\n  }\n}\n";
}

std::vector<std::string> not_applied_lines(const rule_transforms_result& result) {
  std::vector<std::string> out;
  for (const rule_not_applied& entry : result.not_applied) {
    out.push_back(to_line(entry));
  }
  return out;
}

TEST(rule_transforms, says_for_each_rule_that_proposed_nothing_why) {
  const std::string text = grid_stride_text("atomicAdd(&out[i], in[i]);");
  const rule_transforms_result result =
      run_rule_transforms(grid_stride_kernel(text), text, "t.cu", "t", 0, {});
  EXPECT_EQ(ids(result.proposals), std::vector<std::string>{"rule:unroll-knobs:t"});
  EXPECT_EQ(not_applied_lines(result),
            (std::vector<std::string>{
                "shared padding: no two-dimensional `__shared__` array that every use indexes in "
                "both dimensions and that has no padding yet",
                "vector loads: the loop at line 2 of `t`: the loop body calls atomicAdd",
                "launch bounds: the block size of the launch is unknown",
                "unroll pragmas: every loop without an unroll pragma takes a knob instead"}));
}

TEST(rule_transforms, loops_of_another_shape_read_as_no_grid_stride_loop) {
  std::string text = grid_stride_text("out[i] = in[i];");
  const std::string start = "blockIdx.x * blockDim.x + threadIdx.x";
  text.replace(text.find(start), start.size(), "0");
  const rule_transforms_result result =
      run_rule_transforms(grid_stride_kernel(text), text, "t.cu", "t", 0, {});
  ASSERT_GE(result.not_applied.size(), 2U);
  EXPECT_EQ(to_line(result.not_applied[1]),
            "vector loads: no grid-stride loop (line 2 of `t`: its start `0` is not the thread's "
            "global x index (blockIdx.x * blockDim.x + threadIdx.x))");
}

TEST(rule_transforms, a_rule_whose_proposals_were_tried_says_so) {
  const std::string text = grid_stride_text("out[i] = 2.0f * in[i];");
  const source_model model = grid_stride_kernel(text);
  const rule_transforms_result fresh = run_rule_transforms(model, text, "t.cu", "t", 256, {});
  EXPECT_EQ(ids(fresh.proposals),
            (std::vector<std::string>{"rule:vector:L2:float4", "rule:launch-bounds:256",
                                      "rule:unroll-knobs:t"}));
  EXPECT_EQ(fresh.not_applied.size(), 2U); // padding, pragmas
  const rule_transforms_result again =
      run_rule_transforms(model, text, "t.cu", "t", 256, {"rule:vector:L2:float4"});
  ASSERT_EQ(again.not_applied.size(), 3U);
  EXPECT_EQ(to_line(again.not_applied[1]), "vector loads: already tried: rule:vector:L2:float4");
}

TEST(rule_transforms, every_rule_says_when_the_kernel_is_missing) {
  const std::string text = grid_stride_text("out[i] = in[i];");
  const rule_transforms_result result =
      run_rule_transforms(grid_stride_kernel(text), text, "t.cu", "missing", 256, {});
  EXPECT_TRUE(result.proposals.empty());
  const std::vector<std::string> rules = {"shared padding", "vector loads", "launch bounds",
                                          "unroll knobs", "unroll pragmas"};
  ASSERT_EQ(result.not_applied.size(), rules.size());
  for (std::size_t i = 0; i < rules.size(); ++i) {
    EXPECT_EQ(result.not_applied[i].rule, rules[i]);
    EXPECT_EQ(result.not_applied[i].reason, "the kernel `missing` is not defined in t.cu");
  }
}

} // namespace
} // namespace rpl::stages::optimize
