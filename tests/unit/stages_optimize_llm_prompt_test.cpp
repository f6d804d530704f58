// stages/optimize/llm_prompt: the chat messages of the LLM proposer, and the budget that cuts the
// oldest history first.

#include <string>

#include <gtest/gtest.h>

#include "stages/optimize/llm_prompt.hpp"

namespace rpl::stages::optimize {
namespace {

const char* const kernel_source = R"(#include <cuda_runtime.h>

__global__ void scale(float* out, const float* in, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i] * factor;
}

int main() { return 0; }
)";

messages::propose_request scale_request() {
  messages::propose_request request;
  request.kernel = "scale";
  request.source_name = "scale.cu";
  request.source = kernel_source;
  request.language = "cuda";
  request.compile_flags = {"-DN=1024", "-std=c++17"};
  request.block_threads = 256;
  request.analysis = "class: memory-bound\nlimiter: DRAM bandwidth (82 % of peak)\nshare: 64 %";
  return request;
}

messages::proposal_attempt attempt(const std::string& title,
                                   const std::string& stage,
                                   const std::string& verdict,
                                   const std::string& detail) {
  messages::proposal_attempt out;
  out.proposal_id = "llm:" + title;
  out.title = title;
  out.diff = "--- a/scale.cu\n+++ b/scale.cu\n@@ -5,2 +5,2 @@\n-  if (i < n)\n+  if (i < n) // " +
             title + "\n     out[i] = in[i] * factor;\n";
  out.stage = stage;
  out.verdict = verdict;
  out.detail = detail;
  return out;
}

const std::string& user_of(const chat_prompt& prompt) {
  return prompt.messages.at(1).content;
}

TEST(LlmPrompt, has_a_system_and_a_user_message) {
  const auto prompt = make_chat_prompt(scale_request());
  ASSERT_EQ(prompt.messages.size(), 2u);
  EXPECT_EQ(prompt.messages[0].role, "system");
  EXPECT_EQ(prompt.messages[1].role, "user");
}

TEST(LlmPrompt, system_message_states_the_rules_and_the_answer_format) {
  const auto system = make_chat_prompt(scale_request()).messages[0].content;
  EXPECT_NE(system.find("CUDA"), std::string::npos);
  EXPECT_NE(system.find("signature"), std::string::npos);
  EXPECT_NE(system.find("ABI"), std::string::npos);
  EXPECT_NE(system.find("results"), std::string::npos);
  EXPECT_NE(system.find("No new global variables, no new #include"), std::string::npos);
  EXPECT_NE(system.find("inline assembly"), std::string::npos);
  EXPECT_NE(system.find("host code"), std::string::npos);
  EXPECT_NE(system.find("ONE unified diff"), std::string::npos);
  EXPECT_NE(system.find("```diff"), std::string::npos);
  EXPECT_NE(system.find("--- a/scale.cu"), std::string::npos);
  EXPECT_NE(system.find("Title:"), std::string::npos);
  EXPECT_NE(system.find("rationale"), std::string::npos);
}

TEST(LlmPrompt, user_message_holds_the_exact_source_and_the_launch) {
  const auto prompt = make_chat_prompt(scale_request());
  const auto user = user_of(prompt);
  EXPECT_NE(user.find("```cuda\n" + std::string(kernel_source) + "```\n"), std::string::npos);
  EXPECT_NE(user.find("Kernel: `scale` in `scale.cu` (cuda)"), std::string::npos);
  EXPECT_NE(user.find("256 threads per block"), std::string::npos);
  EXPECT_NE(user.find("Compile flags: -DN=1024 -std=c++17"), std::string::npos);
  EXPECT_NE(user.find("9 lines"), std::string::npos);
  EXPECT_NE(user.find("`scale` starts near line 3"), std::string::npos);
  EXPECT_NE(user.find("limiter: DRAM bandwidth (82 % of peak)"), std::string::npos);
  EXPECT_NE(user.find("## Task\nPropose one change to `scale`"), std::string::npos);
  EXPECT_EQ(user.find("Earlier attempts"), std::string::npos);
}

