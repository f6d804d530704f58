#pragma once
/// A compile_service for graph tests: no compiler, no broker. Each request is answered by a
/// scripted function on the service's own thread (as the broker answers on its thread), so the
/// graph's async gateway is exercised for real.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "engine/graph/compile_service.hpp"

namespace rpl::testing {

class fake_compile_service final : public engine::compile_service {
public:
  using script_fn = std::function<messages::compile_reply(const messages::compile_request&)>;

  /// Default script: status ok with an artifact whose bytes are the joined argv.
  explicit fake_compile_service(script_fn script = ok_with_argv_artifact)
      : script_(std::move(script)), thread_([this] { loop(); }) {}
  ~fake_compile_service() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    thread_.join();
  }

  void submit(messages::compile_request request, reply_fn on_reply) override {
    {
      std::lock_guard lock(mutex_);
      queue_.emplace_back(std::move(request), std::move(on_reply));
      ++submitted_;
    }
    ready_.notify_one();
  }

  std::size_t submitted() const { return submitted_.load(); }

  static messages::compile_reply ok_with_argv_artifact(const messages::compile_request& request) {
    messages::compile_reply reply;
    reply.status = messages::compile_status::ok;
    reply.exit_code = 0;
    reply.has_artifact = true;
    for (const auto& word : request.argv) {
      reply.artifact.insert(reply.artifact.end(), word.begin(), word.end());
      reply.artifact.push_back(' ');
    }
    reply.compile_ns = 1'000'000;
    reply.worker_id = "fake:1";
    return reply;
  }

private:
  void loop() {
    while (true) {
      std::pair<messages::compile_request, reply_fn> job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) {
          return;
        }
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job.second(script_(job.first));
    }
  }

  script_fn script_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<messages::compile_request, reply_fn>> queue_;
  bool stopping_ = false;
  std::atomic<std::size_t> submitted_{0};
  std::thread thread_;
};

} // namespace rpl::testing
