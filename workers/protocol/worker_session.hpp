#pragma once
/// The worker side of docs/protocol.md, for any kind of worker: one DEALER socket to one broker,
/// READY on every new socket, HEARTBEAT both ways (also while a job runs), the broker presumed
/// dead after `liveness` silent intervals, reconnects on a new socket with a doubling back-off,
/// DISCONNECT both ways, a cap on message size, and jobs handed to a job_handler. A compile worker
/// and a proposer worker differ only in their handler.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "messages/wire.hpp"
#include "workers/protocol/curve_keys.hpp"
#include "workers/protocol/job_handler.hpp"
#include "workers/protocol/worker_identity.hpp"

namespace rpl::workers {

/// Connection and liveness settings (docs/protocol.md gives the defaults' reasons).
struct worker_session_options {
  std::string service = "compile"; ///< READY's service; also names the worker in logs and errors
  std::string endpoint;            ///< the broker's ROUTER, ipc:// or tcp://
  std::chrono::milliseconds heartbeat{1000}; ///< send HEARTBEAT after this long without sending
  int liveness = 3; ///< intervals of broker silence before the broker is presumed dead
  std::chrono::milliseconds reconnect_initial{1000}; ///< first back-off; doubles per failure
  std::chrono::milliseconds reconnect_max{32000};
  /// ZMQ_MAXMSGSIZE for incoming messages; a reply larger than this would be dropped by the broker
  /// (which sets the same cap), so the session logs it as an error.
  std::size_t max_message_bytes = 256u << 20;
  /// CURVE (curve_keys.hpp): the worker's key pair and the engine's public key, for an engine
  /// endpoint that requires them; none: a plain connection.
  std::optional<curve_client_keys> curve;
  /// Serve one engine only: once a broker has answered, its DISCONNECT or its silence (liveness
  /// intervals) ends run() with 0 instead of reconnecting (workers started for one sweep, e.g. by
  /// Slurm).
  bool once = false;
};

class worker_session {
public:
  /// Checks the options; throws std::invalid_argument naming the bad one and a fix.
  worker_session(worker_session_options options, std::atomic<bool>& stop_requested);
  worker_session(const worker_session&) = delete;
  worker_session& operator=(const worker_session&) = delete;

  /// The identity READY announces (host:pid of this process).
  const worker_identity& identity() const { return identity_; }

  /// Serves the broker until `stop_requested` becomes true (seen within 100 ms), then abandons any
  /// running job, sends DISCONNECT and returns the process exit code (0). Call once.
  int run(job_handler& handler);
  /// The same with one job at a time per handler: READY announces handlers.size() slots and a job
  /// goes to the first idle handler (all of one kind; the first describes the worker).
  int run(const std::vector<job_handler*>& handlers);

private:
  void open_socket();
  void close_socket();
  void reconnect(std::chrono::milliseconds delay);
  bool send(messages::message_kind kind,
            std::uint64_t job_id,
            const std::string& run_id,
            const std::string& body);
  void send_reply(const job_reply& reply);
  void send_heartbeat();
  void poll_once();
  void receive_all();
  void handle_message(std::vector<zmq::message_t>& parts);
  void start_job(const messages::envelope& envelope, const std::string& body);

  using steady = std::chrono::steady_clock;

  worker_session_options options_;
  std::atomic<bool>& stop_;
  worker_identity identity_;
  std::vector<job_handler*> handlers_; // set by run(); never empty then
  void abandon_all(std::string_view why);
  zmq::context_t context_{1};
  std::optional<zmq::socket_t> socket_; // declared after context_: closed before it terminates
  steady::time_point last_heard_{};
  bool served_ = false; ///< a broker has answered since run() began (for `once`)
  bool engine_gone_ = false;
  std::uint64_t jobs_started_ = 0; ///< job requests handed to a handler, for the closing line
  /// When the last message was sent, or a heartbeat's turn came and the send failed: a failed
  /// heartbeat waits for the next turn too, or the loop would spin retrying it.
  steady::time_point last_sent_{};
  /// Messages dropped on this socket since the last one that went out: of the heartbeats only
  /// the first of a run is logged, and the count when one goes out again. A new socket starts at
  /// zero (its first messages are queued before the connection is known to work).
  std::uint64_t dropped_ = 0;
  std::chrono::milliseconds backoff_{};
  std::optional<std::chrono::milliseconds> reconnect_delay_;
  std::uint64_t heartbeat_sequence_ = 0;
};

} // namespace rpl::workers
