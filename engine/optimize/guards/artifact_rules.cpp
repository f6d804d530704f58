// The artifact guard (stages/optimize/artifact_guard.hpp): the candidate's code object against the
// original's, before any GPU time: the same kernel symbols, the same parameter layout, no new
// device globals.

#include "engine/optimize/proposal_guard.hpp"
#include "stages/optimize/artifact_guard.hpp"

namespace rpl::engine {

namespace {

class artifact_rules final : public proposal_guard {
public:
  std::string_view name() const override { return "artifact_rules"; }
  guard_input reads() const override { return guard_input::code_object; }
  std::optional<guard_refusal> check(guard_subject& s) const override {
    const auto& original = s.journey.original().bytes;
    const auto& kernel = s.journey.target().kernel;
    std::vector<std::pair<std::string, std::string>> findings;
    if (const auto& replace = s.journey.services().check_artifact) {
      findings = replace(original, *s.bytes, kernel);
    } else {
      for (const auto& f : stages::optimize::check_artifact(original, *s.bytes, kernel, kernel)) {
        findings.emplace_back(f.guard, f.detail);
      }
    }
    if (findings.empty()) {
      return std::nullopt;
    }
    std::string detail;
    for (const auto& [guard, text] : findings) {
      detail += (detail.empty() ? "" : "\n") + guard + ": " + text;
    }
    return guard_refusal{
        attempt_stage::artifact_guard,
        parse_finding(findings.front().first).value_or(attempt_finding::unreadable), detail};
  }
};

} // namespace

std::unique_ptr<proposal_guard> make_artifact_rules_guard() {
  return std::make_unique<artifact_rules>();
}

} // namespace rpl::engine