TEST(LlmPrompt, hip_sources_are_fenced_as_cpp_and_named_hip) {
  auto request = scale_request();
  request.language = "hip";
  const auto prompt = make_chat_prompt(request);
  EXPECT_NE(prompt.messages[0].content.find("HIP kernel"), std::string::npos);
  EXPECT_NE(user_of(prompt).find("```cpp\n#include"), std::string::npos);
}

TEST(LlmPrompt, unknown_block_size_and_missing_analysis_are_said_plainly) {
  auto request = scale_request();
  request.block_threads = 0;
  request.analysis.clear();
  request.compile_flags.clear();
  const auto user = user_of(make_chat_prompt(request));
  EXPECT_EQ(user.find("threads per block"), std::string::npos);
  EXPECT_EQ(user.find("Compile flags"), std::string::npos);
  EXPECT_NE(user.find("## Analysis\n(none available)"), std::string::npos);
}

TEST(LlmPrompt, a_source_holding_backticks_gets_a_longer_fence) {
  auto request = scale_request();
  request.source = "// a comment quoting ```code``` in markdown\n" + request.source;
  const auto user = user_of(make_chat_prompt(request));
  EXPECT_NE(user.find("````cuda\n// a comment quoting ```code```"), std::string::npos);
}

TEST(LlmPrompt, history_lists_each_attempt_with_its_outcome_oldest_first) {
  auto request = scale_request();
  request.history = {attempt("unroll by 4", "measurement", "slower", "1.21x slower"),
                     attempt("vectorize with float4", "compile", "failed",
                             "scale.cu:5: error: no member named 'w'")};
  const auto prompt = make_chat_prompt(request);
  const auto user = user_of(prompt);
  const auto first = user.find("### Attempt 1: unroll by 4");
  const auto second = user.find("### Attempt 2: vectorize with float4");
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  EXPECT_LT(first, second);
  EXPECT_NE(user.find("Outcome: slower at stage measurement"), std::string::npos);
  EXPECT_NE(user.find("Outcome: failed at stage compile"), std::string::npos);
  EXPECT_NE(user.find("scale.cu:5: error: no member named 'w'"), std::string::npos);
  EXPECT_NE(user.find("```diff\n--- a/scale.cu"), std::string::npos);
  EXPECT_NE(user.find("different from the attempts above"), std::string::npos);
  EXPECT_EQ(prompt.attempts_shown, 2u);
  EXPECT_EQ(prompt.attempts_dropped, 0u);
}

TEST(LlmPrompt, repair_round_asks_to_fix_the_last_attempt_given_its_errors) {
  auto request = scale_request();
  request.history = {attempt("unroll by 4", "measurement", "slower", "1.21x slower"),
                     attempt("vectorize with float4", "compile", "failed",
                             "scale.cu:5:20: error: no member named 'w' in 'float'")};
  request.repair_round = 1;
  const auto prompt = make_chat_prompt(request);
  const auto user = user_of(prompt);
  EXPECT_NE(user.find("## Task: repair round 1 of 2"), std::string::npos);
  EXPECT_NE(user.find("\"vectorize with float4\", did not work"), std::string::npos);
  EXPECT_NE(user.find("Its errors:\n```text\nscale.cu:5:20: error: no member named 'w' in 'float'"),
            std::string::npos);
  EXPECT_NE(user.find("Its diff:\n```diff\n--- a/scale.cu"), std::string::npos);
  EXPECT_NE(user.find("Fix that attempt"), std::string::npos);
  EXPECT_NE(user.find("the failed diff is not applied"), std::string::npos);
  // The earlier attempts stay as history; the repaired one is in the task, not listed twice.
  EXPECT_NE(user.find("### Attempt 1: unroll by 4"), std::string::npos);
  EXPECT_EQ(user.find("### Attempt 2"), std::string::npos);
  EXPECT_EQ(prompt.attempts_shown, 2u);
  EXPECT_EQ(user.find("Propose one change"), std::string::npos);
}

TEST(LlmPrompt, repair_round_without_history_asks_for_a_new_change) {
  auto request = scale_request();
  request.repair_round = 2;
  const auto user = user_of(make_chat_prompt(request));
  EXPECT_EQ(user.find("repair round"), std::string::npos);
  EXPECT_NE(user.find("Propose one change to `scale`"), std::string::npos);
}

