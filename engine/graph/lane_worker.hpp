#pragma once
/// A lane: one thread that measures one candidate at a time through a lane backend, which is what
/// serialises a device (exactly one measurement per GPU or CPU slot at a time).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

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
  std::string device_model; ///< the model its last measurement reported; empty for CPU lanes
  double busy_fraction() const {
    return window.count() > 0
               ? static_cast<double>(busy.count()) / static_cast<double>(window.count())
               : 0.0;
  }
};

class lane_worker {
public:
  using done_fn = std::function<void(const candidate_ptr&)>;
  /// `cpu` >= 0 pins the lane thread, and so every process it starts, to that CPU.
  lane_worker(workers::lane_backend_ptr backend, int cpu);
  /// Joins the lane thread, unless a measurement is still running (one abandoned by a stop): then
  /// its processes are killed, daemons that left its process group included
  /// (workers::kill_live_runs), the thread is left to wind it up on its own (it owns what it
  /// uses) and its result is dropped.
  ~lane_worker();
  lane_worker(const lane_worker&) = delete;
  lane_worker& operator=(const lane_worker&) = delete;

  /// Queues a measurement; `done` runs on the lane thread once the result is in the candidate.
  /// The lane takes what it holds by candidate_state::sequence, the earliest proposed first.
  void push(candidate_ptr candidate, messages::measure_request request, done_fn done);
  /// Measures on the lane thread and waits for the result (after the graph: the final round).
  /// After abandon(), returns at once with status not_run.
  messages::measure_result measure_now(const messages::measure_request& request);
  /// Runs `job` on the lane thread (between queued measurements, in its turn) and waits for its
  /// result: work that needs the lane for several measurements at once (optimize: the original's
  /// validation, the final comparison). After abandon(), returns at once with status not_run.
  messages::measure_result
  run_now(std::function<messages::measure_result(workers::lane_backend&)> job);
  /// Removes the measurements not started yet and returns their candidates (their `done` never
  /// runs): a stopping run drops queued work.
  std::vector<candidate_ptr> drop_queued();
  /// Gives up on this lane: queued measurements are dropped, the running one's `done` never runs,
  /// and measure_now() returns not_run (at once, also for a caller waiting in it now).
  void abandon();
  /// Queued plus running measurements.
  std::size_t outstanding() const { return state_->outstanding.load(); }
  const std::string& name() const { return state_->backend->name(); }
  /// Its activity so far (safe from any thread).
  lane_activity activity() const;

private:
  using clock = std::chrono::steady_clock;
  struct item {
    candidate_ptr candidate;
    messages::measure_request request;
    done_fn done;
  };
  /// Everything the lane thread touches, shared with it so that it may outlive the lane_worker.
  struct state {
    workers::lane_backend_ptr backend;
    int cpu = -1;
    mutable std::mutex mutex;
    std::condition_variable ready;
    std::condition_variable settled; // measure_now() waits on it
    std::deque<item> queue;
    bool stopping = false;
    bool running = false; // a measurement is in backend->measure()
    bool abandoned = false;
    std::atomic<std::size_t> outstanding{0};
    std::size_t measurements = 0; // guarded by mutex, as are the three below
    clock::duration busy{};
    std::optional<clock::time_point> first_start;
    clock::time_point last_end{};
    std::string device_model;
  };
  static void loop(const std::shared_ptr<state>& s);

  std::shared_ptr<state> state_;
  std::thread thread_;
};

} // namespace rpl::engine
