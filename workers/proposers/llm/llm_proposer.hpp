#pragma once
/// The LLM proposer (`rocm-perf worker propose --kind llm`): asks an OpenAI-compatible
/// chat-completions endpoint (chat_client.hpp) for changes to one kernel. The prompt is
/// stages/optimize/llm_prompt.hpp's, the answer is read by stages/optimize/llm_answer.hpp; what
/// comes back is text only, applied in memory to check it, and never run.
///
/// The reply, stated once:
///   - unavailable: no endpoint or no model configured (nothing is sent);
///   - failed / timed_out: no call got an answer (connection refused, HTTP error, the deadline,
///     cancelled: failed with "cancelled"); `error` is the client's, naming the endpoint and a fix;
///   - ok: at least one call got an answer. `proposals` are the answers that parsed and applied to
///     the source, without duplicates (of each other or of a diff in the history); `error` is
///     empty when every answer gave a new proposal, else says for each one that did not why
///     ("answer 2 of 3: ... hunk 1 ..."), worded so the engine can hand it back in a repair round.
///     So an answer without a usable diff is ok with zero proposals and a non-empty error.
/// The deadline is the smaller of options.timeout and the request's timeout_ms, less a small
/// margin so that the reply reaches the engine before it gives up.

#include <chrono>
#include <cstdint>
#include <string>

#include "stages/optimize/llm_answer.hpp"
#include "stages/optimize/llm_prompt.hpp"
#include "workers/proposers/llm/chat_client.hpp"
#include "workers/proposers/proposer.hpp"

namespace rpl::workers {

struct llm_proposer_options {
  std::string endpoint; ///< --llm-endpoint: "http://127.0.0.1:8000/v1" (or .../chat/completions)
  std::string model;    ///< --llm-model: as the endpoint names it
  double temperature = 0.2;
  std::uint32_t max_tokens = 4096;
  std::chrono::milliseconds timeout{120000};        ///< one propose() at most
  std::chrono::milliseconds connect_timeout{10000}; ///< per HTTP attempt
  std::uint32_t retries = 2;                        ///< per call, after a retryable failure
  /// How many answers to ask for per request (capped by the request's max_proposals; a repair
  /// round asks for one).
  std::uint32_t proposals_per_request = 1;
  /// Ask for them in one call with the `n` parameter (vLLM, OpenAI) instead of one call each
  /// (every server supports that; llama.cpp's ignores `n`).
  bool use_n_parameter = false;
  stages::optimize::prompt_budget prompt;
  stages::optimize::answer_limits answer;
};

class llm_proposer final : public proposer {
public:
  /// Never throws: missing options are an `unavailable` reply at propose().
  explicit llm_proposer(llm_proposer_options options);

  std::string name() const override { return "llm:" + options_.model; }
  messages::propose_reply propose(const messages::propose_request& request,
                                  const std::atomic<bool>& cancel) override;

private:
  llm_proposer_options options_;
};

} // namespace rpl::workers
