#include "engine/graph/tuning_graph.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>

#include <spdlog/spdlog.h>
#include <tbb/flow_graph.h>
#include <tbb/task_arena.h>

#include "stages/statistics/statistics.hpp"

namespace rpl::engine {

namespace flow = tbb::flow;

namespace {

using gateway_node = flow::async_node<candidate_ptr, candidate_ptr>;
using stage_node = flow::function_node<candidate_ptr, candidate_ptr>;
/// Port 0: the next candidate, back to the compile gateway (none when the search is done). Port 1:
/// the finished candidate, to the store.
using feedback_node =
    flow::multifunction_node<candidate_ptr, std::tuple<candidate_ptr, candidate_ptr>>;
/// Port 0: a null candidate, to the feedback node, when a write is done and a replacement waits
/// for it.
using store_node = flow::multifunction_node<candidate_ptr, std::tuple<candidate_ptr>>;

/// Every candidate out in a slow service (a compile, a measurement) holds the graph's wait through
/// an entry here. Whoever takes the entry first releases that wait: the service's reply, or a stop
/// that gives up on it. A reply that comes after that finds nothing and is dropped, so it may come
/// after the graph is gone: the callbacks share this object.
class outstanding_work {
public:
  enum class stage { compile, measure };

  /// Registers `c` and reserves the graph's wait for it; nullopt once `s` is closed (stopping):
  /// the candidate is then dropped, not recorded.
  std::optional<std::uint64_t>
  open(stage s, const candidate_ptr& c, gateway_node::gateway_type& gw) {
    std::lock_guard lock(mutex_);
    if (closed_[index(s)]) {
      return std::nullopt;
    }
    gw.reserve_wait();
    const auto id = next_id_++;
    entries_.emplace(id, entry{s, c, &gw});
    return id;
  }

  /// The gateway of entry `id` when this call took it (the caller releases its wait), else
  /// nullptr: a stop gave up on it.
  gateway_node::gateway_type* take(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) {
      return nullptr;
    }
    auto* gw = it->second.gateway;
    entries_.erase(it);
    return gw;
  }

  /// No new entry for `s` from now on.
  void close(stage s) {
    std::lock_guard lock(mutex_);
    closed_[index(s)] = true;
  }

  /// Gives up on every entry of `s`; returns how many.
  std::size_t abandon(stage s) {
    return abandon_if([s](const entry& e) { return e.stage_ == s; });
  }

  /// Gives up on the measurements of these candidates (dropped from a lane's queue).
  std::size_t abandon(const std::vector<candidate_ptr>& candidates) {
    return abandon_if([&candidates](const entry& e) {
      return e.stage_ == stage::measure &&
             std::find(candidates.begin(), candidates.end(), e.candidate) != candidates.end();
    });
  }

  std::size_t count(stage s) const {
    std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(std::count_if(
        entries_.begin(), entries_.end(), [s](const auto& e) { return e.second.stage_ == s; }));
  }

private:
  struct entry {
    stage stage_;
    candidate_ptr candidate;
    gateway_node::gateway_type* gateway;
  };
  static std::size_t index(stage s) { return s == stage::compile ? 0 : 1; }

