#include "engine/optimize/knob_search.hpp"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "engine/optimize/optimize_journal.hpp"
#include "stages/optimize/tunable_macros.hpp"
#include "stages/optimize/unified_diff.hpp"

namespace rpl::engine {

namespace opt = stages::optimize;

knob_search::knob_search(const journey_context& journey,
                         proposal_ticket proposal,
                         std::string incumbent_text,
                         const std::map<std::string, attempt_record>* earlier,
                         std::function<void(attempt_record)> add_resumed)
    : journey_(journey), proposal_(std::move(proposal)), incumbent_text_(std::move(incumbent_text)),
      earlier_(earlier), add_resumed_(std::move(add_resumed)) {}

proposal_ticket knob_search::summary(attempt_verdict verdict,
                                     attempt_finding finding,
                                     std::string detail,
                                     attempt_stage stage) {
  ended_ = true;
  proposal_ticket t = proposal_;
  attempt_record a;
  a.stage = stage;
  a.verdict = verdict;
  a.guard = finding;
  a.detail = clip_detail(std::move(detail));
  t.decided = std::move(a);
  return t;
}

std::optional<proposal_ticket> knob_search::start() {
  started_ = true;
  const auto patched = opt::apply_unified_diff(incumbent_text_, proposal_.proposal.diff);
  if (!patched.ok) {
    return summary(attempt_verdict::rejected, attempt_finding::patch_does_not_apply, patched.error,
                   attempt_stage::apply);
  }
  patched_ = patched.text;
  const auto& settings = journey_.settings();
  if (settings.tune_budget == 0) {
    return summary(attempt_verdict::skipped, attempt_finding::none,
                   "--tune-budget 0: proposals with tunable macros are not tried");
  }
  const auto& knobs = proposal_.proposal.tunables;
  space_ = opt::knob_configurations(knobs);
  if (space_.empty()) {
    return summary(attempt_verdict::rejected, attempt_finding::tunables,
                   "a tunable macro without values");
  }
  budget_ = std::min<std::size_t>(space_.size(), settings.tune_budget);
  strategy_name_ = space_.size() <= budget_ ? "exhaustive" : "model";
  // Every knob at its default: the code as it was, timed first (the search's baseline); a
  // strategy's pick of it again is skipped, and it counts against the budget.
  default_index_ = space_.size();
  for (std::size_t i = 0; i < space_.size() && default_index_ == space_.size(); ++i) {
    bool all = true;
    for (std::size_t k = 0; k < knobs.size(); ++k) {
      const auto* v = std::get_if<std::int64_t>(&space_[i].params[k].second);
      all = all && v != nullptr && *v == knobs[k].default_value;
    }
    default_index_ = all ? i : default_index_;
  }
  if (default_index_ < space_.size()) {
    forced_ = default_index_;
  }
  strategy_ = stages::make_strategy(strategy_name_, space_, budget_, settings.seed);
  return std::nullopt;
}

std::optional<std::size_t> knob_search::next_index() {
  while (tried_ < budget_) {
    std::optional<std::size_t> index = forced_;
    forced_.reset();
    if (!index) {
      index = strategy_->next();
    }
    if (!index) {
      return std::nullopt;
    }
    if (taken_.insert(*index).second) {
      ++tried_;
      return index;
    }
  }
  return std::nullopt;
}

proposal_ticket knob_search::configuration_ticket(std::size_t index, std::string text) {
  const std::string name = journey_.target().source_path.filename().string();
  proposal_ticket t = proposal_;
  t.proposal.id = proposal_.proposal.id + "{" + opt::describe(space_[index]) + "}";
  t.proposal.title = opt::describe(space_[index]);
  t.proposal.rationale = "a configuration of " + proposal_.proposal.id;
  t.proposal.diff = opt::make_unified_diff(incumbent_text_, text, name);
  t.proposal.tunables.clear();
  t.knob = index;
  for (const auto& k : proposal_.proposal.tunables) {
    t.knob_macros.push_back(k.name);
  }
  // Its own hash space: the defaults' diff is the proposal's own, whose hash names the
  // proposal's verdict (the summary) on --resume.
  t.diff_hash = text_hash(incumbent_text_ + "\n\x02tuning\n" + t.proposal.diff);
  return t;
}

std::optional<proposal_ticket> knob_search::next() {
  if (ended_) {
    return std::nullopt;
  }
  if (!started_) {
    if (auto refused = start()) {
      return refused;
    }
  }
  while (!journey_.out_of_time()) {
    const auto index = next_index();
    if (!index) {
      return std::nullopt;
    }
    std::string text = patched_;
    std::string error;
    if (!opt::set_knobs(text, proposal_.proposal.tunables, space_[*index], error)) {
      return summary(attempt_verdict::rejected, attempt_finding::tunables, error);
    }
    auto ticket = configuration_ticket(*index, std::move(text));
    if (journey_.settings().resume && earlier_ != nullptr) {
      const auto it = earlier_->find(ticket.diff_hash);
      if (it != earlier_->end() && it->second.stage == attempt_stage::tuning &&
          it->second.verdict == attempt_verdict::measured) {
        attempt_record old = it->second;
        old.resumed = true;
        old.detail = "resumed: " + old.detail;
        observe(ticket, old);
        add_resumed_(std::move(old));
        continue;
      }
    }
    return ticket;
  }
  return std::nullopt;
}

void knob_search::observe(const proposal_ticket& ticket, const attempt_record& a) {
  if (!ticket.knob || !strategy_) {
    return;
  }
  const std::size_t index = *ticket.knob;
  stages::observation o;
  o.index = index;
  o.config = &space_[index];
  if (a.verdict == attempt_verdict::measured) {
    const double median =
        nlohmann::json::parse(a.measurement, nullptr, false).value("median_ns", 0.0);
    if (median > 0.0) {
      o.value_ns = median;
      times_[index] = median;
      if (!best_ || median < times_[*best_]) {
        best_ = index;
      }
    }
  }
  if (!o.value_ns) {
    o.failure =
        std::string(to_string(a.stage)) + ": " + std::string(to_string(a.verdict)) +
        (a.guard == attempt_finding::none ? "" : " (" + std::string(to_string(a.guard)) + ")");
  }
  strategy_->observe(o);
}

std::string knob_search::searched() const {
  return "searched " + std::to_string(tried_) + " of " + std::to_string(space_.size()) +
         " configurations (" + strategy_name_ + ", --tune-budget " +
         std::to_string(journey_.settings().tune_budget) + ")";
}

std::vector<proposal_ticket> knob_search::finish() {
  if (ended_ || !strategy_) {
    return {};
  }
  if (journey_.out_of_time()) {
    // Interrupted: the configurations timed so far are in the journal, and --resume takes them
    // up; no verdict for the whole proposal yet.
    spdlog::info("{}: tuning {} stopped after {} configurations", journey_.target().kernel,
                 proposal_.proposal.id, tried_);
    ended_ = true;
    return {};
  }
  if (!best_) {
    return {summary(attempt_verdict::failed, attempt_finding::tuning,
                    searched() + "; none was measured")};
  }
  const auto defaults = times_.find(default_index_);
  std::string figures = searched() + "; fastest " + opt::describe(space_[*best_]) + ": " +
                        std::to_string(times_[*best_] / 1000.0) + " us alone";
  if (defaults != times_.end()) {
    figures += ", defaults " + std::to_string(defaults->second / 1000.0) + " us";
  }
  if (*best_ == default_index_) {
    return {summary(attempt_verdict::unchanged, attempt_finding::none,
                    figures + "; the defaults are the fastest, nothing to try")};
  }
  if (defaults != times_.end() &&
      times_[*best_] >= defaults->second * (1.0 - journey_.settings().noise_target)) {
    return {summary(attempt_verdict::unchanged, attempt_finding::none,
                    figures + "; within --noise of the defaults, nothing to try against the "
                              "incumbent")};
  }
  std::vector<proposal_ticket> out{summary(attempt_verdict::tuned, attempt_finding::none,
                                           figures + "; it goes on against the incumbent")};
  std::string text = patched_;
  std::string error;
  opt::set_knobs(text, proposal_.proposal.tunables, space_[*best_], error);
  proposal_ticket chosen = proposal_;
  chosen.proposal.id = proposal_.proposal.id + ":" + opt::describe(space_[*best_]);
  chosen.proposal.title = proposal_.proposal.title + ", tuned: " + opt::describe(space_[*best_]);
  chosen.proposal.rationale = proposal_.proposal.rationale + " Tuning " + figures + ".";
  chosen.proposal.diff = opt::make_unified_diff(incumbent_text_, text,
                                                journey_.target().source_path.filename().string());
  chosen.proposal.tunables.clear();
  out.push_back(std::move(chosen));
  return out;
}

} // namespace rpl::engine
