#include "engine/graph/lane_worker.hpp"

#include <algorithm>

#include <pthread.h>
#include <sched.h>
#include <spdlog/spdlog.h>

#include "workers/process/descendant_reaper.hpp"

namespace rpl::engine {

namespace {

messages::measure_result abandoned_result(const std::string& lane) {
  messages::measure_result abandoned;
  abandoned.status = messages::measure_status::not_run;
  abandoned.reason = "abandoned: the run is stopping";
  abandoned.lane = lane;
  return abandoned;
}

} // namespace

lane_worker::lane_worker(workers::lane_backend_ptr backend, int cpu)
    : state_(std::make_shared<state>()) {
  state_->backend = std::move(backend);
  state_->cpu = cpu;
  thread_ = std::thread([s = state_] { loop(s); });
}

lane_worker::~lane_worker() {
  bool running = false;
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
    running = state_->running;
  }
  state_->ready.notify_all();
  if (running) {
    // Only an abandoned measurement can still run here (the graph and the final round wait for
    // theirs): do not wait for it, and kill what it runs now. The parent-death signal would take
    // only its leader along with the engine: what escaped its process group (a setsid daemon)
    // would outlive the engine.
    const auto left = workers::kill_live_runs(thread_.get_id());
    if (left.empty())
      spdlog::warn("lane {}: killed the measurement still running; its result is dropped",
                   state_->backend->name());
    else
      spdlog::warn("lane {}: killed the measurement still running, which {} outside its process "
                   "group (killed too); its result is dropped",
                   state_->backend->name(), workers::describe_leftovers(left));
    thread_.detach();
  } else {
    thread_.join();
  }
}

void lane_worker::push(candidate_ptr candidate, messages::measure_request request, done_fn done) {
  {
    std::lock_guard lock(state_->mutex);
    state_->queue.push_back({std::move(candidate), std::move(request), std::move(done)});
    ++state_->outstanding;
  }
  state_->ready.notify_one();
}

messages::measure_result lane_worker::measure_now(const messages::measure_request& request) {
  return run_now([request](workers::lane_backend& backend) { return backend.measure(request); });
}

messages::measure_result
lane_worker::run_now(std::function<messages::measure_result(workers::lane_backend&)> job) {
  struct slot {
    bool ready = false;
    messages::measure_result result;
  };
  {
    std::lock_guard lock(state_->mutex);
    if (state_->abandoned)
      return abandoned_result(state_->backend->name());
  }
  auto answer = std::make_shared<slot>();
  auto probe = std::make_shared<candidate_state>();
  probe->lane_job = std::move(job);
  push(probe, {}, [answer, s = state_](const candidate_ptr& c) {
    {
      std::lock_guard lock(s->mutex);
      answer->result = c->measure;
      answer->ready = true;
    }
    s->settled.notify_all();
  });
  std::unique_lock lock(state_->mutex);
  state_->settled.wait(lock, [&] { return answer->ready || state_->abandoned; });
  if (!answer->ready)
    return abandoned_result(state_->backend->name());
  return answer->result;
}

std::vector<candidate_ptr> lane_worker::drop_queued() {
  std::vector<candidate_ptr> dropped;
  {
    std::lock_guard lock(state_->mutex);
    for (auto& queued : state_->queue) {
      dropped.push_back(std::move(queued.candidate));
      --state_->outstanding;
    }
    state_->queue.clear();
  }
  return dropped;
}

void lane_worker::abandon() {
  drop_queued();
  {
    std::lock_guard lock(state_->mutex);
    state_->abandoned = true;
  }
  state_->settled.notify_all();
}

lane_activity lane_worker::activity() const {
  std::lock_guard lock(state_->mutex);
  lane_activity a;
  a.lane = state_->backend->name();
  a.measurements = state_->measurements;
  a.busy = state_->busy;
  a.window = state_->first_start ? state_->last_end - *state_->first_start : clock::duration{};
  a.device_model = state_->device_model;
  return a;
}

void lane_worker::loop(const std::shared_ptr<state>& s) {
  if (s->cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(s->cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
  try {
    s->backend->prepare();
  } catch (const std::exception&) {
    // measure() meets the same problem and reports it with the candidate.
  }
  while (true) {
    item next;
    std::deque<item> dropped; // destroyed after the lock is released
    {
      std::unique_lock lock(s->mutex);
      s->ready.wait(lock, [&] { return s->stopping || !s->queue.empty(); });
      if (s->queue.empty() || s->abandoned) {
        // What is still queued goes with the thread: a measure_now callback holds this state, a
        // cycle that would keep it and the lane allocated for ever.
        dropped.swap(s->queue);
        s->outstanding -= dropped.size();
        lock.unlock();
        return;
      }
      // The earliest proposed first (candidate_state::sequence), whatever order they came in,
      // of those whose turn it is (candidate_state::lane_turn); none: look again shortly.
      auto earliest = s->queue.end();
      for (auto it = s->queue.begin(); it != s->queue.end(); ++it) {
        const bool turn = s->stopping || !it->candidate->lane_turn || it->candidate->lane_turn();
        if (turn && (earliest == s->queue.end() ||
                     it->candidate->sequence < earliest->candidate->sequence)) {
          earliest = it;
        }
      }
      if (earliest == s->queue.end()) {
        s->ready.wait_for(lock, std::chrono::milliseconds(2));
        continue;
      }
      next = std::move(*earliest);
      s->queue.erase(earliest);
      s->running = true;
    }
    const auto started = clock::now();
    try {
      next.candidate->measure = next.candidate->lane_job ? next.candidate->lane_job(*s->backend)
                                                         : s->backend->measure(next.request);
    } catch (const std::exception& error) {
      next.candidate->measure.status = messages::measure_status::launch_failed;
      next.candidate->measure.reason = std::string("lane error: ") + error.what();
    }
    bool abandoned = false;
    {
      std::lock_guard lock(s->mutex);
      ++s->measurements;
      s->last_end = clock::now();
      s->busy += s->last_end - started;
      if (!next.candidate->measure.device_model.empty())
        s->device_model = next.candidate->measure.device_model;
      if (!s->first_start) {
        s->first_start = started;
      }
      s->running = false;
      abandoned = s->abandoned;
    }
    --s->outstanding;
    if (!abandoned) {
      next.done(next.candidate);
    }
  }
}

} // namespace rpl::engine
