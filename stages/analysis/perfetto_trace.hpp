#pragma once
/// A GPU timeline as a Chrome/Perfetto JSON trace (the trace-event format that ui.perfetto.dev and
/// chrome://tracing open): a process per device, a thread per stream, each kernel or copy a
/// complete ("X") slice, the critical path marked twice (args.critical = 1 on the slice, and a copy
/// of it on the device's "critical path" track, which every viewer shows), and flow arrows ("s" at
/// the end of the op waited for, "f" at the start of the op that waited) for synchronization
/// edges. Times are microseconds from the earliest op's start, with nanosecond decimals.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rpl::stages::analysis {

/// One kernel dispatch or copy on the timeline.
struct timeline_op {
  std::string name;
  std::string category = "kernel"; ///< "kernel", "copy", ...
  std::string device;              ///< the track group, e.g. "GPU 0 (sm_90)"
  std::string stream;              ///< the track, e.g. "Stream 7"
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  bool critical = false;                ///< on the critical path
  std::optional<std::int64_t> slack_ns; ///< how long it could slip without delaying the end
  nlohmann::json args = nlohmann::json::object(); ///< shown in the viewer's details pane
};

/// A dependency between two ops (indices into the op list): `to` waited for `from`.
struct timeline_flow {
  std::size_t from = 0;
  std::size_t to = 0;
  std::string kind = "sync"; ///< "event_wait", "stream_sync", ...
};

/// The trace document. Flows that name an op out of range, or whose waiting op ends before the
/// op it waited for ends, are skipped (and counted in `otherData.skipped_flows`), never written
/// dangling.
nlohmann::json perfetto_trace(const std::vector<timeline_op>& ops,
                              const std::vector<timeline_flow>& flows);

} // namespace rpl::stages::analysis
