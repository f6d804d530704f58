#include "workers/proposers/llm/chat_client.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

namespace rpl::workers {
namespace {

using steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

/// `text` with every occurrence of `secret` replaced. Keys shorter than 4 characters are not
/// searched for: they would match ordinary text, and no real endpoint issues them.
std::string redacted(std::string text, const std::string& secret) {
  if (secret.size() < 4)
    return text;
  for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at))
    text.replace(at, secret.size(), "[redacted]");
  return text;
}

/// The API key for one call, wiped from memory when the call ends.
class api_key {
public:
  api_key() {
    if (const char* value = std::getenv(llm_api_key_variable); value != nullptr)
      value_ = value;
  }
  ~api_key() {
    std::fill(value_.begin(), value_.end(), '\0');
    value_.clear();
  }
  api_key(const api_key&) = delete;
  api_key& operator=(const api_key&) = delete;
  const std::string& value() const { return value_; }

private:
  std::string value_;
};

struct curl_deleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct multi_deleter {
  void operator()(CURLM* handle) const { curl_multi_cleanup(handle); }
};
struct slist_deleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

struct transfer {
  std::string body;
  std::size_t max_bytes = 0;
  bool too_large = false;
  std::string retry_after;
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& state = *static_cast<transfer*>(user);
  const auto bytes = size * count;
  if (state.body.size() + bytes > state.max_bytes) {
    state.too_large = true;
    return 0; // aborts the transfer (CURLE_WRITE_ERROR)
  }
  state.body.append(data, bytes);
  return bytes;
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& state = *static_cast<transfer*>(user);
  const auto bytes = size * count;
  std::string line(data, bytes);
  constexpr std::string_view name = "retry-after:";
  if (line.size() > name.size()) {
    std::string head = line.substr(0, name.size());
    for (auto& c : head)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (head == name) {
      auto value = line.substr(name.size());
      value.erase(0, value.find_first_not_of(" \t"));
      value.erase(value.find_last_not_of(" \t\r\n") + 1);
      state.retry_after = value;
    }
  }
  return bytes;
}

/// The endpoint's own words from an error body: error.message, error, message or detail.
std::string endpoint_message(const std::string& body) {
  const auto json = nlohmann::json::parse(body, nullptr, false);
  if (!json.is_discarded() && json.is_object()) {
    if (const auto error = json.find("error"); error != json.end()) {
      if (error->is_object() && error->contains("message") && (*error)["message"].is_string())
        return (*error)["message"].get<std::string>();
      if (error->is_string())
        return error->get<std::string>();
    }
    for (const char* key : {"message", "detail"})
      if (const auto found = json.find(key); found != json.end() && found->is_string())
        return found->get<std::string>();
  }
  std::string text = body.substr(0, 200);
  for (auto& c : text)
    if (c == '\n' || c == '\r')
      c = ' ';
  return text;
}

std::string fix_for_status(long status) {
  switch (status) {
  case 401:
  case 403: return "set RPL_LLM_API_KEY to a key this endpoint accepts";
  case 404:
    return "check --llm-endpoint (an OpenAI-compatible base URL, usually ending in /v1) and "
           "--llm-model (a model the server serves)";
  case 413: return "lower the prompt budget so that the request is smaller";
  case 429: return "wait, or lower the proposals per request; the endpoint is rate-limiting";
  default:
    if (status >= 500)
      return "check the server's log; it failed on this request";
    return "check --llm-model and --llm-max-tokens against what the endpoint accepts";
  }
}

/// A Retry-After in seconds (an HTTP date is not honoured: the back-off applies instead).
std::optional<milliseconds> retry_after_of(const std::string& value) {
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos ||
      value.size() > 6)
    return std::nullopt;
  return milliseconds(std::stol(value) * 1000);
}

enum class attempt_kind { answered, retryable, final, timed_out, cancelled };

