#pragma once
/// The engine's ROUTER broker (Paranoid Pirate queue, docs/protocol.md): one thread owns the
/// socket, tracks worker liveness, hands each queued compile job to an idle worker, re-queues the
/// jobs of dead workers and drops duplicate replies. Other threads only call submit(); completions
/// come back through each job's callback, on the broker thread. Every time-based decision
/// (heartbeats to send, workers to expire) reads broker_config::clock, so tests drive it with a
/// manual clock.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "engine/broker/broker_stats.hpp"
#include "messages/proposal.hpp"
#include "messages/wire.hpp"
#include "workers/protocol/curve_keys.hpp"

namespace rpl::engine {

/// Where the broker reads the time. steady_clock by default; tests pass a manual clock
/// (tests/support/manual_clock.hpp). Called on the broker thread only.
using broker_clock = std::function<std::chrono::steady_clock::time_point()>;

/// CURVE on the remote endpoints: the engine is the server, with its key pair; its ZAP handler
/// (RFC 27, polled on the broker thread) admits only the client public keys in `allowed`, and a
/// refused or unauthenticated peer is logged and counted.
struct broker_curve {
  workers::curve_keypair server;
  std::map<std::string, std::string> allowed; ///< Z85 public key → name (the allow-list file)
  std::vector<std::string> endpoints;         ///< bound as CURVE servers, after the plain ones
};

struct broker_config {
  std::vector<std::string> bind_endpoints; ///< ipc:// for local workers, tcp:// for --listen
  /// When set, its endpoints are bound with CURVE; `bind_endpoints` stay plain (local ipc://).
  std::optional<broker_curve> curve;
  std::chrono::milliseconds heartbeat{1000};
  int liveness = 3;
  int max_attempts = 3; ///< a job is tried on this many workers before it fails with worker_lost
  /// A worker that fails a job itself (dies mid-job, answers internal_error) gets no job for this
  /// long, doubling per failure in a row up to backoff_max; a job it completes resets it.
  std::chrono::milliseconds backoff_initial{1000};
  std::chrono::milliseconds backoff_max{60000};
  std::int64_t max_message_bytes = 256LL << 20;
  /// Decides when to heartbeat and when a worker is dead. The broker still waits on its socket in
  /// real time (at most min(heartbeat / 2, 100 ms) per turn), so a clock moved by hand is acted on
  /// at the next turn.
  broker_clock clock = [] { return std::chrono::steady_clock::now(); };
  /// The order queued compile jobs go out in: the highest rank first (the engine's expected
  /// compile time, longest first); equal ranks, and every job without this, oldest first.
  std::function<double(const messages::compile_request&)> rank;
};

class broker {
public:
  using completion = std::function<void(const messages::compile_reply&)>;
  using propose_completion = std::function<void(const messages::propose_reply&)>;

  explicit broker(broker_config config);
  ~broker();
  broker(const broker&) = delete;
  broker& operator=(const broker&) = delete;

  /// Binds the endpoints and starts the broker thread. Throws zmq::error_t on a bad endpoint.
  void start();
  /// The endpoints as bound, plain ones first, then the CURVE ones: a `tcp://HOST:*` endpoint
  /// appears with the port the system chose. Set by start(), unchanged after, so any thread may
  /// read it once start() has returned.
  const std::vector<std::string>& bound_endpoints() const { return bound_; }
  /// Stops the thread; jobs still queued are answered with worker_lost ("engine stopping").
  void stop();

  /// Thread-safe. `done` runs exactly once, on the broker thread. `avoid_worker` (a worker_id):
  /// never give this job to that worker (the determinism check's second build); the job waits
  /// while no other worker fits it.
  std::uint64_t submit(std::string run_id,
                       messages::compile_request request,
                       completion done,
                       std::string avoid_worker = {});

  /// Thread-safe. A proposer job (messages/proposal.hpp) for a worker that said READY with service
  /// "propose" and `proposer_kind` among its capabilities (READY's compilers: "rule", "llm").
  /// `done` runs exactly once, on the broker thread; a job no worker answers within
  /// request.timeout_ms fails with propose_status::timed_out, and one whose worker died is tried
  /// on another (max_attempts), then fails with the reason.
  std::uint64_t submit_proposal(std::string run_id,
                                std::string proposer_kind,
                                messages::propose_request request,
                                propose_completion done);
  /// Runs on the broker thread once per loop turn (the engine uses it to supervise local workers).
  /// Set once, before or after start().
  void set_tick(std::function<void()> tick);

  /// Fails every queued job with worker_lost. Only from the tick (the broker thread), for when no
  /// worker can ever come to take them.
  void fail_queued(const std::string& why);

  /// Jobs queued and not handed to a worker yet. Only from the tick (the broker thread).
  std::size_t queued_jobs() const { return queue_.size(); }
  /// How long queued jobs have had no connected worker that fits them (none connected, or none
  /// with the job's compiler and toolchain), on broker_config::clock; zero while every queued job
  /// has one (busy or not) or nothing is queued. Only from the tick. The engine tells the user,
  /// falls back to local workers and gives up after --worker-wait, from this.
  std::chrono::steady_clock::duration waiting_for_workers() const;
  /// Why the oldest job without a fitting worker has none, for the user; empty when every queued
  /// job has one. Only from the tick.
  const std::string& unplaced_reason() const { return unplaced_reason_; }

