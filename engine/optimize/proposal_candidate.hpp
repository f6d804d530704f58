#pragma once
/// A proposal as the tuning graph carries it: the graph's candidate_state plus what optimize's
/// rooms fill in (proposal_journey.hpp). A `proposal_ticket` is what the proposer side
/// (proposal_feed) hands the planner room: a proposal to check, or an attempt it decided itself
/// (a tunable proposal's summary), which then crosses the graph without a compile or a lane so
/// that the store room journals it like any other.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph/candidate_state.hpp"
#include "engine/optimize/attempt_record.hpp"
#include "messages/proposal.hpp"
#include "stages/optimize/paired_verdict.hpp"

namespace rpl::engine {

struct proposal_ticket {
  messages::proposal proposal;
  std::string kind; ///< the proposer kind asked ("rule", "llm"; stages/optimize/proposer_kinds.hpp)
  std::string proposer; ///< as the proposer named itself ("llm:<model>")
  std::string worker;   ///< the proposer process (host:pid)
  std::uint32_t repair_round = 0;
  std::uint32_t iteration = 0;
  /// A configuration of a tunable proposal (knob_search): its index in the knob space; it is
  /// timed alone, not against the incumbent.
  std::optional<std::size_t> knob;
  /// With `knob`: the search's macro names (the source guard's verdict is shared between
  /// configurations that differ only in their values inside the kernel's body).
  std::vector<std::string> knob_macros;
  /// Overrides the attempt's diff hash (a configuration's hash has its own space).
  std::string diff_hash;
  /// An attempt already decided on the proposer side; nothing is checked or measured.
  std::optional<attempt_record> decided;
};

struct proposal_candidate : candidate_state {
  proposal_ticket ticket;
  attempt_record attempt;
  std::uint64_t made_for = 0;   ///< the incumbent's generation the proposal was applied to
  std::string incumbent_text;   ///< the source the proposal was made for (planner room)
  std::string patched;          ///< the incumbent with the diff applied
  std::vector<std::byte> bytes; ///< the code object (the artifact guard reads it)
  std::chrono::steady_clock::time_point compile_started;
  /// The paired comparison with the incumbent, when it ran.
  std::optional<stages::optimize::paired_verdict> paired;
  /// Made for an incumbent that was replaced before its turn: dropped, not journaled.
  bool superseded = false;
};

using proposal_ptr = std::shared_ptr<proposal_candidate>;

} // namespace rpl::engine
