#include "workers/proposers/proposer_worker.hpp"

#include <chrono>
#include <stdexcept>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>
#include <utility>

#include "messages/codec.hpp"
#include "stages/optimize/proposer_kinds.hpp"
#include "workers/protocol/job_handler.hpp"
#include "workers/protocol/worker_session.hpp"

namespace rpl::workers {

namespace {

using steady = std::chrono::steady_clock;

/// One proposer job at a time, on a thread of its own; the eventfd wakes the session when the
/// thread has its reply.
class propose_job_handler final : public job_handler {
public:
  propose_job_handler(std::string kind, proposer_ptr proposer, std::string worker_id)
      : kind_(std::move(kind)), proposer_(std::move(proposer)), worker_id_(std::move(worker_id)) {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) {
      throw std::runtime_error("proposer worker: eventfd failed");
    }
  }

  ~propose_job_handler() override {
    cancel_ = true;
    if (thread_.joinable()) {
      thread_.join();
    }
    ::close(wake_fd_);
  }

  void describe(messages::ready& hello) const override { hello.compilers = {kind_}; }

  messages::message_kind request_kind() const override {
    return messages::message_kind::propose_request;
  }

  std::optional<job_reply> start(const messages::envelope& envelope,
                                 std::string_view body) override {
    job_reply reply;
    reply.job_id = envelope.job_id;
    reply.run_id = envelope.run_id;
    reply.kind = messages::message_kind::propose_reply;
    if (busy_) {
      reply.body = failure("this proposer worker is busy with another job");
      return reply;
    }
    messages::propose_request request;
    try {
      request = messages::decode<messages::propose_request>(body);
    } catch (const messages::decode_error& error) {
      reply.body = failure(std::string("unreadable propose request: ") + error.what());
      return reply;
    }
    if (thread_.joinable()) {
      thread_.join(); // the previous job's thread has delivered (or was abandoned and cancelled)
    }
    cancel_ = false;
    done_ = false;
    busy_ = true;
    current_ = reply;
    thread_ = std::thread([this, request = std::move(request)] {
      const auto begin = steady::now();
      messages::propose_reply answer;
      try {
        answer = proposer_->propose(request, cancel_);
      } catch (const std::exception& error) {
        answer.status = messages::propose_status::failed;
        answer.error = std::string("the proposer failed: ") + error.what();
      }
      answer.proposer = answer.proposer.empty() ? proposer_->name() : answer.proposer;
      answer.worker_id = worker_id_;
      answer.elapsed_ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - begin).count();
      result_ = messages::encode(answer);
      done_.store(true, std::memory_order_release);
      const std::uint64_t one = 1;
      [[maybe_unused]] auto written = ::write(wake_fd_, &one, sizeof one);
    });
    return std::nullopt;
  }

  bool busy() const override { return busy_; }

  job_wait wait() const override {
    job_wait w;
    w.fds = {wake_fd_};
    w.poll_by = steady::now() + std::chrono::milliseconds(500);
    return w;
  }

  std::optional<job_reply> poll() override {
    std::uint64_t counter = 0;
    [[maybe_unused]] auto got = ::read(wake_fd_, &counter, sizeof counter);
    if (!busy_ || !done_.load(std::memory_order_acquire)) {
      return std::nullopt;
    }
    thread_.join();
    busy_ = false;
    job_reply reply = current_;
    reply.body = std::move(result_);
    return reply;
  }

  void abandon(std::string_view) override {
    if (!busy_) {
      return;
    }
    cancel_ = true; // the proposer returns soon; its thread is joined before the next job
    busy_ = false;
  }

private:
  std::string failure(const std::string& why) const {
    messages::propose_reply answer;
    answer.status = messages::propose_status::failed;
    answer.proposer = proposer_->name();
    answer.worker_id = worker_id_;
    answer.error = why;
    return messages::encode(answer);
  }

  std::string kind_;
  proposer_ptr proposer_;
  std::string worker_id_;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> done_{false};
  bool busy_ = false;
  job_reply current_;
  std::string result_; // written by the job thread before done_, read after
};

} // namespace

int run_proposer_worker(const proposer_worker_options& options,
                        proposer_ptr proposer,
                        std::atomic<bool>& stop_requested) {
  if (stages::optimize::find_proposer_kind(options.kind) == nullptr) {
    throw std::invalid_argument("--kind must be one of the proposer kinds "
                                "(stages/optimize/proposer_kinds.hpp), not '" +
                                options.kind + "'");
  }
  if (!proposer) {
    throw std::invalid_argument("no proposer for --kind " + options.kind);
  }
  worker_session_options session_options;
  session_options.service = "propose";
  session_options.endpoint = options.endpoint;
  session_options.heartbeat = options.heartbeat;
  session_options.liveness = options.liveness;
  session_options.reconnect_initial = options.reconnect_initial;
  session_options.reconnect_max = options.reconnect_max;
  session_options.curve = options.curve;
  session_options.once = options.once;
  worker_session session(session_options, stop_requested);
  propose_job_handler handler(options.kind, std::move(proposer), session.identity().worker_id);
  return session.run(handler);
}

} // namespace rpl::workers
