#include "engine/graph/tuning_graph.hpp"

#include <tuple>

#include <spdlog/spdlog.h>
#include <tbb/flow_graph.h>

#include "stages/statistics/statistics.hpp"

namespace rpl::engine {

namespace flow = tbb::flow;

namespace {

using gateway_node = flow::async_node<candidate_ptr, candidate_ptr>;
/// Port 0: compiled, to the lanes. Port 1: the build failed, straight to the model.
using router_node =
    flow::multifunction_node<candidate_ptr, std::tuple<candidate_ptr, candidate_ptr>>;
using stage_node = flow::function_node<candidate_ptr, candidate_ptr>;
/// Port 0: the next candidate, back to the compile gateway (none when the search is done).
using feedback_node = flow::multifunction_node<candidate_ptr, std::tuple<candidate_ptr>>;

/// Sends a candidate to the compile service; the reply re-enters the graph through the gateway.
struct compile_gateway_body {
  tuning_policy* policy;
  compile_service* compiler;
  void operator()(const candidate_ptr& c, gateway_node::gateway_type& gw) const {
    gw.reserve_wait();
    try {
      compiler->submit(policy->compile_request(*c),
                       [policy = policy, c, &gw](const messages::compile_reply& reply) {
                         policy->on_compiled(*c, reply);
                         gw.try_put(c);
                         gw.release_wait();
                       });
    } catch (const std::exception& error) {
      c->compile.status = messages::compile_status::internal_error;
      c->compile.error = std::string("cannot submit the compile job: ") + error.what();
      gw.try_put(c);
      gw.release_wait();
    }
  }
};

/// A failed build skips the lanes: its measurement is `not_run` with the build's reason.
struct lane_router_body {
  tuning_policy* policy;
  void operator()(const candidate_ptr& c, router_node::output_ports_type& ports) const {
    if (c->compile.status == messages::compile_status::ok) {
      std::get<0>(ports).try_put(c);
      return;
    }
    c->measure.status = messages::measure_status::not_run;
    c->measure.reason = policy->build_failure(*c);
    std::get<1>(ports).try_put(c);
  }
};

/// Queues each compiled candidate on the least-loaded lane (serial, so loads are read and
/// updated one candidate at a time); the result re-enters the graph from the lane thread.
struct lane_dispatch_body {
  tuning_policy* policy;
  const std::vector<std::unique_ptr<lane_worker>>* lanes;
  void operator()(const candidate_ptr& c, gateway_node::gateway_type& gw) const {
    std::size_t chosen = 0;
    for (std::size_t i = 1; i < lanes->size(); ++i) {
      if ((*lanes)[i]->outstanding() < (*lanes)[chosen]->outstanding()) {
        chosen = i;
      }
    }
    gw.reserve_wait();
    (*lanes)[chosen]->push(c, policy->measure_request(*c), [&gw](const candidate_ptr& done) {
      gw.try_put(done);
      gw.release_wait();
    });
  }
};

} // namespace

struct tuning_graph::nodes {
  nodes(tuning_policy& policy,
        compile_service& compiler,
        const std::vector<std::unique_ptr<lane_worker>>& lanes)
      : policy_(policy),
        compile_gateway(g, flow::unlimited, compile_gateway_body{&policy, &compiler}),
        lane_router(g, flow::serial, lane_router_body{&policy}),
        lane_dispatch(g, flow::serial, lane_dispatch_body{&policy, &lanes}),
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
              [&policy](const candidate_ptr& c) {
                policy.record(*c);
                return c;
              }),
        feedback(g,
                 flow::serial,
                 [&policy](const candidate_ptr& c, feedback_node::output_ports_type& ports) {
                   // The strategy sees every result; one new candidate starts per finished one.
                   try {
                     policy.observe(*c);
                     if (auto next = policy.next_candidate()) {
                       std::get<0>(ports).try_put(next);
                     }
                   } catch (const std::exception& error) {
                     spdlog::error("strategy: {}", error.what());
                   }
                 }) {
    flow::make_edge(compile_gateway, lane_router);
    flow::make_edge(flow::output_port<0>(lane_router), lane_dispatch);
    flow::make_edge(flow::output_port<1>(lane_router), model);
    flow::make_edge(lane_dispatch, model);
    flow::make_edge(model, acceptance);
    flow::make_edge(acceptance, store);
    flow::make_edge(store, feedback);
    flow::make_edge(flow::output_port<0>(feedback), compile_gateway);
  }

  tuning_policy& policy_;
  flow::graph g;
  gateway_node compile_gateway;
  router_node lane_router;
  gateway_node lane_dispatch;
  stage_node model;
  stage_node acceptance;
  stage_node store;
  feedback_node feedback;
};

tuning_graph::tuning_graph(tuning_policy& policy,
                           compile_service& compiler,
                           const std::vector<std::unique_ptr<lane_worker>>& lanes)
    : nodes_(std::make_unique<nodes>(policy, compiler, lanes)) {}

tuning_graph::~tuning_graph() = default;

void tuning_graph::run(std::size_t max_in_flight) {
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
  for (auto& c : seeds) {
    nodes_->compile_gateway.try_put(c);
  }
  nodes_->g.wait_for_all();
}

} // namespace rpl::engine
