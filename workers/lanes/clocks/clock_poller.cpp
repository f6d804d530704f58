#include "workers/lanes/clocks/clock_poller.hpp"

#include "stages/hardware/clock_events.hpp"

namespace rpl::workers {

clock_poller::clock_poller(std::shared_ptr<gpu_clock_probe> probe, std::string uuid, timing t)
    : probe_(std::move(probe)), uuid_(std::move(uuid)), timing_(t), last_use_(clock::now()),
      thread_([this](const std::stop_token& stop) { run(stop); }) {}

clock_poller::~clock_poller() = default; // thread_ goes first: stopped, woken and joined

void clock_poller::run(const std::stop_token& stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    lock.unlock();
    const std::optional<gpu_clock_reading> values = probe_->read(uuid_);
    const clock::time_point done = clock::now();
    lock.lock();
    ++attempts_;
    last_failed_ = !values;
    if (values) {
      if ((values->reasons & stages::clock_event::slowing) != 0)
        ++slowing_seen_;
      latest_ = reading{*values, done, attempts_, slowing_seen_};
    }
    wanted_ = false;
    changed_.notify_all();
    // A pause between readings (cut short when a caller needs a fresh one), then, while nobody
    // measures, sleep until someone does.
    changed_.wait_for(lock, stop, timing_.period, [this] { return wanted_; });
    changed_.wait(lock, stop, [this] {
      return wanted_ || in_window_ || clock::now() - last_use_ < timing_.idle_after;
    });
  }
}

std::optional<clock_poller::reading> clock_poller::start_window(clock::duration max_age) {
  std::unique_lock lock(mutex_);
  const clock::time_point now = clock::now();
  in_window_ = true;
  last_use_ = now;
  if (!last_failed_ && latest_ && now - latest_->done <= max_age)
    return latest_;
  const std::uint64_t after = attempts_;
  wanted_ = true;
  changed_.notify_all();
  changed_.wait_for(lock, timing_.wait_limit, [&] { return attempts_ > after; });
  if (attempts_ == after || last_failed_)
    return std::nullopt;
  return latest_;
}

std::optional<clock_poller::reading> clock_poller::end_window() {
  std::lock_guard lock(mutex_);
  in_window_ = false;
  last_use_ = clock::now();
  if (last_failed_)
    return std::nullopt;
  return latest_;
}

} // namespace rpl::workers
