// stages/optimize/llm_answer: the shapes LLMs answer in (fenced, unfenced, prose around, two
// fences, a whole kernel, CRLF, wrong line numbers) read into one proposal whose diff applies, or
// an error naming the hunk.

#include <string>

#include <gtest/gtest.h>

#include "stages/optimize/llm_answer.hpp"
#include "stages/optimize/unified_diff.hpp"

namespace rpl::stages::optimize {
namespace {

const std::string saxpy_source = R"(#include <hip/hip_runtime.h>

// y = a * x + y
__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
}

__global__ void other(float* p) { p[0] = 1.0f; }

int main() {
  saxpy<<<1, 256>>>(2.0f, nullptr, nullptr, 0);
  return 0;
}
)";

/// The source after the grid-stride change every well-formed answer below makes.
std::string grid_stride_source() {
  auto text = saxpy_source;
  const std::string from = "  if (i < n) {\n";
  text.replace(text.find(from), from.size(), "  for (; i < n; i += blockDim.x * gridDim.x) {\n");
  return text;
}

const std::string grid_stride_diff = R"(--- a/saxpy.hip
+++ b/saxpy.hip
@@ -4,6 +4,6 @@
 __global__ void saxpy(float a, const float* x, float* y, int n) {
   int i = blockIdx.x * blockDim.x + threadIdx.x;
-  if (i < n) {
+  for (; i < n; i += blockDim.x * gridDim.x) {
     y[i] = a * x[i] + y[i];
   }
 }
)";

messages::propose_request saxpy_request() {
  messages::propose_request request;
  request.kernel = "saxpy";
  request.source_name = "saxpy.hip";
  request.source = saxpy_source;
  request.language = "hip";
  return request;
}