struct attempt_result {
  attempt_kind kind = attempt_kind::final;
  long http_status = 0;
  std::string what; ///< the failure, without the endpoint prefix or the fix
  std::string fix;
  std::optional<milliseconds> retry_after;
  std::string body;
};

std::string chat_request_json(const chat_client_options& options,
                              const std::vector<stages::optimize::chat_message>& messages,
                              std::uint32_t choices) {
  nlohmann::json request = {{"model", options.model},
                            {"temperature", options.temperature},
                            {"max_tokens", options.max_tokens},
                            {"stream", false}};
  auto& list = request["messages"] = nlohmann::json::array();
  for (const auto& message : messages)
    list.push_back({{"role", message.role}, {"content", message.content}});
  if (choices > 1)
    request["n"] = choices;
  return request.dump();
}

std::unique_ptr<curl_slist, slist_deleter> request_headers(const api_key& key) {
  std::unique_ptr<curl_slist, slist_deleter> headers;
  auto add_header = [&](const std::string& line) {
    headers.reset(curl_slist_append(headers.release(), line.c_str()));
  };
  add_header("Content-Type: application/json");
  add_header("Accept: application/json");
  add_header("Expect:"); // no 100-continue round trip for a large prompt
  if (!key.value().empty()) {
    std::string line = "Authorization: Bearer " + key.value();
    add_header(line);
    std::fill(line.begin(), line.end(), '\0');
  }
  return headers;
}

/// Runs the transfer in a multi loop instead of curl_easy_perform, so that the cancel flag is
/// seen within 50 ms (libcurl calls a progress callback only about once a second while a server
/// is silent).
CURLcode perform_until_cancelled(CURL* h, const std::atomic<bool>& cancel) {
  std::unique_ptr<CURLM, multi_deleter> multi(curl_multi_init());
  CURLcode code = CURLE_FAILED_INIT;
  if (multi && curl_multi_add_handle(multi.get(), h) == CURLM_OK) {
    int running = 1;
    while (running > 0) {
      if (cancel.load()) {
        code = CURLE_ABORTED_BY_CALLBACK;
        break;
      }
      if (curl_multi_perform(multi.get(), &running) != CURLM_OK)
        break;
      if (running > 0)
        curl_multi_poll(multi.get(), nullptr, 0, 50, nullptr);
    }
    int queued = 0;
    while (CURLMsg* message = curl_multi_info_read(multi.get(), &queued))
      if (message->msg == CURLMSG_DONE && message->easy_handle == h)
        code = message->data.result;
    curl_multi_remove_handle(multi.get(), h);
  }
  return code;
}

/// What a finished transfer came to: the answer, or a failure saying whether another attempt
/// may get one.
attempt_result classify_transfer(CURLcode code,
                                 const char* curl_error,
                                 long http_status,
                                 transfer& state,
                                 const chat_client_options& options,
                                 steady::time_point deadline) {
  attempt_result out;
  out.http_status = http_status;
  const std::string detail = curl_error[0] != '\0' ? curl_error : curl_easy_strerror(code);
  switch (code) {
  case CURLE_OK: break;
  case CURLE_ABORTED_BY_CALLBACK: out.kind = attempt_kind::cancelled; return out;
  case CURLE_OPERATION_TIMEDOUT:
    if (steady::now() + milliseconds(5) >= deadline) {
      out.kind = attempt_kind::timed_out;
      return out;
    }
    out.kind = attempt_kind::retryable; // the connect timeout, with time left
    out.what = "could not connect within " + std::to_string(options.connect_timeout.count()) +
               " ms (" + detail + ")";
    out.fix = "start the server at that address or correct --llm-endpoint";
    return out;
  case CURLE_COULDNT_CONNECT:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY:
  case CURLE_GOT_NOTHING:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_PARTIAL_FILE:
    out.kind = attempt_kind::retryable;
    out.what = "could not get an answer (" + detail + ")";
    out.fix = "start the server at that address or correct --llm-endpoint";
    return out;
  case CURLE_WRITE_ERROR:
    if (state.too_large) {
      out.what = "the answer is larger than " + std::to_string(options.max_answer_bytes) + " bytes";
      out.fix = "lower --llm-max-tokens";
      return out;
    }
    [[fallthrough]];
  default:
    out.what = "request failed (" + detail + ")";
    out.fix = "check --llm-endpoint (http:// or https://, host, port)";
    return out;
  }

  if (out.http_status == 429 || out.http_status >= 500) {
    out.kind = attempt_kind::retryable;
    out.what = "HTTP " + std::to_string(out.http_status) + ": " + endpoint_message(state.body);
    out.fix = fix_for_status(out.http_status);
    out.retry_after = retry_after_of(state.retry_after);
    return out;
  }
  if (out.http_status != 200) {
    out.what = "HTTP " + std::to_string(out.http_status) + ": " + endpoint_message(state.body);
    out.fix = fix_for_status(out.http_status);
    return out;
  }
  out.kind = attempt_kind::answered;
  out.body = std::move(state.body);
  return out;
}

