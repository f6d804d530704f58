#include "engine/commands/command.hpp"

#include <cstring>
#include <mutex>
#include <signal.h>
#include <unistd.h>

#include <malloc.h>
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace rpl::engine::commands {

namespace {

std::atomic<bool> stop_flag{false};
const char* first_signal_note = nullptr; // set before the handlers are installed

void say(const char* text) {
  [[maybe_unused]] auto written = ::write(STDERR_FILENO, text, std::strlen(text));
}

void on_signal(int) {
  // Only async-signal-safe calls here: write(2) and _exit(2).
  if (stop_flag.exchange(true)) {
    // A second signal means "now": exit 130 (interrupted) without cleaning up. What completed is
    // already stored, one transaction per candidate; child processes die with us (parent-death
    // signal), and --resume continues the run.
    if (first_signal_note != nullptr) {
      say("rocm-perf: second signal: exiting now (130)\n");
    }
    _exit(interrupted);
  }
  if (first_signal_note != nullptr) {
    say(first_signal_note);
  }
}

} // namespace

std::atomic<bool>& stop_requested() {
  return stop_flag;
}

void install_signal_handlers(const char* note) {
  first_signal_note = note;
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
  // SPDLOG_LEVEL=debug (or e.g. "info,rocm-perf=debug") overrides, for diagnosing a run.
  spdlog::cfg::load_env_levels();
}

void tune_allocator_for_traces() {
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
  ::mallopt(M_TOP_PAD, 64 << 20);
}

void keep_until_exit(std::shared_ptr<const void> object) {
  static std::mutex mutex;
  static auto* const kept = new std::vector<std::shared_ptr<const void>>; // never destroyed
  const std::lock_guard lock(mutex);
  kept->push_back(std::move(object));
}

} // namespace rpl::engine::commands
