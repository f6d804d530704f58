#pragma once
/// Blocking frame I/O on the lane process's descriptors: one length-prefixed msgpack frame per
/// message (messages/kernel_lane.hpp). The process serves one request at a time, so blocking
/// reads are all it needs; the engine side reads with deadlines (workers/lanes/kernel/).

#include <optional>
#include <string>

namespace rpl::workers::kernel_process {

/// What reading a frame gave.
enum class frame_read { frame, end_of_stream, broken };

class frame_stream {
public:
  frame_stream(int in_fd, int out_fd) : in_fd_(in_fd), out_fd_(out_fd) {}
  /// Reads the next frame's payload into `payload`. end_of_stream: the engine closed the pipe
  /// (time to exit); broken: a read error or a frame over the size limit (`error` says which).
  frame_read read(std::string& payload, std::string& error);
  /// Writes one frame; false when the engine is gone.
  bool write(const std::string& payload);

private:
  int in_fd_;
  int out_fd_;
  std::string pending_;
};

} // namespace rpl::workers::kernel_process
