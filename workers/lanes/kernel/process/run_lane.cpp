#include "workers/lanes/kernel/process/run_lane.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

#include "messages/codec.hpp"
#include "workers/lanes/kernel/process/frame_stream.hpp"
#include "workers/lanes/kernel/process/lane_server.hpp"

namespace rpl::workers::kernel_process {

namespace {

/// The reply to a frame that is not a request: the stream is still in step, so carry on.
messages::kernel_lane_reply undecodable(const std::string& why) {
  messages::kernel_lane_reply reply;
  reply.status = messages::kernel_lane_status::bad_request;
  reply.reason =
      "the request could not be decoded: " + why + "; fix: use matching engine and lane builds";
  return reply;
}

int usage(const char* self) {
  std::fprintf(stderr,
               "usage: %s [--device N] [--no-red-zones]\n"
               "Serves kernel-lane requests: length-prefixed msgpack frames on stdin, replies on\n"
               "stdout (workers/lanes/kernel/README.md). Started by the engine, not by hand.\n",
               self);
  return 2;
}

} // namespace

int serve_frames(
    int in_fd,
    int out_fd,
    const messages::kernel_lane_hello& hello,
    const std::function<messages::kernel_lane_reply(const messages::kernel_lane_request&)>& serve,
    const char* program) {
  frame_stream stream(in_fd, out_fd);
  if (!stream.write(messages::encode(hello)))
    return exit_broken_stream;
  if (hello.status != messages::kernel_lane_status::ok)
    return exit_no_device;
  std::string payload;
  std::string error;
  while (true) {
    const frame_read got = stream.read(payload, error);
    if (got == frame_read::end_of_stream)
      return 0;
    if (got == frame_read::broken) {
      std::fprintf(stderr, "%s: %s\n", program, error.c_str());
      return exit_broken_stream;
    }
    messages::kernel_lane_reply reply;
    try {
      reply = serve(messages::decode<messages::kernel_lane_request>(payload));
    } catch (const messages::decode_error& e) {
      reply = undecodable(e.what());
    }
    if (!stream.write(messages::encode(reply)))
      return exit_broken_stream;
    if (reply.lane_exiting)
      return exit_context_lost;
  }
}

int frame_output_fd(const char* program) {
  const int frames_out = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (frames_out < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::fprintf(stderr, "%s: setting up the frame descriptor: %s\n", program,
                 std::strerror(errno));
    return -1;
  }
  std::signal(SIGPIPE, SIG_DFL); // the engine gone: nothing left to answer
  return frames_out;
}

int run_lane(device_api& api, int in_fd, int out_fd, int ordinal, bool red_zones) {
  lane_server server(api, red_zones);
  const messages::kernel_lane_hello hello = server.open(ordinal);
  return serve_frames(
      in_fd, out_fd, hello,
      [&](const messages::kernel_lane_request& request) { return server.handle(request); },
      "rpl-kernel-lane");
}

int lane_main(int argc, char** argv) {
  int ordinal = 0;
  bool red_zones = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--no-red-zones") {
      red_zones = false;
    } else if (arg == "--device" && i + 1 < argc) {
      char* end = nullptr;
      const long value = std::strtol(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || value < 0 || value > 1024)
        return usage(argv[0]);
      ordinal = static_cast<int>(value);
    } else {
      return usage(argv[0]);
    }
  }
  // Frames go to a private copy of fd 1; fd 1 itself becomes stderr.
  const int frames_out = frame_output_fd("rpl-kernel-lane");
  if (frames_out < 0)
    return exit_broken_stream;
  const auto api = make_device_api();
  return run_lane(*api, STDIN_FILENO, frames_out, ordinal, red_zones);
}

} // namespace rpl::workers::kernel_process
