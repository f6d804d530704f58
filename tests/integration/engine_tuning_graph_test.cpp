// The tuning graph and the autotune session with fakes for every seam: no compiler, no broker, no
// process. A whole candidate goes through the graph and the test asserts what was stored.

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "engine/autotune/autotune_inputs.hpp"
#include "engine/autotune/autotune_session.hpp"
#include "engine/graph/tuning_graph.hpp"
#include "stages/search/acceptance.hpp"
#include "support/fake_compile_service.hpp"
#include "support/fake_lane.hpp"
#include "support/test_support.hpp"

namespace rpl::engine {
namespace {

using rpl::testing::fake_compile_service;
using rpl::testing::query_int;

/// Three samples around `median_ns` (+-1 %).
std::vector<std::int64_t> samples_around(double median_ns) {
  std::vector<std::int64_t> samples;
  for (double f : {0.99, 1.0, 1.01}) {
    samples.push_back(static_cast<std::int64_t>(median_ns * f));
  }
  return samples;
}

/// A fake lane that measures each key of `medians` at its median.
std::unique_ptr<testing::fake_lane> make_fake_lane(const std::string& name,
                                                   const std::map<std::string, double>& medians) {
  auto lane = std::make_unique<testing::fake_lane>(name);
  for (const auto& [key, median] : medians) {
    lane->succeed(key, samples_around(median));
  }
  return lane;
}

/// A fake lane that measures by the build's -DMODE=N word (the session's keys are hashes), and
/// crashes every configuration not listed.
std::unique_ptr<testing::fake_lane> make_fake_lane_by_argv(std::map<std::string, double> medians) {
  auto lane = std::make_unique<testing::fake_lane>("fake0");
  lane->otherwise([medians](const messages::measure_request& request) {
    messages::measure_result result;
    // The lane runs the artifact by path; the fake compiler wrote the build argv into it.
    const auto artifact = rpl::testing::read_text(request.argv.at(0));
    for (const auto& [word, median] : medians) {
      if (artifact.find(word + " ") != std::string::npos) {
        result.status = messages::measure_status::ok;
        result.samples_ns = samples_around(median);
        return result;
      }
    }
    result.status = messages::measure_status::crashed;
    result.term_signal = 11;
    result.failed_run = 0;
    result.reason = "run 0 was killed by SIGSEGV (Segmentation fault)";
    return result;
  });
  return lane;
}

/// A lane backend whose measure() throws, as a broken backend would.
class throwing_lane final : public workers::lane_backend {
public:
  messages::measure_result measure(const messages::measure_request&) override {
    throw std::runtime_error("backend broke");
  }
  const std::string& name() const override { return name_; }

private:
  std::string name_ = "broken";
};

/// A policy over N plain candidates "k0".."kN-1": candidate i builds with `fail_build` deciding,
/// is measured by the lanes, and is recorded in memory. It checks the graph's promises: every
/// candidate is recorded once, observed once, serially, and no more than `in_flight` are out.
class recording_policy final : public tuning_policy {
public:
  recording_policy(std::size_t n, std::set<std::size_t> fail_build)
      : n_(n), fail_build_(std::move(fail_build)) {}

