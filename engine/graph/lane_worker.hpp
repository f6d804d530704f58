#pragma once
/// A lane: one thread that measures one candidate at a time through a lane backend, which is what
/// serialises a device (exactly one measurement per GPU or CPU slot at a time).

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "engine/graph/candidate_state.hpp"
#include "workers/lanes/lane_backend.hpp"

namespace rpl::engine {

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

private:
  struct item {
    candidate_ptr candidate;
    messages::measure_request request;
    done_fn done;
  };
  void loop();

  workers::lane_backend_ptr backend_;
  int cpu_ = -1;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<item> queue_;
  bool stopping_ = false;
  std::atomic<std::size_t> outstanding_{0};
  std::thread thread_;
};

} // namespace rpl::engine
