// The source guard (stages/optimize/source_guard.hpp): libclang's parse of the patched source
// against the user's original. Against the original, not the incumbent: whatever was accepted
// before must also have kept the rest of the translation unit as it was.

#include "engine/optimize/proposal_guard.hpp"
#include "stages/optimize/source_guard.hpp"

namespace rpl::engine {

namespace {

/// The finding to name when several fired: a new global is also a declaration outside the
/// target, but "new_global" says what the change is.
attempt_finding
most_specific_source_finding(const std::vector<stages::optimize::guard_finding>& findings) {
  for (const auto guard :
       {attempt_finding::kernel_missing, attempt_finding::signature_changed,
        attempt_finding::new_global, attempt_finding::inline_asm, attempt_finding::device_launch,
        attempt_finding::host_code, attempt_finding::directive_changed}) {
    for (const auto& f : findings) {
      if (f.guard == to_string(guard)) {
        return guard;
      }
    }
  }
  return parse_finding(findings.front().guard).value_or(attempt_finding::outside_target_changed);
}

class source_rules final : public proposal_guard {
public:
  std::string_view name() const override { return "source_rules"; }
  guard_input reads() const override { return guard_input::patched_source; }
  std::optional<guard_refusal> check(guard_subject& s) const override {
    std::string error;
    s.patched_model = s.journey.parse(s.patched_text, error);
    if (!s.patched_model) {
      return guard_refusal{attempt_stage::source_guard, attempt_finding::unparsable, error};
    }
    const auto& target = s.journey.target();
    const auto findings =
        stages::optimize::check_source(s.journey.original().model, target.source_text,
                                       *s.patched_model, s.patched_text, target.kernel);
    if (findings.empty()) {
      return std::nullopt;
    }
    std::string detail;
    for (const auto& f : findings) {
      detail += (detail.empty() ? "" : "\n") + f.guard + ": " + f.detail;
    }
    return guard_refusal{attempt_stage::source_guard, most_specific_source_finding(findings),
                         detail};
  }
};

} // namespace

std::unique_ptr<proposal_guard> make_source_rules_guard() {
  return std::make_unique<source_rules>();
}

} // namespace rpl::engine
