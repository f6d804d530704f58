#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/optimize/source_guard.hpp"

namespace rpl::stages::optimize {
namespace {

// The models are built by hand (no libclang in unit tests): a tiny tokenizer splits each
// declaration's text, and each declaration says what it calls.

std::vector<std::string> split_tokens(std::string_view text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) {
        ++j;
      }
      out.emplace_back(text.substr(i, j - i));
      i = j;
    } else if (text.compare(i, 3, "<<<") == 0 || text.compare(i, 3, ">>>") == 0) {
      out.emplace_back(text.substr(i, 3));
      i += 3;
    } else {
      out.emplace_back(1, c);
      ++i;
    }
  }
  return out;
}

struct decl_spec {
  std::string name;
  decl_kind kind;
  std::string text; ///< the declaration's whole text
  std::vector<std::string> calls = {};
  std::vector<parameter_info> parameters = {};
};

/// A source made of `specs` (and `preamble`, its directives) and its model.
struct fixture {
  std::string text;
  source_model model;
};

fixture build(const std::string& preamble, const std::vector<decl_spec>& specs) {
  fixture f;
  f.text = preamble;
  f.model.directives = scan_directives(preamble);
  for (const decl_spec& s : specs) {
    declaration d;
    d.name = s.name;
    d.qualified_name = s.name;
    d.mangled_name = s.name;
    d.kind = s.kind;
    d.range = {f.text.size(), f.text.size() + s.text.size()};
    d.line = line_of(f.text, f.text.size());
    d.is_definition = true;
    d.tokens = split_tokens(s.text);
    d.calls = s.calls;
    d.parameters = s.parameters;
    d.return_type = is_function(s.kind) ? "void" : "";
    const std::size_t brace = s.text.find('{');
    d.has_body = is_function(s.kind) && brace != std::string::npos;
    d.body_offset = d.range.begin + brace;
    for (const std::string& t : d.tokens) {
      d.has_launch_bounds = d.has_launch_bounds || t == "__launch_bounds__";
    }
    f.text += s.text + "\n\n";
    f.model.declarations.push_back(std::move(d));
  }
  return f;
}

const std::vector<parameter_info> kernel_params = {{"float *", "x"}, {"int", "n"}};

std::vector<decl_spec> base_specs() {
  return {
      {"scale", decl_kind::device_function,
       "__device__ float scale(float v) {\n  return v * 2.0f;\n}"},
      {"shared_helper", decl_kind::device_function,
       "__device__ float shared_helper(float v) {\n  for (int i = 0; i < 4; ++i) v += 1.0f;\n  "
       "return v;\n}"},
      {"target",
       decl_kind::kernel,
       "__global__ void target(float* x, int n) {\n  int i = threadIdx.x;\n  if (i < n) x[i] = "
       "shared_helper(scale(x[i]));\n}",
       {"shared_helper", "scale"},
       kernel_params},
      {"other",
       decl_kind::kernel,
       "__global__ void other(float* x, int n) {\n  x[0] = shared_helper(x[0]);\n}",
       {"shared_helper"},
       kernel_params},
      {"main", decl_kind::host_function, "int main() {\n  return 0;\n}", {"target", "other"}},
  };
}

const std::string preamble = "#include <cuda_runtime.h>\n#define N 4\n\n";

std::vector<guard_finding> check(const std::vector<decl_spec>& after_specs,
                                 const std::string& after_preamble = preamble) {
  const fixture before = build(preamble, base_specs());
  const fixture after = build(after_preamble, after_specs);
  return check_source(before.model, before.text, after.model, after.text, "target");
}

std::vector<decl_spec> with_target(const std::string& text,
                                   std::vector<std::string> calls = {"shared_helper", "scale"}) {
  std::vector<decl_spec> specs = base_specs();
  specs[2].text = text;
  specs[2].calls = std::move(calls);
  return specs;
}

bool has_guard(const std::vector<guard_finding>& findings, const std::string& guard) {
  for (const guard_finding& f : findings) {
    if (f.guard == guard) {
      return true;
    }
  }
  return false;
}

std::string all(const std::vector<guard_finding>& findings) {
  std::string out;
  for (const guard_finding& f : findings) {
    out += f.guard + ": " + f.detail + "\n";
  }
  return out;
}

TEST(source_guard, region_holds_the_kernel_and_its_exclusive_device_functions) {
  const fixture f = build(preamble, base_specs());
  EXPECT_EQ(target_region(f.model, "target"), (std::set<std::string>{"target", "scale"}));
  EXPECT_EQ(target_region(f.model, "other"), (std::set<std::string>{"other"}));
  EXPECT_TRUE(target_region(f.model, "missing").empty());
  EXPECT_EQ(reachable_functions(f.model, "target"),
            (std::set<std::string>{"target", "scale", "shared_helper"}));
}

