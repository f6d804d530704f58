// The first guard: the proposal's diff applies to the incumbent source and changes something.
// It is also what makes the patched text the later guards read (guard_subject::patched_text).

#include "engine/optimize/proposal_guard.hpp"
#include "stages/optimize/unified_diff.hpp"

namespace rpl::engine {

namespace {

class patch_applies final : public proposal_guard {
public:
  std::string_view name() const override { return "patch_applies"; }
  guard_input reads() const override { return guard_input::patched_source; }
  std::optional<guard_refusal> check(guard_subject& s) const override {
    const auto patched = stages::optimize::apply_unified_diff(s.incumbent_text, s.diff);
    if (!patched.ok) {
      return guard_refusal{attempt_stage::apply, attempt_finding::patch_does_not_apply,
                           patched.error};
    }
    if (patched.text == s.incumbent_text) {
      return guard_refusal{attempt_stage::apply, attempt_finding::empty_patch,
                           "the diff changes nothing"};
    }
    s.patched_text = patched.text;
    return std::nullopt;
  }
};

} // namespace

std::unique_ptr<proposal_guard> make_patch_applies_guard() {
  return std::make_unique<patch_applies>();
}

} // namespace rpl::engine
