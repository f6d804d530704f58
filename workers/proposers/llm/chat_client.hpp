#pragma once
/// A client of an OpenAI-compatible chat-completions endpoint (vLLM, llama.cpp's server, Ollama,
/// a hosted API): one POST of {model, messages, temperature, max_tokens[, n]} to
/// {endpoint}/chat/completions over libcurl, with a deadline, bounded retries and a cancel flag.
///
/// The API key is read from the environment variable RPL_LLM_API_KEY at each call and sent as
/// `Authorization: Bearer`; it is never stored in this object, logged, or put in a result: an
/// endpoint that echoes it back in an error or an answer has it replaced by "[redacted]".
///
/// Retries: a connection error (refused, reset, empty reply, connect timeout), HTTP 5xx or 429 is
/// tried again, up to `retries` more times, after an exponential back-off or the endpoint's
/// Retry-After (seconds, capped); any other 4xx, a malformed answer or the deadline ends the call.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stages/optimize/llm_prompt.hpp"

namespace rpl::workers {

/// The environment variable holding the endpoint's API key (may be unset for a local server).
inline constexpr const char* llm_api_key_variable = "RPL_LLM_API_KEY";

struct chat_client_options {
  /// "http://127.0.0.1:8000/v1", or the full URL ending in /chat/completions.
  std::string endpoint;
  std::string model;
  double temperature = 0.2;
  std::uint32_t max_tokens = 4096;
  std::chrono::milliseconds connect_timeout{10000}; ///< per attempt, within the deadline
  std::uint32_t retries = 2;                        ///< further attempts after a retryable failure
  std::chrono::milliseconds backoff_initial{500};   ///< doubled after each retry ...
  std::chrono::milliseconds backoff_max{8000};      ///< ... up to this
  std::chrono::milliseconds retry_after_cap{30000}; ///< the most of a Retry-After that is honoured
  std::size_t max_answer_bytes = 8u << 20;          ///< a larger answer is refused
};

enum class chat_status : std::uint8_t {
  ok = 0,
  failed = 1,    ///< see error: connection, HTTP status, malformed answer
  timed_out = 2, ///< the deadline passed before an answer came
  cancelled = 3, ///< the cancel flag turned true
};

const char* to_string(chat_status status);

struct chat_result {
  chat_status status = chat_status::failed;
  std::vector<std::string> contents;       ///< each choice's message.content, when ok
  std::vector<std::string> finish_reasons; ///< each choice's finish_reason ("stop", "length")
  long http_status = 0;                    ///< of the last attempt; 0 when none answered
  std::uint32_t attempts = 0;
  /// When not ok: "llm endpoint <url>: <what happened> [after N attempts]; fix: <...>". Names the
  /// URL without any user:password and never the key.
  std::string error;
};

/// The URL a request goes to: `endpoint` + "/chat/completions" unless it already ends so.
std::string chat_completions_url(std::string_view endpoint);

/// `url` as errors and logs show it: without user:password@ and without a query string.
std::string displayed_url(std::string_view url);

class chat_client {
public:
  /// Throws std::invalid_argument when the endpoint or the model is empty.
  explicit chat_client(chat_client_options options);

  /// Sends the messages asking for `choices` completions (the `n` parameter, left out when 1) and
  /// returns their contents. Blocks until the answer, the deadline or the cancel flag (checked
  /// while waiting, several times a second). Thread-safe: each call has its own connection.
  chat_result complete(const std::vector<stages::optimize::chat_message>& messages,
                       std::uint32_t choices,
                       std::chrono::steady_clock::time_point deadline,
                       const std::atomic<bool>& cancel) const;

  const chat_client_options& options() const { return options_; }
  const std::string& url() const { return url_; }

private:
  chat_client_options options_;
  std::string url_;
};

} // namespace rpl::workers
