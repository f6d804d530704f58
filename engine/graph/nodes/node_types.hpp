#pragma once
/// The oneTBB node types of the tuning graph. Internal to engine/graph/: tuning_graph.hpp keeps
/// TBB away from its includers, and only tuning_graph.cpp and the rooms here include this.

#include <tuple>

#include <tbb/flow_graph.h>

#include "engine/graph/candidate_state.hpp"

namespace rpl::engine::nodes {

/// The compile gateway: a candidate leaves it for the compile service and, when built, a lane.
using gateway_node = tbb::flow::async_node<candidate_ptr, candidate_ptr>;
/// What a slow service's reply uses to re-enter the graph.
using gateway = gateway_node::gateway_type;
using stage_node = tbb::flow::function_node<candidate_ptr, candidate_ptr>;
/// Port 0: the next candidate, back to the compile gateway (none when the search is done). Port 1:
/// the finished candidate, to the store.
using planner_node =
    tbb::flow::multifunction_node<candidate_ptr, std::tuple<candidate_ptr, candidate_ptr>>;
/// Port 0: a null candidate, to the planner node, when a write is done and a replacement waits
/// for it.
using store_node = tbb::flow::multifunction_node<candidate_ptr, std::tuple<candidate_ptr>>;

} // namespace rpl::engine::nodes
