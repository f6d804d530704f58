#pragma once
/// A lane_backend that answers from a script instead of running anything: per candidate key
/// (samples, or a failure status with its reason) or through a callback, optionally after a sleep.
/// It records every request, so a test can assert what reached the lane and how often.
/// Thread-safe: the engine calls measure() on lane threads while the test reads the record.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "workers/lanes/lane_backend.hpp"

namespace rpl::testing {

class fake_lane final : public workers::lane_backend {
public:
  using script = std::function<messages::measure_result(const messages::measure_request&)>;

  explicit fake_lane(std::string name = "fake0") : name_(std::move(name)) {}
  ~fake_lane() override {
    if (destroyed_)
      destroyed_->store(true);
  }

  /// Sets `flag` when this lane is destroyed: a test that leaves a measurement running (the lane
  /// owned by a detached thread) waits for it before the process ends, so nothing is still
  /// allocated when LeakSanitizer looks at exit.
  fake_lane& on_destroy(std::shared_ptr<std::atomic<bool>> flag) {
    destroyed_ = std::move(flag);
    return *this;
  }

  /// `candidate_key` succeeds with exactly these samples (whatever request.runs says).
  fake_lane& succeed(const std::string& candidate_key, std::vector<std::int64_t> samples_ns) {
    messages::measure_result result;
    result.status = messages::measure_status::ok;
    result.samples_ns = std::move(samples_ns);
    return answer(candidate_key, std::move(result));
  }

  /// `candidate_key` fails with `status` and `reason` in its first timed run.
  fake_lane&
  fail(const std::string& candidate_key, messages::measure_status status, std::string reason) {
    messages::measure_result result;
    result.status = status;
    result.reason = std::move(reason);
    result.failed_run = 0;
    return answer(candidate_key, std::move(result));
  }

  /// `candidate_key` gets `result` as it is (lane is filled in).
  fake_lane& answer(const std::string& candidate_key, messages::measure_result result) {
    std::lock_guard lock(mutex_);
    by_key_[candidate_key] = std::move(result);
    return *this;
  }

  /// Answers every key without a scripted result. Without one, such a key fails with not_run and
  /// a reason naming it, so a test that forgot to script a candidate sees which.
  fake_lane& otherwise(script callback) {
    std::lock_guard lock(mutex_);
    otherwise_ = std::move(callback);
    return *this;
  }

  /// Each measure() sleeps this long first (to hold a lane busy, or to order completions).
  fake_lane& sleep_for(std::chrono::milliseconds delay) {
    std::lock_guard lock(mutex_);
    delay_ = delay;
    return *this;
  }

  messages::measure_result measure(const messages::measure_request& request) override {
    script callback;
    messages::measure_result result;
    bool scripted = false;
    std::chrono::milliseconds delay{0};
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request);
      delay = delay_;
      if (auto it = by_key_.find(request.candidate_key); it != by_key_.end()) {
        result = it->second;
        scripted = true;
      } else {
        callback = otherwise_;
      }
    }
    if (delay.count() > 0)
      std::this_thread::sleep_for(delay);
    if (!scripted && callback) {
      result = callback(request);
    } else if (!scripted) {
      result.status = messages::measure_status::not_run;
      result.reason = "fake_lane " + name_ + ": no script for candidate " + request.candidate_key +
                      "; fix: script it with succeed(), fail() or answer(), or set otherwise()";
    }
    result.lane = name_;
    return result;
  }

  const std::string& name() const override { return name_; }

  /// How many times measure() was called, in all and for one key.
  std::size_t calls() const {
    std::lock_guard lock(mutex_);
    return requests_.size();
  }
  std::size_t calls_for(const std::string& candidate_key) const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& request : requests_)
      n += request.candidate_key == candidate_key ? 1 : 0;
    return n;
  }
  /// Every request, in the order measure() received them.
  std::vector<messages::measure_request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

private:
  std::string name_;
  std::shared_ptr<std::atomic<bool>> destroyed_;
  mutable std::mutex mutex_;
  std::map<std::string, messages::measure_result> by_key_;
  script otherwise_;
  std::chrono::milliseconds delay_{0};
  std::vector<messages::measure_request> requests_;
};

} // namespace rpl::testing
