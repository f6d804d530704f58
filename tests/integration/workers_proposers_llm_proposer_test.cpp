// workers::llm_proposer against tests/tools/scripted_llm_server.py, a test double of an
// OpenAI-compatible endpoint run as a real process on loopback: answers, retries, deadlines,
// refused connections, the API key's secrecy and what the prompt carries.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>

#include "stages/optimize/unified_diff.hpp"
#include "support/test_support.hpp"
#include "workers/process/child_process.hpp"
#include "workers/proposers/llm/llm_proposer.hpp"
#include "workers/protocol/worker_log.hpp"

namespace rpl::workers {
namespace {

using namespace std::chrono_literals;
using messages::propose_status;

const std::string kernel_source = R"(#include <cuda_runtime.h>

__global__ void scale(float* out, const float* in, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i] * factor;
}
)";

const std::string good_answer = R"(Title: Grid-stride loop in scale

```diff
--- a/scale.cu
+++ b/scale.cu
@@ -3,5 +3,5 @@
 __global__ void scale(float* out, const float* in, float factor, int n) {
   int i = blockIdx.x * blockDim.x + threadIdx.x;
-  if (i < n)
+  for (; i < n; i += blockDim.x * gridDim.x)
     out[i] = in[i] * factor;
 }
```

Fewer blocks cover the array, so the launch overhead per element drops.
)";

/// A second, different change (for several proposals per request).
const std::string other_answer = R"(Title: restrict pointers
```diff
--- a/scale.cu
+++ b/scale.cu
@@ -3,3 +3,3 @@
-__global__ void scale(float* out, const float* in, float factor, int n) {
+__global__ void scale(float* __restrict__ out, const float* __restrict__ in, float factor, int n) {
   int i = blockIdx.x * blockDim.x + threadIdx.x;
   if (i < n)
```
)";

const char* const test_key = "sk-test-7f3a9c21e4b86d05";

std::string status_name(propose_status status) {
  switch (status) {
  case propose_status::ok: return "ok";
  case propose_status::failed: return "failed";
  case propose_status::unavailable: return "unavailable";
  case propose_status::timed_out: return "timed_out";
  }
  return "?";
}

/// The test double, started on a free loopback port from a script of steps.
class scripted_server {
public:
  scripted_server(const testing::temp_dir& dir,
                  const nlohmann::json& steps,
                  bool require_key = false)
      : port_file_(dir / "port"), log_file_(dir / "requests.jsonl") {
    testing::write_file(dir / "script.json", steps.dump());
    child_options options;
    options.argv = {"python3",
                    (testing::source_dir / "tests" / "tools" / "scripted_llm_server.py").string(),
                    "--script",
                    (dir / "script.json").string(),
                    "--port-file",
                    port_file_.string(),
                    "--log",
                    log_file_.string()};
    if (require_key) {
      options.argv.push_back("--require-key");
      options.environment.emplace_back("RPL_LLM_API_KEY", test_key);
    }
    options.capture_output = false;
    options.reap_descendants = false;
    process_ = std::make_unique<child_process>(child_process::spawn(options));
    started_ = testing::wait_until([&] { return std::filesystem::exists(port_file_); }, 10s);
    if (started_)
      port_ = std::stoi(testing::read_text(port_file_));
  }

  bool started() const { return started_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::string log_text() const { return testing::read_text(log_file_); }

  /// Each request as the server logged it.
  std::vector<nlohmann::json> requests() const {
    std::vector<nlohmann::json> out;
    std::istringstream lines(log_text());
    for (std::string line; std::getline(lines, line);)
      if (!line.empty())
        out.push_back(nlohmann::json::parse(line));
    return out;
  }

private:
  std::filesystem::path port_file_;
  std::filesystem::path log_file_;
  std::unique_ptr<child_process> process_;
  bool started_ = false;
  int port_ = 0;
};

messages::propose_request scale_request(std::uint32_t timeout_ms = 20000) {
  messages::propose_request request;
  request.kernel = "scale";
  request.source_name = "scale.cu";
  request.source = kernel_source;
  request.language = "cuda";
  request.block_threads = 256;
  request.analysis = "class: memory-bound; limiter: DRAM bandwidth";
  request.timeout_ms = timeout_ms;
  return request;
}

llm_proposer_options options_for(const std::string& endpoint) {
  llm_proposer_options options;
  options.endpoint = endpoint;
  options.model = "scripted-model";
  options.timeout = 30s;
  options.connect_timeout = 2s;
  options.retries = 2;
  return options;
}

/// Captures what the worker log writes while it lives.
class log_capture {
public:
  log_capture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_)) {
    logger_ = worker_log();
    previous_level_ = logger_->level();
    logger_->set_level(spdlog::level::trace);
    logger_->sinks().push_back(sink_);
  }
  ~log_capture() {
    auto& sinks = logger_->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    logger_->set_level(previous_level_);
  }
  std::string text() {
    logger_->flush();
    return stream_.str();
  }

