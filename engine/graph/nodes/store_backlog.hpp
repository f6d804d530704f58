#pragma once
/// What the planner and the store rooms share: how many finished candidates wait for their write,
/// and how many replacements wait for a write to be done. It bounds the unstored candidates to
/// one beyond the work in flight.

#include <cstddef>
#include <mutex>

namespace rpl::engine::nodes {

class store_backlog {
public:
  /// A finished candidate goes to the store. True when its replacement must wait for a write to
  /// be done (another finished candidate is still unstored); `may_replace` false: none replaces it.
  bool finished(bool may_replace) {
    const std::lock_guard lock(mutex_);
    const bool owed = may_replace && unstored_ > 0;
    if (owed) {
      ++replacements_owed_;
    }
    ++unstored_;
    return owed;
  }
  /// A write is done. True when a replacement waited for it (it starts now).
  bool written() {
    const std::lock_guard lock(mutex_);
    --unstored_;
    if (replacements_owed_ == 0) {
      return false;
    }
    --replacements_owed_;
    return true;
  }

private:
  std::mutex mutex_;
  std::size_t unstored_ = 0;          ///< sent to the store, write not done yet
  std::size_t replacements_owed_ = 0; ///< replacements waiting for a write to be done
};

} // namespace rpl::engine::nodes
