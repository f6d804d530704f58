// The worker protocol loop with a handler that is not a compiler: what a future proposer worker
// gets for free. A real ROUTER socket on ipc:// plays the broker; the session runs in a thread.

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "messages/codec.hpp"
#include "support/fake_broker.hpp"
#include "workers/protocol/worker_session.hpp"

namespace rpl::workers {
namespace {

using namespace std::chrono_literals;
using messages::message_kind;
using steady = std::chrono::steady_clock;

using broker_double = rpl::testing::fake_broker;

/// Serves MEASURE_REQUEST by waiting timeout_ms without any child process, then answering ok: a
/// long job that only the session's polling can finish.
class timer_handler final : public job_handler {
public:
  void describe(messages::ready& hello) const override { hello.compilers = {"timer"}; }
  message_kind request_kind() const override { return message_kind::measure_request; }
  std::optional<job_reply> start(const messages::envelope& envelope,
                                 std::string_view body) override {
    const auto request = messages::decode<messages::measure_request>(body);
    std::lock_guard lock(mutex_);
    ++started;
    if (job_) {
      messages::measure_result busy;
      busy.status = messages::measure_status::not_run;
      busy.reason = "busy with job " + std::to_string(job_->job_id);
      return job_reply{.job_id = envelope.job_id,
                       .run_id = envelope.run_id,
                       .kind = message_kind::measure_result,
                       .body = messages::encode(busy)};
    }
    job_ = job{envelope.job_id, envelope.run_id,
               steady::now() + std::chrono::milliseconds(request.timeout_ms)};
    return std::nullopt;
  }
  bool busy() const override {
    std::lock_guard lock(mutex_);
    return job_.has_value();
  }
  job_wait wait() const override {
    std::lock_guard lock(mutex_);
    return job_wait{{}, job_->until};
  }
  std::optional<job_reply> poll() override {
    std::lock_guard lock(mutex_);
    ++polls;
    if (steady::now() < job_->until)
      return std::nullopt;
    messages::measure_result done;
    done.status = messages::measure_status::ok;
    done.samples_ns = {1, 2};
    done.lane = "timer";
    job_reply reply{.job_id = job_->job_id,
                    .run_id = job_->run_id,
                    .kind = message_kind::measure_result,
                    .body = messages::encode(done)};
    job_.reset();
    return reply;
  }
  void abandon(std::string_view why) override {
    std::lock_guard lock(mutex_);
    if (!job_)
      return;
    abandoned.emplace_back(why);
    job_.reset();
  }