/// Applies the proposal's diff to the request's source.
std::string applied(const parsed_answer& answer, const std::string& source = saxpy_source) {
  const auto result = apply_unified_diff(source, answer.proposal.diff);
  EXPECT_TRUE(result.ok) << result.error;
  return result.text;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

TEST(LlmAnswer, reads_title_diff_fence_and_rationale) {
  const auto answer =
      parse_llm_answer("Title: Grid-stride loop in saxpy\n\n```diff\n" + grid_stride_diff +
                           "```\n\nA grid-stride loop lets fewer blocks cover "
                           "the array.\nIt also amortises the index math.\n",
                       saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(answer.shape, "diff fence");
  EXPECT_EQ(answer.proposal.title, "Grid-stride loop in saxpy");
  EXPECT_EQ(answer.proposal.rationale, "A grid-stride loop lets fewer blocks cover the array.\n"
                                       "It also amortises the index math.");
  EXPECT_EQ(answer.proposal.id.substr(0, 4), "llm:");
  EXPECT_EQ(answer.proposal.id.size(), 16u);
  EXPECT_EQ(answer.proposal.diff.substr(0, 32), "--- a/saxpy.hip\n+++ b/saxpy.hip\n");
  EXPECT_EQ(applied(answer), grid_stride_source());
}

TEST(LlmAnswer, markdown_title_and_prose_before_the_fence) {
  const auto answer =
      parse_llm_answer("Sure! Here is an improvement.\n\n**Title:** Grid-stride loop\n\n```diff\n" +
                           grid_stride_diff + "```\nThis should help with large n.",
                       saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(answer.proposal.title, "Grid-stride loop");
  EXPECT_EQ(answer.proposal.rationale,
            "Sure! Here is an improvement.\n\nThis should help with large n.");
}

TEST(LlmAnswer, without_a_title_line_the_first_prose_line_is_the_title) {
  const auto answer = parse_llm_answer(
      "## Use a grid-stride loop\n```diff\n" + grid_stride_diff + "```\n", saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(answer.proposal.title, "Use a grid-stride loop");
}

TEST(LlmAnswer, only_a_diff_gets_a_default_title_and_no_rationale) {
  const auto answer = parse_llm_answer("```diff\n" + grid_stride_diff + "```", saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(answer.proposal.title, "LLM change to saxpy");
  EXPECT_EQ(answer.proposal.rationale, "");
}

TEST(LlmAnswer, patch_fence_is_a_diff_fence) {
  const auto answer = parse_llm_answer("```patch\n" + grid_stride_diff + "```\n", saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(answer.shape, "diff fence");
  EXPECT_EQ(applied(answer), grid_stride_source());
}

TEST(LlmAnswer, tilde_fence_and_unlabelled_fence_holding_a_hunk) {
  const auto tilde = parse_llm_answer("~~~diff\n" + grid_stride_diff + "~~~\n", saxpy_request());
  ASSERT_TRUE(tilde.ok) << tilde.error;
  const auto plain = parse_llm_answer("```\n" + grid_stride_diff + "```\n", saxpy_request());
  ASSERT_TRUE(plain.ok) << plain.error;
  EXPECT_EQ(plain.shape, "fenced diff");
  EXPECT_EQ(plain.proposal.diff, tilde.proposal.diff);
}

TEST(LlmAnswer, unfenced_diff_with_prose_before_and_after) {
  const auto answer =
      parse_llm_answer("Title: grid stride\nHere is the patch:\n\n" + grid_stride_diff +
                           "\nThat is all; it keeps the results identical.\n",
                       saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(answer.shape, "unfenced diff");
  EXPECT_EQ(applied(answer), grid_stride_source());
  EXPECT_EQ(answer.proposal.rationale,
            "Here is the patch:\n\nThat is all; it keeps the results identical.");
}

TEST(LlmAnswer, two_diff_fences_take_the_first_and_leave_the_second_out_of_the_rationale) {
  const auto second = replace_all(grid_stride_diff, "gridDim.x", "gridDim.x * 2");
  const auto answer = parse_llm_answer("Title: first\n```diff\n" + grid_stride_diff +
                                           "```\nAlternatively:\n```diff\n" + second + "```\n",
                                       saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(applied(answer), grid_stride_source());
  EXPECT_EQ(answer.proposal.rationale, "Alternatively:");
}

TEST(LlmAnswer, diff_fence_wins_over_an_earlier_code_fence) {
  const auto answer = parse_llm_answer("The loop now reads:\n```cuda\nfor (; i < n; ...) {}\n```\n"
                                       "```diff\n" +
                                           grid_stride_diff + "```\n",
                                       saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(answer.shape, "diff fence");
  EXPECT_EQ(answer.proposal.rationale, "The loop now reads:");
}

TEST(LlmAnswer, no_diff_at_all_is_an_error_saying_what_to_send) {
  const auto answer = parse_llm_answer(
      "I would suggest using a grid-stride loop and vectorised loads.", saxpy_request());
  EXPECT_FALSE(answer.ok);
  EXPECT_TRUE(answer.shape.empty());
  EXPECT_NE(answer.error.find("no unified diff"), std::string::npos) << answer.error;
  EXPECT_NE(answer.error.find("fix: send one unified diff of saxpy.hip in a ```diff fence"),
            std::string::npos)
      << answer.error;
}

TEST(LlmAnswer, empty_answer_is_an_error) {
  EXPECT_FALSE(parse_llm_answer("", saxpy_request()).ok);
}

TEST(LlmAnswer, crlf_answer_reads_like_lf) {
  const auto lf =
      parse_llm_answer("Title: x\n```diff\n" + grid_stride_diff + "```\n", saxpy_request());
  const auto crlf = parse_llm_answer(
      replace_all("Title: x\n```diff\n" + grid_stride_diff + "```\n", "\n", "\r\n"),
      saxpy_request());
  ASSERT_TRUE(crlf.ok) << crlf.error;
  EXPECT_EQ(crlf.proposal.diff, lf.proposal.diff);
  EXPECT_EQ(crlf.proposal.title, "x");
}

TEST(LlmAnswer, crlf_source_keeps_its_line_ends) {
  auto request = saxpy_request();
  request.source = replace_all(saxpy_source, "\n", "\r\n");
  const auto answer = parse_llm_answer("```diff\n" + grid_stride_diff + "```\n", request);
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(applied(answer, request.source), replace_all(grid_stride_source(), "\n", "\r\n"));
}

TEST(LlmAnswer, wrong_line_numbers_and_counts_are_corrected) {
  auto diff = replace_all(grid_stride_diff, "@@ -4,6 +4,6 @@", "@@ -40,9 +41,2 @@");
  const auto answer = parse_llm_answer("```diff\n" + diff + "```\n", saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(answer.proposal.diff,
            make_unified_diff(saxpy_source, grid_stride_source(), "saxpy.hip"));
  EXPECT_EQ(applied(answer), grid_stride_source());
}

TEST(LlmAnswer, hunk_header_without_numbers_is_placed_by_its_lines) {
  auto diff = replace_all(grid_stride_diff, "@@ -4,6 +4,6 @@", "@@ ... @@");
  const auto answer = parse_llm_answer("```diff\n" + diff + "```\n", saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(applied(answer), grid_stride_source());
}

TEST(LlmAnswer, context_differing_only_in_whitespace_takes_the_source_text) {
  // Tabs for spaces and trailing blanks: models reformat what they copy.
  auto diff = replace_all(grid_stride_diff, "   int i =", " \tint i =");
  diff = replace_all(diff, "     y[i] = a * x[i] + y[i];", "     y[i] = a * x[i] + y[i];   ");
  const auto answer = parse_llm_answer("```diff\n" + diff + "```\n", saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(applied(answer), grid_stride_source());
}

TEST(LlmAnswer, blank_line_inside_a_hunk_is_an_empty_context_line) {
  const std::string diff = "--- a/saxpy.hip\n+++ b/saxpy.hip\n@@ -9,3 +9,3 @@\n }\n\n"
                           "-__global__ void other(float* p) { p[0] = 1.0f; }\n"
                           "+__global__ void other(float* p) { p[0] = 2.0f; }\n";
  const auto answer = parse_llm_answer("```diff\n" + diff + "```\n", saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_NE(applied(answer).find("p[0] = 2.0f"), std::string::npos);
}

TEST(LlmAnswer, git_headers_are_accepted) {
  const auto answer = parse_llm_answer(
      "```diff\ndiff --git a/saxpy.hip b/saxpy.hip\nindex 3f2a1b0..9c8d7e6 100644\n" +
          grid_stride_diff + "```\n",
      saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(applied(answer), grid_stride_source());
}

TEST(LlmAnswer, unterminated_fence_of_a_cut_answer_still_reads_its_hunks) {
  const auto answer = parse_llm_answer("Title: t\n```diff\n" + grid_stride_diff, saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(applied(answer), grid_stride_source());
}

TEST(LlmAnswer, fence_indented_in_a_list_is_read_without_its_indent) {
  std::string indented;
  for (const auto& line : {std::string("1. Apply this:"), std::string("   ```diff")})
    indented += line + "\n";
  std::size_t begin = 0;
  while (begin < grid_stride_diff.size()) {
    const auto end = grid_stride_diff.find('\n', begin);
    indented += "   " + grid_stride_diff.substr(begin, end - begin) + "\n";
    begin = end + 1;
  }
  indented += "   ```\n";
  const auto answer = parse_llm_answer(indented, saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(applied(answer), grid_stride_source());
}

TEST(LlmAnswer, context_that_is_not_in_the_source_names_the_hunk_and_the_line) {
  auto diff = replace_all(grid_stride_diff, "   int i = blockIdx.x", "   int idx = blockIdx.x");
  const auto answer = parse_llm_answer("```diff\n" + diff + "```\n", saxpy_request());
  ASSERT_FALSE(answer.ok);
  EXPECT_NE(answer.error.find("does not apply to saxpy.hip"), std::string::npos) << answer.error;
  EXPECT_NE(answer.error.find("hunk 1 (@@ -4,6 +4,6 @@)"), std::string::npos) << answer.error;
  EXPECT_NE(answer.error.find("differs at line 5"), std::string::npos) << answer.error;
  EXPECT_NE(answer.error.find("int idx = blockIdx.x"), std::string::npos) << answer.error;
  EXPECT_NE(answer.error.find("fix:"), std::string::npos) << answer.error;
}

TEST(LlmAnswer, second_hunk_failing_is_named_as_hunk_two) {
  const std::string diff = grid_stride_diff +
                           "@@ -11,1 +11,1 @@\n-__global__ void other(float* q) { q[0] = 1.0f; }\n"
                           "+__global__ void other(float* q) { q[0] = 2.0f; }\n";
  const auto answer = parse_llm_answer("```diff\n" + diff + "```\n", saxpy_request());
  ASSERT_FALSE(answer.ok);
  EXPECT_NE(answer.error.find("hunk 2 (@@ -11,1 +11,1 @@)"), std::string::npos) << answer.error;
}

TEST(LlmAnswer, elided_lines_between_hunks_are_an_error) {
  const std::string diff = "--- a/saxpy.hip\n+++ b/saxpy.hip\n@@ -4,3 +4,3 @@\n"
                           " __global__ void saxpy(float a, const float* x, float* y, int n) {\n"
                           "   int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                           "...\n@@ -11,1 +11,1 @@\n"
                           "-__global__ void other(float* p) { p[0] = 1.0f; }\n"
                           "+__global__ void other(float* p) { p[0] = 2.0f; }\n";
  const auto answer = parse_llm_answer("```diff\n" + diff + "```\n", saxpy_request());
  ASSERT_FALSE(answer.ok);
  EXPECT_NE(answer.error.find("hunk 1 (@@ -4,3 +4,3 @@) holds the line `...`"), std::string::npos)
      << answer.error;
}

TEST(LlmAnswer, a_diff_of_two_files_is_refused) {
  const auto answer = parse_llm_answer("```diff\n" + grid_stride_diff +
                                           "--- a/helpers.h\n+++ b/helpers.h\n@@ -1,1 +1,2 @@\n "
                                           "#pragma once\n+#define FAST 1\n```\n",
                                       saxpy_request());
  ASSERT_FALSE(answer.ok);
  EXPECT_NE(answer.error.find("two files (saxpy.hip and helpers.h)"), std::string::npos)
      << answer.error;
}

TEST(LlmAnswer, a_diff_that_changes_nothing_is_refused) {
  const std::string diff = "--- a/saxpy.hip\n+++ b/saxpy.hip\n@@ -4,2 +4,2 @@\n"
                           " __global__ void saxpy(float a, const float* x, float* y, int n) {\n"
                           "   int i = blockIdx.x * blockDim.x + threadIdx.x;\n";
  const auto answer = parse_llm_answer("```diff\n" + diff + "```\n", saxpy_request());
  ASSERT_FALSE(answer.ok);
  EXPECT_NE(answer.error.find("leaves saxpy.hip as it was"), std::string::npos) << answer.error;
}

TEST(LlmAnswer, a_diff_fence_without_hunks_is_an_error) {
  const auto answer = parse_llm_answer("```diff\n- if (i < n)\n+ for (;;)\n```\n", saxpy_request());
  ASSERT_FALSE(answer.ok);
  EXPECT_NE(answer.error.find("no @@ hunk"), std::string::npos) << answer.error;
}

TEST(LlmAnswer, whole_kernel_in_a_cuda_fence_replaces_the_kernel) {
  const auto answer =
      parse_llm_answer("Title: grid-stride saxpy\nReplace the kernel with:\n```cuda\n"
                       "// y = a * x + y\n"
                       "__global__ void saxpy(float a, const float* x, float* y, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  for (; i < n; i += blockDim.x * gridDim.x) {\n"
                       "    y[i] = a * x[i] + y[i];\n"
                       "  }\n"
                       "}\n```\nThe launch stays the same.",
                       saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(answer.shape, "kernel replacement");
  EXPECT_EQ(applied(answer), grid_stride_source());
  EXPECT_EQ(answer.proposal.rationale, "Replace the kernel with:\n\nThe launch stays the same.");
}

TEST(LlmAnswer, whole_file_in_a_cpp_fence_changes_only_the_kernel) {
  auto whole = grid_stride_source();
  whole = replace_all(whole, "return 0;", "return 1; // the model also touched main");
  const auto answer = parse_llm_answer("```cpp\n" + whole + "```\n", saxpy_request());
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(answer.shape, "kernel replacement");
  EXPECT_EQ(applied(answer), grid_stride_source());
}

TEST(LlmAnswer, code_fence_without_the_kernel_is_no_diff) {
  const auto answer = parse_llm_answer(
      "```cuda\n__global__ void other(float* p) { p[0] = 3.0f; }\n```\n", saxpy_request());
  ASSERT_FALSE(answer.ok);
  EXPECT_NE(answer.error.find("no definition of `saxpy`"), std::string::npos) << answer.error;
}

TEST(LlmAnswer, templated_kernel_with_launch_bounds_is_found_by_name) {
  auto request = saxpy_request();
  request.kernel = "reduce";
  request.source = "template <int BLOCK>\n__global__ void __launch_bounds__(BLOCK)\n"
                   "reduce(const float* in, float* out) {\n  if (threadIdx.x == 0) { /* } */\n"
                   "    out[0] = in[0]; // }\n  }\n}\n\nvoid host() { reduce<256><<<1, 256>>>(0, "
                   "0); }\n";
  const auto answer = parse_llm_answer(
      "```cuda\ntemplate <int BLOCK>\n__global__ void __launch_bounds__(BLOCK)\n"
      "reduce(const float* in, float* out) {\n  if (threadIdx.x == 0)\n    out[0] = in[0] * 1;\n}\n"
      "```\n",
      request);
  ASSERT_TRUE(answer.ok) << answer.error;
  const auto text = applied(answer, request.source);
  EXPECT_NE(text.find("out[0] = in[0] * 1;\n}\n\nvoid host()"), std::string::npos) << text;
  EXPECT_EQ(text.find("/* } */"), std::string::npos) << text;
}

TEST(LlmAnswer, source_without_final_newline_can_change_its_last_line) {
  auto request = saxpy_request();
  request.source = "__global__ void saxpy(float* y) { y[0] = 1.0f; }";
  const std::string diff = "--- a/saxpy.hip\n+++ b/saxpy.hip\n@@ -1 +1 @@\n"
                           "-__global__ void saxpy(float* y) { y[0] = 1.0f; }\n"
                           "\\ No newline at end of file\n"
                           "+__global__ void saxpy(float* y) { y[0] = 2.0f; }\n"
                           "\\ No newline at end of file\n";
  const auto answer = parse_llm_answer("```diff\n" + diff + "```\n", request);
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_EQ(applied(answer, request.source), "__global__ void saxpy(float* y) { y[0] = 2.0f; }");
}

TEST(LlmAnswer, same_change_in_two_shapes_has_the_same_id) {
  const auto fenced = parse_llm_answer("```diff\n" + grid_stride_diff + "```", saxpy_request());
  const auto renumbered = parse_llm_answer(
      replace_all(grid_stride_diff, "@@ -4,6 +4,6 @@", "@@ -3,6 +3,6 @@"), saxpy_request());
  ASSERT_TRUE(fenced.ok && renumbered.ok);
  EXPECT_EQ(fenced.proposal.id, renumbered.proposal.id);
  EXPECT_EQ(fenced.proposal.diff, renumbered.proposal.diff);
}

TEST(LlmAnswer, title_and_rationale_are_bounded) {
  answer_limits limits;
  limits.title_chars = 40;
  limits.rationale_chars = 100;
  std::string prose;
  for (int i = 0; i < 50; ++i)
    prose += "This sentence explains the change at length. ";
  const auto answer = parse_llm_answer("Title: " + std::string(200, 'T') + "\n```diff\n" +
                                           grid_stride_diff + "```\n" + prose,
                                       saxpy_request(), limits);
  ASSERT_TRUE(answer.ok) << answer.error;
  EXPECT_LE(answer.proposal.title.size(), 40u);
  EXPECT_LE(answer.proposal.rationale.size(), 100u);
  EXPECT_EQ(answer.proposal.rationale.substr(answer.proposal.rationale.size() - 3), "...");
}

} // namespace
} // namespace rpl::stages::optimize
