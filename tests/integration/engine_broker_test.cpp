#include <future>
#include <mutex>

#include <gtest/gtest.h>
#include <zmq_addon.hpp>

#include "engine/broker/broker.hpp"
#include "messages/codec.hpp"
#include "support/manual_clock.hpp"
#include "support/test_support.hpp"

namespace rpl::engine {
namespace {

using namespace std::chrono_literals;

/// A scripted worker speaking the protocol by hand, so each test controls exactly what it sends.
/// With the broker on a manual clock a worker need not heartbeat to stay alive: tests that expire
/// workers turn `heartbeating` off and move the clock instead.
class fake_worker {
public:
  fake_worker(zmq::context_t& context, const std::string& endpoint, const std::string& id)
      : socket_(context, zmq::socket_type::dealer), id_(id) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
  }
  template <class T>
  void send(const T& body, std::uint64_t job_id = 0, const std::string& run_id = "") {
    messages::envelope env;
    env.kind = T::kind;
    env.job_id = job_id;
    env.run_id = run_id;
    std::vector<zmq::message_t> frames;
    frames.emplace_back(std::string(messages::protocol_header));
    frames.emplace_back(messages::encode(env));
    frames.emplace_back(messages::encode(body));
    zmq::send_multipart(socket_, frames);
  }
  void ready(std::uint32_t slots = 0, std::vector<messages::toolchain> toolchains = {}) {
    messages::ready hello;
    hello.worker_id = id_;
    hello.slots = slots;
    hello.toolchains = std::move(toolchains);
    send(hello);
  }
  /// Next message that is not a heartbeat, or nullopt after the timeout.
  std::optional<messages::parsed_frames> receive(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto next_heartbeat = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() < deadline) {
      // A waiting worker stays alive the way a real one does; it goes silent once it stops waiting.
      if (heartbeating && std::chrono::steady_clock::now() >= next_heartbeat) {
        send(messages::heartbeat{});
        next_heartbeat += 20ms;
      }
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, 10ms);
      if ((item.revents & ZMQ_POLLIN) == 0) {
        continue;
      }
      std::vector<zmq::message_t> frames;
      (void)zmq::recv_multipart(socket_, std::back_inserter(frames));
      auto parsed =
          messages::parse_frames(frames.at(0).to_string_view(), frames.at(1).to_string_view(),
                                 frames.at(2).to_string_view());
      if (parsed.env.kind == messages::message_kind::heartbeat) {
        ++heartbeats_seen;
        continue;
      }
      return parsed;
    }
    return std::nullopt;
  }
  void reply_status(const messages::parsed_frames& request, messages::compile_status status) {
    messages::compile_reply reply;
    reply.status = status;
    reply.worker_id = id_;
    reply.error = "test says so";
    send(reply, request.env.job_id, request.env.run_id);
  }
  void reply_ok(const messages::parsed_frames& request, const std::string& artifact = "bin") {
    messages::compile_reply reply;
    reply.status = messages::compile_status::ok;
    reply.worker_id = id_;
    reply.artifact.assign(artifact.begin(), artifact.end());
    reply.has_artifact = true;
    send(reply, request.env.job_id, request.env.run_id);
  }
  /// Waits until `count` heartbeats from the broker have arrived in all; false after the timeout.
  bool wait_for_heartbeats(int count, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (heartbeats_seen < count && std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, 10ms);
      if ((item.revents & ZMQ_POLLIN) == 0) {
        continue;
      }
      std::vector<zmq::message_t> frames;
      (void)zmq::recv_multipart(socket_, std::back_inserter(frames));
      auto parsed =
          messages::parse_frames(frames.at(0).to_string_view(), frames.at(1).to_string_view(),
                                 frames.at(2).to_string_view());
      if (parsed.env.kind == messages::message_kind::heartbeat) {
        ++heartbeats_seen;
      }
    }
    return heartbeats_seen >= count;
  }
  int heartbeats_seen = 0;
  bool heartbeating = true;