  template <class Predicate> std::size_t abandon_if(Predicate abandoned) {
    std::vector<gateway_node::gateway_type*> released;
    {
      std::lock_guard lock(mutex_);
      for (auto it = entries_.begin(); it != entries_.end();) {
        if (abandoned(it->second)) {
          released.push_back(it->second.gateway);
          it = entries_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto* gw : released) {
      gw->release_wait();
    }
    return released.size();
  }

  mutable std::mutex mutex_;
  std::map<std::uint64_t, entry> entries_;
  std::uint64_t next_id_ = 1;
  bool closed_[2] = {false, false};
};

using work_ptr = std::shared_ptr<outstanding_work>;
using stage = outstanding_work::stage;

/// Queues a compiled candidate on the least-loaded lane; its measurement leaves through `gw`.
/// Called on the compile service's thread, one reply at a time (the mutex also covers a reply
/// from another thread), so loads are read and updated one candidate at a time.
struct lane_dispatcher {
  tuning_policy* policy;
  const std::vector<std::unique_ptr<lane_worker>>* lanes;
  work_ptr work;
  std::shared_ptr<std::mutex> mutex = std::make_shared<std::mutex>();

  void operator()(const candidate_ptr& c, gateway_node::gateway_type& gw) const {
    const std::lock_guard lock(*mutex);
    std::size_t chosen = 0;
    for (std::size_t i = 1; i < lanes->size(); ++i) {
      if ((*lanes)[i]->outstanding() < (*lanes)[chosen]->outstanding()) {
        chosen = i;
      }
    }
    const auto id = work->open(stage::measure, c, gw);
    if (!id) {
      return; // stopping: dropped before a lane took it
    }
    (*lanes)[chosen]->push(c, policy->measure_request(*c),
                           [work = work, id = *id](const candidate_ptr& done) {
                             if (auto* taken = work->take(id)) {
                               taken->try_put(done);
                               taken->release_wait();
                             }
                           });
  }
};

/// A candidate's way through the slow services: the compile service, then (when the build
/// succeeded) a lane; it re-enters the graph through the gateway once measured, or with a failed
/// build's `not_run`. The compile reply goes to the lane on the service's own thread, not through
/// a graph task: one thread hand-off fewer per candidate, and no TBB worker spinning beside a
/// measurement that is just starting.
struct compile_gateway_body {
  tuning_policy* policy;
  compile_service* compiler;
  work_ptr work;
  lane_dispatcher dispatch;
  void operator()(const candidate_ptr& c, gateway_node::gateway_type& gw) const {
    const auto id = work->open(stage::compile, c, gw);
    if (!id) {
      return;
    }
    try {
      compiler->submit(policy->compile_request(*c),
                       [policy = policy, c, work = work, id = *id,
                        dispatch = dispatch](const messages::compile_reply& reply) {
                         auto* taken = work->take(id);
                         if (taken == nullptr) {
                           return;
                         }
                         // After a stop a compile reply goes no further: a worker_lost for a
                         // dropped queue is no result, and nothing new starts on a lane.
                         if (!policy->stopping()) {
                           policy->on_compiled(*c, reply);
                           const bool built = c->compile.status == messages::compile_status::ok;
                           const auto refusal = built ? policy->screen(*c) : std::nullopt;
                           if (built && !refusal) {
                             dispatch(c, *taken); // holds the gateway's wait again until measured
                           } else if (refusal) {
                             // The device would refuse the launch: no lane time, like a failed
                             // build.
                             c->measure.status = messages::measure_status::not_run;
                             c->measure.reason = *refusal;
                             taken->try_put(c);
                           } else {
                             // A failed build skips the lanes: its measurement is `not_run` with
                             // the reason.
                             c->measure.status = messages::measure_status::not_run;
                             c->measure.reason = policy->build_failure(*c);
                             taken->try_put(c);
                           }
                         }
                         taken->release_wait();
                       });
    } catch (const std::exception& error) {
      if (auto* taken = work->take(*id)) {
        c->compile.status = messages::compile_status::internal_error;
        c->compile.error = std::string("cannot submit the compile job: ") + error.what();
        c->measure.status = messages::measure_status::not_run;
        c->measure.reason = policy->build_failure(*c);
        taken->try_put(c);
        taken->release_wait();
      }
    }
  }
};

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

} // namespace

struct tuning_graph::nodes {
  nodes(tuning_policy& policy,
        compile_service& compiler,
        const std::vector<std::unique_ptr<lane_worker>>& lanes)
      : policy_(policy), lanes_(lanes), work(std::make_shared<outstanding_work>()),
        compile_gateway(
            g,
            flow::unlimited,
            compile_gateway_body{&policy, &compiler, work, lane_dispatcher{&policy, &lanes, work}}),
        model(g,
              flow::unlimited,
              [](const candidate_ptr& c) {
                c->stats = stages::summarize(c->measure.samples_ns);
                return c;
              }),
        acceptance(g,
                   flow::serial,
                   [&policy](const candidate_ptr& c) {
                     try {
                       policy.judge(*c);
                     } catch (const std::exception& error) {
                       c->verdict.decision = messages::verdict_kind::invalid;
                       c->verdict.reason = std::string("acceptance error: ") + error.what();
                     }
                     return c;
                   }),
        store(g,
              flow::serial,
              [this](const candidate_ptr& c, store_node::output_ports_type& ports) {
                policy_.record(*c);
                bool owed = false;
                {
                  std::lock_guard lock(store_mutex);
                  --unstored;
                  if (replacements_owed > 0) {
                    --replacements_owed;
                    owed = true;
                  }
                }
                if (owed) {
                  std::get<0>(ports).try_put(nullptr); // the feedback node starts it now
                }
              }),
        feedback(g,
                 flow::serial,
                 [this](const candidate_ptr& c, feedback_node::output_ports_type& ports) {
                   // A null candidate comes from the store: a write is done, start the
                   // replacement held back for it.
                   if (c) {
                     // The strategy sees every result; one new candidate starts per finished
                     // one (now, or once a write is done, see below).
                     bool observed = true;
                     try {
                       policy_.observe(*c);
                     } catch (const std::exception& error) {
                       spdlog::error("strategy: {}", error.what());
                       observed = false; // as when the search is done: nothing replaces it
                     }
                     // Every candidate that gets here is stored. Its replacement starts before
                     // that write, so that the SQLite commit overlaps the next compile instead
                     // of delaying it; but only while no other finished candidate waits for its
                     // write. Otherwise the replacement waits for a write to be done, so at
                     // most one finished candidate is ever unstored beyond the work in flight.
                     bool owed = false;
                     {
                       std::lock_guard lock(store_mutex);
                       if (observed && unstored > 0) {
                         ++replacements_owed;
                         owed = true;
                       }
                       ++unstored;
                     }
                     const candidate_ptr next = observed && !owed ? next_candidate() : nullptr;
                     // The next candidate is put last: a thread runs the task it spawned last
                     // first, so its compile is submitted before this write starts.
                     std::get<1>(ports).try_put(c);
                     if (!owed) {
                       start_or_leave(next, ports);
                     }
                     return;
                   }
                   start_or_leave(next_candidate(), ports);
                 }) {
    flow::make_edge(compile_gateway, model);
    flow::make_edge(model, acceptance);
    flow::make_edge(acceptance, feedback);
    flow::make_edge(flow::output_port<0>(feedback), compile_gateway);
    flow::make_edge(flow::output_port<1>(feedback), store);
    flow::make_edge(flow::output_port<0>(store), feedback);
  }