private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> logger_;
  spdlog::level::level_enum previous_level_ = spdlog::level::info;
};

/// Every text of the reply, for asserting what never appears in it.
std::string reply_text(const messages::propose_reply& reply) {
  std::string text = reply.proposer + "\n" + reply.worker_id + "\n" + reply.error + "\n";
  for (const auto& proposal : reply.proposals)
    text += proposal.id + "\n" + proposal.title + "\n" + proposal.rationale + "\n" + proposal.diff +
            "\n";
  return text;
}

/// Sets RPL_LLM_API_KEY for one test (or removes it) and restores it after.
class api_key_environment {
public:
  explicit api_key_environment(const char* value) {
    if (const char* old = std::getenv("RPL_LLM_API_KEY"); old != nullptr)
      previous_ = old;
    if (value != nullptr)
      ::setenv("RPL_LLM_API_KEY", value, 1);
    else
      ::unsetenv("RPL_LLM_API_KEY");
  }
  ~api_key_environment() {
    if (previous_)
      ::setenv("RPL_LLM_API_KEY", previous_->c_str(), 1);
    else
      ::unsetenv("RPL_LLM_API_KEY");
  }

private:
  std::optional<std::string> previous_;
};

class LlmProposer : public ::testing::Test {
protected:
  void SetUp() override {
    // A proxy from the environment must not carry loopback requests elsewhere.
    ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
    ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  }
  testing::temp_dir dir_;
  std::atomic<bool> cancel_{false};
};

TEST_F(LlmProposer, good_answer_gives_one_proposal_whose_diff_applies) {
  api_key_environment key(nullptr);
  scripted_server server(dir_, nlohmann::json::array({{{"content", good_answer}}}));
  ASSERT_TRUE(server.started());
  llm_proposer proposer(options_for(server.endpoint()));
  EXPECT_EQ(proposer.name(), "llm:scripted-model");

  const auto reply = proposer.propose(scale_request(), cancel_);
  ASSERT_EQ(reply.status, propose_status::ok) << status_name(reply.status) << ": " << reply.error;
  EXPECT_EQ(reply.error, "");
  EXPECT_EQ(reply.proposer, "llm:scripted-model");
  ASSERT_EQ(reply.proposals.size(), 1u);
  const auto& proposal = reply.proposals[0];
  EXPECT_EQ(proposal.title, "Grid-stride loop in scale");
  EXPECT_NE(proposal.rationale.find("launch overhead"), std::string::npos);
  const auto patched = stages::optimize::apply_unified_diff(kernel_source, proposal.diff);
  ASSERT_TRUE(patched.ok) << patched.error;
  EXPECT_NE(patched.text.find("for (; i < n; i += blockDim.x * gridDim.x)"), std::string::npos);

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const auto& body = requests[0]["body"];
  EXPECT_EQ(requests[0]["path"], "/v1/chat/completions");
  EXPECT_EQ(body["model"], "scripted-model");
  EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.2);
  EXPECT_EQ(body["max_tokens"], 4096);
  EXPECT_FALSE(body.contains("n"));
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["role"], "user");
  EXPECT_NE(body["messages"][1]["content"].get<std::string>().find(kernel_source),
            std::string::npos);
  EXPECT_FALSE(requests[0]["has_authorization"].get<bool>()); // no key set: no header
}

TEST_F(LlmProposer, endpoint_ending_in_chat_completions_is_used_as_is) {
  scripted_server server(dir_, nlohmann::json::array({{{"content", good_answer}}}));
  ASSERT_TRUE(server.started());
  llm_proposer proposer(options_for(server.endpoint() + "/chat/completions/"));
  const auto reply = proposer.propose(scale_request(), cancel_);
  ASSERT_EQ(reply.status, propose_status::ok) << reply.error;
  EXPECT_EQ(server.requests().at(0)["path"], "/v1/chat/completions");
}

