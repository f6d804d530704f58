#include "engine/commands/command.hpp"

#include <signal.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace rpl::engine::commands {

namespace {

std::atomic<bool> stop_flag{false};

void on_signal(int) {
  if (stop_flag.exchange(true)) {
    // A second signal means "now": restore the default action and re-raise.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    raise(SIGINT);
  }
}

} // namespace

std::atomic<bool>& stop_requested() {
  return stop_flag;
}

void install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void setup_logging(bool quiet) {
  auto logger = spdlog::stderr_color_mt("rocm-perf");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(quiet ? spdlog::level::warn : spdlog::level::info);
}

} // namespace rpl::engine::commands