TEST(source_guard, an_unchanged_source_passes) {
  EXPECT_TRUE(check(base_specs()).empty()) << all(check(base_specs()));
}

TEST(source_guard, body_changes_in_the_region_and_launch_bounds_pass) {
  std::vector<decl_spec> specs = with_target(
      "__global__ void __launch_bounds__(256) target(float* x, int n) {\n  int i = "
      "threadIdx.x;\n#pragma unroll 4\n  for (int k = 0; k < 4; ++k) {}\n  __shared__ float "
      "tile[32];\n  if (i < n) x[i] = shared_helper(scale(x[i]));\n}");
  specs[0].text = "__device__ float scale(float v) {\n  return v + v;\n}";
  EXPECT_TRUE(check(specs).empty()) << all(check(specs));
}

TEST(source_guard, a_new_device_function_called_only_from_the_region_passes) {
  std::vector<decl_spec> specs = with_target(
      "__global__ void target(float* x, int n) {\n  int i = threadIdx.x;\n  if (i < n) x[i] = "
      "shared_helper_copy(scale(x[i]));\n}",
      {"shared_helper_copy", "scale"});
  specs.insert(specs.begin() + 2,
               {"shared_helper_copy", decl_kind::device_function,
                "__device__ float shared_helper_copy(float v) {\n#pragma unroll 2\n  for (int i = "
                "0; i < 4; ++i) v += 1.0f;\n  return v;\n}"});
  EXPECT_TRUE(check(specs).empty()) << all(check(specs));
}

TEST(source_guard, a_missing_kernel_is_rejected) {
  std::vector<decl_spec> specs = base_specs();
  specs[2].name = "renamed";
  const auto findings = check(specs);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].guard, "kernel_missing");
}

TEST(source_guard, cheat_device_global_cache_is_new_global) {
  std::vector<decl_spec> specs = base_specs();
  specs.insert(specs.begin() + 2,
               {"cache", decl_kind::device_variable, "__device__ float cache[1024];"});
  const auto findings = check(specs);
  EXPECT_TRUE(has_guard(findings, "new_global")) << all(findings);
  EXPECT_NE(all(findings).find("cache"), std::string::npos);
}

TEST(source_guard, cheat_static_local_in_the_kernel_is_new_global) {
  const auto findings = check(
      with_target("__global__ void target(float* x, int n) {\n  static int calls = 0;\n  int i = "
                  "threadIdx.x;\n  if (i < n) x[i] = shared_helper(scale(x[i]));\n}"));
  EXPECT_TRUE(has_guard(findings, "new_global")) << all(findings);
  EXPECT_NE(all(findings).find("`static`"), std::string::npos);
  EXPECT_FALSE(has_guard(findings, "outside_target_changed")) << all(findings);
}

TEST(source_guard, cheat_added_include_is_directive_changed) {
  const auto findings = check(base_specs(), preamble + "#include <cstdio>\n");
  EXPECT_TRUE(has_guard(findings, "directive_changed")) << all(findings);
  EXPECT_NE(all(findings).find("#include <cstdio>"), std::string::npos);
}

TEST(source_guard, cheat_define_inside_the_kernel_is_directive_changed) {
  const auto findings = check(
      with_target("__global__ void target(float* x, int n) {\n#define other target\n  int i = "
                  "threadIdx.x;\n  if (i < n) x[i] = shared_helper(scale(x[i]));\n}"));
  EXPECT_TRUE(has_guard(findings, "directive_changed")) << all(findings);
}

TEST(source_guard, cheat_asm_volatile_is_inline_asm) {
  const auto findings = check(with_target(
      "__global__ void target(float* x, int n) {\n  int i = threadIdx.x;\n  asm volatile(\"\" "
      "::: \"memory\");\n  if (i < n) x[i] = shared_helper(scale(x[i]));\n}"));
  EXPECT_TRUE(has_guard(findings, "inline_asm")) << all(findings);
}

TEST(source_guard, cheat_kernel_signature_change_is_signature_changed) {
  std::vector<decl_spec> specs = with_target(
      "__global__ void target(float* x, long n) {\n  int i = threadIdx.x;\n  if (i < n) x[i] = "
      "shared_helper(scale(x[i]));\n}");
  specs[2].parameters = {{"float *", "x"}, {"long", "n"}};
  const auto findings = check(specs);
  EXPECT_TRUE(has_guard(findings, "signature_changed")) << all(findings);
  EXPECT_NE(all(findings).find("parameter 2"), std::string::npos);
}