TEST_F(LlmProposer, server_error_then_good_answer_is_retried) {
  scripted_server server(dir_,
                         nlohmann::json::array({{{"status", 500}, {"message", "model loading"}},
                                                {{"close", true}},
                                                {{"content", good_answer}}}));
  ASSERT_TRUE(server.started());
  llm_proposer proposer(options_for(server.endpoint()));
  const auto reply = proposer.propose(scale_request(), cancel_);
  ASSERT_EQ(reply.status, propose_status::ok) << reply.error;
  EXPECT_EQ(reply.proposals.size(), 1u);
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_F(LlmProposer, retries_end_with_the_last_status_and_the_endpoints_message) {
  scripted_server server(dir_,
                         nlohmann::json::array({{{"status", 503}, {"message", "overloaded"}},
                                                {{"status", 503}, {"message", "overloaded"}},
                                                {{"status", 503}, {"message", "overloaded"}}}));
  ASSERT_TRUE(server.started());
  auto options = options_for(server.endpoint());
  options.retries = 2;
  llm_proposer proposer(options);
  const auto reply = proposer.propose(scale_request(), cancel_);
  EXPECT_EQ(reply.status, propose_status::failed);
  EXPECT_NE(reply.error.find("HTTP 503: overloaded after 3 attempts"), std::string::npos)
      << reply.error;
  EXPECT_NE(reply.error.find(server.endpoint() + "/chat/completions"), std::string::npos);
  EXPECT_NE(reply.error.find("fix:"), std::string::npos);
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_F(LlmProposer, too_many_requests_waits_the_retry_after) {
  scripted_server server(dir_, nlohmann::json::array({{{"status", 429}, {"retry_after", 1}},
                                                      {{"content", good_answer}}}));
  ASSERT_TRUE(server.started());
  const auto begin = std::chrono::steady_clock::now();
  llm_proposer proposer(options_for(server.endpoint()));
  const auto reply = proposer.propose(scale_request(), cancel_);
  ASSERT_EQ(reply.status, propose_status::ok) << reply.error;
  EXPECT_GE(std::chrono::steady_clock::now() - begin, 950ms);
}

TEST_F(LlmProposer, client_error_is_not_retried) {
  scripted_server server(
      dir_, nlohmann::json::array({{{"status", 404}, {"message", "model 'x' not found"}},
                                   {{"content", good_answer}}}));
  ASSERT_TRUE(server.started());
  llm_proposer proposer(options_for(server.endpoint()));
  const auto reply = proposer.propose(scale_request(), cancel_);
  EXPECT_EQ(reply.status, propose_status::failed);
  EXPECT_NE(reply.error.find("HTTP 404: model 'x' not found"), std::string::npos) << reply.error;
  EXPECT_NE(reply.error.find("fix: check --llm-endpoint"), std::string::npos) << reply.error;
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST_F(LlmProposer, hanging_endpoint_times_out_within_the_requests_timeout) {
  scripted_server server(dir_, nlohmann::json::array({{{"hang_s", 30}}}));
  ASSERT_TRUE(server.started());
  llm_proposer proposer(options_for(server.endpoint()));
  const auto begin = std::chrono::steady_clock::now();
  const auto reply = proposer.propose(scale_request(2000), cancel_);
  const auto took = std::chrono::steady_clock::now() - begin;
  EXPECT_EQ(reply.status, propose_status::timed_out)
      << status_name(reply.status) << ": " << reply.error;
  EXPECT_LE(took, 2000ms);
  EXPECT_GE(took, 1500ms);
  EXPECT_NE(reply.error.find("no answer before the deadline"), std::string::npos) << reply.error;
}

TEST_F(LlmProposer, cancel_flag_ends_a_hanging_call) {
  scripted_server server(dir_, nlohmann::json::array({{{"hang_s", 30}}}));
  ASSERT_TRUE(server.started());
  llm_proposer proposer(options_for(server.endpoint()));
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    cancel_ = true;
  });
  const auto begin = std::chrono::steady_clock::now();
  const auto reply = proposer.propose(scale_request(20000), cancel_);
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 1s); // seen within 50 ms of the flag
  EXPECT_EQ(reply.status, propose_status::failed);
  EXPECT_NE(reply.error.find("cancelled"), std::string::npos) << reply.error;
}

