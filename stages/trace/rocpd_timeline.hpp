#pragma once
/// What a critical path needs from rocpd files: every kernel dispatch and memory copy with its GPU
/// timestamps, device and stream, and the synchronization the host recorded (stream waits on
/// events, and the host-blocking stream, device and event synchronizes), read in one pass per
/// table with names interned, so a million ops stay compact.
///
/// Synchronization comes from API regions by name (cuda*, cu*, hip*). The stream and the event of
/// a stream wait or an event record come from, in this order:
/// - on CUDA, the CUPTI tracer's records (categories CUDA_SYNCHRONIZATION and CUDA_EVENT), whose
///   extdata names the stream, the event and the record instance (cupti_mapping.hpp);
/// - on ROCm, the call's arguments in rocpd_arg (`stream` and `event`, values as text): a stream
///   argument's extdata may carry its stream_id; otherwise the handle is resolved through the
///   launches of the same trace (the `stream` argument of the API call that launched each
///   dispatch or copy, linked by the internal correlation id).
/// A region whose stream is not known has stream_id -1. Where the trace links each op to the API
/// call that enqueued it (the op's event stack_id is the call's region id: CUPTI correlation ids,
/// rocprofv3's internal correlation ids), records and waits are placed in their streams' enqueue
/// order (sync_row::op), found by bisection over each stream's ops with a lookup per probe, so a
/// million ops cost a few thousand lookups, not a join.

#include <cstdint>
#include <memory>
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
  std::uint16_t source = 0; ///< the file's table suffix (index into database_info::uuids)
  std::int64_t row_id = 0;  ///< the row's id in rocpd_kernel_dispatch or rocpd_memory_copy
};

enum class sync_kind : std::uint8_t {
  stream_wait_event,  ///< the stream waits for an event recorded on another stream (GPU side)
  stream_synchronize, ///< the host waits for one stream
  device_synchronize, ///< the host waits for every stream
  event_synchronize,  ///< the host waits for an event
  event_record,       ///< an event is recorded on a stream (GPU side; waits name it)
};

struct sync_row {
  sync_kind kind = sync_kind::device_synchronize;
  std::int64_t start_ns = 0; ///< host time of the call
  std::int64_t end_ns = 0;
  std::size_t database = 0;
  std::int64_t pid = 0;
  std::int64_t stream_id = -1;     ///< the stream waiting, synchronized or recording; -1: unknown
  bool from_tracer_record = false; ///< a CUPTI record, beside the API region of the same call
  /// The event waited for or recorded ("cuda:7", or the HIP handle "0x5555..."); empty: unknown.
  std::string event;
  /// The record instance a wait waits for and a record is (CUPTI's cudaEventSyncId); -1: unknown.
  std::int64_t event_sync_id = -1;
  /// When the GPU reached an event record (CUPTI's device timestamp, ns); -1: not recorded.
  std::int64_t device_ns = -1;
  /// In the stream's own order (a stream runs its ops in the order they were enqueued): for an
  /// event record, the last op enqueued on its stream before the record call; for a stream wait,
  /// the first op enqueued on its stream after the wait call. An index into timeline::ops; -1:
  /// none, or the API calls that enqueued the ops are not in the trace.
  std::int64_t op = -1;
  bool ordered = false; ///< `op` was found in enqueue order (-1 then means there is none)
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
  /// The indices of `ops` by (start_ns, index), as read_timeline and timeline_builder leave them
  /// (ops_by_start sorts once more where this does not cover `ops`, e.g. ops assembled by hand).
  std::vector<std::uint32_t> by_start;
};

/// Builds a timeline from dispatch rows that a scan made for something else hands over one by one
/// (so one pass over the dispatch table feeds the accounting and the timeline alike), then reads
/// the copies and the synchronization of the same files. The rows must come from a reader opened
/// on the same files in the same order (their `database` indices are this reader's).
class timeline_builder {
public:
  /// `files` (already validated) must outlive the builder; its agents and streams name the tracks.
  explicit timeline_builder(const reader& files);
  timeline_builder(timeline_builder&&) noexcept;
  timeline_builder& operator=(timeline_builder&&) noexcept;
  ~timeline_builder();

  /// One dispatch, with at least the dispatch_fields::accounting fields.
  void add(const dispatch_row& row);
  /// Reads every file's copies and synchronization (region and argument tables) over connections
  /// of its own. It shares nothing with add(), so another thread may run it while the dispatches
  /// are added; finish() runs it otherwise. Throws rocpd_error naming the file for a read error.
  void read_side_tables();
  /// Adds the copies, places the event records and stream waits in their streams' enqueue order
  /// and returns the timeline; the builder is spent. Throws rocpd_error naming the file.
  timeline finish();

private:
  struct state;
  std::unique_ptr<state> state_;
};

/// Reads `files` (already validated). Throws rocpd_error naming the file for a read error.
timeline read_timeline(const reader& files);

/// The indices of `t.ops` by (start_ns, index): `t.by_start` when it covers every op, otherwise a
/// stable radix sort of the start times, O(N).
std::vector<std::uint32_t> ops_by_start(const timeline& t);

} // namespace rpl::stages::rocpd
