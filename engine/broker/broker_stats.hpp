#pragma once
/// The broker's counters (engine/broker/broker.hpp), apart from the broker so that code which
/// reports them (the autotune result) does not include ZeroMQ.

#include <cstdint>

namespace rpl::engine {

/// What the broker saw during a run; every counter only grows.
struct broker_stats {
  std::uint64_t workers_seen = 0;    ///< distinct workers (by worker_id) that sent READY
  std::uint64_t workers_expired = 0; ///< workers presumed dead after `liveness` silent intervals
  std::uint64_t jobs_requeued = 0;   ///< jobs put back at the front of the queue (not those failed)
  /// Replies from a known worker for a job it no longer holds (answered already, or taken away
  /// from it by a READY or DISCONNECT).
  std::uint64_t duplicate_replies = 0;
  /// Replies from a peer the broker does not know (typically a worker presumed dead that answers
  /// late); dropped, and the peer told to DISCONNECT.
  std::uint64_t unknown_replies = 0;
  /// Messages dropped because they could not be read (frame count, header, version, kind, body)
  /// or have no place in the protocol (a kind a worker never sends).
  std::uint64_t malformed_messages = 0;
  std::uint64_t peers_admitted = 0; ///< CURVE clients whose key the allow-list holds
  /// CURVE clients refused: an unlisted key (ZAP), or a failed handshake (no CURVE, wrong server
  /// key).
  std::uint64_t peers_refused = 0;
  /// Times a worker was benched (back-off) after failing a job itself.
  std::uint64_t workers_benched = 0;
  /// Distinct (worker, compiler) pairs whose toolchain differs from the one a job asks for.
  std::uint64_t toolchain_mismatches = 0;
};

} // namespace rpl::engine
