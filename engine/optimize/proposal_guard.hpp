#pragma once
/// The guard seam: every check a proposal must pass before its paired measurement is one
/// `proposal_guard`, and guards/guard_list.cpp holds the one ordered list of them. A guard says
/// its name, what it reads (which decides the room of the journey it runs in: the planner before
/// the compile gateway, the screen room after it, the lane room) and returns the finding that
/// refuses the candidate, or nothing. Adding a guard is one file in guards/ and one line in the
/// list.

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/optimize/attempt_outcome.hpp"
#include "engine/optimize/journey_context.hpp"
#include "messages/wire.hpp"

namespace rpl::workers {
class lane_backend;
}

namespace rpl::engine {

/// What a guard reads; each input is there from one room of the journey on.
enum class guard_input {
  patched_source, ///< the diff applied to the incumbent, and its parse (planner room)
  code_object,    ///< the build: its bytes and the compiler's report (screen room)
  lane_outputs,   ///< the candidate run on the lane against the original (lane room)
  /// A candidate measured faster, about to be accepted: what only those pay for (lane room).
  pre_acceptance,
};

const char* to_string(guard_input input);

/// One candidate as far as it got, for the guards to read (and the patching guard to fill in).
struct guard_subject {
  guard_subject(const journey_context& j, const std::string& incumbent, const std::string& d)
      : journey(j), incumbent_text(incumbent), diff(d) {}
  const journey_context& journey;
  const std::string& incumbent_text; ///< the source the proposal was made for
  const std::string& diff;
  /// A knob configuration's macro names (proposal_ticket::knob_macros); none otherwise.
  const std::vector<std::string>* knob_macros = nullptr;
  /// Filled in by the guard that applies the diff; read by those after it.
  std::string patched_text;
  std::optional<stages::optimize::source_model> patched_model;
  /// The build (screen room on).
  const messages::compile_reply* reply = nullptr;
  const std::vector<std::byte>* bytes = nullptr;
  std::filesystem::path artifact;
  /// The lane (lane room): guards that run the candidate.
  workers::lane_backend* lane = nullptr;
  /// What the lane guards found, case by case (the attempt's `validation`).
  nlohmann::json validation;
};

/// The finding that refuses a candidate: where, which, and what it saw.
struct guard_refusal {
  attempt_stage stage = attempt_stage::none;
  attempt_finding finding = attempt_finding::none;
  std::string detail;
  /// For the original kernel's own run: the lane ran it and its outputs differed from the
  /// reference (a launch file's tolerance or arguments), not a lane failure.
  bool outputs_differ = false;
};

class proposal_guard {
public:
  virtual ~proposal_guard() = default;
  virtual std::string_view name() const = 0;
  virtual guard_input reads() const = 0;
  /// The refusal, or nullopt to let the candidate through. Never throws for the candidate's
  /// sake: what a candidate does wrong is a finding.
  virtual std::optional<guard_refusal> check(guard_subject& subject) const = 0;
};

/// Every guard, in the order a candidate meets them (guards/guard_list.cpp).
std::span<const std::unique_ptr<proposal_guard>> proposal_guards();

/// Whether an attempt's validation record (JSON) shows the sanitizer pass's four tools clean: an
/// acceptance without it was not sanitizer-checked (guards/sanitizer.cpp).
bool sanitizer_checked(const std::string& validation);

/// Runs the guards that read `input`, in list order; the first refusal ends the run.
std::optional<guard_refusal> run_guards(guard_input input, guard_subject& subject);

} // namespace rpl::engine
