// The CUPTI tracer's checkpoint thread and fatal-signal handlers (workers/tracers/cupti/
// checkpoints.hpp), without CUDA: periodic hooks, the last write a fatal signal asks for, the
// signal handed on to the default action or to the program's own handler, and a last write that
// never finishes. Deaths run in forked death-test children ("fast" style, so the child writes the
// parent's log file): the checkpoint thread starts in the child, and every test stops its own.

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>

#include "support/sanitizers.hpp"
#include "support/test_support.hpp"
#include "workers/tracers/cupti/checkpoints.hpp"

namespace rpl::workers::cupti_tracer {
namespace {

using namespace std::chrono_literals;
using rpl::testing::temp_dir;

/// Appends one line to `path` (the hooks' evidence, read by the parent after a death).
void append_line(const std::string& path, const std::string& line) {
  std::ofstream out(path, std::ios::app);
  out << line << '\n';
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Starts the checkpoints with hooks that log to `log`; dies (in a death-test child) on failure.
void start_logging(const std::string& log,
                   std::chrono::milliseconds period,
                   std::chrono::milliseconds signal_wait = 3s,
                   std::chrono::milliseconds write_time = 0ms) {
  checkpoint_settings settings;
  settings.period = period;
  settings.signal_wait = signal_wait;
  checkpoint_hooks hooks;
  hooks.periodic = [log] { append_line(log, "periodic"); };
  hooks.on_signal = [log, write_time](int signal, bool fatal) {
    std::this_thread::sleep_for(write_time);
    append_line(log, "signal " + std::to_string(signal) + (fatal ? " fatal" : " handled"));
  };
  std::string error;
  if (!start_checkpoints(settings, std::move(hooks), error)) {
    std::fprintf(stderr, "start_checkpoints: %s\n", error.c_str());
    std::_Exit(99);
  }
}

class workers_cupti_checkpoints : public ::testing::Test {
protected:
  void TearDown() override {
    EXPECT_TRUE(stop_checkpoints(5s));
    remove_signal_handlers();
  }
  temp_dir dir_;
  std::string log_ = (dir_ / "log").string();
};

TEST_F(workers_cupti_checkpoints, the_periodic_hook_runs_until_stopped) {
  start_logging(log_, 20ms);
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(stop_checkpoints(5s));
  const std::string after_stop = read_all(log_);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(read_all(log_), after_stop) << "a checkpoint ran after stop_checkpoints";
  std::size_t runs = 0;
  for (std::size_t at = after_stop.find("periodic"); at != std::string::npos;
       at = after_stop.find("periodic", at + 1)) {
    ++runs;
  }
  EXPECT_GE(runs, 3u) << after_stop;
  // It starts again (the tracer starts once; tests start many times).
  start_logging(log_, 0ms);
  EXPECT_TRUE(handles_signal(SIGABRT));
}

TEST_F(workers_cupti_checkpoints, abort_gets_a_last_write_then_dies_of_sigabrt) {
  EXPECT_EXIT(
      {
        start_logging(log_, 0ms);
        std::abort();
      },
      ::testing::KilledBySignal(SIGABRT), "");
  EXPECT_EQ(read_all(log_), "signal " + std::to_string(SIGABRT) + " fatal\n");
}

TEST_F(workers_cupti_checkpoints, a_segfault_on_another_thread_gets_a_last_write) {
  if (rpl::testing::under_asan || rpl::testing::under_tsan) {
    // ASan and TSan install a SIGSEGV handler of their own, so the tracer rightly chains to it
    // ("handled") instead of ending the process: the path the_programs_own_handler_... covers.
    GTEST_SKIP() << "under a sanitizer, whose SIGSEGV handler the tracer chains to";
  }
  EXPECT_EXIT(
      {
        start_logging(log_, 0ms);
        std::thread crasher([] {
          // An unmapped page, not nullptr: UBSan would stop a null store before it faults.
          // The address goes through a volatile, so that -O2 cannot see the store (and -Werror's
          // -Warray-bounds cannot refuse it).
          volatile std::uintptr_t address = 64;
          auto* nowhere = reinterpret_cast<volatile int*>(address);
          *nowhere = 1;
        });
        crasher.join();
      },
      ::testing::KilledBySignal(SIGSEGV), "");
  EXPECT_EQ(read_all(log_), "signal " + std::to_string(SIGSEGV) + " fatal\n");
}

TEST_F(workers_cupti_checkpoints, sigterm_sent_to_the_process_gets_a_last_write) {
  EXPECT_EXIT(
      {
        start_logging(log_, 10ms);
        ::kill(::getpid(), SIGTERM); // process-directed, as the recorder's timeout sends it
        std::this_thread::sleep_for(10s);
      },
      ::testing::KilledBySignal(SIGTERM), "");
  EXPECT_NE(read_all(log_).find("signal " + std::to_string(SIGTERM) + " fatal\n"),
            std::string::npos)
      << read_all(log_);
}

TEST_F(workers_cupti_checkpoints, a_last_write_that_takes_too_long_does_not_keep_the_process) {
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EXIT(
      {
        start_logging(log_, 0ms, 200ms, 30s);
        std::abort();
      },
      ::testing::KilledBySignal(SIGABRT), "");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 20s);
  EXPECT_EQ(read_all(log_), "") << "the write was not meant to finish";
}

std::atomic<int> program_handler_calls{0};
void program_handler(int) {
  ++program_handler_calls;
}

TEST_F(workers_cupti_checkpoints, the_programs_own_handler_still_runs_and_the_program_goes_on) {
  struct sigaction program {};
  program.sa_handler = program_handler;
  sigemptyset(&program.sa_mask);
  struct sigaction before {};
  ASSERT_EQ(::sigaction(SIGINT, &program, &before), 0);
  program_handler_calls = 0;
  start_logging(log_, 0ms);
  ASSERT_TRUE(handles_signal(SIGINT));
  ::raise(SIGINT);
  EXPECT_EQ(program_handler_calls.load(), 1);
  EXPECT_EQ(read_all(log_), "signal " + std::to_string(SIGINT) + " handled\n");
  // Removing ours gives the program's back.
  ASSERT_TRUE(stop_checkpoints(5s));
  remove_signal_handlers();
  struct sigaction now {};
  ASSERT_EQ(::sigaction(SIGINT, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, program_handler);
  ::sigaction(SIGINT, &before, nullptr);
}

TEST_F(workers_cupti_checkpoints, an_ignored_signal_stays_ignored) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  struct sigaction before {};
  ASSERT_EQ(::sigaction(SIGTERM, &ignore, &before), 0);
  start_logging(log_, 0ms);
  EXPECT_FALSE(handles_signal(SIGTERM));
  EXPECT_TRUE(handles_signal(SIGABRT));
  ::raise(SIGTERM); // ignored: the test goes on
  ASSERT_TRUE(stop_checkpoints(5s));
  remove_signal_handlers();
  ::sigaction(SIGTERM, &before, nullptr);
  EXPECT_EQ(read_all(log_), "");
}

TEST_F(workers_cupti_checkpoints, a_forked_child_hands_signals_on_without_asking) {
  start_logging(log_, 0ms);
  const pid_t child = ::fork();
  if (child == 0) {
    std::abort(); // the checkpoint thread is the parent's: no last write, just SIGABRT
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) << status;
  EXPECT_EQ(read_all(log_), "");
}

} // namespace
} // namespace rpl::workers::cupti_tracer