  candidate_ptr next_candidate() override {
    if (next_ == n_ || stop_) {
      return nullptr;
    }
    auto c = std::make_shared<candidate_state>();
    c->space_index = next_;
    c->key = "k" + std::to_string(next_++);
    c->build_argv = {"fake-cc", fail_build_.count(c->space_index) != 0 ? "--fail" : "--ok"};
    c->compile_request.argv = c->build_argv;
    c->measure_request.candidate_key = c->key;
    {
      // The store node may record another candidate meanwhile.
      std::lock_guard lock(mutex_);
      max_out_ = std::max(max_out_, ++out_);
    }
    return c;
  }
  void on_compiled(candidate_state& c, const messages::compile_reply& reply) override {
    c.compile = reply;
  }
  std::string build_failure(const candidate_state& c) const override {
    return "compile_failed: " + c.compile.error;
  }
  std::optional<std::string> screen(candidate_state& c) override {
    EXPECT_EQ(c.compile.status, messages::compile_status::ok); // only built candidates
    if (refuse_screen_.count(c.space_index) == 0)
      return std::nullopt;
    return "static screen: " + c.key + " on purpose";
  }
  void judge(candidate_state& c) override {
    c.verdict = stages::judge(c.key, c.measure, c.stats, best_, stages::acceptance_config{});
    if (c.verdict.decision == messages::verdict_kind::faster) {
      best_ = stages::incumbent{c.key, c.stats};
    }
  }
  void record(candidate_state& c) override {
    std::this_thread::sleep_for(record_delay_);
    std::lock_guard lock(mutex_);
    recorded_[c.key] = c;
    --out_;
  }
  void observe(const candidate_state& c) override {
    // Serial by contract: a second caller inside would see the flag set.
    EXPECT_FALSE(observing_.exchange(true));
    observed_.push_back(c.key);
    observing_ = false;
  }
  bool stopping() const override { return stop_; }

  std::atomic<bool> stop_{false};
  std::chrono::milliseconds record_delay_{0}; ///< a slow store

