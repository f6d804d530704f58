#pragma once
/// The tracer's per-process state: its settings (fixed in InitializeInjection) and the records the
/// activity buffers delivered so far, which the exit handler takes once to write the database.

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
  std::vector<cupti::api_record> apis;
  std::vector<cupti::device_record> devices;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> contexts; ///< (context id, device ordinal)
  std::vector<std::pair<std::size_t, std::string>> kernel_names; ///< (index into kernels, name)
  std::uint64_t runtime_api = 0, driver_api = 0, incomplete = 0, other = 0;
};

/// Everything the tracer keeps for its process.
struct tracer_state {
  std::mutex mutex; // guards everything below that the buffer callbacks touch
  std::vector<cupti::kernel_record> kernels;
  std::vector<cupti::memcpy_record> copies;
  std::vector<cupti::memset_record> memsets;
  std::vector<cupti::synchronization_record> syncs;
  std::vector<cupti::api_record> apis;
  std::map<std::uint32_t, cupti::device_record> devices; // CUPTI device records, by ordinal
  std::map<std::uint32_t, std::uint32_t> context_device; // context id -> device ordinal
  // Kernel names: CUPTI reuses its buffers, so each name is copied once here; node-based, so the
  // records' string_views stay valid for the life of the process.
  std::unordered_set<std::string> names;
  cupti::record_counts counts; // `dropped` sums cuptiActivityGetNumDroppedRecords per buffer
  bool finished = false;       // the database was written: later buffers are only freed

  // Set once in InitializeInjection, read-only afterwards.
  pid_t pid = 0;
  std::uint64_t start_ns = 0;
  std::filesystem::path out_dir;
  std::size_t buffer_bytes = 8u << 20;
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

/// Whether the database was already written.
bool finished(tracer_state& state);

/// Marks the database written and hands over the records and counters (`dropped_at_exit` added),
/// with the start time, pid and API names; host and driver facts are filled in by write_database.
cupti::cupti_trace take_trace(tracer_state& state, std::uint64_t dropped_at_exit);

} // namespace rpl::workers::cupti_tracer