private:
  zmq::socket_t socket_;
  std::string id_;
};

struct collected {
  std::mutex mutex;
  std::vector<messages::compile_reply> replies;
  std::size_t count() {
    std::lock_guard lock(mutex);
    return replies.size();
  }
};

class broker_test : public ::testing::Test {
protected:
  void SetUp() override {
    endpoint_ = "ipc://" + (dir_.path() / "b.ipc").string();
    config_.bind_endpoints = {endpoint_};
    config_.heartbeat = 50ms;
    config_.liveness = 3;
    // Time moves only when a test advances it: no expiry or heartbeat happens by accident.
    config_.clock = clock_.function();
  }
  std::uint64_t submit(broker& b, collected& out, messages::compile_request request = {}) {
    if (request.argv.empty())
      request.argv = {"g++", "x.cpp", "-o", "{OUT}"};
    return b.submit("run-t", request, [&out](const messages::compile_reply& reply) {
      std::lock_guard lock(out.mutex);
      out.replies.push_back(reply);
    });
  }
  rpl::testing::temp_dir dir_;
  std::string endpoint_;
  rpl::testing::manual_clock clock_;
  broker_config config_;
  zmq::context_t context_{1};
};

TEST_F(broker_test, dispatches_a_job_to_a_ready_worker_and_delivers_its_reply) {
  broker b(config_);
  b.start();
  fake_worker w(context_, endpoint_, "w1");
  w.ready();
  collected out;
  const auto job_id = submit(b, out);
  auto request = w.receive(2s);
  ASSERT_TRUE(request.has_value());
  EXPECT_EQ(request->env.kind, messages::message_kind::compile_request);
  EXPECT_EQ(request->env.job_id, job_id);
  EXPECT_EQ(request->env.run_id, "run-t");
  EXPECT_EQ(messages::decode<messages::compile_request>(request->body).argv.back(), "{OUT}");
  w.reply_ok(*request);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return out.count() == 1; }, 2s));
  EXPECT_EQ(out.replies[0].status, messages::compile_status::ok);
  EXPECT_EQ(out.replies[0].worker_id, "w1");
}

TEST_F(broker_test, sends_heartbeats_to_an_idle_worker) {
  config_.liveness = 100; // this worker never heartbeats back; keep it alive for the test
  broker b(config_);
  b.start();
  fake_worker w(context_, endpoint_, "w1");
  w.heartbeating = false;
  w.ready();
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.live_workers() == 1; }, 2s));
  // The clock stands still: nothing is due, so nothing comes.
  EXPECT_FALSE(w.wait_for_heartbeats(1, 150ms));
  for (int interval = 1; interval <= 3; ++interval) {
    clock_.advance(50ms);
    // On a loaded machine the broker thread may read the clock just before the advance and
    // restart its interval from there: one more interval must then bring the heartbeat.
    if (!w.wait_for_heartbeats(interval, 500ms)) {
      clock_.advance(50ms);
      ASSERT_TRUE(w.wait_for_heartbeats(interval, 2s)) << "no heartbeat for interval " << interval;
    }
  }
  const int seen = w.heartbeats_seen;
  EXPECT_GE(seen, 3);
  // One per interval, not one per loop turn: with the clock standing still, nothing more comes.
  EXPECT_FALSE(w.wait_for_heartbeats(seen + 1, 150ms));
  EXPECT_EQ(w.heartbeats_seen, seen);
}

TEST_F(broker_test, the_default_clock_is_real_time) {
  config_.clock = broker_config{}.clock;
  broker b(config_);
  b.start();
  fake_worker w(context_, endpoint_, "w1");
  w.ready();
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.live_workers() == 1; }, 2s));
  // It never heartbeats: 3 × 50 ms of real silence expire it.
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.stats().workers_expired == 1; }, 2s));
  EXPECT_EQ(b.live_workers(), 0u);
}

