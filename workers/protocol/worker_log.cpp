#include "workers/protocol/worker_log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace rpl::workers {

std::shared_ptr<spdlog::logger> worker_log() {
  static const std::shared_ptr<spdlog::logger> logger = []() -> std::shared_ptr<spdlog::logger> {
    if (auto app = spdlog::default_logger(); app && !app->name().empty())
      return app;
    if (auto existing = spdlog::get("rpl.worker"))
      return existing;
    return spdlog::stderr_color_mt("rpl.worker");
  }();
  return logger;
}

} // namespace rpl::workers
