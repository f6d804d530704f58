#pragma once
/// The job seam of a worker process: what one kind of worker (compile today, proposer next) does
/// with a request. worker_session runs the protocol around it (connection, READY, heartbeats,
/// liveness, reconnects, DISCONNECT) and calls the handler on its one thread, so a handler needs no
/// locks. A job may run for minutes: start() must return at once and the session polls the job
/// (wait(), then poll()) in the same loop that keeps the heartbeats going.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/wire.hpp"

namespace rpl::workers {

/// A reply the session sends to the broker: frames 2 and 3 of docs/protocol.md.
struct job_reply {
  std::uint64_t job_id = 0; ///< echoes the request's envelope
  std::string run_id;       ///< echoes the request's envelope
  messages::message_kind kind = messages::message_kind::compile_reply;
  std::string body; ///< msgpack, messages::encode() of the reply type
  /// Sent first, in order, with the same job_id (ARTIFACT_CHUNK bodies of a chunked artifact).
  /// `{}`: a designated initializer may leave it out without -Wmissing-field-initializers.
  std::vector<std::pair<messages::message_kind, std::string>> before{};
};

/// What the session waits on, besides its socket, before it polls a running job again.
struct job_wait {
  std::vector<int> fds; ///< readable means "poll me" (a child's output pipe, its pidfd)
  /// Poll by this time even when no fd woke the session (a deadline, or a short tick when a
  /// child's exit cannot be waited on); nullopt: the session's own wake-ups suffice.
  std::optional<std::chrono::steady_clock::time_point> poll_by;
};

class job_handler {
public:
  virtual ~job_handler() = default;

  /// Fills the worker-specific part of READY (service, compilers); the session fills worker_id,
  /// host, pid and heartbeat_ms.
  virtual void describe(messages::ready& hello) const = 0;

  /// The request kind this handler serves (COMPILE_REQUEST for the compile worker). Other kinds
  /// are dropped by the session and logged.
  virtual messages::message_kind request_kind() const = 0;

  /// Starts the job in `body` (a request_kind() body, still encoded) without blocking. Returns the
  /// reply when the job is over at once (rejected, could not start, busy with another job);
  /// nullopt when it runs on and poll() will deliver the reply. job_id is never 0.
  virtual std::optional<job_reply> start(const messages::envelope& envelope,
                                         std::string_view body) = 0;

  /// True while a started job has not delivered its reply.
  virtual bool busy() const = 0;

  /// What to wait on for the running job. Only called while busy().
  virtual job_wait wait() const = 0;

  /// Advances the running job without blocking; returns its reply once, when it has finished.
  /// Called after every wake-up while busy(), whatever woke the session.
  virtual std::optional<job_reply> poll() = 0;

  /// Ends the running job without a reply, because the connection is being reset or the worker is
  /// stopping: the broker re-queues the job itself. A no-op when idle.
  virtual void abandon(std::string_view why) = 0;
};

} // namespace rpl::workers