TEST_F(broker_test, drops_a_duplicate_reply_by_job_id) {
  broker b(config_);
  b.start();
  fake_worker w(context_, endpoint_, "w1");
  w.ready();
  collected out;
  submit(b, out);
  auto request = w.receive(2s);
  ASSERT_TRUE(request.has_value());
  w.reply_ok(*request);
  w.reply_ok(*request);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.stats().duplicate_replies == 1; }, 2s));
  EXPECT_EQ(out.count(), 1u);
  EXPECT_EQ(b.stats().unknown_replies, 0u);
}

TEST_F(broker_test, requeues_the_job_of_a_silent_worker_and_drops_its_late_reply) {
  broker b(config_);
  b.start();
  fake_worker silent(context_, endpoint_, "silent");
  silent.heartbeating = false;
  silent.ready(); // expires at T + 150 ms
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.live_workers() == 1; }, 2s));
  collected out;
  submit(b, out);
  auto first = silent.receive(2s);
  ASSERT_TRUE(first.has_value());
  // A second worker arrives 100 ms later (expires at T + 250 ms); the first says nothing more.
  clock_.advance(100ms);
  fake_worker healthy(context_, endpoint_, "healthy");
  healthy.heartbeating = false;
  healthy.ready();
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.live_workers() == 2; }, 2s));
  clock_.advance(60ms); // T + 160 ms: only the first has been silent for 3 × 50 ms
  auto second = healthy.receive(3s);
  ASSERT_TRUE(second.has_value()) << "job was not re-queued to the live worker";
  EXPECT_EQ(second->env.job_id, first->env.job_id);
  healthy.reply_ok(*second);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return out.count() == 1; }, 2s));
  EXPECT_EQ(out.replies[0].worker_id, "healthy");
  EXPECT_EQ(b.stats().workers_expired, 1u);
  EXPECT_EQ(b.stats().jobs_requeued, 1u);
  EXPECT_EQ(b.live_workers(), 1u);

  // The presumed-dead worker answers late: the reply is dropped, counted as coming from a peer the
  // broker no longer knows (not as a duplicate), and the worker told to reconnect.
  silent.reply_ok(*first);
  auto answer = silent.receive(2s);
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->env.kind, messages::message_kind::disconnect);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.stats().unknown_replies == 1; }, 2s));
  EXPECT_EQ(b.stats().duplicate_replies, 0u);
  EXPECT_EQ(out.count(), 1u);
}

TEST_F(broker_test, a_job_fails_with_worker_lost_after_max_attempts) {
  config_.max_attempts = 2;
  broker b(config_);
  b.start();
  collected out;
  submit(b, out);
  for (int attempt = 0; attempt < 2; ++attempt) {
    fake_worker w(context_, endpoint_, "doomed" + std::to_string(attempt));
    w.heartbeating = false;
    w.ready();
    ASSERT_TRUE(w.receive(2s).has_value());
    // Leave without a word: once 3 × 50 ms have passed, the broker must expire it.
    clock_.advance(150ms);
    ASSERT_TRUE(rpl::testing::wait_until(
        [&] { return b.stats().workers_expired == static_cast<std::uint64_t>(attempt + 1); }, 2s));
  }
  ASSERT_TRUE(rpl::testing::wait_until([&] { return out.count() == 1; }, 2s));
  EXPECT_EQ(out.replies[0].status, messages::compile_status::worker_lost);
  EXPECT_NE(out.replies[0].error.find("2 workers"), std::string::npos) << out.replies[0].error;
  EXPECT_EQ(b.stats().workers_seen, 2u);
  EXPECT_EQ(b.stats().jobs_requeued, 1u); // the second loss fails the job instead
}