  std::size_t n_;
  std::set<std::size_t> fail_build_;
  std::set<std::size_t> refuse_screen_; ///< built, but the static screen refuses them
  std::size_t next_ = 0;
  std::size_t out_ = 0;
  std::size_t max_out_ = 0;
  std::optional<stages::incumbent> best_;
  std::mutex mutex_;
  std::map<std::string, candidate_record> recorded_;
  std::vector<std::string> observed_;
  std::atomic<bool> observing_{false};
};

messages::compile_reply graph_fake_build(const messages::compile_request& request) {
  auto reply = fake_compile_service::ok_with_argv_artifact(request);
  if (request.argv.back() == "--fail") {
    reply.status = messages::compile_status::failed;
    reply.exit_code = 1;
    reply.has_artifact = false;
    reply.artifact.clear();
    reply.error = "k.cpp:1: error: on purpose";
  }
  return reply;
}

std::map<std::string, double> medians_for(std::size_t n) {
  std::map<std::string, double> medians;
  for (std::size_t i = 0; i < n; ++i) {
    medians["k" + std::to_string(i)] = 1e6 * static_cast<double>(1 + (i * 7) % n);
  }
  return medians;
}

TEST(engine_tuning_graph, every_candidate_is_recorded_once_and_failed_builds_skip_the_lanes) {
  const std::size_t n = 40;
  const auto medians = medians_for(n);
  recording_policy policy(n, {3, 17, 29});
  fake_compile_service compiler(graph_fake_build);
  std::vector<std::unique_ptr<lane_worker>> lanes;
  std::vector<testing::fake_lane*> fakes;
  for (int i = 0; i < 2; ++i) {
    auto lane = make_fake_lane("fake" + std::to_string(i), medians);
    lane->sleep_for(std::chrono::milliseconds(2)); // busy lanes, so the router must spread the load
    fakes.push_back(lane.get());
    lanes.push_back(std::make_unique<lane_worker>(std::move(lane), -1));
  }
  {
    tuning_graph graph(policy, compiler, lanes);
    graph.run(6);
  }
  EXPECT_EQ(policy.recorded_.size(), n);
  EXPECT_EQ(policy.observed_.size(), n);
  // 6 in flight, plus at most one finished candidate waiting for its write (its replacement
  // starts before the write, so that the write overlaps the next compile).
  EXPECT_LE(policy.max_out_, 6u + 1);
  EXPECT_EQ(compiler.submitted(), n);
  // 37 builds succeeded and were measured, spread over both lanes; the 3 failures never ran.
  EXPECT_EQ(fakes[0]->calls() + fakes[1]->calls(), n - 3);
  EXPECT_GT(fakes[0]->calls(), 0u);
  EXPECT_GT(fakes[1]->calls(), 0u);
  const auto& failed = policy.recorded_.at("k17");
  EXPECT_EQ(failed.measure.status, messages::measure_status::not_run);
  EXPECT_EQ(failed.measure.reason, "compile_failed: k.cpp:1: error: on purpose");
  EXPECT_EQ(failed.verdict.decision, messages::verdict_kind::invalid);
  // The fastest scripted candidate (median 1 ms: k0) is the incumbent at the end.
  ASSERT_TRUE(policy.best_.has_value());
  EXPECT_EQ(policy.best_->key, "k0");
  EXPECT_NEAR(policy.recorded_.at("k0").stats.median, 1e6, 1.0);
}

TEST(engine_tuning_graph, candidates_the_static_screen_refuses_are_invalid_and_skip_the_lanes) {
  const std::size_t n = 12;
  recording_policy policy(n, {4});
  policy.refuse_screen_ = {2, 4, 7}; // 4 fails to build first: never screened
  fake_compile_service compiler(graph_fake_build);
  std::vector<std::unique_ptr<lane_worker>> lanes;
  auto lane = make_fake_lane("fake0", medians_for(n));
  auto* fake = lane.get();
  lanes.push_back(std::make_unique<lane_worker>(std::move(lane), -1));
  {
    tuning_graph graph(policy, compiler, lanes);
    graph.run(4);
  }
  ASSERT_EQ(policy.recorded_.size(), n);
  EXPECT_EQ(policy.observed_.size(), n);
  EXPECT_EQ(fake->calls(), n - 3);
  for (const std::size_t i : {2, 7}) {
    const auto& refused = policy.recorded_.at("k" + std::to_string(i));
    EXPECT_EQ(refused.compile.status, messages::compile_status::ok);
    EXPECT_EQ(refused.measure.status, messages::measure_status::not_run);
    EXPECT_EQ(refused.measure.reason, "static screen: k" + std::to_string(i) + " on purpose");
    EXPECT_EQ(refused.verdict.decision, messages::verdict_kind::invalid);
    EXPECT_EQ(refused.verdict.reason, refused.measure.reason);
  }
  EXPECT_EQ(policy.recorded_.at("k4").measure.reason, "compile_failed: k.cpp:1: error: on purpose");
  EXPECT_EQ(policy.recorded_.at("k3").measure.status, messages::measure_status::ok);
}

TEST(engine_tuning_graph, a_slow_store_holds_replacements_back_and_records_every_candidate) {
  // Writes slower than compiles and measurements: a finished candidate's replacement starts
  // before its write only while no other write waits, so finished work cannot pile up.
  const std::size_t n = 30;
  recording_policy policy(n, {});
  policy.record_delay_ = std::chrono::milliseconds(3);
  fake_compile_service compiler(graph_fake_build);
  std::vector<std::unique_ptr<lane_worker>> lanes;
  lanes.push_back(std::make_unique<lane_worker>(make_fake_lane("fake0", medians_for(n)), -1));
  {
    tuning_graph graph(policy, compiler, lanes);
    graph.run(4);
  }
  EXPECT_EQ(policy.recorded_.size(), n);
  EXPECT_EQ(policy.observed_.size(), n);
  EXPECT_EQ(compiler.submitted(), n);
  EXPECT_LE(policy.max_out_, 4u + 1);
}

TEST(engine_tuning_graph, a_lane_that_throws_makes_the_candidate_invalid_not_the_graph_fail) {
  recording_policy policy(3, {});
  fake_compile_service compiler;
  std::vector<std::unique_ptr<lane_worker>> lanes;
  lanes.push_back(std::make_unique<lane_worker>(std::make_unique<throwing_lane>(), -1));
  {
    tuning_graph graph(policy, compiler, lanes);
    graph.run(2);
  }
  ASSERT_EQ(policy.recorded_.size(), 3u);
  for (const auto& [key, c] : policy.recorded_) {
    EXPECT_EQ(c.measure.status, messages::measure_status::launch_failed) << key;
    EXPECT_NE(c.measure.reason.find("lane error"), std::string::npos) << c.measure.reason;
    EXPECT_EQ(c.verdict.decision, messages::verdict_kind::invalid);
  }
}

/// A compile service with no worker: it keeps every request and answers none until told to.
class silent_compile_service final : public compile_service {
public:
  void submit(messages::compile_request, reply_fn on_reply) override {
    std::lock_guard lock(mutex_);
    pending_.push_back(std::move(on_reply));
  }
  std::size_t pending() {
    std::lock_guard lock(mutex_);
    return pending_.size();
  }
  /// Answers every request with worker_lost, as the broker does when it stops.
  void answer_all() {
    std::vector<reply_fn> replies;
    {
      std::lock_guard lock(mutex_);
      replies.swap(pending_);
    }
    messages::compile_reply reply;
    reply.status = messages::compile_status::worker_lost;
    reply.error = "engine stopping";
    for (auto& on_reply : replies) {
      on_reply(reply);
    }
  }

private:
  std::mutex mutex_;
  std::vector<reply_fn> pending_;
};

/// Runs the graph on its own thread; the future is ready when run() returned.
std::future<void>
run_in_background(tuning_graph& graph, std::size_t max_in_flight, std::chrono::milliseconds grace) {
  return std::async(std::launch::async,
                    [&graph, max_in_flight, grace] { graph.run(max_in_flight, grace); });
}

TEST(engine_tuning_graph, a_stop_drops_candidates_waiting_for_a_compile_and_records_none) {
  recording_policy policy(10, {});
  silent_compile_service compiler;
  std::vector<std::unique_ptr<lane_worker>> lanes;
  lanes.push_back(std::make_unique<lane_worker>(make_fake_lane("fake0", medians_for(10)), -1));
  {
    tuning_graph graph(policy, compiler, lanes);
    auto done = run_in_background(graph, 4, std::chrono::seconds(10));
    ASSERT_TRUE(
        rpl::testing::wait_until([&] { return compiler.pending() == 4; }, std::chrono::seconds(5)));
    // No reply ever comes: without a stop the graph waits for ever.
    EXPECT_EQ(done.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
    policy.stop_ = true;
    ASSERT_EQ(done.wait_for(std::chrono::seconds(2)), std::future_status::ready)
        << "a stop must not wait for compile replies";
    done.get();
  }
  // The late replies (the broker failing its queue) reach a graph that is gone: dropped.
  compiler.answer_all();
  EXPECT_TRUE(policy.recorded_.empty());
  EXPECT_TRUE(policy.observed_.empty());
}

TEST(engine_tuning_graph, a_stop_lets_the_running_measurement_finish_and_drops_the_queued_ones) {
  recording_policy policy(6, {});
  fake_compile_service compiler;
  auto lane = make_fake_lane("fake0", medians_for(6));
  // Long enough for the graph to see the stop and drop the queue while the first measurement
  // runs, also under TSan on a loaded machine (300 ms was not: a second measurement started).
  lane->sleep_for(std::chrono::milliseconds(1500));
  auto* fake = lane.get();
  std::vector<std::unique_ptr<lane_worker>> lanes;
  lanes.push_back(std::make_unique<lane_worker>(std::move(lane), -1));
  {
    tuning_graph graph(policy, compiler, lanes);
    auto done = run_in_background(graph, 4, std::chrono::seconds(10));
    // Four compiled candidates wait for the one lane; the first is being measured.
    ASSERT_TRUE(rpl::testing::wait_until([&] { return lanes[0]->outstanding() == 4; },
                                         std::chrono::seconds(5)));
    policy.stop_ = true;
    ASSERT_EQ(done.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    done.get();
  }
  EXPECT_EQ(fake->calls(), 1u) << "nothing queued on a lane starts after the stop";
  ASSERT_EQ(policy.recorded_.size(), 1u) << "the measurement in flight finished and was recorded";
  EXPECT_EQ(policy.recorded_.begin()->second.measure.status, messages::measure_status::ok);
  EXPECT_EQ(policy.observed_.size(), 1u);
  EXPECT_EQ(lanes[0]->outstanding(), 0u);
}

TEST(engine_tuning_graph, a_measurement_longer_than_the_grace_period_is_abandoned) {
  recording_policy policy(2, {});
  fake_compile_service compiler;
  auto lane = make_fake_lane("fake0", medians_for(2));
  lane->sleep_for(std::chrono::seconds(2));
  const auto lane_gone = std::make_shared<std::atomic<bool>>(false);
  lane->on_destroy(lane_gone);
  std::vector<std::unique_ptr<lane_worker>> lanes;
  lanes.push_back(std::make_unique<lane_worker>(std::move(lane), -1));
  {
    tuning_graph graph(policy, compiler, lanes);
    auto done = run_in_background(graph, 1, std::chrono::milliseconds(200));
    ASSERT_TRUE(rpl::testing::wait_until([&] { return lanes[0]->outstanding() == 1; },
                                         std::chrono::seconds(5)));
    const auto stopped = std::chrono::steady_clock::now();
    policy.stop_ = true;
    ASSERT_EQ(done.wait_for(std::chrono::seconds(1)), std::future_status::ready);
    done.get();
    EXPECT_LT(std::chrono::steady_clock::now() - stopped, std::chrono::seconds(1));
  }
  EXPECT_TRUE(policy.recorded_.empty());
  // The lane is destroyed with its measurement still running: it does not wait for it.
  const auto destroying = std::chrono::steady_clock::now();
  lanes.clear();
  EXPECT_LT(std::chrono::steady_clock::now() - destroying, std::chrono::milliseconds(500));
  // Its thread ends with the measurement (see abandon_releases_a_caller_waiting_for_a_measurement).
  EXPECT_TRUE(
      rpl::testing::wait_until([&] { return lane_gone->load(); }, std::chrono::seconds(30)));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

TEST(engine_lane_worker, abandon_releases_a_caller_waiting_for_a_measurement) {
  auto lane = make_fake_lane("fake0", {{"k0", 1e6}});
  lane->sleep_for(std::chrono::seconds(2));
  const auto lane_gone = std::make_shared<std::atomic<bool>>(false);
  lane->on_destroy(lane_gone);
  auto worker = std::make_unique<lane_worker>(std::move(lane), -1);
  messages::measure_request request;
  request.candidate_key = "k0";
  auto result = std::async(std::launch::async, [&] { return worker->measure_now(request); });
  ASSERT_TRUE(rpl::testing::wait_until([&] { return worker->outstanding() == 1; },
                                       std::chrono::seconds(5)));
  worker->abandon();
  ASSERT_EQ(result.wait_for(std::chrono::milliseconds(500)), std::future_status::ready);
  const auto measured = result.get();
  EXPECT_EQ(measured.status, messages::measure_status::not_run);
  EXPECT_NE(measured.reason.find("abandoned"), std::string::npos) << measured.reason;
  EXPECT_EQ(worker->measure_now(request).status, messages::measure_status::not_run);
  const auto destroying = std::chrono::steady_clock::now();
  worker.reset(); // does not wait for the measurement still running
  EXPECT_LT(std::chrono::steady_clock::now() - destroying, std::chrono::milliseconds(500));
  // The detached thread ends with its measurement and frees the lane; wait for that, so that
  // LeakSanitizer does not find it still allocated when the test program exits.
  EXPECT_TRUE(
      rpl::testing::wait_until([&] { return lane_gone->load(); }, std::chrono::seconds(30)));
  std::this_thread::sleep_for(std::chrono::milliseconds(100)); // the thread's own exit
}

TEST(engine_lane_worker, measures_what_it_holds_in_the_order_proposed) {
  // The first measurement holds the lane while four more arrive out of order: they are measured
  // by sequence (the strategy's order), not by arrival (the order their builds finished in).
  auto lane = std::make_unique<rpl::testing::fake_lane>("fake0");
  std::mutex mutex;
  std::vector<std::string> measured;
  lane->otherwise([&](const messages::measure_request& r) {
    {
      std::lock_guard lock(mutex);
      measured.push_back(r.candidate_key);
    }
    if (r.candidate_key == "first")
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    messages::measure_result result;
    result.status = messages::measure_status::ok;
    result.samples_ns = {1000};
    return result;
  });
  lane_worker worker(std::move(lane), -1);
  std::atomic<int> done{0};
  auto push = [&](const std::string& key, std::uint64_t sequence) {
    auto c = std::make_shared<candidate_state>();
    c->sequence = sequence;
    messages::measure_request request;
    request.candidate_key = key;
    worker.push(c, request, [&done](const candidate_ptr&) { ++done; });
  };
  push("first", 9);
  ASSERT_TRUE(rpl::testing::wait_until(
      [&] {
        std::lock_guard lock(mutex);
        return !measured.empty();
      },
      std::chrono::seconds(5)));
  push("s4", 4);
  push("s2", 2);
  push("s5", 5);
  push("s3", 3);
  ASSERT_TRUE(rpl::testing::wait_until([&] { return done == 5; }, std::chrono::seconds(10)));
  std::lock_guard lock(mutex);
  EXPECT_EQ(measured, (std::vector<std::string>{"first", "s2", "s3", "s4", "s5"}));
}

/// Records what the strategy is told: the observations of live and resumed results.
class recording_strategy final : public stages::strategy {
public:
  explicit recording_strategy(std::size_t n, std::vector<stages::observation>* seen)
      : n_(n), seen_(seen) {}
  std::optional<std::size_t> next() override {
    return next_ < n_ ? std::optional<std::size_t>(next_++) : std::nullopt;
  }
  // The configuration is only valid during the call: keep its MODE, drop the pointer.
  void observe(const stages::observation& o) override {
    auto copy = o;
    EXPECT_NE(o.config, nullptr);
    copy.index = static_cast<std::size_t>(std::get<std::int64_t>(*o.config->find("MODE")));
    copy.config = nullptr;
    seen_->push_back(copy);
  }
  std::size_t planned() const override { return n_; }
  std::string_view name() const override { return "exhaustive"; }

private:
  std::size_t n_;
  std::size_t next_ = 0;
  std::vector<stages::observation>* seen_;
};

class autotune_session_test : public ::testing::Test {
protected:
  autotune_options options() {
    rpl::testing::write_file(dir_ / "space.json",
                             R"({"params": {"MODE": [0, 1, 2, 3], "SLEEP_US": [1000]}})");
    autotune_options o;
    o.space_file = dir_ / "space.json";
    // `c++ --version` names the toolchain; nothing is compiled: the compile service is a fake.
    o.build_template = "c++ -DMODE={MODE} -DSLEEP_US={SLEEP_US} candidate.cpp -o {OUT}";
    o.cmd_template = "{BIN}";
    o.compile_workers = 1;
    o.db = dir_ / "results.db";
    return o;
  }

  /// One session over the space: MODE 1 crashes, MODE 3 fails to build, MODE 2 is fastest.
  autotune_counts run_session(const autotune_options& o,
                              std::vector<stages::observation>* seen,
                              std::string* winner,
                              std::size_t* lane_calls) {
    auto inputs = validate_inputs(o);
    inputs.strategy =
        std::make_unique<recording_strategy>(inputs.space.configurations.size(), seen);
    std::function<void(const autotune_progress&)> no_progress;
    std::atomic<bool> stop{false};
    autotune_session session(o, inputs, no_progress, stop);
    session.open();
    fake_compile_service compiler([](const messages::compile_request& request) {
      auto reply = fake_compile_service::ok_with_argv_artifact(request);
      if (request.argv[1] == "-DMODE=3") {
        reply.status = messages::compile_status::failed;
        reply.has_artifact = false;
        reply.artifact.clear();
        reply.output = "candidate.cpp:9:2: error: #error fails to compile on purpose";
      }
      return reply;
    });
    auto lane = make_fake_lane_by_argv({{"-DMODE=0", 3e6}, {"-DMODE=2", 1e6}});
    *lane_calls = 0;
    auto* fake = lane.get();
    std::vector<std::unique_ptr<lane_worker>> lanes;
    lanes.push_back(std::make_unique<lane_worker>(std::move(lane), -1));
    {
      tuning_graph graph(session, compiler, lanes);
      graph.run(4);
    }
    *lane_calls = fake->calls();
    *winner = session.winner_key();
    return session.counts();
  }

  rpl::testing::temp_dir dir_;
};

TEST_F(autotune_session_test, stores_every_outcome_and_resume_replays_stored_results) {
  auto o = options();
  std::vector<stages::observation> first;
  std::string winner;
  std::size_t lane_calls = 0;
  const auto counts = run_session(o, &first, &winner, &lane_calls);
  EXPECT_EQ(counts.completed, 4u);
  EXPECT_EQ(counts.failed, 2u);
  EXPECT_EQ(lane_calls, 3u); // the failed build never reached the lane
  EXPECT_EQ(query_int(o.db, "SELECT COUNT(*) FROM candidates WHERE status='ok'"), 2);
  EXPECT_EQ(query_int(o.db, "SELECT COUNT(*) FROM measurements"), 6);
  EXPECT_EQ(query_int(o.db, "SELECT COUNT(*) FROM artifacts WHERE hash IS NOT NULL"), 3);
  ASSERT_EQ(first.size(), 4u);
  std::map<std::int64_t, stages::observation> by_mode;
  for (const auto& obs : first) {
    EXPECT_FALSE(obs.resumed);
    by_mode[static_cast<std::int64_t>(obs.index)] = obs; // index holds MODE (recording_strategy)
  }
  ASSERT_TRUE(by_mode[2].value_ns.has_value());
  EXPECT_NEAR(*by_mode[2].value_ns, 1e6, 1.0);
  EXPECT_FALSE(by_mode[1].value_ns.has_value());
  EXPECT_NE(by_mode[1].failure.find("SIGSEGV"), std::string::npos) << by_mode[1].failure;
  EXPECT_NE(by_mode[3].failure.find("fails to compile on purpose"), std::string::npos);

  // Resume: nothing is measured again, and the strategy learns the stored values, not a verdict
  // made up for the occasion.
  o.resume = true;
  std::vector<stages::observation> second;
  std::string resumed_winner;
  const auto again = run_session(o, &second, &resumed_winner, &lane_calls);
  EXPECT_EQ(again.resumed, 4u);
  EXPECT_EQ(again.completed, 0u);
  EXPECT_EQ(lane_calls, 0u);
  EXPECT_EQ(resumed_winner, winner);
  ASSERT_EQ(second.size(), 4u);
  for (const auto& obs : second) {
    EXPECT_TRUE(obs.resumed);
    const auto mode = static_cast<std::int64_t>(obs.index);
    EXPECT_EQ(obs.value_ns.has_value(), mode == 0 || mode == 2) << mode;
    if (obs.value_ns) {
      EXPECT_NEAR(*obs.value_ns, *by_mode[mode].value_ns, 1.0);
    }
  }
  EXPECT_EQ(query_int(o.db, "SELECT COUNT(*) FROM measurements"), 6);
}

} // namespace
} // namespace rpl::engine
