// The run lease (engine/store/run_lease.hpp): its file's text, the words of a refusal and of a
// take-over, and the lock itself on a temporary file (two descriptors of this one process
// contend as two processes would: flock(2) locks belong to the open file).
#include <algorithm>
#include <sstream>
#include <unistd.h>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "engine/store/run_lease.hpp"
#include "support/test_support.hpp"

namespace rpl::engine {
namespace {

using rpl::testing::read_text;
using rpl::testing::temp_dir;
using rpl::testing::write_file;

/// A pid no process can have: above the largest pid_max Linux allows (2^22).
constexpr long impossible_pid = (1L << 22) + 7;

/// Captures what the default logger writes while it lives.
class default_log_capture {
public:
  default_log_capture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_)) {
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~default_log_capture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  default_log_capture(const default_log_capture&) = delete;
  default_log_capture& operator=(const default_log_capture&) = delete;
  std::string text() {
    spdlog::default_logger()->flush();
    return stream_.str();
  }

private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

TEST(engine_run_lease, a_holder_survives_its_file_text) {
  const lease_holder holder{4242, "node7", "2026-11-27T01:43:00Z", "rocm-perf autotune --resume"};
  const auto text = format_lease_holder(holder);
  EXPECT_EQ(text, "pid=4242\nhost=node7\nsince=2026-11-27T01:43:00Z\ncommand=rocm-perf autotune "
                  "--resume\n");
  const auto back = parse_lease_holder(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(back->host, "node7");
  EXPECT_EQ(back->since, "2026-11-27T01:43:00Z");
  EXPECT_EQ(back->command, "rocm-perf autotune --resume");
}

TEST(engine_run_lease, a_file_without_a_positive_pid_names_no_holder) {
  EXPECT_FALSE(parse_lease_holder(""));
  EXPECT_FALSE(parse_lease_holder("host=node7\n"));
  EXPECT_FALSE(parse_lease_holder("pid=0\nhost=node7\n"));
  EXPECT_FALSE(parse_lease_holder("pid=12x\nhost=node7\n"));
  // Unknown keys and a missing last newline are fine.
  const auto holder = parse_lease_holder("colour=blue\npid=17\nhost=h");
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->pid, 17);
  EXPECT_EQ(holder->host, "h");
}

TEST(engine_run_lease, holders_and_take_overs_are_worded_with_pid_and_host) {
  const lease_holder holder{4242, "node7", "2026-11-27T01:43:00Z", "rocm-perf autotune"};
  EXPECT_EQ(describe_lease_holder(holder),
            "pid 4242 on host node7 (rocm-perf autotune, since 2026-11-27T01:43:00Z)");
  EXPECT_EQ(describe_lease_holder({9, "h", "", ""}), "pid 9 on host h");
  EXPECT_EQ(describe_stale_lease(holder, "node7", false),
            "pid 4242 on host node7 (rocm-perf autotune, since 2026-11-27T01:43:00Z) held it and "
            "is no longer running");
  EXPECT_NE(describe_stale_lease(holder, "node7", true).find("runs, but it is another process"),
            std::string::npos);
  // On another host the pid cannot be looked up: only the lock says it is gone.
  EXPECT_NE(describe_stale_lease(holder, "node8", std::nullopt).find("no longer holds its lock"),
            std::string::npos);
}

TEST(engine_run_lease, a_second_taker_is_refused_naming_the_holder_until_it_is_released) {
  temp_dir dir;
  const auto file = dir / "r.db.run-1.lease";
  {
    auto lease = run_lease::acquire(file, "rocm-perf autotune");
    const auto holder = parse_lease_holder(read_text(file));
    ASSERT_TRUE(holder);
    EXPECT_EQ(holder->pid, ::getpid());
    EXPECT_EQ(holder->host, lease_host_name());
    EXPECT_EQ(holder->command, "rocm-perf autotune");
    try {
      run_lease::acquire(file, "rocm-perf autotune --resume");
      FAIL() << "a held lease was taken a second time";
    } catch (const lease_held_error& error) {
      ASSERT_TRUE(error.holder());
      EXPECT_EQ(error.holder()->pid, ::getpid());
      const std::string what = error.what();
      EXPECT_NE(what.find("pid " + std::to_string(::getpid()) + " on host " + lease_host_name()),
                std::string::npos)
          << what;
      EXPECT_NE(what.find(file.string()), std::string::npos) << what;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(file)) << "a released lease leaves its file behind";
  auto again = run_lease::acquire(file, "rocm-perf autotune --resume");
  EXPECT_TRUE(std::filesystem::exists(file));
}

TEST(engine_run_lease, a_stale_lease_of_a_dead_pid_is_taken_over_and_logged) {
  temp_dir dir;
  const auto file = dir / "optimize.lease";
  const lease_holder dead{impossible_pid, lease_host_name(), "2026-11-27T01:43:00Z",
                          "rocm-perf optimize"};
  write_file(file, format_lease_holder(dead));
  default_log_capture log;
  auto lease = run_lease::acquire(file, "rocm-perf optimize --resume");
  const auto holder = parse_lease_holder(read_text(file));
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->pid, ::getpid());
  EXPECT_EQ(holder->command, "rocm-perf optimize --resume");
  const auto text = log.text();
  EXPECT_NE(text.find("taking over the lease " + file.string() + ": pid " +
                      std::to_string(impossible_pid) + " on host " + lease_host_name()),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("held it and is no longer running"), std::string::npos) << text;
}

TEST(engine_run_lease, an_empty_left_over_file_is_taken_without_a_word) {
  temp_dir dir;
  const auto file = dir / "optimize.lease";
  write_file(file, "");
  default_log_capture log;
  auto lease = run_lease::acquire(file, "rocm-perf optimize");
  EXPECT_EQ(log.text().find("taking over"), std::string::npos);
  EXPECT_EQ(parse_lease_holder(read_text(file))->pid, ::getpid());
}

} // namespace
} // namespace rpl::engine
