// The one ordered list of the guards a proposal meets (engine/optimize/proposal_guard.hpp). A
// candidate meets them in this order; each runs in the room where what it reads exists (the
// planner room before the compile gateway, the screen room after the build, the lane room).
// A new guard: its file in this folder, and one line here.

#include "engine/optimize/proposal_guard.hpp"

namespace rpl::engine {

std::unique_ptr<proposal_guard> make_patch_applies_guard();     // patch_applies.cpp
std::unique_ptr<proposal_guard> make_source_rules_guard();      // source_rules.cpp
std::unique_ptr<proposal_guard> make_artifact_rules_guard();    // artifact_rules.cpp
std::unique_ptr<proposal_guard> make_static_screen_guard();     // static_screen.cpp
std::unique_ptr<proposal_guard> make_output_validation_guard(); // output_validation.cpp
std::unique_ptr<proposal_guard> make_sanitizer_guard();         // sanitizer.cpp

std::span<const std::unique_ptr<proposal_guard>> proposal_guards() {
  static const std::vector<std::unique_ptr<proposal_guard>> guards = [] {
    std::vector<std::unique_ptr<proposal_guard>> list;
    list.push_back(make_patch_applies_guard());     // the diff applies and changes something
    list.push_back(make_source_rules_guard());      // only the target function changed
    list.push_back(make_artifact_rules_guard());    // same kernel symbols and parameter layout
    list.push_back(make_static_screen_guard());     // resources the device would launch
    list.push_back(make_output_validation_guard()); // the original's outputs, every case
    list.push_back(make_sanitizer_guard());         // compute-sanitizer, before acceptance
    return list;
  }();
  return guards;
}

const char* to_string(guard_input input) {
  switch (input) {
  case guard_input::patched_source: return "patched_source";
  case guard_input::code_object: return "code_object";
  case guard_input::lane_outputs: return "lane_outputs";
  case guard_input::pre_acceptance: return "pre_acceptance";
  }
  return "?";
}

std::optional<guard_refusal> run_guards(guard_input input, guard_subject& subject) {
  for (const auto& guard : proposal_guards()) {
    if (guard->reads() != input) {
      continue;
    }
    if (auto refusal = guard->check(subject)) {
      refusal->detail = clip_detail(std::move(refusal->detail));
      return refusal;
    }
  }
  return std::nullopt;
}

} // namespace rpl::engine
