#pragma once
/// The proposer messages (docs/protocol.md, "Proposers"): the engine asks a proposer worker
/// (`rocm-perf worker propose --kind rule|llm`) for source changes to one kernel, and the worker
/// answers with proposals, each a unified diff of the kernel's source file plus a rationale. The
/// engine never runs anything a proposer sends: it applies the diff to its own copy of the source,
/// checks it (stages/optimize/source_guard.hpp), compiles it with the user's build template and
/// checks the code object before any GPU time. Maps keyed by field name, like every wire type; the
/// msgpack adaptors are in messages/wire_msgpack.hpp.

#include <cstdint>
#include <string>
#include <vector>

#include "messages/wire.hpp"

namespace rpl::messages {

/// One earlier attempt, as the proposer is told about it (the history of an LLM prompt; a rule
/// proposer skips the transforms it already proposed).
struct proposal_attempt {
  std::string proposal_id; ///< the proposal's id ("rule:unroll:loop2:4", "llm:3")
  std::string title;
  std::string diff;    ///< the unified diff that was tried
  std::string stage;   ///< where it ended: "source_guard", "compile", "artifact_guard",
                       ///< "validation", "measurement", "accepted"
  std::string verdict; ///< "rejected", "failed", "slower", "within_noise", "accepted"
  std::string detail;  ///< the guard's finding, the compiler's errors (truncated), the figures
};

/// What the proposer may read: everything is text or numbers, nothing to execute.
struct propose_request {
  static constexpr message_kind kind = message_kind::propose_request;
  std::string kernel;      ///< the target kernel's name as written in the source
  std::string source_name; ///< the file's name (no directories), for the diff's headers
  std::string source;      ///< the whole translation unit, as the user's file holds it
  std::string language;    ///< "cuda" or "hip"
  std::vector<std::string> compile_flags; ///< -D/-I/-std flags of the build template (parsing)
  std::uint32_t block_threads = 0;        ///< threads per block at the launch (0: unknown)
  std::string analysis; ///< the kernel's analysis, as text: class, counters, limiter, share
  std::vector<proposal_attempt> history; ///< earlier attempts on this kernel, oldest first
  /// 0: new proposals; 1 or 2: repair round for `history.back()`, whose compiler errors are in
  /// its detail.
  std::uint32_t repair_round = 0;
  std::uint32_t max_proposals = 8;
  std::uint32_t timeout_ms = 120000; ///< the engine gives up on the reply after this long
};

/// A compile-time knob a proposal introduces: `#define NAME default` under `#ifndef NAME` in its
/// diff (so `-DNAME=v` overrides it). The engine searches the proposal's knobs over their values
/// with autotune's strategies and goes on with the fastest configuration written in.
struct tunable_macro {
  std::string name;
  std::vector<std::int64_t> values; ///< the default first
  std::int64_t default_value = 0;   ///< the value the diff defines: the code as it was
};

struct proposal {
  std::string id;        ///< stable for the same change of the same source ("rule:unroll:L42:4")
  std::string title;     ///< one line: "#pragma unroll 4 on the k0 loop (line 42)"
  std::string rationale; ///< why it could help, for the report
  std::string diff;      ///< unified diff of source_name (---/+++ headers, @@ hunks)
  /// Empty for a plain change. `{}`: an initializer of the four strings may leave it out without
  /// -Wmissing-field-initializers.
  std::vector<tunable_macro> tunables{};
};

enum class propose_status : std::uint8_t {
  ok = 0,          ///< proposals (possibly none: nothing applies)
  failed = 1,      ///< the proposer could not work (parse error, endpoint error); see error
  unavailable = 2, ///< the proposer's backend is missing (no libclang, no endpoint configured)
  timed_out = 3,   ///< the proposer's own deadline passed (an endpoint that did not answer)
};

struct propose_reply {
  static constexpr message_kind kind = message_kind::propose_reply;
  propose_status status = propose_status::failed;
  std::string proposer;  ///< "rule", "llm:<model>"
  std::string worker_id; ///< host:pid
  std::string error;     ///< for any status but ok: what went wrong and how to fix it
  std::vector<proposal> proposals;
  std::int64_t elapsed_ns = 0;
  /// For the report, one line each: why a transform did not apply ("vector loads: the loop at line
  /// 12 of `k`: the loop body calls atomicAdd"), proposals left out over max_proposals. Added
  /// after elapsed_ns; a reply without it decodes with none.
  std::vector<std::string> notes{};
};

const char* to_string(propose_status status);

} // namespace rpl::messages