TEST_F(broker_test, a_worker_is_not_expired_before_its_liveness_window_ends) {
  broker b(config_);
  b.start();
  fake_worker w(context_, endpoint_, "w1");
  w.heartbeating = false;
  w.ready();
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.live_workers() == 1; }, 2s));
  clock_.advance(149ms);
  // Give the broker several turns to act on the clock (a turn is at most 25 ms here).
  EXPECT_FALSE(rpl::testing::wait_until([&] { return b.stats().workers_expired != 0; }, 150ms));
  // Any message resets the window: 149 ms more are still within it. A stray reply (a duplicate:
  // this worker holds no job) is a message too, and its counter shows when the broker has read it.
  messages::compile_reply stray;
  stray.status = messages::compile_status::ok;
  w.send(stray, 99);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.stats().duplicate_replies == 1; }, 2s));
  clock_.advance(149ms);
  EXPECT_FALSE(rpl::testing::wait_until([&] { return b.stats().workers_expired != 0; }, 150ms));
  clock_.advance(1ms);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.stats().workers_expired == 1; }, 2s));
  EXPECT_EQ(b.live_workers(), 0u);
}

TEST_F(broker_test, a_reconnecting_worker_is_seen_once) {
  broker b(config_);
  b.start();
  fake_worker first(context_, endpoint_, "host:1");
  first.ready();
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.live_workers() == 1; }, 2s));
  // The same worker on a new socket (a new ROUTER identity), as after a reconnect.
  fake_worker again(context_, endpoint_, "host:1");
  again.ready();
  fake_worker other(context_, endpoint_, "host:2");
  other.ready();
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.stats().workers_seen == 2; }, 2s));
  EXPECT_TRUE(rpl::testing::wait_until([&] { return b.live_workers() == 2; }, 2s));
  EXPECT_EQ(b.stats().workers_seen, 2u);
}

TEST_F(broker_test, a_worker_that_disconnects_mid_job_has_its_job_requeued) {
  broker b(config_);
  b.start();
  collected out;
  fake_worker leaving(context_, endpoint_, "leaving");
  leaving.ready();
  submit(b, out);
  ASSERT_TRUE(leaving.receive(2s).has_value());
  leaving.send(messages::disconnect{"worker stopping"});
  fake_worker next(context_, endpoint_, "next");
  next.ready();
  auto request = next.receive(2s);
  ASSERT_TRUE(request.has_value());
  next.reply_ok(*request);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return out.count() == 1; }, 2s));
  EXPECT_EQ(out.replies[0].worker_id, "next");
}

TEST_F(broker_test, an_unknown_peer_is_told_to_disconnect) {
  broker b(config_);
  b.start();
  fake_worker stranger(context_, endpoint_, "stranger");
  stranger.send(messages::heartbeat{1});
  auto answer = stranger.receive(2s);
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->env.kind, messages::message_kind::disconnect);
}

TEST_F(broker_test, malformed_messages_are_counted_and_dropped) {
  broker b(config_);
  b.start();
  zmq::socket_t raw(context_, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(endpoint_);
  std::vector<zmq::message_t> frames;
  frames.emplace_back(std::string("RPLW01"));
  frames.emplace_back(std::string("\xc1garbage"));
  frames.emplace_back(std::string("x"));
  zmq::send_multipart(raw, frames);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.stats().malformed_messages == 1; }, 2s));
  // A READY whose body is not a map is dropped too, and registers nobody.
  messages::envelope env;
  env.kind = messages::message_kind::ready;
  std::vector<zmq::message_t> ready_frames;
  ready_frames.emplace_back(std::string(messages::protocol_header));
  ready_frames.emplace_back(messages::encode(env));
  ready_frames.emplace_back(std::string("\x01"));
  zmq::send_multipart(raw, ready_frames);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.stats().malformed_messages == 2; }, 2s));
  EXPECT_EQ(b.stats().workers_seen, 0u);
  EXPECT_EQ(b.live_workers(), 0u);
}

