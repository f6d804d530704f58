#include "engine/optimize/proposal_feed.hpp"

#include <utility>

#include <spdlog/spdlog.h>

#include "engine/optimize/optimize_journal.hpp"
#include "stages/optimize/proposer_kinds.hpp"

namespace rpl::engine {

proposal_feed::proposal_feed(const journey_context& journey,
                             hooks callbacks,
                             std::map<std::string, attempt_record> earlier,
                             std::set<std::string> seen)
    : journey_(journey), hooks_(std::move(callbacks)), earlier_(std::move(earlier)),
      seen_(std::move(seen)) {}

messages::propose_request proposal_feed::make_request(std::uint32_t repair_round) const {
  const auto& settings = journey_.settings();
  messages::propose_request request = journey_.propose_request(hooks_.incumbent_text());
  request.history = history_;
  request.repair_round = repair_round;
  request.max_proposals = settings.max_proposals;
  request.timeout_ms = settings.propose_timeout_ms;
  return request;
}

std::optional<proposal_ticket> proposal_feed::next(std::size_t in_flight) {
  while (!journey_.out_of_time()) {
    if (repair_for_) {
      const proposal_ticket failed = std::move(*repair_for_);
      repair_for_.reset();
      ask_repair(failed);
      continue;
    }
    if (search_) {
      if (auto t = search_->next()) {
        if (search_->ended()) {
          search_.reset(); // it could not start: its summary is the last of it
        }
        return t;
      }
      if (in_flight > 0) {
        return std::nullopt; // the configurations' results first
      }
      auto outcome = search_->finish();
      search_.reset();
      batch_generation_ = hooks_.generation();
      for (auto it = outcome.rbegin(); it != outcome.rend(); ++it) {
        batch_.push_front(std::move(*it));
      }
      continue;
    }
    if (!batch_.empty() && hooks_.generation() != batch_generation_) {
      batch_.clear(); // made for a source an accepted change has replaced
    }
    if (!batch_.empty()) {
      if (batch_.front().proposal.tunables.empty() || batch_.front().decided) {
        auto t = std::move(batch_.front());
        batch_.pop_front();
        return t;
      }
      if (in_flight > 0) {
        return std::nullopt; // a knob search waits for what is ahead of it in the batch
      }
      search_ =
          std::make_unique<knob_search>(journey_, std::move(batch_.front()),
                                        hooks_.incumbent_text(), &earlier_, hooks_.add_resumed);
      batch_.pop_front();
      continue;
    }
    if (in_flight > 0) {
      return std::nullopt; // the batch's last verdicts first
    }
    if (!advance()) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

bool proposal_feed::advance() {
  const auto& settings = journey_.settings();
  while (!journey_.out_of_time()) {
    if (started_ && kind_index_ + 1 < settings.proposers.size()) {
      ++kind_index_;
    } else {
      if (started_ && !proposed_any_ && !accepted_any_) {
        spdlog::info("{}: iteration {}: no new proposal; stopping", journey_.target().kernel,
                     iteration_);
        return false;
      }
      started_ = true;
      ++iteration_;
      if (iteration_ > settings.iterations || settings.proposers.empty()) {
        return false;
      }
      kind_index_ = 0;
      proposed_any_ = false;
      accepted_any_ = false;
    }
    const std::string& kind = settings.proposers[kind_index_];
    const auto reply = journey_.services().propose(kind, make_request(0));
    if (reply.status != messages::propose_status::ok) {
      hooks_.proposer_error(kind + ": " + messages::to_string(reply.status) + ": " + reply.error);
      spdlog::warn("{}: the {} proposer: {}: {}; going on without it this iteration",
                   journey_.target().kernel, kind, messages::to_string(reply.status), reply.error);
      continue;
    }
    if (!reply.error.empty()) {
      hooks_.proposer_error(kind + ": " + reply.error);
    }
    take_batch(kind, reply);
    if (!batch_.empty()) {
      return true;
    }
  }
  return false;
}

void proposal_feed::take_batch(const std::string& kind, const messages::propose_reply& reply) {
  const std::string incumbent = hooks_.incumbent_text();
  batch_generation_ = hooks_.generation();
  for (const auto& proposal : reply.proposals) {
    ++proposals_seen_;
    const std::string hash = text_hash(incumbent + "\n\x01" + proposal.diff);
    if (!seen_.insert(hash).second) {
      continue;
    }
    if (journey_.settings().resume) {
      if (auto it = earlier_.find(hash); it != earlier_.end()) {
        attempt_record old = it->second;
        old.resumed = true;
        old.detail = "resumed: " + old.detail;
        hooks_.add_resumed(std::move(old));
        continue;
      }
    }
    proposed_any_ = true;
    proposal_ticket t;
    t.proposal = proposal;
    t.kind = kind;
    t.proposer = reply.proposer.empty() ? kind : reply.proposer;
    t.worker = reply.worker_id;
    t.iteration = iteration_;
    batch_.push_back(std::move(t));
  }
}

void proposal_feed::ask_repair(const proposal_ticket& failed) {
  const std::uint32_t round = failed.repair_round + 1;
  const auto reply = journey_.services().propose(failed.kind, make_request(round));
  if (reply.status != messages::propose_status::ok || reply.proposals.empty()) {
    hooks_.proposer_error(failed.kind + " (repair " + std::to_string(round) +
                          "): " + (reply.error.empty() ? std::string("no proposal") : reply.error));
    return;
  }
  proposal_ticket fixed = failed;
  fixed.proposal = reply.proposals.front();
  fixed.worker = reply.worker_id;
  fixed.repair_round = round;
  seen_.insert(text_hash(hooks_.incumbent_text() + "\n\x01" + fixed.proposal.diff));
  batch_.push_front(std::move(fixed));
}

void proposal_feed::learn(const proposal_ticket& ticket, const attempt_record& attempt) {
  if (search_) {
    search_->observe(ticket, attempt);
  }
  if (ticket.knob) {
    return; // a configuration: the search's, not the proposers' history
  }
  messages::proposal_attempt h;
  h.proposal_id = attempt.proposal_id;
  h.title = attempt.title;
  h.diff = attempt.diff;
  h.stage = std::string(to_string(attempt.stage));
  h.verdict = std::string(to_string(attempt.verdict));
  h.detail = clip_detail(attempt.detail, 3000);
  history_.push_back(std::move(h));
  if (attempt.verdict == attempt_verdict::accepted) {
    accepted_any_ = true;
    batch_.clear(); // proposed for the old source: ask again
    repair_for_.reset();
    return;
  }
  // Bounded repair: the compiler's (or the patcher's) complaint goes back to the proposer.
  if (stages::optimize::proposer_repairs(ticket.kind) &&
      ticket.repair_round < journey_.settings().max_repairs &&
      (attempt.stage == attempt_stage::compile || attempt.stage == attempt_stage::apply)) {
    repair_for_ = ticket;
  }
}

} // namespace rpl::engine