/// One POST of `payload` to `url`, given the time left until `deadline`.
attempt_result attempt_once(const std::string& url,
                            const std::string& payload,
                            const api_key& key,
                            const chat_client_options& options,
                            steady::time_point deadline,
                            const std::atomic<bool>& cancel) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - steady::now());
  if (left.count() <= 0) {
    attempt_result out;
    out.kind = attempt_kind::timed_out;
    return out;
  }
  std::unique_ptr<CURL, curl_deleter> handle(curl_easy_init());
  if (!handle) {
    attempt_result out;
    out.what = "libcurl could not start a transfer";
    out.fix = "check the process's memory limits";
    return out;
  }
  const auto headers = request_headers(key);
  transfer state;
  state.max_bytes = options.max_answer_bytes;
  char curl_error[CURL_ERROR_SIZE] = {};
  CURL* h = handle.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(h, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); // worker threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload.size()));
  curl_easy_setopt(h, CURLOPT_USERAGENT, "rocm-perf-lab");
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::min(left, options.connect_timeout).count()));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(left.count()));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &state);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &state);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_error);
  const CURLcode code = perform_until_cancelled(h, cancel);
  long http_status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http_status);
  return classify_transfer(code, curl_error, http_status, state, options, deadline);
}

/// Sleeps until `until` in slices that watch the cancel flag; false when it was raised.
bool sleep_unless_cancelled(steady::time_point until, const std::atomic<bool>& cancel) {
  while (steady::now() < until) {
    if (cancel.load())
      return false;
    std::this_thread::sleep_for(
        std::min<steady::duration>(milliseconds(20), until - steady::now()));
  }
  return true;
}

/// The answer's choices into `result` (contents redacted of `secret`); the failure when the
/// answer is not a chat completion.
std::optional<std::string>
read_choices(const std::string& body, const std::string& secret, chat_result& result) {
  const auto json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_discarded() || !json.is_object())
    return "the answer is not JSON: " + endpoint_message(body);
  const auto found = json.find("choices");
  if (found == json.end() || !found->is_array() || found->empty())
    return "the answer has no choices: " + endpoint_message(body);
  for (const auto& choice : *found) {
    std::string content;
    std::string reason;
    if (choice.is_object()) {
      if (const auto message = choice.find("message");
          message != choice.end() && message->is_object()) {
        if (const auto text = message->find("content"); text != message->end() && text->is_string())
          content = text->get<std::string>();
      }
      if (const auto finish_reason = choice.find("finish_reason");
          finish_reason != choice.end() && finish_reason->is_string())
        reason = finish_reason->get<std::string>();
    }
    result.contents.push_back(redacted(std::move(content), secret));
    result.finish_reasons.push_back(std::move(reason));
  }
  return std::nullopt;
}

} // namespace

