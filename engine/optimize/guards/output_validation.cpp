// Validation (stages/optimize/validation_plan.hpp): on the lane, the candidate's outputs against
// the original kernel's at the launch size (two seeds), a smaller and an odd size, from poisoned
// outputs; or, for a captured dispatch, against what the original wrote in the application. The
// finding names the case that failed.

#include "engine/optimize/proposal_guard.hpp"

namespace rpl::engine {

namespace {

class output_validation final : public proposal_guard {
public:
  std::string_view name() const override { return "output_validation"; }
  guard_input reads() const override { return guard_input::lane_outputs; }
  std::optional<guard_refusal> check(guard_subject& s) const override {
    const auto failed = s.journey.validate(*s.lane, s.artifact, s.validation);
    if (!failed) {
      return std::nullopt;
    }
    return guard_refusal{attempt_stage::validation, failed->finding, failed->detail,
                         failed->outputs_differ};
  }
};

} // namespace

std::unique_ptr<proposal_guard> make_output_validation_guard() {
  return std::make_unique<output_validation>();
}

} // namespace rpl::engine
