#include "engine/graph/tuning_graph.hpp"

#include <mutex>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>
#include <tbb/flow_graph.h>
#include <tbb/task_arena.h>

#include "engine/graph/nodes/compile_body.hpp"
#include "engine/graph/nodes/graph_occupancy.hpp"
#include "engine/graph/nodes/model_body.hpp"
#include "engine/graph/nodes/planner_body.hpp"
#include "engine/graph/nodes/store_backlog.hpp"
#include "engine/graph/nodes/store_body.hpp"
#include "engine/graph/nodes/verdict_body.hpp"

namespace rpl::engine {

namespace flow = tbb::flow;

namespace {

using stage = nodes::outstanding_work::stage;

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

} // namespace

/// The rooms and their wiring: planner -> compile -> screen -> lane -> model -> verdict -> store.
/// The compile gateway holds the compile, screen and lane rooms (nodes/compile_body.hpp): they run
/// on the compile service's and the lanes' threads, and the candidate re-enters the graph once.
struct tuning_graph::network {
  network(tuning_policy& policy,
          compile_service& compiler,
          const std::vector<std::unique_ptr<lane_worker>>& lanes)
      : policy_(policy), lanes_(lanes),
        compile_gateway(
            g,
            flow::unlimited,
            nodes::compile_body(policy,
                                compiler,
                                work,
                                nodes::screen_body(policy, nodes::lane_router(lanes, work)))),
        model(g, flow::unlimited, nodes::model_body{}),
        verdict(g, flow::serial, nodes::verdict_body(policy)),
        planner(g, flow::serial, nodes::planner_body(policy, backlog, occupancy)),
        store(g, flow::serial, nodes::store_body(policy, backlog)) {
    flow::make_edge(compile_gateway, model);
    flow::make_edge(model, verdict);
    flow::make_edge(verdict, planner);
    flow::make_edge(flow::output_port<0>(planner), compile_gateway);
    flow::make_edge(flow::output_port<1>(planner), store);
    flow::make_edge(flow::output_port<0>(store), planner);
  }

  /// Runs beside run() until the graph is done: once the policy stops, drops what waits and
  /// gives what runs `grace`, then abandons it, and says so (stop_settled).
  void watch_for_stop(std::chrono::milliseconds grace);

  tuning_policy& policy_;
  const std::vector<std::unique_ptr<lane_worker>>& lanes_;
  nodes::work_ptr work = std::make_shared<nodes::outstanding_work>();
  nodes::graph_occupancy occupancy;
  nodes::store_backlog backlog;
  /// The graph's own context, so that run() can see a cancellation without joining the wait.
  tbb::task_group_context context;
  flow::graph g{context};
  nodes::gateway_node compile_gateway;
  nodes::stage_node model;
  nodes::stage_node verdict;
  nodes::planner_node planner;
  nodes::store_node store;
};

tuning_graph::tuning_graph(tuning_policy& policy,
                           compile_service& compiler,
                           const std::vector<std::unique_ptr<lane_worker>>& lanes)
    : network_(std::make_unique<network>(policy, compiler, lanes)) {}

tuning_graph::~tuning_graph() = default;

void tuning_graph::network::watch_for_stop(std::chrono::milliseconds grace) {
  constexpr std::chrono::milliseconds poll{50};
  std::unique_lock lock(occupancy.mutex);
  while (!occupancy.finished && !policy_.stopping()) {
    occupancy.changed.wait_for(lock, poll);
  }
  if (occupancy.finished) {
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
  while (!occupancy.finished && work->count(stage::measure) > 0 &&
         std::chrono::steady_clock::now() < deadline) {
    occupancy.changed.wait_for(lock, poll);
  }
  if (occupancy.finished) {
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
  // planner node may call the policy's next_candidate().
  std::vector<candidate_ptr> seeds;
  while (seeds.size() < max_in_flight) {
    auto c = network_->policy_.next_candidate();
    if (!c) {
      break;
    }
    seeds.push_back(std::move(c));
  }
  auto& n = *network_;
  {
    std::lock_guard lock(n.occupancy.mutex);
    n.occupancy.finished = false;
    n.occupancy.stop_settled = false;
    n.occupancy.in_graph = seeds.size();
    n.occupancy.max_in_flight = max_in_flight;
  }
  std::thread watcher([&n, stop_grace] {
    n.watch_for_stop(stop_grace);
    {
      std::lock_guard lock(n.occupancy.mutex);
      n.occupancy.stop_settled = true;
    }
    n.occupancy.changed.notify_all();
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
    std::unique_lock lock(n.occupancy.mutex);
    // The periodic look catches a graph cancelled by an exception in a node body: its candidates
    // never reach the planner node, and wait_for_all() reports the exception.
    while (n.occupancy.in_graph > 0 && !n.occupancy.stop_settled &&
           !n.context.is_group_execution_cancelled()) {
      n.occupancy.changed.wait_for(lock, std::chrono::milliseconds(100));
    }
  }
  n.g.wait_for_all();
  {
    std::lock_guard lock(n.occupancy.mutex);
    n.occupancy.finished = true;
  }
  n.occupancy.changed.notify_all();
  watcher.join();
}

} // namespace rpl::engine
