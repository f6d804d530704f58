#include "workers/protocol/worker_identity.hpp"

#include <unistd.h>

namespace rpl::workers {

worker_identity worker_identity::of_this_process() {
  worker_identity self;
  char buffer[256] = {};
  self.host = ::gethostname(buffer, sizeof buffer - 1) == 0 ? std::string(buffer) : "unknown-host";
  self.pid = static_cast<std::int64_t>(::getpid());
  self.worker_id = self.host + ":" + std::to_string(self.pid);
  return self;
}

} // namespace rpl::workers
