#pragma once
/// What the lane process does with one request: load the candidate's code object, find its
/// kernel, make the buffers (kept across candidates), launch once on fresh initial contents and
/// compare the outputs with the reference's, then warm up and take timed samples. Every failure
/// is a reply status with the API's error name; a sticky one (the kernel faulted, the context is
/// lost) also sets lane_exiting, and the caller exits after sending the reply.
///
/// The reference's outputs are computed once and kept: the reference kernel's launch on the same
/// arguments, recomputed only when the reference or the arguments change.

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "messages/kernel_lane.hpp"
#include "workers/lanes/kernel/process/device_api.hpp"
#include "workers/lanes/kernel/process/device_buffers.hpp"
#include "workers/lanes/kernel/process/event_pool.hpp"
#include "workers/lanes/kernel/process/initial_contents.hpp"
#include "workers/lanes/kernel/process/module_cache.hpp"
#include "workers/lanes/kernel/process/output_readback.hpp"
#include "workers/lanes/kernel/process/pristine_copies.hpp"
#include "workers/lanes/kernel/process/sample_loop.hpp"

namespace rpl::workers::kernel_process {

class lane_server {
public:
  /// `red_zones`: guard bands around every buffer, checked after each phase (device_buffers.hpp).
  lane_server(device_api& api, bool red_zones = true);

  /// Opens device `ordinal` (within the visible devices); the hello to send, status ok or
  /// device_unavailable with the API's error.
  messages::kernel_lane_hello open(int ordinal);

  /// Serves one request. Never throws for anything a request or a kernel can cause.
  messages::kernel_lane_reply handle(const messages::kernel_lane_request& request);

private:
  struct reference_outputs {
    std::string key; ///< the reference and arguments they came from; empty: none yet
    std::vector<std::vector<std::byte>> outputs; ///< by argument index; empty for non-outputs
  };

  bool prepare_buffers(const messages::kernel_launch& launch, messages::kernel_lane_reply& reply);
  bool restore_initial(const messages::kernel_launch& launch, messages::kernel_lane_reply& reply);
  bool download_outputs(const messages::kernel_launch& launch,
                        std::vector<std::vector<std::byte>>& outputs,
                        messages::kernel_lane_reply& reply);
  bool ensure_reference(const messages::kernel_lane_request& request,
                        messages::kernel_lane_reply& reply);
  /// Restores the buffers and queues the launch; with `checking`, queues the outputs' read-back
  /// behind it (compared in sample()), else waits for it.
  bool checked_launch(const messages::kernel_lane_request& request,
                      function_handle function,
                      void** params,
                      bool checking,
                      messages::kernel_lane_reply& reply);
  bool verify_readback(const messages::kernel_launch& launch, messages::kernel_lane_reply& reply);
  /// The first output buffer (its argument index and mismatch) whose bytes, `output(i)`, differ
  /// from the reference's beyond its tolerance; nullopt when every one matches.
  std::optional<std::pair<std::size_t, messages::kernel_mismatch>>
  wrong_output(const messages::kernel_launch& launch,
               const std::function<std::span<const std::byte>(std::size_t)>& output) const;
  /// A strict request's checks before the checked launch: two launches on fresh initial contents,
  /// whose outputs must agree (bit for bit unless nondeterministic) and after the first of which
  /// every buffer not marked output must hold its initial contents.
  bool strict_checks(const messages::kernel_lane_request& request,
                     function_handle function,
                     void** params,
                     messages::kernel_lane_reply& reply);
  bool inputs_untouched(const messages::kernel_launch& launch, messages::kernel_lane_reply& reply);
  /// sample(), with the request's spot check (kernel_sampling::spot_checks) among the timed
  /// launches: the samples before and after it are one list, the spot-checked time apart.
  void sample_spot_checked(const messages::kernel_lane_request& request,
                           function_handle function,
                           void** params,
                           bool after_checked_launch,
                           bool checking,
                           messages::kernel_lane_reply& reply);
  /// One timed launch on buffers restored to their initial contents, its outputs compared with
  /// the reference's and its red zones checked; false with timed_phase (or the failure) recorded.
  bool spot_check(const messages::kernel_launch& launch,
                  function_handle function,
                  void** params,
                  messages::kernel_lane_reply& reply);
  /// The red zones after `phase`: with `queue`, read back (waiting for the work before them),
  /// else as queued earlier and already waited for. A changed byte: out_of_bounds, false.
  bool red_zones_clean(const messages::kernel_launch& launch,
                       const char* phase,
                       bool queue,
                       messages::kernel_lane_reply& reply);
  /// Warm-ups and timed launches; `after_checked_launch`: the checked launch counts as the first
  /// warm-up; `checking`: its read-back is compared alongside the first batch.
  void sample(const messages::kernel_lane_request& request,
              function_handle function,
              void** params,
              bool after_checked_launch,
              bool checking,
              messages::kernel_lane_reply& reply);

  device_api& api_;
  messages::kernel_device device_;
  device_buffers buffers_;
  initial_contents contents_;
  pristine_copies pristine_;
  output_readback readback_;
  module_cache modules_;
  event_pool events_;
  reference_outputs reference_;
  /// Code objects (path and reference key) whose outputs matched the reference in this process.
  std::set<std::string> verified_;
};

} // namespace rpl::workers::kernel_process
