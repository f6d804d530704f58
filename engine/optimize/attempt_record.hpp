#pragma once
/// One iteration of the optimization loop for one kernel: a proposal and everything that happened
/// to it (guards, compile, validation, measurement, verdict). Stored as a row of
/// optimize_attempts (engine/optimize/optimize_journal.hpp) and as one JSON line of
/// attempts.jsonl; fed back to the proposers as history (messages::proposal_attempt).

#include <cstdint>
#include <string>
#include <vector>

#include "engine/optimize/attempt_outcome.hpp"

namespace rpl::engine {

struct attempt_record {
  std::string kernel;
  std::uint32_t sequence = 0; ///< 1, 2, ... per kernel
  std::uint32_t iteration = 0;
  std::string proposer; ///< "rule", "llm:<model>"
  /// The proposer process that sent it: its worker_id (host:pid), the way to tell a remote
  /// proposer (--listen) from the engine's own.
  std::string worker;
  std::string proposal_id;
  std::string title;
  std::string rationale;
  std::string diff; ///< against the source the proposal was made for (the incumbent)
  std::string diff_hash;
  std::uint32_t repair_round = 0;
  attempt_stage stage = attempt_stage::none;       ///< where it ended
  attempt_verdict verdict = attempt_verdict::none; ///< what was decided there
  attempt_finding guard = attempt_finding::none;   ///< the finding that caught it, if one did
  bool resumed = false; ///< taken from an earlier run's journal, not judged again in this one
  std::string detail;   ///< the finding, the compiler's errors, the figures
  std::int64_t compile_ns = 0;
  std::string validation;  ///< JSON: the cases and their outcomes
  std::string measurement; ///< JSON: medians, relative change, interval, rounds
  double speedup = 0.0;    ///< incumbent / candidate median, when measured
};

} // namespace rpl::engine
