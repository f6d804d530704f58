#pragma once
/// A proposal with tunable macros (messages::tunable_macro) is an autotune run on the same graph
/// before it goes on: its knob space is searched by autotune's strategies (exhaustive when the
/// space fits --tune-budget, else the model strategy), each configuration a candidate of the graph
/// that passes the same guards and validation and is then timed alone on the lane. The defaults
/// (the code as it was) are timed first. Once every configuration's result is in, the fastest, if
/// it beats the defaults beyond the noise, goes on as a plain proposal with its values written
/// in; a summary attempt says what was searched and found.

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/optimize/journey_context.hpp"
#include "engine/optimize/proposal_candidate.hpp"
#include "stages/search/param_value.hpp"
#include "stages/search/strategy.hpp"

namespace rpl::engine {

class knob_search {
public:
  /// `earlier`: the journal's attempts of earlier runs by diff hash (--resume: a configuration
  /// measured before is not measured again); `add_resumed` takes those it reuses.
  knob_search(const journey_context& journey,
              proposal_ticket proposal,
              std::string incumbent_text,
              const std::map<std::string, attempt_record>* earlier,
              std::function<void(attempt_record)> add_resumed);

  /// The next configuration to build and time alone; a decided summary when the search cannot
  /// start (the diff does not apply, --tune-budget 0, no values); nullopt when none is left.
  std::optional<proposal_ticket> next();
  /// A configuration's result (any thread that is the planner's).
  void observe(const proposal_ticket& ticket, const attempt_record& attempt);
  /// After the last result: the summary (decided) and, when a configuration beat the defaults,
  /// the chosen proposal; nothing when the run ran out of time (--resume takes it up).
  std::vector<proposal_ticket> finish();
  /// True once next() gave a decided summary: the search is over.
  bool ended() const { return ended_; }

private:
  proposal_ticket summary(attempt_verdict verdict,
                          attempt_finding finding,
                          std::string detail,
                          attempt_stage stage = attempt_stage::tuning);
  std::optional<proposal_ticket> start();
  std::optional<std::size_t> next_index();
  proposal_ticket configuration_ticket(std::size_t index, std::string text);
  std::string searched() const;

  const journey_context& journey_;
  proposal_ticket proposal_;
  std::string incumbent_text_;
  const std::map<std::string, attempt_record>* earlier_;
  std::function<void(attempt_record)> add_resumed_;
  std::string patched_;
  std::vector<stages::configuration> space_;
  std::unique_ptr<stages::strategy> strategy_;
  std::string strategy_name_;
  std::size_t budget_ = 0;
  std::size_t default_index_ = 0;
  std::optional<std::size_t> forced_;
  std::set<std::size_t> taken_;
  std::size_t tried_ = 0;
  bool started_ = false;
  bool ended_ = false;
  std::map<std::size_t, double> times_;
  std::optional<std::size_t> best_;
};

} // namespace rpl::engine