  std::size_t live_workers() const { return live_workers_.load(); }
  broker_stats stats() const;

private:
  struct job {
    std::uint64_t id = 0;
    std::string run_id;
    messages::compile_request request;
    completion done;
    int attempts = 0;
    std::string avoid_worker;
    std::string compiler; ///< argv[0]'s file name, what workers' compilers and toolchains name
    /// A proposer job instead of a compile job: `compiler` then holds the proposer kind, and the
    /// job needs a worker of service "propose".
    std::optional<messages::propose_request> proposal;
    propose_completion propose_done;
    std::chrono::steady_clock::time_point deadline{}; ///< proposer jobs: fail after this
    /// argv[0] is a path: workers run that binary, not the one READY named, and check its
    /// identity themselves (compile_status::toolchain_mismatch).
    bool compiler_is_path = false;
  };
  struct worker {
    std::string identity;
    std::string worker_id;
    std::chrono::steady_clock::time_point expiry;
    std::chrono::steady_clock::time_point last_sent;
    std::uint32_t slots = 1;
    std::string service = "compile";               ///< READY's service: "compile" or "propose"
    std::vector<std::string> compilers;            ///< allow-listed names (proposer kinds)
    std::map<std::string, std::string> toolchains; ///< compiler name -> toolchain id
    std::vector<job> current;                      ///< at most `slots`
    /// Chunked artifacts being received, by job id; a job whose chunks broke the rules (out of
    /// order, over its max_artifact_bytes) has its reason in `broken` instead.
    std::map<std::uint64_t, std::vector<char>> assembling;
    std::map<std::uint64_t, std::string> broken;
    bool full() const { return current.size() >= slots; }
  };
  /// Failures in a row of one worker (by worker_id, so that a reconnect does not reset them).
  struct failure_record {
    int in_a_row = 0;
    std::chrono::steady_clock::time_point benched_until{};
  };

  void run();
  void answer_zap();
  void read_monitor();
  void handle_message(std::vector<zmq::message_t>& frames);
  void dispatch();
  void purge(std::chrono::steady_clock::time_point now);
  void send_heartbeats(std::chrono::steady_clock::time_point now);
  void track_waiting(std::chrono::steady_clock::time_point now);
  void requeue(job j, const std::string& why);
  void requeue_all(worker& w, const std::string& why);
  bool fits(const worker& w, const job& j);
  void bench(const std::string& worker_id, const std::string& why);
  void fail(job& j, messages::compile_status status, const std::string& why);
  template <class T>
  void send(worker& w, std::uint64_t job_id, const std::string& run_id, const T& body);
  void send_disconnect(const std::string& identity, const std::string& reason);
  worker* find(const std::string& identity);
  void on_ready(const std::string& identity, worker* known, const std::string& body);
  void on_propose_reply(const std::string& identity,
                        worker* known,
                        std::uint64_t job_id,
                        const std::string& body);
  void expire_proposals(std::chrono::steady_clock::time_point now);
  void on_chunk(const std::string& identity,
                worker* known,
                std::uint64_t job_id,
                const std::string& body);
  void on_reply(const std::string& identity,
                worker* known,
                std::uint64_t job_id,
                const std::string& body);
  void take_submitted();
  void receive_all();
  void count(std::uint64_t broker_stats::*counter);

  broker_config config_;
  zmq::context_t context_{1};
  zmq::socket_t router_;
  std::optional<zmq::socket_t> zap_;     ///< REP on inproc://zeromq.zap.01 (with curve)
  std::optional<zmq::socket_t> monitor_; ///< the router's handshake failures (with curve)
  std::vector<std::string> bound_;       ///< written by start() only
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> live_workers_{0};

  std::mutex submit_mutex_;
  std::deque<job> submitted_; // guarded by submit_mutex_; drained by the broker thread
  std::atomic<std::uint64_t> next_job_id_{1};
  std::function<void()> tick_;
  std::atomic<bool> tick_set_{false}; // publishes tick_ to a broker thread already running

  // Broker-thread state.
  std::deque<job> queue_;
  std::vector<worker> workers_;
  std::uint64_t heartbeat_sequence_ = 0;
  /// Since when jobs have been queued with no worker connected.
  std::optional<std::chrono::steady_clock::time_point> waiting_since_;
  std::string unplaced_reason_;
  std::map<std::string, failure_record> failures_;
  std::set<std::string> mismatches_logged_; // worker_id + compiler
  /// By worker_id: the argv[0] paths where that worker has another binary (its own check).
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> path_mismatches_;
  std::set<std::string> worker_ids_seen_; // for broker_stats::workers_seen
  mutable std::mutex stats_mutex_;
  broker_stats stats_;
};

} // namespace rpl::engine
