#pragma once
/// The proposer seam: what a proposer worker (`rocm-perf worker propose --kind rule|llm`) asks of
/// one kind of proposer. workers/proposers/proposer_worker.hpp runs it on a job thread of the
/// worker process, so propose() may block (an HTTP call, a libclang parse) and must return by
/// request.timeout_ms; it never throws for the proposer's own failures (a parse error, an endpoint
/// that refused): those are a reply with a status and an error naming the cause and a fix.
///
/// A proposal is text only (a unified diff of the source plus a rationale): nothing in it is run
/// by the worker or by the engine, which applies, guards and compiles it itself.

#include <atomic>
#include <memory>
#include <string>

#include "messages/proposal.hpp"

namespace rpl::workers {

class proposer {
public:
  virtual ~proposer() = default;
  /// "rule", "llm:<model>": recorded with every proposal.
  virtual std::string name() const = 0;
  /// The proposals for request.kernel; `cancel` turns true when the worker stops or the engine
  /// gave up (return soon after, with any status).
  virtual messages::propose_reply propose(const messages::propose_request& request,
                                          const std::atomic<bool>& cancel) = 0;
};

using proposer_ptr = std::unique_ptr<proposer>;

} // namespace rpl::workers