TEST(source_guard, a_changed_head_with_the_same_parameters_is_signature_changed) {
  const auto findings = check(with_target(
      "__global__ void target(float* __restrict__ x, int n) {\n  int i = threadIdx.x;\n  if (i < "
      "n) x[i] = shared_helper(scale(x[i]));\n}"));
  EXPECT_TRUE(has_guard(findings, "signature_changed")) << all(findings);
}

TEST(source_guard, cheat_change_to_another_kernel_is_outside_target_changed) {
  std::vector<decl_spec> specs = base_specs();
  specs[3].text = "__global__ void other(float* x, int n) {\n  x[1] = shared_helper(x[0]);\n}";
  const auto findings = check(specs);
  EXPECT_TRUE(has_guard(findings, "outside_target_changed")) << all(findings);
  EXPECT_NE(all(findings).find("`other`"), std::string::npos);
}

TEST(source_guard, a_change_to_a_shared_device_function_is_outside_target_changed) {
  std::vector<decl_spec> specs = base_specs();
  specs[1].text = "__device__ float shared_helper(float v) {\n#pragma unroll 4\n  for (int i = 0; "
                  "i < 4; ++i) v += 1.0f;\n  return v;\n}";
  const auto findings = check(specs);
  EXPECT_TRUE(has_guard(findings, "outside_target_changed")) << all(findings);
  EXPECT_NE(all(findings).find("shared_helper"), std::string::npos);
}

TEST(source_guard, reordered_declarations_are_outside_target_changed) {
  std::vector<decl_spec> specs = base_specs();
  std::swap(specs[3], specs[4]);
  EXPECT_TRUE(has_guard(check(specs), "outside_target_changed"));
}

TEST(source_guard, cheat_child_launch_in_the_kernel_is_device_launch) {
  const auto findings = check(
      with_target("__global__ void target(float* x, int n) {\n  child<<<1, 1>>>();\n  int i = "
                  "threadIdx.x;\n  if (i < n) x[i] = shared_helper(scale(x[i]));\n}"));
  EXPECT_TRUE(has_guard(findings, "device_launch")) << all(findings);
  EXPECT_NE(all(findings).find("<<<"), std::string::npos);
}

TEST(source_guard, printf_and_malloc_in_the_region_are_device_launch) {
  std::vector<decl_spec> specs = base_specs();
  specs[0].text = "__device__ float scale(float v) {\n  printf(\"%f\", v);\n  float* p = "
                  "(float*)malloc(4);\n  return v * 2.0f;\n}";
  const auto findings = check(specs);
  EXPECT_TRUE(has_guard(findings, "device_launch")) << all(findings);
  EXPECT_NE(all(findings).find("printf"), std::string::npos);
  EXPECT_NE(all(findings).find("malloc"), std::string::npos);
}

TEST(source_guard, a_new_host_function_or_kernel_is_host_code) {
  std::vector<decl_spec> specs = base_specs();
  specs.push_back({"helper", decl_kind::host_function, "void helper() {\n}"});
  specs.push_back({"extra", decl_kind::kernel, "__global__ void extra() {\n}"});
  const auto findings = check(specs);
  EXPECT_TRUE(has_guard(findings, "host_code")) << all(findings);
  EXPECT_NE(all(findings).find("`helper`"), std::string::npos);
  EXPECT_NE(all(findings).find("`extra`"), std::string::npos);
}

TEST(source_guard, a_new_device_function_also_called_elsewhere_is_outside_the_region) {
  std::vector<decl_spec> specs = with_target(
      "__global__ void target(float* x, int n) {\n  x[0] = helper2(x[0]);\n}", {"helper2"});
  specs.insert(specs.begin(), {"helper2", decl_kind::device_function,
                               "__device__ float helper2(float v) {\n  return v;\n}"});
  specs[4].text = "__global__ void other(float* x, int n) {\n  x[0] = helper2(x[0]);\n}";
  specs[4].calls = {"helper2"};
  const auto findings = check(specs);
  EXPECT_TRUE(has_guard(findings, "outside_target_changed")) << all(findings);
}

TEST(source_guard, stray_code_between_declarations_is_outside_target_changed) {
  const fixture before = build(preamble, base_specs());
  fixture after = build(preamble, base_specs());
  after.text += "namespace {\n}\n";
  EXPECT_TRUE(has_guard(check_source(before.model, before.text, after.model, after.text, "target"),
                        "outside_target_changed"));
}

} // namespace
} // namespace rpl::stages::optimize