const char* to_string(chat_status status) {
  switch (status) {
  case chat_status::ok: return "ok";
  case chat_status::failed: return "failed";
  case chat_status::timed_out: return "timed_out";
  case chat_status::cancelled: return "cancelled";
  }
  return "unknown";
}

std::string chat_completions_url(std::string_view endpoint) {
  std::string url(endpoint);
  while (!url.empty() && url.back() == '/')
    url.pop_back();
  constexpr std::string_view suffix = "/chat/completions";
  if (url.size() >= suffix.size() &&
      url.compare(url.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0)
    return url;
  return url + std::string(suffix);
}

std::string displayed_url(std::string_view url) {
  std::string shown(url.substr(0, url.find_first_of("?#")));
  const auto scheme = shown.find("://");
  const auto authority = scheme == std::string::npos ? 0 : scheme + 3;
  const auto path = shown.find('/', authority);
  const auto at = shown.rfind('@', path == std::string::npos ? shown.size() : path);
  if (at != std::string::npos && at >= authority)
    shown.erase(authority, at + 1 - authority);
  return shown;
}

chat_client::chat_client(chat_client_options options) : options_(std::move(options)) {
  if (options_.endpoint.empty())
    throw std::invalid_argument("llm: no endpoint; fix: pass --llm-endpoint URL (an "
                                "OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1)");
  if (options_.model.empty())
    throw std::invalid_argument("llm: no model; fix: pass --llm-model NAME (one the endpoint "
                                "serves)");
  url_ = chat_completions_url(options_.endpoint);
  global_init();
}

chat_result chat_client::complete(const std::vector<stages::optimize::chat_message>& messages,
                                  std::uint32_t choices,
                                  steady::time_point deadline,
                                  const std::atomic<bool>& cancel) const {
  const api_key key;
  const auto shown = displayed_url(url_);
  const auto payload = chat_request_json(options_, messages, choices);

  chat_result result;
  auto backoff = options_.backoff_initial;
  auto finish = [&](chat_status status, const std::string& what, const std::string& fix) {
    result.status = status;
    std::string error = "llm endpoint " + shown + ": " + what;
    if (result.attempts > 1)
      error += " after " + std::to_string(result.attempts) + " attempts";
    if (!fix.empty())
      error += "; fix: " + fix;
    result.error = redacted(std::move(error), key.value());
    return result;
  };

  attempt_result last;
  for (std::uint32_t attempt = 0; attempt <= options_.retries; ++attempt) {
    if (cancel.load())
      return finish(chat_status::cancelled, "cancelled", {});
    ++result.attempts;
    last = attempt_once(url_, payload, key, options_, deadline, cancel);
    result.http_status = last.http_status;
    if (last.kind == attempt_kind::cancelled)
      return finish(chat_status::cancelled, "cancelled", {});
    if (last.kind == attempt_kind::timed_out)
      return finish(chat_status::timed_out, "no answer before the deadline",
                    "raise the proposer's timeout, or use a faster model or endpoint");
    if (last.kind == attempt_kind::final)
      return finish(chat_status::failed, last.what, last.fix);
    if (last.kind == attempt_kind::answered)
      break;
    if (attempt == options_.retries)
      return finish(chat_status::failed, last.what, last.fix);
    // Retryable: wait the Retry-After (capped) or the back-off, in slices that watch the cancel.
    auto wait = last.retry_after ? std::min(*last.retry_after, options_.retry_after_cap) : backoff;
    backoff = std::min(backoff * 2, options_.backoff_max);
    if (steady::now() + wait >= deadline)
      return finish(chat_status::failed, last.what + " (no time left for another attempt)",
                    last.fix);
    if (!sleep_unless_cancelled(steady::now() + wait, cancel))
      return finish(chat_status::cancelled, "cancelled", {});
  }

  if (auto failure = read_choices(last.body, key.value(), result))
    return finish(chat_status::failed, *failure,
                  "check that --llm-endpoint is an OpenAI-compatible chat-completions server");
  result.status = chat_status::ok;
  return result;
}

} // namespace rpl::workers
