// The source guard (stages/optimize/source_guard.hpp): libclang's parse of the patched source
// against the user's original. Against the original, not the incumbent: whatever was accepted
// before must also have kept the rest of the translation unit as it was.

#include "engine/optimize/proposal_guard.hpp"
#include "stages/optimize/source_guard.hpp"
#include "stages/optimize/tunable_macros.hpp"

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

/// Every use of the subject's knob macros is inside `kernel`'s body (its definition's braces).
bool knobs_inside_kernel(const guard_subject& s, const std::string& kernel) {
  for (const auto& d : s.patched_model->declarations) {
    if (d.kind == stages::optimize::decl_kind::kernel && d.is_definition && d.has_body &&
        d.name == kernel) {
      return stages::optimize::knobs_used_only_within(s.patched_text, *s.knob_macros, d.body_offset,
                                                      d.range.end);
    }
  }
  return false;
}

class source_rules final : public proposal_guard {
public:
  std::string_view name() const override { return "source_rules"; }
  guard_input reads() const override { return guard_input::patched_source; }
  std::optional<guard_refusal> check(guard_subject& s) const override {
    // A knob configuration differs from one that passed only in its knobs' values inside the
    // kernel's body, which none of the findings below reads: that verdict holds (no parse).
    std::string knob_key;
    std::unique_lock<std::mutex> knob_lock;
    if (s.knob_macros != nullptr && !s.knob_macros->empty()) {
      knob_lock = s.journey.knob_guard_lock();
      knob_key = stages::optimize::without_knob_values(s.patched_text, *s.knob_macros);
      if (s.journey.knob_text_passed(knob_lock, knob_key)) {
        return std::nullopt;
      }
    }
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
      if (!knob_key.empty() && knobs_inside_kernel(s, target.kernel)) {
        s.journey.remember_knob_text(knob_lock, std::move(knob_key));
      }
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
