#include "engine/graph/nodes/outstanding_work.hpp"

#include <algorithm>

namespace rpl::engine::nodes {

std::optional<std::uint64_t> outstanding_work::open(stage s, const candidate_ptr& c, gateway& gw) {
  std::lock_guard lock(mutex_);
  if (closed_[index(s)]) {
    return std::nullopt;
  }
  gw.reserve_wait();
  const auto id = next_id_++;
  entries_.emplace(id, entry{s, c, &gw});
  return id;
}

gateway* outstanding_work::take(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    return nullptr;
  }
  auto* gw = it->second.gateway_;
  entries_.erase(it);
  return gw;
}

void outstanding_work::close(stage s) {
  std::lock_guard lock(mutex_);
  closed_[index(s)] = true;
}

std::size_t outstanding_work::abandon(stage s) {
  return abandon_if([s](const entry& e) { return e.stage_ == s; });
}

std::size_t outstanding_work::abandon(const std::vector<candidate_ptr>& candidates) {
  return abandon_if([&candidates](const entry& e) {
    return e.stage_ == stage::measure &&
           std::find(candidates.begin(), candidates.end(), e.candidate) != candidates.end();
  });
}

std::size_t outstanding_work::count(stage s) const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::count_if(
      entries_.begin(), entries_.end(), [s](const auto& e) { return e.second.stage_ == s; }));
}

template <class Predicate> std::size_t outstanding_work::abandon_if(Predicate abandoned) {
  std::vector<gateway*> released;
  {
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (abandoned(it->second)) {
        released.push_back(it->second.gateway_);
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

} // namespace rpl::engine::nodes