TEST_F(broker_test, stopping_answers_every_waiting_job) {
  collected out;
  {
    broker b(config_);
    b.start();
    submit(b, out);
    submit(b, out);
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(out.count(), 2u);
  for (const auto& reply : out.replies) {
    EXPECT_EQ(reply.status, messages::compile_status::worker_lost);
  }
}

TEST_F(broker_test, says_how_long_jobs_have_waited_with_no_worker_connected) {
  std::atomic<std::int64_t> waited_ms{-1};
  std::atomic<std::size_t> queued{0};
  broker b(config_);
  b.set_tick([&] {
    waited_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(b.waiting_for_workers()).count();
    queued = b.queued_jobs();
  });
  b.start();
  // Nothing queued: nothing waits, however long there is no worker.
  clock_.advance(60s);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return waited_ms == 0; }, 2s));

  collected out;
  submit(b, out);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return queued == 1; }, 2s));
  clock_.advance(7s);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return waited_ms == 7000; }, 2s)) << waited_ms.load();

  // A worker connects and takes the job: nothing waits any more, even while it is busy.
  fake_worker w(context_, endpoint_, "w1");
  w.ready();
  ASSERT_TRUE(w.receive(2s).has_value());
  ASSERT_TRUE(rpl::testing::wait_until([&] { return queued == 0 && waited_ms == 0; }, 2s));
  submit(b, out);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return queued == 1; }, 2s));
  clock_.advance(100ms); // within the worker's liveness window (150 ms)
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(waited_ms, 0);

  // The worker goes silent and expires: the queued jobs wait again, from the expiry on.
  w.heartbeating = false;
  clock_.advance(1s);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.live_workers() == 0; }, 2s));
  ASSERT_TRUE(rpl::testing::wait_until([&] { return queued == 2; }, 2s)) << "job re-queued";
  clock_.advance(5s);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return waited_ms == 5000; }, 2s)) << waited_ms.load();
  b.stop();
}

messages::toolchain gxx(const std::string& version) {
  messages::toolchain t;
  t.name = "g++";
  t.path = "/usr/bin/g++";
  t.version = version;
  t.hash = "h-" + version;
  t.id = "g++ | " + version + " | h-" + version;
  return t;
}

TEST_F(broker_test, a_checked_job_goes_only_to_a_worker_with_the_same_toolchain) {
  std::atomic<std::int64_t> waited_ms{-1};
  std::string reason;
  std::mutex reason_mutex;
  collected out; // outlives the broker, which answers the jobs still held when it stops
  broker b(config_);
  b.set_tick([&] {
    waited_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(b.waiting_for_workers()).count();
    std::lock_guard lock(reason_mutex);
    reason = b.unplaced_reason();
  });
  b.start();
  fake_worker other(context_, endpoint_, "other");
  other.ready(1, {gxx("12.2")});
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.live_workers() == 1; }, 2s));
  messages::compile_request request;
  request.argv = {"g++", "x.cpp", "-o", "{OUT}"};
  request.toolchain_id = gxx("13.1").id;
  request.match_toolchain = true;
  submit(b, out, request);
  // The connected worker has another g++: the job waits, and the broker says why.
  EXPECT_FALSE(other.receive(300ms).has_value());
  clock_.advance(100ms); // within the worker's liveness window (150 ms)
  ASSERT_TRUE(rpl::testing::wait_until([&] { return waited_ms >= 100; }, 2s)) << waited_ms.load();
  {
    std::lock_guard lock(reason_mutex);
    EXPECT_NE(reason.find("none of the 1 connected compile workers has the toolchain g++ | 13.1"),
              std::string::npos)
        << reason;
  }
  EXPECT_EQ(b.stats().toolchain_mismatches, 1u);
  // A worker with the same one takes it.
  fake_worker same(context_, endpoint_, "same");
  same.ready(1, {gxx("13.1")});
  auto job = same.receive(2s);
  ASSERT_TRUE(job.has_value());
  same.reply_ok(*job);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return out.count() == 1; }, 2s));
  EXPECT_EQ(out.replies[0].worker_id, "same");
  ASSERT_TRUE(rpl::testing::wait_until([&] { return waited_ms == 0; }, 2s));
  // An unchecked job (the engine could not identify its compiler) goes to any worker with a g++.
  messages::compile_request unchecked;
  unchecked.argv = {"g++", "y.cpp", "-o", "{OUT}"};
  submit(b, out, unchecked);
  submit(b, out, unchecked);
  auto first = other.receive(2s);
  auto second = same.receive(2s);
  EXPECT_TRUE(first.has_value());
  EXPECT_TRUE(second.has_value());
  EXPECT_EQ(b.stats().toolchain_mismatches, 1u) << "logged and counted once per worker";
}

