#pragma once
/// Who a worker process is. READY carries it; replies and error texts name it.

#include <cstdint>
#include <string>

namespace rpl::workers {

struct worker_identity {
  std::string host; ///< gethostname(), "unknown-host" when it fails
  std::int64_t pid = 0;
  std::string worker_id; ///< "host:pid": unique among live workers, stable for the process

  /// The identity of the calling process.
  static worker_identity of_this_process();
};

} // namespace rpl::workers
