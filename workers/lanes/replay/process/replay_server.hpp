#pragma once
/// The long-lived replay lane's request handling (`rpl-replay-cuda --serve DIR`): the capture is
/// placed at its addresses and restored once, when the process starts (workers/replay/cuda/);
/// then each request names a candidate's code object (and optionally its symbol; default the
/// captured kernel's) and is served the way the kernel lane serves one: the module cache, a
/// checked launch verified against the capture (every region the dispatch wrote against its
/// after-state, every other region against its before-state, bit for bit or within the
/// capture's float tolerance), warm-ups and timed launches under the kernel lane's sampling rule
/// (fixed count, adaptive, racing; sample_loop.hpp), a spot-checked timed launch, and the red
/// zones read back after the checked launch and after the last timed launch. Before every launch
/// the regions the dispatch writes are restored from device copies of their captured contents,
/// queued on the stream outside the timed span, so every launch sees the captured inputs.
///
/// Device calls go through the kernel lane's device_api (the CUDA driver API in rpl-replay-cuda,
/// a scripted device in the tests), so the same frames, statuses and reply fields reach the
/// engine's kernel_lane, which starts and restarts this process as it does rpl-kernel-lane.

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "messages/kernel_lane.hpp"
#include "stages/capture/capture_manifest.hpp"
#include "stages/capture/output_compare.hpp"
#include "stages/capture/va_ranges.hpp"
#include "workers/lanes/kernel/process/device_api.hpp"
#include "workers/lanes/kernel/process/event_pool.hpp"
#include "workers/lanes/kernel/process/module_cache.hpp"

namespace rpl::workers::replay_process {

using kernel_process::device_api;
using kernel_process::device_pointer;
using kernel_process::function_handle;
using kernel_process::launch_shape;

/// The capture as the server keeps it: already placed at its addresses and restored.
struct served_capture {
  std::string kernel; ///< the captured symbol
  launch_shape shape;
  std::vector<std::uint8_t> kernarg;                   ///< the captured parameter bytes
  std::vector<std::size_t> param_offsets;              ///< each parameter's offset in kernarg
  std::vector<stages::capture::memory_region> regions; ///< base and size (where they live)
  std::vector<std::vector<std::uint8_t>> before;       ///< per region: captured contents
  std::vector<std::vector<std::uint8_t>> after; ///< per region: after-state; empty: not written
  /// Filled with the pattern (stages/capture/red_zones.hpp) before the server starts; empty
  /// where the placement left none (an allocation walk: the neighbours are the allocator's).
  std::vector<stages::capture::va_range> zones;
  std::string placement; ///< "virtual memory reservation", "allocation walk"
  std::optional<stages::capture::float_tolerance> tolerance;
};

/// How far into a neighbouring region a changed byte still counts as a write past the end of
/// the region before it: the red zones' width (workers/lanes/kernel/process/device_buffers.hpp).
inline constexpr std::uint64_t neighbour_zone_bytes = 4096;

class replay_server {
public:
  replay_server(device_api& api, served_capture capture);
  ~replay_server();
  replay_server(const replay_server&) = delete;
  replay_server& operator=(const replay_server&) = delete;

  /// Opens device `ordinal` (the one the capture was placed on) and makes the device copies the
  /// restores come from; the hello to send.
  messages::kernel_lane_hello open(int ordinal);

  /// Serves one request. Never throws for anything a request or a kernel can cause.
  messages::kernel_lane_reply handle(const messages::kernel_lane_request& request);

private:
  /// Queues the restore of every written region from its device copy.
  kernel_process::device_status restore_written();
  /// Restores, launches, waits, and compares every region (only the written ones with
  /// `written_only`) with the capture; false with `status` (and the region) on a difference,
  /// which is repaired for the next launch.
  bool checked_launch(function_handle function,
                      const char* phase,
                      messages::kernel_lane_status status,
                      bool written_only,
                      messages::kernel_lane_reply& reply);
  /// A region the dispatch does not write, changed within its first neighbour_zone_bytes, that
  /// begins where a region the dispatch writes ends (the write went past that region's end), or
  /// changed only within its last neighbour_zone_bytes and ending where a written region begins
  /// (the write went before that region's start): out_of_bounds, recorded. The allocation walk's
  /// regions abut, so the neighbour stands in for a red zone.
  bool out_of_bounds_into(std::size_t changed,
                          std::uint64_t first_offset,
                          const char* phase,
                          messages::kernel_lane_reply& reply);
  bool regions_match(const char* phase,
                     messages::kernel_lane_status status,
                     bool written_only,
                     messages::kernel_lane_reply& reply);
  /// The red zones read back and compared; a changed byte: out_of_bounds, refilled.
  bool zones_clean(const char* phase, messages::kernel_lane_reply& reply);
  void sample(const messages::kernel_lane_request& request,
              function_handle function,
              bool after_checked_launch,
              messages::kernel_lane_reply& reply);
  void sample_spot_checked(const messages::kernel_lane_request& request,
                           function_handle function,
                           bool after_checked_launch,
                           messages::kernel_lane_reply& reply);
  bool spot_check(function_handle function, messages::kernel_lane_reply& reply);
  /// A failed call: `status` (kernel_fault when the context is lost), the API's error name.
  void failed(messages::kernel_lane_reply& reply,
              messages::kernel_lane_status status,
              const kernel_process::device_error& error,
              const std::string& what) const;

  device_api& api_;
  served_capture capture_;
  messages::kernel_device device_;
  kernel_process::module_cache modules_;
  kernel_process::event_pool events_;
  std::vector<device_pointer> pristine_; ///< per region: its device copy (written ones only)
  std::vector<void*> params_;
  /// Page-locked memory the size of the largest region or zone: read-backs land here (a
  /// pageable vector of a large region costs more to fill than the copy itself).
  std::uint8_t* staging_ = nullptr;
  std::size_t staging_bytes_ = 0;
  /// staging_ grown to at least `bytes`.
  kernel_process::device_status stage(std::size_t bytes);
  /// `bytes` at `source` read back into staging_; the span of them.
  kernel_process::device_status
  read_back(device_pointer source, std::size_t bytes, std::span<const std::uint8_t>& out);
  /// Code objects and symbols whose checked launch matched the capture in this process.
  std::set<std::string> verified_;
};

} // namespace rpl::workers::replay_process