TEST_F(broker_test,
       a_compiler_named_by_path_is_the_workers_to_check_and_a_refusal_is_not_a_failure) {
  // READY describes the g++ on the worker's PATH, not the binary at the job's path: the job goes
  // to it anyway, its toolchain_mismatch sends the job on (no attempt used, no back-off) and keeps
  // that path's jobs away from it.
  auto config = config_;
  config.max_attempts = 1;
  collected out;
  broker b(config);
  b.start();
  fake_worker other(context_, endpoint_, "other");
  other.ready(1, {gxx("12.2")});
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.live_workers() == 1; }, 2s));
  messages::compile_request request;
  request.argv = {"/opt/gcc-13/bin/g++", "x.cpp", "-o", "{OUT}"};
  request.toolchain_id = gxx("13.1").id;
  request.match_toolchain = true;
  submit(b, out, request);
  auto job = other.receive(2s);
  ASSERT_TRUE(job.has_value());
  other.reply_status(*job, messages::compile_status::toolchain_mismatch);
  fake_worker same(context_, endpoint_, "same");
  same.ready(1, {gxx("12.2")});
  auto again = same.receive(2s);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->env.job_id, job->env.job_id);
  same.reply_ok(*again);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return out.count() == 1; }, 2s));
  EXPECT_EQ(out.replies[0].status, messages::compile_status::ok);
  EXPECT_EQ(out.replies[0].worker_id, "same");
  EXPECT_EQ(b.stats().toolchain_mismatches, 1u);
  EXPECT_EQ(b.stats().workers_benched, 0u);
  // The next job for that path skips "other", though it is idle.
  submit(b, out, request);
  EXPECT_FALSE(other.receive(300ms).has_value());
  auto third = same.receive(2s);
  ASSERT_TRUE(third.has_value());
  same.reply_ok(*third);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return out.count() == 2; }, 2s));
}

TEST_F(broker_test, a_worker_gets_as_many_jobs_at_once_as_it_has_slots) {
  broker b(config_);
  b.start();
  fake_worker w(context_, endpoint_, "two-slots");
  w.ready(2);
  collected out;
  for (int i = 0; i < 3; ++i)
    submit(b, out);
  auto a = w.receive(2s);
  auto c = w.receive(2s);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(c.has_value());
  EXPECT_NE(a->env.job_id, c->env.job_id);
  EXPECT_FALSE(w.receive(300ms).has_value()) << "a third job while both slots are busy";
  w.reply_ok(*c);
  auto third = w.receive(2s);
  ASSERT_TRUE(third.has_value());
  w.reply_ok(*a);
  w.reply_ok(*third);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return out.count() == 3; }, 2s));
  EXPECT_EQ(b.stats().duplicate_replies, 0u);
}