  /// Runs beside run() until the graph is done: once the policy stops, drops what waits and
  /// gives what runs `grace`, then abandons it, and says so (stop_settled).
  void watch_for_stop(std::chrono::milliseconds grace);

  /// The policy's next candidate (feedback node only), or nullptr when the search is done.
  candidate_ptr next_candidate() {
    try {
      return policy_.next_candidate();
    } catch (const std::exception& error) {
      spdlog::error("strategy: {}", error.what());
      return nullptr;
    }
  }

  /// Starts `next` in the place of a finished candidate, or says that none took its place.
  void start_or_leave(const candidate_ptr& next, feedback_node::output_ports_type& ports) {
    if (next) {
      std::get<0>(ports).try_put(next); // replaces the finished one: as many in the graph
    } else {
      left_graph();
    }
  }

  /// A candidate went through the feedback node and no new one took its place.
  void left_graph() {
    bool idle = false;
    {
      std::lock_guard lock(finished_mutex);
      idle = --in_graph == 0;
    }
    if (idle) {
      finished_changed.notify_all();
    }
  }

  tuning_policy& policy_;
  const std::vector<std::unique_ptr<lane_worker>>& lanes_;
  work_ptr work;
  std::mutex finished_mutex;
  std::condition_variable finished_changed;
  bool finished = false;
  /// Candidates put into the graph that have not left it through the feedback node.
  std::size_t in_graph = 0;
  /// The stop watcher has dropped or abandoned what it could: the graph's wait can end.
  bool stop_settled = false;
  /// The graph's own context, so that run() can see a cancellation without joining the wait.
  tbb::task_group_context context;
  flow::graph g{context};
  gateway_node compile_gateway;
  stage_node model;
  stage_node acceptance;
  std::mutex store_mutex;
  /// Finished candidates sent to the store whose write is not done yet (guarded by store_mutex).
  std::size_t unstored = 0;
  /// Finished candidates whose replacement waits for a write to be done (guarded by store_mutex).
  std::size_t replacements_owed = 0;
  store_node store;
  feedback_node feedback;
};

tuning_graph::tuning_graph(tuning_policy& policy,
                           compile_service& compiler,
                           const std::vector<std::unique_ptr<lane_worker>>& lanes)
    : nodes_(std::make_unique<nodes>(policy, compiler, lanes)) {}

tuning_graph::~tuning_graph() = default;

void tuning_graph::nodes::watch_for_stop(std::chrono::milliseconds grace) {
  constexpr std::chrono::milliseconds poll{50};
  std::unique_lock lock(finished_mutex);
  while (!finished && !policy_.stopping()) {
    finished_changed.wait_for(lock, poll);
  }
  if (finished) {
    return;
  }
  lock.unlock();
  work->close(stage::compile);
  work->close(stage::measure);
  const auto compiles = work->abandon(stage::compile);
  std::size_t queued = 0;
  for (const auto& lane : lanes_) {
    queued += work->abandon(lane->drop_queued());
  }
  const auto running = work->count(stage::measure);
  const auto grace_s = std::chrono::duration<double>(grace).count();
  if (compiles + queued > 0) {
    spdlog::warn("stopping: dropped {} waiting for a compile and {} waiting for a lane (not "
                 "stored; --resume makes them again)",
                 plural(compiles, "candidate", "candidates"), queued);
  }
  if (running > 0) {
    spdlog::warn("stopping: waiting up to {} s for {} in flight (a second signal exits now)",
                 grace_s, plural(running, "measurement", "measurements"));
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  lock.lock();
  while (!finished && work->count(stage::measure) > 0 &&
         std::chrono::steady_clock::now() < deadline) {
    finished_changed.wait_for(lock, poll);
  }
  if (finished) {
    return;
  }
  lock.unlock();
  if (const auto abandoned = work->abandon(stage::measure); abandoned > 0) {
    spdlog::warn("stopping: abandoned {} still running after the {} s grace period (not stored; "
                 "--resume measures them again)",
                 plural(abandoned, "measurement", "measurements"), grace_s);
  }
}

void tuning_graph::run(std::size_t max_in_flight, std::chrono::milliseconds stop_grace) {
  // Take the seeds before any candidate enters the graph: from the first try_put on, only the
  // feedback node may call the policy's next_candidate().
  std::vector<candidate_ptr> seeds;
  while (seeds.size() < max_in_flight) {
    auto c = nodes_->policy_.next_candidate();
    if (!c) {
      break;
    }
    seeds.push_back(std::move(c));
  }
  auto& n = *nodes_;
  {
    std::lock_guard lock(n.finished_mutex);
    n.finished = false;
    n.stop_settled = false;
    n.in_graph = seeds.size();
  }
  std::thread watcher([&n, stop_grace] {
    n.watch_for_stop(stop_grace);
    {
      std::lock_guard lock(n.finished_mutex);
      n.stop_settled = true;
    }
    n.finished_changed.notify_all();
  });
  for (auto& c : seeds) {
    n.compile_gateway.try_put(c);
  }
  // This thread sleeps until the last candidate has left the graph (or a stop has settled) and
  // only then joins wait_for_all(), which returns once the last store write is done. A thread
  // waiting inside wait_for_all() for the whole run spins (sched_yield) after every burst of graph
  // work, and on a machine with few cores that takes the CPU from the processes being measured. The
  // graph's tasks run on TBB's worker threads meanwhile; with no worker thread to run them (one
  // CPU), this thread waits inside wait_for_all() as before.
  if (tbb::this_task_arena::max_concurrency() > 1) {
    std::unique_lock lock(n.finished_mutex);
    // The periodic look catches a graph cancelled by an exception in a node body: its candidates
    // never reach the feedback node, and wait_for_all() reports the exception.
    while (n.in_graph > 0 && !n.stop_settled && !n.context.is_group_execution_cancelled()) {
      n.finished_changed.wait_for(lock, std::chrono::milliseconds(100));
    }
  }
  n.g.wait_for_all();
  {
    std::lock_guard lock(n.finished_mutex);
    n.finished = true;
  }
  n.finished_changed.notify_all();
  watcher.join();
}

} // namespace rpl::engine
