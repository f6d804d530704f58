#pragma once
/// The chat prompt of the LLM proposer (workers/proposers/llm/): a system message that states the
/// role and the answer's format, and a user message with the kernel's source (exact text, so that a
/// diff against it applies), its analysis, the launch's block size and the earlier attempts. Pure:
/// the worker sends the messages, stages/optimize/llm_answer.hpp reads the reply.
///
/// The prompt stays under a character budget: the source is never cut (a diff must apply to all of
/// it); earlier attempts are dropped oldest first, each attempt's diff and detail are cut to their
/// own budgets, and the analysis is cut last.

#include <cstddef>
#include <string>
#include <vector>

#include "messages/proposal.hpp"

namespace rpl::stages::optimize {

/// One message of an OpenAI-style chat ("system", "user", "assistant").
struct chat_message {
  std::string role;
  std::string content;
};

/// How long the prompt may grow, in characters (tokens are about a quarter of that for code).
struct prompt_budget {
  std::size_t max_chars = 48000;           ///< system + user message together
  std::size_t attempt_diff_chars = 4000;   ///< each earlier attempt's diff, head kept
  std::size_t attempt_detail_chars = 1500; ///< each earlier attempt's detail, head kept
  /// The failed attempt's detail (its compiler errors) in a repair round: the reason for the round,
  /// so it gets more room than the rest of the history.
  std::size_t repair_detail_chars = 6000;
};

struct chat_prompt {
  std::vector<chat_message> messages; ///< system, then user
  std::size_t attempts_shown = 0;   ///< earlier attempts in the prompt (the repaired one included)
  std::size_t attempts_dropped = 0; ///< the oldest ones left out for the budget
  bool analysis_cut = false;        ///< the analysis was shortened to fit
  /// The source and the rules alone exceed max_chars; the prompt is sent anyway, whole source and
  /// no history, since a diff needs all of it.
  bool over_budget = false;

  /// Characters of all messages together.
  std::size_t chars() const;
};

/// The messages asking for one change to request.kernel (repair_round 0), or for a repair of
/// request.history.back() given its detail (repair_round 1 or 2; with an empty history it asks
/// for a new change).
chat_prompt make_chat_prompt(const messages::propose_request& request,
                             const prompt_budget& budget = {});

/// `text` cut to at most `max_chars` characters (its head), ending in a note of how much was cut.
std::string clip_text(const std::string& text, std::size_t max_chars);

} // namespace rpl::stages::optimize
