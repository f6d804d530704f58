#include "workers/proposers/llm/llm_proposer.hpp"

#include <algorithm>
#include <set>

#include "workers/protocol/worker_log.hpp"

namespace rpl::workers {
namespace {

using steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// The margin left before the request's deadline: 5 % of it, at most half a second.
milliseconds deadline_margin(milliseconds timeout) {
  return std::min(milliseconds(500), timeout / 20);
}

messages::propose_status reply_status(chat_status status) {
  switch (status) {
  case chat_status::ok: return messages::propose_status::ok;
  case chat_status::timed_out: return messages::propose_status::timed_out;
  case chat_status::failed:
  case chat_status::cancelled: return messages::propose_status::failed;
  }
  return messages::propose_status::failed;
}

} // namespace

llm_proposer::llm_proposer(llm_proposer_options options) : options_(std::move(options)) {}

messages::propose_reply llm_proposer::propose(const messages::propose_request& request,
                                              const std::atomic<bool>& cancel) {
  const auto begin = steady::now();
  messages::propose_reply reply;
  reply.proposer = name();
  auto done = [&]() -> messages::propose_reply {
    reply.elapsed_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - begin).count();
    return reply;
  };

  if (options_.endpoint.empty() || options_.model.empty()) {
    reply.status = messages::propose_status::unavailable;
    reply.error = "llm proposer: --llm-endpoint and --llm-model are needed; fix: pass "
                  "--llm-endpoint http://HOST:PORT/v1 (an OpenAI-compatible server) and "
                  "--llm-model NAME (a model it serves), and set RPL_LLM_API_KEY if it wants a key";
    return done();
  }
  if (request.max_proposals == 0) {
    reply.status = messages::propose_status::ok;
    return done();
  }

  chat_client_options client_options;
  client_options.endpoint = options_.endpoint;
  client_options.model = options_.model;
  client_options.temperature = options_.temperature;
  client_options.max_tokens = options_.max_tokens;
  client_options.connect_timeout = options_.connect_timeout;
  client_options.retries = options_.retries;
  const chat_client client(client_options);

  const auto timeout = std::min(options_.timeout, milliseconds(request.timeout_ms));
  const auto deadline = begin + timeout - deadline_margin(timeout);
  const bool repair = request.repair_round > 0 && !request.history.empty();
  const std::uint32_t wanted =
      repair ? 1u : std::clamp(options_.proposals_per_request, 1u, request.max_proposals);
  const auto prompt = stages::optimize::make_chat_prompt(request, options_.prompt);

  const auto log = worker_log();
  log->info("{}: kernel {} ({}): asking {} for {} answer(s); prompt {} chars, {} earlier "
            "attempt(s) shown, {} left out{}",
            reply.proposer, request.kernel, repair ? "repair round" : "new changes",
            displayed_url(client.url()), wanted, prompt.chars(), prompt.attempts_shown,
            prompt.attempts_dropped, prompt.over_budget ? " (over the prompt budget)" : "");

  std::set<std::string> seen; // diffs already proposed or tried
  for (const auto& attempt : request.history)
    seen.insert(attempt.diff);

  std::vector<std::string> notes;
  std::size_t answers = 0;
  chat_result last;
  const std::uint32_t calls = options_.use_n_parameter ? 1u : wanted;
  for (std::uint32_t call = 0; call < calls; ++call) {
    last =
        client.complete(prompt.messages, options_.use_n_parameter ? wanted : 1u, deadline, cancel);
    if (last.status != chat_status::ok) {
      if (answers > 0) // keep what earlier calls gave; say why the rest is missing
        notes.push_back("call " + std::to_string(call + 1) + " of " + std::to_string(calls) + ": " +
                        last.error);
      break;
    }
    for (std::size_t i = 0; i < last.contents.size(); ++i) {
      ++answers;
      const auto number = "answer " + std::to_string(answers) + " of " +
                          std::to_string(options_.use_n_parameter ? last.contents.size() : calls);
      auto parsed = stages::optimize::parse_llm_answer(last.contents[i], request, options_.answer);
      if (!parsed.ok) {
        auto note = number + ": " + parsed.error;
        if (last.finish_reasons[i] == "length")
          note += " (the answer was cut at max_tokens; fix: raise --llm-max-tokens)";
        log->warn("{}: kernel {}: {}", reply.proposer, request.kernel, note);
        notes.push_back(std::move(note));
        continue;
      }
      if (!seen.insert(parsed.proposal.diff).second) {
        notes.push_back(number + ": the same change as an earlier one (" + parsed.proposal.id +
                        ")");
        continue;
      }
      log->info("{}: kernel {}: {} ({}, {})", reply.proposer, request.kernel, parsed.proposal.title,
                parsed.proposal.id, parsed.shape);
      reply.proposals.push_back(std::move(parsed.proposal));
      if (reply.proposals.size() >= wanted)
        break;
    }
  }

  if (answers == 0) {
    reply.status = reply_status(last.status);
    reply.error = last.error;
    log->warn("{}: kernel {}: {}", reply.proposer, request.kernel, reply.error);
    return done();
  }
  reply.status = messages::propose_status::ok;
  for (const auto& note : notes)
    reply.error += (reply.error.empty() ? "" : "\n") + note;
  return done();
}

} // namespace rpl::workers
