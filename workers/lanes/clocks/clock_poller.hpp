#pragma once
/// One GPU's clock readings (workers/devices/nvml_probe.hpp), taken on a thread of its own so that
/// a lane never waits for NVML: on an H100 the violation counters cost 0.76 ms a call and a
/// reading makes two (nvmlDeviceGetViolationStatus, power and thermal), 1.5 ms in all, while the
/// SM clock and the reasons cost about a microsecond each (measured with ctypes on the H100,
/// 2026-11-27). A kernel lane measures a raced GEMM candidate in about 10 ms, so reading before
/// and after on the lane's path cost it 12 % of its time (0.36 s of a 2.9 s warm sweep).
///
/// The thread reads, waits `period`, and reads again while someone uses it; after `idle_after`
/// without a caller it sleeps until the next one. Each reading carries its sequence number, when it
/// completed, and a running count of readings that showed a slowing reason, so a caller can ask
/// whether any reading between two of its own saw one (a short throttle that the two end readings
/// miss).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "workers/devices/nvml_probe.hpp"

namespace rpl::workers {

class clock_poller {
public:
  using clock = std::chrono::steady_clock;

  struct reading {
    gpu_clock_reading values;
    clock::time_point done;         ///< when the read returned
    std::uint64_t sequence = 0;     ///< 1 for the first reading, then one more per reading
    std::uint64_t slowing_seen = 0; ///< readings so far (this one included) with a slowing reason
  };

  struct timing {
    std::chrono::microseconds period{4000};     ///< pause between two readings
    std::chrono::milliseconds idle_after{250};  ///< no caller for this long: sleep
    std::chrono::milliseconds wait_limit{2000}; ///< the longest fresh() waits for a reading
  };

  /// Starts the thread, which takes a first reading at once.
  clock_poller(std::shared_ptr<gpu_clock_probe> probe, std::string uuid, timing t);
  ~clock_poller();
  clock_poller(const clock_poller&) = delete;
  clock_poller& operator=(const clock_poller&) = delete;

  /// A measurement starts: keeps the thread reading until end_window(), and returns the latest
  /// reading if it completed at most `max_age` ago, else wakes the thread and waits (at most
  /// timing::wait_limit) for the next one. nullopt when the probe could not read.
  std::optional<reading> start_window(clock::duration max_age);

  /// The measurement ended: the latest completed reading, without waiting (it completed before
  /// the end, by at most one period and one read); nullopt when the probe could not read.
  std::optional<reading> end_window();

private:
  void run(const std::stop_token& stop);

  std::shared_ptr<gpu_clock_probe> probe_;
  std::string uuid_;
  timing timing_;
  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::optional<reading> latest_; ///< the last successful reading
  std::uint64_t attempts_ = 0;    ///< readings tried, failed ones included
  bool last_failed_ = false;      ///< the last attempt could not read
  std::uint64_t slowing_seen_ = 0;
  clock::time_point last_use_;
  bool in_window_ = false; ///< between start_window() and end_window(): never idle
  bool wanted_ = false;    ///< a caller waits for a reading: read now, skip the pause
  std::jthread thread_;    ///< last: stopped and joined before the members it uses go
};

} // namespace rpl::workers