TEST_F(LlmProposer, connection_refused_fails_naming_the_endpoint) {
  const auto endpoint = "http://127.0.0.1:" + std::to_string(testing::free_port()) + "/v1";
  auto options = options_for(endpoint);
  options.retries = 1;
  llm_proposer proposer(options);
  const auto reply = proposer.propose(scale_request(), cancel_);
  EXPECT_EQ(reply.status, propose_status::failed);
  EXPECT_NE(reply.error.find("llm endpoint " + endpoint +
                             "/chat/completions: could not get an "
                             "answer"),
            std::string::npos)
      << reply.error;
  EXPECT_NE(reply.error.find("after 2 attempts"), std::string::npos) << reply.error;
  EXPECT_NE(reply.error.find("fix: start the server at that address or correct --llm-endpoint"),
            std::string::npos)
      << reply.error;
}

TEST_F(LlmProposer, missing_endpoint_or_model_is_unavailable) {
  llm_proposer_options options;
  options.model = "m";
  const auto reply = llm_proposer(options).propose(scale_request(), cancel_);
  EXPECT_EQ(reply.status, propose_status::unavailable);
  EXPECT_NE(reply.error.find("--llm-endpoint and --llm-model are needed; fix:"), std::string::npos);
  options.endpoint = "http://127.0.0.1:1/v1";
  options.model.clear();
  EXPECT_EQ(llm_proposer(options).propose(scale_request(), cancel_).status,
            propose_status::unavailable);
}

TEST_F(LlmProposer, api_key_is_sent_but_never_appears_in_replies_or_logs) {
  api_key_environment key(test_key);
  log_capture log;
  // The second step echoes the Authorization header in an error, as a careless server might.
  scripted_server server(
      dir_,
      nlohmann::json::array(
          {{{"content", good_answer}, {"echo_authorization", true}},
           {{"status", 400}, {"message", "bad request"}, {"echo_authorization", true}}}),
      /*require_key=*/true);
  ASSERT_TRUE(server.started());
  auto options = options_for(server.endpoint());
  llm_proposer proposer(options);

  const auto good = proposer.propose(scale_request(), cancel_);
  ASSERT_EQ(good.status, propose_status::ok) << good.error;
  ASSERT_EQ(good.proposals.size(), 1u);
  EXPECT_NE(good.proposals[0].rationale.find("[Authorization: Bearer [redacted]]"),
            std::string::npos)
      << good.proposals[0].rationale;

  const auto bad = proposer.propose(scale_request(), cancel_);
  EXPECT_EQ(bad.status, propose_status::failed);
  EXPECT_NE(bad.error.find("HTTP 400: bad request [Authorization: Bearer [redacted]]"),
            std::string::npos)
      << bad.error;

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& request : requests) {
    EXPECT_TRUE(request["has_authorization"].get<bool>());
    EXPECT_TRUE(request["authorization_ok"].get<bool>());
  }
  for (const auto& text : {reply_text(good), reply_text(bad), log.text(), server.log_text()})
    EXPECT_EQ(text.find(test_key), std::string::npos) << text;
  EXPECT_NE(log.text().find("llm:scripted-model"), std::string::npos) << "the log was captured";
}

TEST_F(LlmProposer, wrong_key_fails_with_a_fix_that_names_the_variable) {
  api_key_environment key("sk-wrong-key-0000000000");
  scripted_server server(dir_, nlohmann::json::array({{{"content", good_answer}}}),
                         /*require_key=*/true);
  ASSERT_TRUE(server.started());
  const auto reply = llm_proposer(options_for(server.endpoint())).propose(scale_request(), cancel_);
  EXPECT_EQ(reply.status, propose_status::failed);
  EXPECT_NE(reply.error.find("HTTP 401"), std::string::npos) << reply.error;
  EXPECT_NE(reply.error.find("fix: set RPL_LLM_API_KEY"), std::string::npos) << reply.error;
  EXPECT_EQ(reply.error.find("sk-wrong-key"), std::string::npos) << reply.error;
}

