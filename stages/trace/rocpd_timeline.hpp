#pragma once
/// What a critical path needs from rocpd files: every kernel dispatch and memory copy with its GPU
/// timestamps, device and stream, and the synchronization the host recorded (stream waits on
/// events, and the host-blocking stream, device and event synchronizes), read in one pass per
/// table with names interned, so a million ops stay compact.
///
/// Synchronization comes from API regions by name (cuda*, cu*, hip*), and on CUDA from the CUPTI
/// tracer's synchronization records (category CUDA_SYNCHRONIZATION), whose extdata names the
/// stream (cupti_mapping.hpp); a region without a stream has stream_id -1.

#include <cstdint>
#include <string>
#include <vector>

#include "stages/trace/rocpd_reader.hpp"

namespace rpl::stages::rocpd {

/// One kernel dispatch or copy.
struct timeline_row {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int32_t name = 0;  ///< index into timeline::names
  std::int32_t track = 0; ///< index into timeline::tracks: (file, process, device, stream)
  bool copy = false;
};

enum class sync_kind : std::uint8_t {
  stream_wait_event,  ///< the stream waits for an event recorded on another stream (GPU side)
  stream_synchronize, ///< the host waits for one stream
  device_synchronize, ///< the host waits for every stream
  event_synchronize,  ///< the host waits for an event
};

struct sync_row {
  sync_kind kind = sync_kind::device_synchronize;
  std::int64_t start_ns = 0; ///< host time of the call
  std::int64_t end_ns = 0;
  std::size_t database = 0;
  std::int64_t pid = 0;
  std::int64_t stream_id = -1;     ///< the stream waiting or synchronized; -1 when not recorded
  bool from_tracer_record = false; ///< a CUPTI synchronization record, not just an API call
};

struct timeline_track {
  std::size_t database = 0;
  std::int64_t pid = 0;
  std::int64_t agent_id = 0;
  std::int64_t stream_id = 0;
  std::string name; ///< "GPU 0 (sm_90) / Stream 13"
};

struct timeline {
  std::vector<std::string> names; ///< kernel and copy names
  std::vector<timeline_track> tracks;
  std::vector<timeline_row> ops; ///< in no particular order
  std::vector<sync_row> syncs;   ///< API calls and tracer records, both kept
};

/// Reads `files` (already validated). Throws rocpd_error naming the file for a read error.
timeline read_timeline(const reader& files);

} // namespace rpl::stages::rocpd
