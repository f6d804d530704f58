#include "engine/graph/lane_worker.hpp"

#include <future>

#include <pthread.h>
#include <sched.h>

namespace rpl::engine {

lane_worker::lane_worker(workers::lane_backend_ptr backend, int cpu)
    : backend_(std::move(backend)), cpu_(cpu), thread_([this] { loop(); }) {}

lane_worker::~lane_worker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  thread_.join();
}

void lane_worker::push(candidate_ptr candidate, messages::measure_request request, done_fn done) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back({std::move(candidate), std::move(request), std::move(done)});
    ++outstanding_;
  }
  ready_.notify_one();
}

messages::measure_result lane_worker::measure_now(const messages::measure_request& request) {
  auto probe = std::make_shared<candidate_state>();
  std::promise<messages::measure_result> done;
  auto result = done.get_future();
  push(probe, request, [&done](const candidate_ptr& c) { done.set_value(c->measure); });
  return result.get();
}

lane_activity lane_worker::activity() const {
  std::lock_guard lock(mutex_);
  lane_activity a;
  a.lane = backend_->name();
  a.measurements = measurements_;
  a.busy = busy_;
  a.window = first_start_ ? last_end_ - *first_start_ : clock::duration{};
  return a;
}

void lane_worker::loop() {
  if (cpu_ >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu_, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
  while (true) {
    item next;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;
      }
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    const auto started = clock::now();
    try {
      next.candidate->measure = backend_->measure(next.request);
    } catch (const std::exception& error) {
      next.candidate->measure.status = messages::measure_status::launch_failed;
      next.candidate->measure.reason = std::string("lane error: ") + error.what();
    }
    {
      std::lock_guard lock(mutex_);
      ++measurements_;
      last_end_ = clock::now();
      busy_ += last_end_ - started;
      if (!first_start_) {
        first_start_ = started;
      }
    }
    --outstanding_;
    next.done(next.candidate);
  }
}

} // namespace rpl::engine
