#pragma once
/// The proposer worker process (`rocm-perf worker propose --kind rule|llm`): one proposer
/// (workers/proposers/proposer.hpp) behind the generic worker_session, which speaks
/// docs/protocol.md to the engine's broker. READY says service "propose" and names the proposer's
/// kind in `compilers`, so the broker hands it only proposer jobs of that kind. A job runs on its
/// own thread (a proposer may block on an endpoint for minutes) while the session keeps the
/// heartbeats going; abandoning a job sets the proposer's cancel flag and detaches nothing: the
/// thread is joined before the next job starts.

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "workers/proposers/proposer.hpp"
#include "workers/protocol/curve_keys.hpp"

namespace rpl::workers {

struct proposer_worker_options {
  std::string kind;     ///< "rule" or "llm": READY's capability and the jobs this worker takes
  std::string endpoint; ///< the broker's ROUTER
  std::chrono::milliseconds heartbeat{1000};
  int liveness = 3;
  std::chrono::milliseconds reconnect_initial{1000};
  std::chrono::milliseconds reconnect_max{32000};
  std::optional<curve_client_keys> curve;
  bool once = false;
};

/// Serves proposer jobs with `proposer` until `stop_requested`; returns the exit code (0). Throws
/// std::invalid_argument for bad options.
int run_proposer_worker(const proposer_worker_options& options,
                        proposer_ptr proposer,
                        std::atomic<bool>& stop_requested);

} // namespace rpl::workers