TEST_F(broker_test, a_worker_that_cannot_run_a_job_sits_out_a_back_off_while_another_runs_it) {
  config_.backoff_initial = 1s;
  config_.liveness = 100; // the clock jumps past the back-off; no worker may expire meanwhile
  collected out;          // outlives the broker, which answers the jobs still held when it stops
  broker b(config_);
  b.start();
  fake_worker flaky(context_, endpoint_, "flaky");
  flaky.ready();
  submit(b, out);
  auto job = flaky.receive(2s);
  ASSERT_TRUE(job.has_value());
  flaky.reply_status(*job, messages::compile_status::internal_error);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.stats().workers_benched == 1; }, 2s));
  EXPECT_EQ(out.count(), 0u) << "not the candidate's failure: the job is re-queued";
  // Benched: the job waits for the back-off rather than going back to the worker at once.
  EXPECT_FALSE(flaky.receive(300ms).has_value());
  fake_worker steady(context_, endpoint_, "steady");
  steady.ready();
  auto again = steady.receive(2s);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->env.job_id, job->env.job_id);
  steady.reply_ok(*again);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return out.count() == 1; }, 2s));
  EXPECT_EQ(out.replies[0].status, messages::compile_status::ok);
  // After its back-off the flaky worker gets work again (the steady one is kept busy).
  submit(b, out);
  auto busy = steady.receive(2s);
  ASSERT_TRUE(busy.has_value());
  submit(b, out);
  EXPECT_FALSE(flaky.receive(300ms).has_value());
  clock_.advance(1100ms);
  EXPECT_TRUE(flaky.receive(2s).has_value());
}

TEST_F(broker_test, a_chunked_artifact_is_assembled_and_a_broken_one_goes_to_another_worker) {
  collected out; // outlives the broker
  broker b(config_);
  b.start();
  fake_worker w(context_, endpoint_, "chunky");
  w.ready();
  messages::compile_request request;
  request.argv = {"g++", "x.cpp", "-o", "{OUT}"};
  request.chunk_bytes = 3;
  request.max_artifact_bytes = 8;
  submit(b, out, request);
  auto job = w.receive(2s);
  ASSERT_TRUE(job.has_value());
  const auto send_chunk = [&](fake_worker& from, std::uint64_t offset, const std::string& bytes,
                              const messages::parsed_frames& for_job) {
    messages::artifact_chunk chunk;
    chunk.offset = offset;
    chunk.bytes.assign(bytes.begin(), bytes.end());
    from.send(chunk, for_job.env.job_id, for_job.env.run_id);
  };
  const auto send_reply = [&](fake_worker& from, std::uint64_t size, std::uint32_t chunks,
                              const messages::parsed_frames& for_job) {
    messages::compile_reply reply;
    reply.status = messages::compile_status::ok;
    reply.has_artifact = true;
    reply.worker_id = for_job.env.run_id.empty() ? "" : "w";
    reply.artifact_bytes = size;
    reply.artifact_chunks = chunks;
    from.send(reply, for_job.env.job_id, for_job.env.run_id);
  };
  send_chunk(w, 0, "ELF", *job);
  send_chunk(w, 3, "bin", *job);
  send_chunk(w, 6, "!", *job);
  send_reply(w, 7, 3, *job);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return out.count() == 1; }, 2s));
  EXPECT_EQ(out.replies[0].status, messages::compile_status::ok);
  EXPECT_EQ(std::string(out.replies[0].artifact.begin(), out.replies[0].artifact.end()), "ELFbin!");

  // A chunk out of order: the worker could not deliver the build; another worker gets the job.
  submit(b, out, request);
  job = w.receive(2s);
  ASSERT_TRUE(job.has_value());
  send_chunk(w, 3, "bin", *job);
  send_reply(w, 3, 1, *job);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.stats().workers_benched == 1; }, 2s));
  fake_worker other(context_, endpoint_, "other");
  other.ready();
  auto again = other.receive(2s);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->env.job_id, job->env.job_id);
  // Over max_artifact_bytes (8): refused the same way.
  send_chunk(other, 0, "123", *again);
  send_chunk(other, 3, "456", *again);
  send_chunk(other, 6, "789", *again);
  send_reply(other, 9, 3, *again);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return b.stats().workers_benched == 2; }, 2s));
  EXPECT_EQ(out.count(), 1u) << "neither broken build reached the engine";
}

} // namespace
} // namespace rpl::engine
