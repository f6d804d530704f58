#include "workers/lanes/kernel/process/frame_stream.hpp"

#include <cerrno>
#include <cstring>
#include <unistd.h>

#include "messages/kernel_lane.hpp"

namespace rpl::workers::kernel_process {

frame_read frame_stream::read(std::string& payload, std::string& error) {
  char buffer[65536];
  while (true) {
    try {
      if (auto frame = messages::take_frame(pending_)) {
        payload = std::move(*frame);
        return frame_read::frame;
      }
    } catch (const messages::frame_error& e) {
      error = e.what();
      return frame_read::broken;
    }
    const ssize_t got = ::read(in_fd_, buffer, sizeof buffer);
    if (got > 0) {
      pending_.append(buffer, static_cast<std::size_t>(got));
      continue;
    }
    if (got < 0 && errno == EINTR)
      continue;
    if (got == 0)
      return frame_read::end_of_stream;
    error = std::string("reading stdin: ") + std::strerror(errno);
    return frame_read::broken;
  }
}

bool frame_stream::write(const std::string& payload) {
  const std::string bytes = messages::frame_bytes(payload);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t put = ::write(out_fd_, bytes.data() + done, bytes.size() - done);
    if (put < 0 && errno == EINTR)
      continue;
    if (put <= 0)
      return false;
    done += static_cast<std::size_t>(put);
  }
  return true;
}

} // namespace rpl::workers::kernel_process
