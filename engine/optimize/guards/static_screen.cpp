// The static screen (engine/autotune/candidate_screen.hpp, autotune's): a launch the device would
// refuse (registers, shared memory, threads per block at the launch's geometry) gets no lane time.

#include "engine/autotune/candidate_screen.hpp"
#include "engine/optimize/proposal_guard.hpp"

namespace rpl::engine {

namespace {

class static_screen final : public proposal_guard {
public:
  std::string_view name() const override { return "static_screen"; }
  guard_input reads() const override { return guard_input::code_object; }
  std::optional<guard_refusal> check(guard_subject& s) const override {
    std::string error;
    const auto launch =
        s.journey.replay() ? std::nullopt : s.journey.resolve(s.journey.target().launch, error);
    const auto screen =
        screen_candidate(*s.reply, s.artifact, launch, s.journey.settings().device_arch);
    if (screen.refusal.empty()) {
      return std::nullopt;
    }
    return guard_refusal{attempt_stage::screen, attempt_finding::static_screen, screen.refusal};
  }
};

} // namespace

std::unique_ptr<proposal_guard> make_static_screen_guard() {
  return std::make_unique<static_screen>();
}

} // namespace rpl::engine
