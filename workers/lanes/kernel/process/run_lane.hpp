#pragma once
/// The lane process's main loop, shared by rpl-kernel-lane, rpl-kernel-lane-hip and the CI
/// stand-in: write the hello, then answer each request frame with a reply frame until the engine
/// closes stdin (exit 0). A device that cannot be opened: the hello says why, exit 3. A sticky
/// error: the reply says so, exit 4. A broken stream: exit 2.

#include <functional>

#include "messages/kernel_lane.hpp"
#include "workers/lanes/kernel/process/device_api.hpp"

namespace rpl::workers::kernel_process {

inline constexpr int exit_no_device = 3;
inline constexpr int exit_context_lost = 4;
inline constexpr int exit_broken_stream = 2;

/// Serves frames on `in_fd`/`out_fd` with `api` on device `ordinal`; `red_zones`: guard bands
/// around every buffer (device_buffers.hpp).
int run_lane(device_api& api, int in_fd, int out_fd, int ordinal, bool red_zones = true);

/// The request loop behind a hello: writes `hello`, then (when its status is ok) answers each
/// request frame on `in_fd` with `serve`'s reply on `out_fd` until the engine closes it. The
/// replay lane (rpl-replay-cuda --serve) runs its own server through it. `program` names the
/// process in its complaints on stderr.
int serve_frames(
    int in_fd,
    int out_fd,
    const messages::kernel_lane_hello& hello,
    const std::function<messages::kernel_lane_reply(const messages::kernel_lane_request&)>& serve,
    const char* program);

/// Moves the frame output off fd 1: returns a private copy of fd 1 for frames and points fd 1 at
/// stderr, so that anything else printing to stdout (device-side printf, a library's banner)
/// lands on stderr instead of corrupting the frames; -1 (with perror) when that failed.
int frame_output_fd(const char* program);

/// main() of a lane executable: `[--device N] [--no-red-zones]` (device 0 by default, within the
/// visible devices; red zones on unless turned off, as under a sanitizer, which must see the
/// buffers' true ends).
/// Moves the frame output off fd 1 first, so that anything else printing to stdout (device-side
/// printf, a library's banner) lands on stderr instead of corrupting the frames.
int lane_main(int argc, char** argv);

} // namespace rpl::workers::kernel_process
