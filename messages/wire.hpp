#pragma once
/// Wire types shared by the engine, its broker and the worker processes.
/// Every struct is encoded as a msgpack map keyed by field name (the adaptors are in
/// messages/wire_msgpack.hpp, so including this header costs no msgpack), so a reader ignores
/// fields it does not know and an old writer's missing fields keep their defaults. Enum values are
/// explicit and are never reused; docs/protocol.md is the contract.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "messages/kernel_lane.hpp"

namespace rpl::messages {

/// The first frame of every worker<->broker message; it names the protocol family and its major
/// version, so a peer speaking anything else is refused before decoding.
inline constexpr const char* protocol_header = "RPLW01";
inline constexpr std::uint32_t protocol_version = 1;

enum class message_kind : std::uint8_t {
  ready = 1,
  heartbeat = 2,
  disconnect = 3,
  compile_request = 4,
  compile_reply = 5,
  measure_request = 6,
  measure_result = 7,
  verdict = 8,
  artifact_chunk = 9,
  propose_request = 10, ///< engine -> proposer worker (messages/proposal.hpp)
  propose_reply = 11,   ///< proposer worker -> engine
};

/// Outcome of one compile job. `ok` is the only status that carries a usable artifact.
enum class compile_status : std::uint8_t {
  ok = 0,
  failed = 1,         ///< the compiler exited non-zero or was killed by a signal
  timed_out = 2,      ///< the per-job deadline expired; the compiler's process group was killed
  rejected = 3,       ///< the request was refused (compiler not allow-listed, bad file name)
  worker_lost = 4,    ///< the job was re-queued too many times after worker deaths
  internal_error = 5, ///< the worker could not run the job (temp dir, fork, I/O)
  no_artifact = 6,    ///< the compiler exited 0 but did not write {OUT}
  too_large = 7,      ///< the artifact exceeds the request's max_artifact_bytes
  /// argv[0] is a path, and this worker's binary there is not the request's toolchain_id: the
  /// broker sends the job to another worker (never the candidate's status).
  toolchain_mismatch = 8,
};

/// Outcome of measuring one candidate on one lane.
enum class measure_status : std::uint8_t {
  ok = 0,
  nonzero_exit = 1,
  crashed = 2,       ///< killed by a signal it did not ask for
  timed_out = 3,     ///< a run exceeded --timeout; its process group was killed
  launch_failed = 4, ///< fork/exec failed (missing binary, permissions)
  not_run = 5,       ///< the candidate never reached a lane (its compile failed)
  wrong_result = 6,  ///< it ran, but its outputs differ from the reference beyond the tolerance
};

/// Acceptance decision. `invalid` covers every failure: build, crash, hang, wrong exit status.
enum class verdict_kind : std::uint8_t {
  faster = 1,
  slower = 2,
  same = 3,
  ambiguous = 4,
  invalid = 5,
};

struct envelope {
  std::uint32_t version = protocol_version;
  message_kind kind = message_kind::heartbeat;
  std::uint64_t job_id = 0; ///< 0 for messages that belong to no job
  std::string run_id;
};

/// One compiler as a host has it (workers/compilers/toolchain_identity.hpp): the engine sends a
/// job only to workers whose identity for the job's compiler equals its own (or a pinned one).
struct toolchain {
  std::string name;    ///< the allow-listed name, argv[0] of a build (g++, hipcc, nvcc)
  std::string path;    ///< resolved through PATH and symlinks
  std::string version; ///< the first line of `NAME --version`
  std::string hash;    ///< content hash of the resolved binary
  std::string id;      ///< "NAME | version | hash": equal ids compile alike; the path may differ
};

struct ready {
  static constexpr message_kind kind = message_kind::ready;
  std::string service = "compile";
  std::string worker_id; ///< host:pid, for logs and the artifacts table
  std::string host;
  std::int64_t pid = 0;
  std::vector<std::string> compilers; ///< allow-listed compiler names this worker runs
  std::uint32_t heartbeat_ms = 0;     ///< the worker's own interval, so mismatches are visible
  std::uint32_t cores = 0;            ///< CPUs this worker may run on (its affinity mask)
  std::uint64_t memory_available_bytes = 0; ///< MemAvailable when it said READY
  /// Jobs it runs at once (--slots, default its cores); 0 from an older worker means 1.
  std::uint32_t slots = 0;
  /// The allow-listed compilers found on this host, with their identity; an older worker sends
  /// none and gets only jobs whose identity the engine does not check.
  std::vector<toolchain> toolchains;
};

struct heartbeat {
  static constexpr message_kind kind = message_kind::heartbeat;
  std::uint64_t sequence = 0; ///< numbered so that gaps are visible in traces
};

struct disconnect {
  static constexpr message_kind kind = message_kind::disconnect;
  std::string reason;
};

/// The reason of the DISCONNECT a broker sends each worker when its engine ends; a worker serving
/// one engine (--once) leaves on it, every other DISCONNECT makes a worker reconnect.
inline constexpr const char* engine_finished = "engine finished";

struct source_file {
  std::string name;    ///< relative path inside the job's private directory; no "..", not absolute
  std::string content; ///< file bytes
};

struct compile_request {
  static constexpr message_kind kind = message_kind::compile_request;
  std::vector<source_file> sources;
  std::vector<std::string> argv; ///< may contain {OUT}; the worker substitutes its artifact path
  /// The engine's identity of argv[0]'s compiler (toolchain::id), or a pinned one; the cache key.
  std::string toolchain_id;
  std::uint32_t deadline_ms = 600000; ///< kill the compiler after this long; separate from liveness
  std::uint64_t max_output_bytes = 65536;
  /// Send only to a worker whose toolchain for argv[0] has exactly toolchain_id; false where the
  /// engine could not identify the compiler (not installed on its host, nothing pinned): then any
  /// worker that has a compiler of that name will do.
  bool match_toolchain = false;
  /// A larger artifact is not sent: the reply is too_large. 0: only the message cap applies.
  std::uint64_t max_artifact_bytes = 0;
  /// Send the artifact as ARTIFACT_CHUNKs of at most this many bytes before the reply (which then
  /// carries none); 0: inside the reply, as one message (older engines).
  std::uint32_t chunk_bytes = 0;
  /// The configuration's index in the engine's space, for the broker's longest-first order
  /// (stages/search/compile_cost.hpp); -1: none. Workers ignore it.
  std::int64_t space_index = -1;
};

/// Per-kernel resource usage reported by the device compiler (nvcc's ptxas today).
struct kernel_resource_usage {
  std::string name;            ///< mangled entry name
  std::string arch;            ///< e.g. sm_90
  std::uint32_t registers = 0; ///< per thread
  std::uint32_t barriers = 0;
  std::uint64_t shared_bytes = 0; ///< static shared memory per block
  std::uint64_t local_bytes = 0;  ///< local memory per thread (lmem)
  std::uint64_t stack_bytes = 0;  ///< stack frame per thread
  std::uint64_t spill_store_bytes = 0;
  std::uint64_t spill_load_bytes = 0;
};

struct compile_reply {
  static constexpr message_kind kind = message_kind::compile_reply;
  compile_status status = compile_status::internal_error;
  std::int32_t exit_code = -1;
  std::int32_t term_signal = 0;
  std::string output; ///< compiler stdout+stderr, truncated to max_output_bytes
  std::vector<char> artifact;
  bool has_artifact = false;
  std::int64_t compile_ns = 0; ///< wall time of the compiler process
  std::string worker_id;
  std::string error;                            ///< human-readable reason for any status but ok
  std::vector<kernel_resource_usage> resources; ///< when the compiler reports them (nvcc)
  /// Chunked (compile_request::chunk_bytes): the artifact's size and how many ARTIFACT_CHUNKs
  /// carried it, sent before this reply; `artifact` itself is then empty. 0 and 0 otherwise.
  std::uint64_t artifact_bytes = 0;
  std::uint32_t artifact_chunks = 0;
};

/// One piece of a compile job's artifact, sent by the worker before its COMPILE_REPLY (same
/// job_id), in order: `offset` is where `bytes` go.
struct artifact_chunk {
  static constexpr message_kind kind = message_kind::artifact_chunk;
  std::uint64_t offset = 0;
  std::vector<char> bytes;
};

struct measure_request {
  static constexpr message_kind kind = message_kind::measure_request;
  std::string candidate_key;
  std::vector<std::string> argv;
  std::uint32_t runs = 5;
  std::uint32_t warmup = 1;
  std::uint32_t timeout_ms = 60000; ///< per run
  /// The kernel lane's launch (workers/lanes/kernel/): the launch file resolved for this
  /// candidate's configuration; argv[0] is then the code object. Other lanes ignore it.
  std::optional<kernel_launch> launch;
  /// Exactly `runs` samples even on an adaptive lane (the final round's interleaved rounds).
  bool fixed_count = false;
  /// The kernel lane with a reference: this many extra timed launches at random places among the
  /// others, each on freshly restored buffers and checked against the reference (a kernel must
  /// not work less when its outputs are not checked). Not counted in the samples.
  std::uint32_t spot_checks = 0;
};

/// The GPU's clocks around one measurement, read through NVML (never set): the SM clock and the
/// clocks-event ("throttle") reasons before and after, and the power and thermal violation time
/// that accrued during it. Empty (read false) where NVML is not available.
struct gpu_clocks {
  bool read = false;
  std::uint32_t sm_mhz_before = 0;
  std::uint32_t sm_mhz_after = 0;
  std::uint64_t reasons_before = 0; ///< NVML clocks-event reason bits (stages/hardware)
  std::uint64_t reasons_after = 0;
  std::int64_t power_violation_ns = -1;   ///< during the measurement; -1 where NVML cannot tell
  std::int64_t thermal_violation_ns = -1; ///< during the measurement; -1 where NVML cannot tell
  bool throttled = false;                 ///< a slowing reason was set, or violation time accrued
};

struct measure_result {
  static constexpr message_kind kind = message_kind::measure_result;
  measure_status status = measure_status::not_run;
  std::vector<std::int64_t> samples_ns; ///< one per timed run, warm-up excluded
  std::int32_t exit_code = 0;
  std::int32_t term_signal = 0;
  std::int32_t failed_run = -1; ///< index of the run that failed (warm-ups count negative)
  std::string reason;
  std::string lane;
  /// How sampling ended: "fixed" (runs as requested), or an adaptive criterion's state
  /// (stages/statistics/sampling_criterion.hpp: converged, time_cap, ...).
  std::string sampling = "fixed";
  double noise = 0.0;       ///< achieved relative stdev of the samples (Bessel), 0 when unknown
  bool noisy = false;       ///< adaptive sampling ended above the noise target: not rankable as is
  std::string device_model; ///< e.g. "NVIDIA H100 80GB HBM3"; empty for CPU lanes
  std::string device_uuid;  ///< the GPU's UUID; empty for CPU lanes
  gpu_clocks clocks;        ///< clock evidence; read false for CPU lanes and without NVML
  /// Descendants still running when a run ended (daemons, background jobs), killed by the lane.
  /// The samples stand; the candidate is flagged, since such a process may have shared the device.
  std::uint32_t leftover_processes = 0;
  /// The samples' median interval (95 %, sign test) where the lane computed it, and the bound a
  /// raced candidate (sampling "raced") was found slower than; 0 where not known or not raced.
  double interval_low_ns = 0.0;
  double interval_high_ns = 0.0;
  double race_bound_ns = 0.0;
  /// For wrong_result: which of the lane's checks refused it, where not the output comparison:
  /// "memory:out_of_bounds" (a red zone changed), "inputs_modified", "nondeterministic",
  /// "timed_phase" (a spot check in the timed launches failed).
  std::string finding;
};

struct verdict {
  static constexpr message_kind kind = message_kind::verdict;
  std::string candidate_key;
  verdict_kind decision = verdict_kind::invalid;
  std::string reason;
  std::string best_key; ///< the incumbent after this verdict
  double median_ns = 0.0;
  double relative_change = 0.0; ///< (candidate - incumbent) / incumbent, 0 when no incumbent
};

const char* to_string(message_kind kind);
const char* to_string(compile_status status);
const char* to_string(measure_status status);
const char* to_string(verdict_kind kind);

} // namespace rpl::messages
