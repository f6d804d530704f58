#pragma once
/// The logger every worker process writes to.

#include <memory>

#include <spdlog/spdlog.h>

namespace rpl::workers {

/// The application's logger when it installed a named one (so its level and pattern apply), else
/// "rpl.worker" on stderr: stdout may be a pipe the engine reads, and spdlog's unnamed default
/// logger writes to stdout.
std::shared_ptr<spdlog::logger> worker_log();

} // namespace rpl::workers
