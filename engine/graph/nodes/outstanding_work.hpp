#pragma once
/// The candidates out in a slow service (a compile, a measurement), each holding the graph's wait.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "engine/graph/nodes/node_types.hpp"

namespace rpl::engine::nodes {

/// Every candidate out in a slow service holds the graph's wait through an entry here. Whoever
/// takes the entry first releases that wait: the service's reply, or a stop that gives up on it. A
/// reply that comes after that finds nothing and is dropped, so it may come after the graph is
/// gone: the callbacks share this object.
class outstanding_work {
public:
  enum class stage { compile, measure };

  /// Registers `c` and reserves the graph's wait for it; nullopt once `s` is closed (stopping):
  /// the candidate is then dropped, not recorded.
  std::optional<std::uint64_t> open(stage s, const candidate_ptr& c, gateway& gw);
  /// The gateway of entry `id` when this call took it (the caller releases its wait), else
  /// nullptr: a stop gave up on it.
  gateway* take(std::uint64_t id);
  /// No new entry for `s` from now on.
  void close(stage s);
  /// Gives up on every entry of `s`; returns how many.
  std::size_t abandon(stage s);
  /// Gives up on the measurements of these candidates (dropped from a lane's queue).
  std::size_t abandon(const std::vector<candidate_ptr>& candidates);
  std::size_t count(stage s) const;

private:
  struct entry {
    stage stage_;
    candidate_ptr candidate;
    gateway* gateway_;
  };
  static std::size_t index(stage s) { return s == stage::compile ? 0 : 1; }
  template <class Predicate> std::size_t abandon_if(Predicate abandoned);

  mutable std::mutex mutex_;
  std::map<std::uint64_t, entry> entries_;
  std::uint64_t next_id_ = 1;
  bool closed_[2] = {false, false};
};

using work_ptr = std::shared_ptr<outstanding_work>;

} // namespace rpl::engine::nodes