TEST_F(LlmProposer, repair_round_prompt_carries_the_compiler_error) {
  scripted_server server(dir_, nlohmann::json::array({{{"content", good_answer}}}));
  ASSERT_TRUE(server.started());
  auto request = scale_request();
  messages::proposal_attempt failed;
  failed.proposal_id = "llm:0123456789ab";
  failed.title = "shared-memory tile";
  failed.diff = "--- a/scale.cu\n+++ b/scale.cu\n@@ -4,1 +4,1 @@\n-  int i\n+  int i = tile[0];\n";
  failed.stage = "compile";
  failed.verdict = "failed";
  failed.detail = "scale.cu:4:11: error: use of undeclared identifier 'tile'";
  request.history = {failed};
  request.repair_round = 1;
  request.max_proposals = 8;
  auto options = options_for(server.endpoint());
  options.proposals_per_request = 3; // a repair round still asks once
  const auto reply = llm_proposer(options).propose(request, cancel_);
  ASSERT_EQ(reply.status, propose_status::ok) << reply.error;
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const auto user = requests[0]["body"]["messages"][1]["content"].get<std::string>();
  EXPECT_NE(user.find("repair round 1 of 2"), std::string::npos) << user;
  EXPECT_NE(user.find("scale.cu:4:11: error: use of undeclared identifier 'tile'"),
            std::string::npos)
      << user;
  EXPECT_NE(user.find("shared-memory tile"), std::string::npos);
}

TEST_F(LlmProposer, answer_without_a_usable_diff_is_ok_with_no_proposal_and_says_why) {
  scripted_server server(dir_,
                         nlohmann::json::array({{{"content", "I think you should unroll the loop."},
                                                 {"finish_reason", "length"}}}));
  ASSERT_TRUE(server.started());
  const auto reply = llm_proposer(options_for(server.endpoint())).propose(scale_request(), cancel_);
  EXPECT_EQ(reply.status, propose_status::ok);
  EXPECT_TRUE(reply.proposals.empty());
  EXPECT_NE(reply.error.find("answer 1 of 1: the answer holds no unified diff"), std::string::npos)
      << reply.error;
  EXPECT_NE(reply.error.find("cut at max_tokens"), std::string::npos) << reply.error;
}

TEST_F(LlmProposer, several_proposals_by_sequential_calls_without_duplicates) {
  scripted_server server(dir_, nlohmann::json::array({{{"content", good_answer}},
                                                      {{"content", good_answer}},
                                                      {{"content", other_answer}}}));
  ASSERT_TRUE(server.started());
  auto options = options_for(server.endpoint());
  options.proposals_per_request = 3;
  const auto reply = llm_proposer(options).propose(scale_request(), cancel_);
  ASSERT_EQ(reply.status, propose_status::ok) << reply.error;
  ASSERT_EQ(reply.proposals.size(), 2u);
  EXPECT_EQ(reply.proposals[1].title, "restrict pointers");
  EXPECT_NE(reply.error.find("answer 2 of 3: the same change as an earlier one"), std::string::npos)
      << reply.error;
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_F(LlmProposer, several_proposals_in_one_call_with_n) {
  scripted_server server(dir_,
                         nlohmann::json::array({{{"contents", {good_answer, other_answer}}}}));
  ASSERT_TRUE(server.started());
  auto options = options_for(server.endpoint());
  options.proposals_per_request = 2;
  options.use_n_parameter = true;
  const auto reply = llm_proposer(options).propose(scale_request(), cancel_);
  ASSERT_EQ(reply.status, propose_status::ok) << reply.error;
  EXPECT_EQ(reply.proposals.size(), 2u);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0]["body"]["n"], 2);
}

TEST_F(LlmProposer, later_call_failing_keeps_the_earlier_proposals) {
  scripted_server server(dir_, nlohmann::json::array({{{"content", good_answer}},
                                                      {{"status", 400}, {"message", "too long"}}}));
  ASSERT_TRUE(server.started());
  auto options = options_for(server.endpoint());
  options.proposals_per_request = 2;
  const auto reply = llm_proposer(options).propose(scale_request(), cancel_);
  ASSERT_EQ(reply.status, propose_status::ok) << reply.error;
  EXPECT_EQ(reply.proposals.size(), 1u);
  EXPECT_NE(reply.error.find("call 2 of 2: llm endpoint"), std::string::npos) << reply.error;
}

} // namespace
} // namespace rpl::workers
