#pragma once
/// The proposer side of optimize's graph: it sits where autotune's search strategy sits (the
/// planner room), hands out proposals one at a time and is told every verdict. Each iteration it
/// asks every proposer kind in turn (--proposer; stages/optimize/proposer_kinds.hpp) against the
/// incumbent as it is by then, and hands out that batch; an accepted change drops the rest of the
/// batch (made for the old source) and the next kind or iteration is asked on the new one. A
/// proposal with tunable macros waits for what is ahead of it, then becomes a knob search
/// (knob_search.hpp). A proposer's compile error (or a diff that does not apply) goes back to it,
/// at most
/// --max-repairs times. The loop ends after --iterations, or after an iteration in which nothing
/// new was proposed or accepted.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/optimize/journey_context.hpp"
#include "engine/optimize/knob_search.hpp"
#include "engine/optimize/proposal_candidate.hpp"
#include "messages/proposal.hpp"

namespace rpl::engine {

class proposal_feed {
public:
  struct hooks {
    std::function<std::string()> incumbent_text;
    /// An attempt taken from an earlier run's journal (--resume), not judged again.
    std::function<void(attempt_record)> add_resumed;
    /// A proposer failed or said something went wrong ("llm: timeout: ...").
    std::function<void(std::string)> proposer_error;
    /// The incumbent's generation (+1 per accepted change): a batch made for an older one is
    /// dropped before more of it is handed out.
    std::function<std::uint64_t()> generation;
  };
  /// `earlier`: the journal's attempts of earlier runs by diff hash (used with --resume);
  /// `seen`: diff hashes not to hand out again (the resumed accepted chain).
  proposal_feed(const journey_context& journey,
                hooks callbacks,
                std::map<std::string, attempt_record> earlier,
                std::set<std::string> seen);

  /// The next proposal to send into the graph, or nullopt: nothing now while `in_flight` > 0
  /// (a batch's verdicts, a knob search's results are awaited), the loop is done when 0.
  std::optional<proposal_ticket> next(std::size_t in_flight);
  /// A candidate's attempt, in the order the candidates were handed out.
  void learn(const proposal_ticket& ticket, const attempt_record& attempt);
  std::uint32_t proposals_seen() const { return proposals_seen_; }

private:
  /// Asks the next proposer kind (or iteration) for a batch; false when the loop is done.
  bool advance();
  /// Takes a proposer's reply into the batch: new proposals only (--resume: earlier verdicts).
  void take_batch(const std::string& kind, const messages::propose_reply& reply);
  messages::propose_request make_request(std::uint32_t repair_round) const;
  /// A repair round for `kind`'s failed proposal: its fix goes first in the batch.
  void ask_repair(const proposal_ticket& failed);

  const journey_context& journey_;
  hooks hooks_;
  std::map<std::string, attempt_record> earlier_;
  std::set<std::string> seen_;
  std::deque<proposal_ticket> batch_;
  std::uint64_t batch_generation_ = 0; ///< the incumbent's generation batch_ was made for
  std::unique_ptr<knob_search> search_;
  std::vector<messages::proposal_attempt> history_;
  std::uint32_t iteration_ = 0;
  std::size_t kind_index_ = 0;
  bool started_ = false;
  bool proposed_any_ = false;
  bool accepted_any_ = false;
  std::uint32_t proposals_seen_ = 0;
  std::optional<proposal_ticket> repair_for_;
};

} // namespace rpl::engine