  int started = 0;
  int polls = 0;
  std::vector<std::string> abandoned;

private:
  struct job {
    std::uint64_t job_id;
    std::string run_id;
    steady::time_point until;
  };
  mutable std::mutex mutex_;
  std::optional<job> job_;
};

worker_session_options fast(const broker_double& broker) {
  worker_session_options options;
  options.service = "timer";
  options.endpoint = broker.endpoint();
  options.heartbeat = 50ms;
  options.liveness = 3;
  options.reconnect_initial = 50ms;
  options.reconnect_max = 400ms;
  return options;
}

/// A session in a thread; stopped and joined on destruction.
class session_thread {
public:
  session_thread(worker_session_options options, timer_handler& handler)
      : session_(std::move(options), stop_),
        thread_([this, &handler] { result_ = session_.run(handler); }) {}
  ~session_thread() { stop(); }
  int stop() {
    stop_ = true;
    if (thread_.joinable())
      thread_.join();
    return result_;
  }
  const worker_session& session() const { return session_; }

private:
  std::atomic<bool> stop_{false};
  std::atomic<int> result_{-1};
  worker_session session_;
  std::thread thread_;
};

messages::measure_request timed(std::uint32_t ms) {
  messages::measure_request request;
  request.candidate_key = "k";
  request.timeout_ms = ms;
  return request;
}

TEST(workers_worker_session, ready_names_the_service_and_the_handlers_capabilities) {
  broker_double broker;
  timer_handler handler;
  session_thread worker(fast(broker), handler);
  const auto ready = broker.expect(message_kind::ready, 3s);
  ASSERT_TRUE(ready);
  const auto body = messages::decode<messages::ready>(ready->body);
  EXPECT_EQ(body.service, "timer");
  EXPECT_EQ(body.compilers, std::vector<std::string>{"timer"});
  EXPECT_EQ(body.worker_id, worker.session().identity().worker_id);
  EXPECT_EQ(body.pid, ::getpid());
  EXPECT_EQ(body.heartbeat_ms, 50u);
}

TEST(workers_worker_session, a_long_job_is_polled_while_heartbeats_continue) {
  broker_double broker;
  timer_handler handler;
  session_thread worker(fast(broker), handler);
  ASSERT_TRUE(broker.expect(message_kind::ready, 3s));
  const auto sent = steady::now();
  broker.send(broker.worker, 5, timed(400), "run-s");
  // A second request while busy goes to the handler, which answers it at once.
  broker.send(broker.worker, 6, timed(10));
  const auto refused = broker.expect(message_kind::measure_result, 3s);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->env.job_id, 6u);
  EXPECT_EQ(messages::decode<messages::measure_result>(refused->body).reason, "busy with job 5");
  const auto reply = broker.expect(message_kind::measure_result, 3s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->env.job_id, 5u);
  EXPECT_EQ(reply->env.run_id, "run-s");
  EXPECT_GE(reply->at - sent, 390ms);
  EXPECT_LT(reply->at - sent, 2s);
  const auto result = messages::decode<messages::measure_result>(reply->body);
  EXPECT_EQ(result.samples_ns, (std::vector<std::int64_t>{1, 2}));
  // 400 ms at one heartbeat per 50 ms, on the same connection.
  EXPECT_GE(broker.count(message_kind::heartbeat, sent, reply->at), 5u);
  EXPECT_EQ(broker.count(message_kind::ready, sent, reply->at), 0u);
  EXPECT_EQ(worker.stop(), 0);
  EXPECT_EQ(handler.started, 2);
  EXPECT_TRUE(handler.abandoned.empty());
}

TEST(workers_worker_session, other_kinds_and_unnumbered_jobs_never_reach_the_handler) {
  broker_double broker;
  timer_handler handler;
  session_thread worker(fast(broker), handler);
  ASSERT_TRUE(broker.expect(message_kind::ready, 3s));
  broker.send(broker.worker, 7, messages::compile_request{});
  broker.send(broker.worker, 0, timed(10));
  broker.send(broker.worker, 8, timed(10));
  const auto reply = broker.expect(message_kind::measure_result, 3s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->env.job_id, 8u);
  worker.stop();
  EXPECT_EQ(handler.started, 1);
}

TEST(workers_worker_session, disconnect_abandons_the_job_and_reconnects) {
  broker_double broker;
  timer_handler handler;
  session_thread worker(fast(broker), handler);
  const auto first = broker.expect(message_kind::ready, 3s);
  ASSERT_TRUE(first);
  broker.send(first->identity, 9, timed(30000));
  std::this_thread::sleep_for(50ms);
  broker.send(first->identity, 0, messages::disconnect{"go away"});
  const auto second = broker.expect(message_kind::ready, 3s);
  ASSERT_TRUE(second);
  EXPECT_NE(second->identity, first->identity);
  EXPECT_EQ(broker.count(message_kind::measure_result, first->at, second->at), 0u);
  worker.stop();
  ASSERT_EQ(handler.abandoned.size(), 1u);
  EXPECT_EQ(handler.abandoned[0], "the broker connection is being reset");
}

TEST(workers_worker_session, stop_abandons_the_job_and_says_goodbye) {
  broker_double broker;
  timer_handler handler;
  session_thread worker(fast(broker), handler);
  ASSERT_TRUE(broker.expect(message_kind::ready, 3s));
  broker.send(broker.worker, 10, timed(30000));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(worker.stop(), 0);
  const auto bye = broker.expect(message_kind::disconnect, 2s);
  ASSERT_TRUE(bye);
  EXPECT_EQ(messages::decode<messages::disconnect>(bye->body).reason, "worker stopping");
  ASSERT_EQ(handler.abandoned.size(), 1u);
  EXPECT_EQ(handler.abandoned[0], "worker stopping");
}

TEST(workers_worker_session, bad_options_name_the_service_and_a_fix) {
  std::atomic<bool> stop{false};
  worker_session_options options;
  options.service = "propose";
  options.endpoint = "localhost:5555";
  try {
    worker_session session(options, stop);
    FAIL() << "a bad endpoint was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(
        std::string(error.what()),
        "propose worker endpoint 'localhost:5555' must start with ipc:// or tcp://; fix: e.g. "
        "--connect tcp://ENGINE_HOST:5555");
  }
  options.endpoint = "tcp://127.0.0.1:5555";
  options.liveness = 0;
  EXPECT_THROW((worker_session{options, stop}), std::invalid_argument);
  options.liveness = 3;
  options.reconnect_max = 10ms;
  EXPECT_THROW((worker_session{options, stop}), std::invalid_argument);
}

} // namespace
} // namespace rpl::workers
