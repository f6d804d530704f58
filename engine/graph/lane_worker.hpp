#pragma once
/// A lane: one thread that measures one candidate at a time through a lane backend, which is what
/// serialises a device (exactly one measurement per GPU or CPU slot at a time).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "engine/graph/candidate_state.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::engine {

/// How busy a lane was: measurements, the time spent in them, and the span from the start of its
/// first measurement to the end of its last (the window in which it could have been busy).
struct lane_activity {
  std::string lane;
  std::size_t measurements = 0;
  std::chrono::nanoseconds busy{0};
  std::chrono::nanoseconds window{0};
  double busy_fraction() const {
    return window.count() > 0 ? static_cast<double>(busy.count()) / window.count() : 0.0;
  }
};

class lane_worker {
public:
  using done_fn = std::function<void(const candidate_ptr&)>;
  /// `cpu` >= 0 pins the lane thread, and so every process it starts, to that CPU.
  lane_worker(workers::lane_backend_ptr backend, int cpu);
  ~lane_worker();
  lane_worker(const lane_worker&) = delete;
  lane_worker& operator=(const lane_worker&) = delete;

  /// Queues a measurement; `done` runs on the lane thread once the result is in the candidate.
  void push(candidate_ptr candidate, messages::measure_request request, done_fn done);
  /// Measures on the lane thread and waits for the result (after the graph: the final round).
  messages::measure_result measure_now(const messages::measure_request& request);
  /// Queued plus running measurements.
  std::size_t outstanding() const { return outstanding_.load(); }
  const std::string& name() const { return backend_->name(); }
  /// Its activity so far (safe from any thread).
  lane_activity activity() const;

private:
  struct item {
    candidate_ptr candidate;
    messages::measure_request request;
    done_fn done;
  };
  void loop();
  using clock = std::chrono::steady_clock;

  workers::lane_backend_ptr backend_;
  int cpu_ = -1;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<item> queue_;
  bool stopping_ = false;
  std::atomic<std::size_t> outstanding_{0};
  std::size_t measurements_ = 0; // guarded by mutex_, as are the three below
  clock::duration busy_{};
  std::optional<clock::time_point> first_start_;
  clock::time_point last_end_{};
  std::thread thread_;
};

} // namespace rpl::engine
