#pragma once
/// The tracer's per-process state: its settings (fixed in InitializeInjection), the records the
/// activity buffers delivered and nobody took yet (`mutex`), and the trace the database is written
/// from (`write_mutex`): every checkpoint, the last write on a fatal signal and the exit handler
/// move the new records into it and rewrite the database from the whole of it.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <sys/types.h>
#include <unordered_set>
#include <utility>
#include <vector>

#include "stages/trace/cupti_mapping.hpp"

namespace rpl::workers::cupti_tracer {

namespace cupti = rpl::stages::cupti;

/// The records of one activity buffer, parsed outside the lock (see parse_record).
struct parsed_records {
  std::vector<cupti::kernel_record> kernels; ///< names are set when merged (interned)
  std::vector<cupti::memcpy_record> copies;
  std::vector<cupti::memset_record> memsets;
  std::vector<cupti::synchronization_record> syncs;
  std::vector<cupti::cuda_event_record> event_records;
  std::vector<cupti::api_record> apis;
  std::vector<cupti::device_record> devices;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> contexts; ///< (context id, device ordinal)
  std::vector<std::pair<std::size_t, std::string>> kernel_names; ///< (index into kernels, name)
  std::uint64_t runtime_api = 0, driver_api = 0, incomplete = 0, other = 0;
};

/// Everything the tracer keeps for its process.
struct tracer_state {
  // Timed, so that a last write on a fatal signal gives up on a lock the dying thread held.
  std::timed_mutex mutex; // guards everything below that the buffer callbacks touch
  std::vector<cupti::kernel_record> kernels;
  std::vector<cupti::memcpy_record> copies;
  std::vector<cupti::memset_record> memsets;
  std::vector<cupti::synchronization_record> syncs;
  std::vector<cupti::cuda_event_record> event_records;
  std::vector<cupti::api_record> apis;
  std::map<std::uint32_t, cupti::device_record> devices; // CUPTI device records, by ordinal
  std::map<std::uint32_t, std::uint32_t> context_device; // context id -> device ordinal
  // Kernel names: CUPTI reuses its buffers, so each name is copied once here; node-based, so the
  // records' string_views stay valid for the life of the process.
  std::unordered_set<std::string> names;
  cupti::record_counts counts; // `dropped` sums cuptiActivityGetNumDroppedRecords per buffer
  std::uint64_t merges = 0;    // buffers merged so far: a checkpoint with none new writes nothing
  bool finished = false;       // the final database was written: later buffers are only freed

  // The trace as written, and what only the writers touch. Lock order: write_mutex, then mutex.
  std::timed_mutex write_mutex;
  cupti::cupti_trace trace; // every record taken so far; host facts, start time, API names
  std::map<std::uint32_t, cupti::driver_device> driver_devices; // read once per device
  std::uint64_t merges_written = 0;                             // `merges` at the last take

  // Set once in InitializeInjection, read-only afterwards.
  pid_t pid = 0;
  std::uint64_t start_ns = 0;
  std::filesystem::path out_dir;
  std::string uuid; // of every write of this process's database (one rocpd identity)
  std::size_t buffer_bytes = 8u << 20;
  std::chrono::milliseconds checkpoint_period{500}; // RPL_CUPTI_FLUSH_MS; 0: no checkpoints
  std::chrono::milliseconds signal_wait{3000};      // RPL_CUPTI_SIGNAL_WAIT_MS
  bool handle_signals = true;                       // RPL_CUPTI_SIGNALS
  bool verbose = false;
  cupti::api_names api_names;
  std::vector<char> runtime_keep; // by cbid: whether a runtime call becomes a region
  std::vector<char> driver_keep;  // by cbid: whether a driver call is traced
};

/// The state, or null before InitializeInjection or when tracing is off. Leaked on purpose: CUPTI
/// may call back during static destruction and after our exit handler.
extern tracer_state* g_state;

/// Adds one buffer's records (unless the database was already written) and its dropped-record
/// count (when CUPTI could tell it) to `state`.
void merge_buffer(tracer_state& state, parsed_records& records, std::optional<std::size_t> dropped);

/// Whether the final database was already written.
bool finished(tracer_state& state);

/// Moves the records delivered since the last call into `state.trace` and copies the counters,
/// devices and contexts; with `finish`, marks the state finished (later buffers are only freed).
/// The caller holds `state.write_mutex`. Returns false, taking nothing, when the buffer lock is not
/// free within `wait`.
bool take_new_records(tracer_state& state, std::chrono::milliseconds wait, bool finish);

/// Whether records arrived since the last write (state.merges_written); caller holds write_mutex.
bool has_new_records(tracer_state& state);

} // namespace rpl::workers::cupti_tracer
