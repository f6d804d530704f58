#pragma once
/// The lane process's main loop, shared by rpl-kernel-lane, rpl-kernel-lane-hip and the CI
/// stand-in: write the hello, then answer each request frame with a reply frame until the engine
/// closes stdin (exit 0). A device that cannot be opened: the hello says why, exit 3. A sticky
/// error: the reply says so, exit 4. A broken stream: exit 2.

#include "workers/lanes/kernel/process/device_api.hpp"

namespace rpl::workers::kernel_process {

inline constexpr int exit_no_device = 3;
inline constexpr int exit_context_lost = 4;
inline constexpr int exit_broken_stream = 2;

/// Serves frames on `in_fd`/`out_fd` with `api` on device `ordinal`; `red_zones`: guard bands
/// around every buffer (device_buffers.hpp).
int run_lane(device_api& api, int in_fd, int out_fd, int ordinal, bool red_zones = true);

/// main() of a lane executable: `[--device N] [--no-red-zones]` (device 0 by default, within the
/// visible devices; red zones on unless turned off, as under a sanitizer, which must see the
/// buffers' true ends).
/// Moves the frame output off fd 1 first, so that anything else printing to stdout (device-side
/// printf, a library's banner) lands on stderr instead of corrupting the frames.
int lane_main(int argc, char** argv);

} // namespace rpl::workers::kernel_process