TEST(LlmPrompt, budget_drops_the_oldest_attempts_first) {
  auto request = scale_request();
  for (int i = 0; i < 40; ++i)
    request.history.push_back(
        attempt("try " + std::to_string(i), "measurement", "slower", std::string(300, 'x')));
  prompt_budget budget;
  budget.max_chars = 8000;
  const auto prompt = make_chat_prompt(request, budget);
  EXPECT_LE(prompt.chars(), budget.max_chars);
  EXPECT_FALSE(prompt.over_budget);
  EXPECT_GT(prompt.attempts_shown, 0u);
  EXPECT_GT(prompt.attempts_dropped, 0u);
  EXPECT_EQ(prompt.attempts_shown + prompt.attempts_dropped, 40u);
  const auto user = user_of(prompt);
  EXPECT_NE(user.find("### Attempt 40: try 39"), std::string::npos); // the newest stays
  EXPECT_EQ(user.find("### Attempt 1: try 0\n"), std::string::npos); // the oldest goes
  EXPECT_NE(
      user.find("the " + std::to_string(prompt.attempts_dropped) + " oldest left out for length"),
      std::string::npos);
  EXPECT_NE(user.find(kernel_source), std::string::npos); // the source is never cut
}

TEST(LlmPrompt, repair_round_keeps_the_failed_attempt_when_history_is_cut) {
  auto request = scale_request();
  for (int i = 0; i < 30; ++i)
    request.history.push_back(
        attempt("try " + std::to_string(i), "measurement", "slower", std::string(400, 'y')));
  request.history.push_back(
      attempt("shared-memory tile", "compile", "failed", "scale.cu:6:3: error: 'tile' undeclared"));
  request.repair_round = 2;
  prompt_budget budget;
  budget.max_chars = 6000;
  const auto prompt = make_chat_prompt(request, budget);
  EXPECT_LE(prompt.chars(), budget.max_chars);
  const auto user = user_of(prompt);
  EXPECT_NE(user.find("repair round 2 of 2"), std::string::npos);
  EXPECT_NE(user.find("scale.cu:6:3: error: 'tile' undeclared"), std::string::npos);
}

TEST(LlmPrompt, long_details_and_diffs_are_cut_to_their_budgets) {
  auto request = scale_request();
  request.history = {attempt("huge errors", "compile", "failed", std::string(10000, 'e'))};
  prompt_budget budget;
  budget.attempt_detail_chars = 500;
  const auto user = user_of(make_chat_prompt(request, budget));
  EXPECT_EQ(user.find(std::string(600, 'e')), std::string::npos);
  EXPECT_NE(user.find("10000 characters, cut]"), std::string::npos);
}

TEST(LlmPrompt, without_room_for_anything_but_the_source_it_says_over_budget) {
  auto request = scale_request();
  request.analysis = std::string(5000, 'a');
  request.history = {attempt("one", "measurement", "slower", "")};
  prompt_budget budget;
  budget.max_chars = 500;
  const auto prompt = make_chat_prompt(request, budget);
  EXPECT_TRUE(prompt.over_budget);
  EXPECT_TRUE(prompt.analysis_cut);
  EXPECT_EQ(prompt.attempts_shown, 0u);
  EXPECT_NE(user_of(prompt).find(kernel_source), std::string::npos);
  EXPECT_NE(user_of(prompt).find("1 earlier attempts were left out for length"), std::string::npos);
}

TEST(LlmPrompt, analysis_is_cut_when_it_alone_overflows) {
  auto request = scale_request();
  request.analysis = std::string(20000, 'a');
  prompt_budget budget;
  budget.max_chars = 6000;
  const auto prompt = make_chat_prompt(request, budget);
  EXPECT_TRUE(prompt.analysis_cut);
  EXPECT_FALSE(prompt.over_budget);
  EXPECT_LE(prompt.chars(), budget.max_chars);
}

TEST(LlmPrompt, clip_text_keeps_the_head_and_says_how_much_there_was) {
  EXPECT_EQ(clip_text("short", 100), "short");
  const auto clipped = clip_text(std::string(1000, 'z'), 100);
  EXPECT_LE(clipped.size(), 100u);
  EXPECT_EQ(clipped.substr(0, 10), std::string(10, 'z'));
  EXPECT_NE(clipped.find("1000 characters, cut]"), std::string::npos);
}

} // namespace
} // namespace rpl::stages::optimize
